package gateway

import (
	"context"
	"fmt"
	"math"
	"strings"
	"time"

	"switchyard/routing"
	"switchyard/routing/alert"
	"switchyard/routing/breaker"
	"switchyard/routing/config"
	"switchyard/store/redis/keypool"
	"switchyard/store/rows"
	"switchyard/web/metrics"
)

// CallStats reads the call logs an alert window covers, and the caller
// keys about to expire (store.Store).
type CallStats interface {
	TierCalls(ctx context.Context, since time.Time) ([]rows.TierCalls, error)
	CallerKeysExpiringWithin(ctx context.Context, d time.Duration) ([]rows.CallerKeyInfo, error)
}

// alertSource answers the alert rules from the instance's live state: the
// servability of its live version, its key pools, breakers and limiter,
// its PostgreSQL check, and the call logs.
type alertSource struct {
	g     *Gateway
	calls CallStats
}

// Findings implements worker.AlertSource.
func (s alertSource) Findings(ctx context.Context, r alert.Rule) ([]alert.Finding, error) {
	g := s.g
	rt := g.Holder.Current()
	switch r.Kind {
	case alert.KindTierUnservable:
		return unservable(rt, &g.Exec.State), nil
	case alert.KindErrorRate, alert.KindLatencyP95, alert.KindRetryBudget:
		return s.windowed(ctx, r)
	case alert.KindBudget:
		return s.budgets(ctx, rt, r.Params.Percent)
	case alert.KindKeysQuarantined:
		return quarantined(rt, g.Keys), nil
	case alert.KindBreakerOpen:
		return openBreakers(rt, g.Breakers.Snapshot(), time.Duration(r.Params.OpenSeconds)*time.Second, time.Now()), nil
	case alert.KindConfigCached:
		if g.pgDown.Load() {
			return []alert.Finding{{Subject: alert.Subject{Kind: alert.SubjectInstance, Name: g.Reporter.InstanceID()}}}, nil
		}
	case alert.KindRedisDegraded:
		if g.Limiter.Degraded() || g.Keys.Degraded() || g.Load.Degraded() || g.Budget.Degraded() {
			return []alert.Finding{{Subject: alert.Subject{Kind: alert.SubjectInstance, Name: g.Reporter.InstanceID()}}}, nil
		}
	case alert.KindKeyExpiring:
		return s.expiringKeys(ctx, time.Duration(r.Params.WithinDays)*24*time.Hour, time.Now())
	}
	return nil, nil
}

// expiringKeys finds the unrevoked caller keys that expire within d, each
// with the seconds it has left; a key is named by its caller, its name and
// its visible prefix (never the secret).
func (s alertSource) expiringKeys(ctx context.Context, d time.Duration, now time.Time) ([]alert.Finding, error) {
	keys, err := s.calls.CallerKeysExpiringWithin(ctx, d)
	if err != nil {
		return nil, err
	}
	out := make([]alert.Finding, 0, len(keys))
	for _, k := range keys {
		name := fmt.Sprintf("%s/%s (%s…)", k.CallerName, k.Name, k.Prefix)
		out = append(out, alert.Finding{Subject: alert.Subject{Kind: alert.SubjectCallerKey, Name: name}, Value: math.Floor(k.ExpiresAt.Sub(now).Seconds())})
	}
	return out, nil
}

func tierSubject(group, tier string) alert.Subject {
	return alert.Subject{Kind: alert.SubjectTier, Name: group + "/" + tier}
}

// unservable are the route group × tiers with candidates none of which
// can serve (a tier listing no candidate is configuration, not an alert).
func unservable(rt *config.Runtime, st *routing.State) []alert.Finding {
	var out []alert.Finding
	for _, v := range routing.Servability(rt, st) {
		if v.Verdict == routing.VerdictUnservable && !v.Empty {
			out = append(out, alert.Finding{Subject: tierSubject(v.Group, string(v.Tier))})
		}
	}
	return out
}

func (s alertSource) windowed(ctx context.Context, r alert.Rule) ([]alert.Finding, error) {
	p := r.Params
	tiers, err := s.calls.TierCalls(ctx, time.Now().Add(-p.Window()))
	if err != nil {
		return nil, err
	}
	var out []alert.Finding
	for _, t := range tiers {
		switch r.Kind {
		case alert.KindRetryBudget:
			if n := t.Causes[string(routing.CodeRetryBudgetExhausted)]; n > 0 {
				out = append(out, alert.Finding{Subject: tierSubject(t.Group, t.Tier), Value: float64(n)})
			}
		case alert.KindLatencyP95:
			if t.Total >= int64(p.MinRequests) && t.P95MS > float64(p.BoundMS) {
				out = append(out, alert.Finding{Subject: tierSubject(t.Group, t.Tier), Value: math.Round(t.P95MS)})
			}
		case alert.KindErrorRate:
			if t.Total < int64(max(p.MinRequests, 1)) {
				continue
			}
			for cause, n := range t.Causes {
				if pct := 100 * float64(n) / float64(t.Total); pct > p.Percent {
					subj := tierSubject(t.Group, t.Tier)
					subj.Cause = cause
					out = append(out, alert.Finding{Subject: subj, Value: math.Round(pct*10) / 10})
				}
			}
		}
	}
	return out, nil
}

// budgets are the callers whose spend this month is at percent of their
// budget or more.
func (s alertSource) budgets(ctx context.Context, rt *config.Runtime, percent float64) ([]alert.Finding, error) {
	if rt == nil {
		return nil, nil
	}
	var out []alert.Finding
	for _, c := range rt.Callers {
		if c.BudgetMicros <= 0 {
			continue
		}
		u, err := s.g.Limiter.Usage(ctx, c.ID, string(config.TierStandard))
		if err != nil {
			return nil, fmt.Errorf("budget of caller %s: %w", c.Name, err)
		}
		if pct := 100 * float64(u.MonthSpentMicros) / float64(c.BudgetMicros); pct >= percent {
			out = append(out, alert.Finding{Subject: alert.Subject{Kind: alert.SubjectCaller, Name: c.Name}, Value: pct})
		}
	}
	return out, nil
}

// quarantined are the enabled providers with active keys all quarantined.
func quarantined(rt *config.Runtime, keys *keypool.Pool) []alert.Finding {
	if rt == nil || keys == nil {
		return nil
	}
	var out []alert.Finding
	for _, p := range rt.Providers {
		if !p.Enabled || len(p.ActiveKey) == 0 {
			continue
		}
		if skip, ok := keys.Usable(p.ActiveKey); !ok && skip.Code == keypool.SkipAllQuarantined.Code {
			out = append(out, alert.Finding{Subject: alert.Subject{Kind: alert.SubjectProvider, Name: p.Name}})
		}
	}
	return out
}

// openBreakers are the deployments whose breaker has been open longer
// than bound.
func openBreakers(rt *config.Runtime, snap map[int64]breaker.Status, bound time.Duration, now time.Time) []alert.Finding {
	var out []alert.Finding
	for id, st := range snap {
		if st.State != breaker.Open || st.OpenedAt.IsZero() || now.Sub(st.OpenedAt) <= bound {
			continue
		}
		name := fmt.Sprintf("deployment %d", id)
		if rt != nil {
			if d := rt.Deployments[id]; d != nil && d.Provider != nil && d.Model != nil {
				name = fmt.Sprintf("%s → %s/%s (#%d)", d.Model.Code, d.Provider.Name, d.UpstreamModel, id)
			}
		}
		out = append(out, alert.Finding{Subject: alert.Subject{Kind: alert.SubjectDeployment, Name: name}, Value: math.Floor(now.Sub(st.OpenedAt).Seconds())})
	}
	return out
}

// alertingSources feed the state gauges the Prometheus alerting rules read:
// the same findings the alert rules make, one series each.
func (g *Gateway) alertingSources() metrics.AlertingSources {
	one := func(fs []alert.Finding, label func(alert.Subject) []string) []metrics.Sample {
		out := make([]metrics.Sample, len(fs))
		for i, f := range fs {
			out[i] = metrics.Sample{Labels: label(f.Subject), Value: 1}
		}
		return out
	}
	return metrics.AlertingSources{
		Tiers: func() []metrics.Sample {
			return one(unservable(g.Holder.Current(), &g.Exec.State), func(s alert.Subject) []string {
				group, tier, _ := strings.Cut(s.Name, "/")
				return []string{group, tier}
			})
		},
		Providers: func() []metrics.Sample {
			return one(quarantined(g.Holder.Current(), g.Keys), func(s alert.Subject) []string { return []string{s.Name} })
		},
		Budgets: func() []metrics.Sample {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			fs, _ := alertSource{g: g}.budgets(ctx, g.Holder.Current(), 0)
			out := make([]metrics.Sample, len(fs))
			for i, f := range fs {
				out[i] = metrics.Sample{Labels: []string{f.Subject.Name}, Value: f.Value / 100}
			}
			return out
		},
	}
}
