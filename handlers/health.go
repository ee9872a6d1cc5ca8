package handlers

import (
	"cmp"
	"context"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"switchyard/handlers/httpx"
	"switchyard/routing/breaker"
	"switchyard/routing/config"
	"switchyard/routing/health"
	"switchyard/routing/reason"
	"switchyard/store/redis/keypool"
	"switchyard/store/rows"
	healthpage "switchyard/views/pages/health"
)

// ProbeStore is the storage the Health page reads: recent probes and state
// changes per deployment. *store.Store satisfies it.
type ProbeStore interface {
	HealthEvents(ctx context.Context, perDeployment int) (map[int64][]rows.HealthEvent, error)
	RecentProbes(ctx context.Context, perDeployment int) (map[int64][]rows.Probe, error)
}

// healthHistory is how many probes and state changes a deployment shows.
const healthHistory = 10

// HealthPage shows every deployment of the live version: whether it can
// serve now and why not (servability), then its health score and state,
// recent probes and state history.
func (h *Handler) HealthPage(c echo.Context) error {
	ctx := c.Request().Context()
	b := healthpage.Board{Tracking: h.Health != nil}
	var statuses map[int64]health.Status
	var ledger map[int64]health.ProbeLedger
	if h.Health != nil {
		s := h.Health.Settings()
		b.Rules = healthpage.Rules{Window: time.Duration(s.Buckets()) * s.Bucket, MinSamples: s.MinSamples, DegradedBelow: s.DegradedBelow, DownBelow: s.DownBelow, RecoverProbes: s.RecoverProbes}
		var err error
		if statuses, err = h.Health.Statuses(ctx); err != nil {
			h.Log.Warn("health states unavailable", "err", err)
			b.Error = "Health states could not be read from Redis: " + err.Error()
		} else if ledger, err = h.Health.ProbeLedger(ctx); err != nil {
			h.Log.Warn("probe ledger unavailable", "err", err)
			b.Error = "Probe counts and cost could not be read from Redis: " + err.Error()
		}
	}
	var rt *config.Runtime
	if h.Ops != nil {
		rt = h.Ops.Runtime()
	}
	if rt == nil {
		b.NoConfig = true
	} else {
		b.Tiers = h.verdicts()
		probes, err := h.ProbeLog.RecentProbes(ctx, healthHistory)
		if err != nil {
			return err
		}
		events, err := h.ProbeLog.HealthEvents(ctx, healthHistory)
		if err != nil {
			return err
		}
		live := h.servingState(ctx)
		for _, n := range live.notes {
			b.Error = strings.TrimSpace(b.Error + " Serving states may be incomplete: " + n + ".")
		}
		for id, d := range rt.Deployments {
			r := healthpage.Row{ID: id, Model: d.Model.Code, Provider: d.Provider.Name, Upstream: d.UpstreamModel, Kind: string(d.Model.Kind),
				ModelID: d.Model.ID, ProviderID: d.Provider.ID,
				Parked: d.Enabled && d.Parked, NotProbed: health.NotProbed(d), Probes: probeViews(probes[id]), Events: healthEventViews(events[id])}
			if l, ok := ledger[id]; ok {
				r.Cost = healthpage.ProbeCost{Sent: l.Sent, Skipped: l.Skipped, Micros: l.CostMicros, Currency: cmp.Or(d.Prices.Currency, config.DefaultCurrency)}
				// A skip newer than the latest recorded probe is what happened
				// this round.
				if !l.LastSkip.IsZero() && (len(r.Probes) == 0 || l.LastSkip.After(r.Probes[0].At)) {
					r.Skip = healthpage.Skip{Code: string(health.SkipLiveTraffic), At: l.LastSkip, LiveOK: l.LastLiveOK}
				}
				b.Total.Sent += l.Sent
				b.Total.Skipped += l.Skipped
				if l.CostMicros != 0 {
					if b.Total.Micros == nil {
						b.Total.Micros = map[string]int64{}
					}
					b.Total.Micros[r.Cost.Currency] += l.CostMicros
				}
			}
			if s, ok := statuses[id]; ok {
				r.Evaluated, r.State, r.Score, r.Samples, r.Since, r.Reason = true, string(s.State), s.Score, s.Samples, s.Since, s.Reason
				r.LiveOK, r.LiveFail, r.ProbeOK, r.ProbeFail = s.Counts.OK, s.Counts.Failed, s.Counts.ProbeOK, s.Counts.ProbeFailed
			}
			st, scored := statuses[id]
			var down *health.Status
			if scored {
				down = &st
			}
			r.Blocks, r.Keys, r.BreakerOpenOn, r.Instances = servability(d, live, down)
			b.Rows = append(b.Rows, r)
		}
		slices.SortFunc(b.Rows, func(x, y healthpage.Row) int {
			return cmp.Or(cmp.Compare(x.Model, y.Model), cmp.Compare(x.Provider, y.Provider), cmp.Compare(x.ID, y.ID))
		})
	}
	return httpx.Render(c, http.StatusOK, healthpage.Show(healthpage.Page{Page: h.page(c, "Health", "health"), Board: b}), healthpage.BoardView(b))
}

// probeViews turns stored probes into the page's rows.
func probeViews(ps []rows.Probe) []healthpage.Probe {
	var out []healthpage.Probe
	for _, p := range ps {
		out = append(out, healthpage.Probe{At: p.At, Outcome: p.Outcome, LatencyMS: p.LatencyMS, Class: p.Class, HTTPStatus: p.HTTPStatus, Message: p.Message})
	}
	return out
}

// healthEventViews turns stored state changes into the page's rows.
func healthEventViews(es []rows.HealthEvent) []healthpage.Event {
	var out []healthpage.Event
	for _, e := range es {
		out = append(out, healthpage.Event{At: e.At, From: e.From, To: e.To, HasScore: e.Score.Valid, Score: e.Score.Float64, Samples: e.Samples, Reason: e.Reason})
	}
	return out
}

// servingState is the shared runtime state servability reads: breakers on
// every instance and the key pools' states. Without a data plane on this
// instance it is empty (nothing known blocks a deployment).
func (h *Handler) servingState(ctx context.Context) liveView {
	if h.Ops == nil {
		return liveView{now: time.Now()}
	}
	return h.liveState(ctx)
}

// servability is why d cannot serve now, the configuration's reason first
// (disabled, parked, provider disabled, no active key: d.StaticSkip), then
// the key pool's (every active key quarantined or cooling, on the state all
// instances share), the breaker's (open on any instance) and the health
// score's (down). It also returns the unusable keys behind a key block and
// how many instances have the breaker open. No block: it serves.
func servability(d *config.RDeployment, live liveView, st *health.Status) (blocks []reason.Reason, keys []healthpage.KeyBlock, openOn, instances int) {
	if d.StaticSkip.Code != "" {
		blocks = append(blocks, d.StaticSkip)
	}
	if len(d.Provider.ActiveKey) > 0 {
		var cooling bool
		var until time.Time
		for _, id := range d.Provider.ActiveKey {
			ks, status := live.keyState(id)
			if status == keypool.StatusActive {
				keys = nil
				break
			}
			k := healthpage.KeyBlock{Status: string(status), Fault: ks.Fault, Legacy: ks.Reason, Until: ks.Until}
			if rk := d.Provider.Key(id); rk != nil {
				k.Label, k.Fingerprint = rk.Label, rk.Fingerprint
			}
			if status == keypool.StatusCooling {
				cooling = true
				if until.IsZero() || ks.Until.Before(until) {
					until = ks.Until
				}
			}
			keys = append(keys, k)
		}
		switch {
		case len(keys) == 0:
		case cooling:
			blocks = append(blocks, reason.Reason{Code: reason.KeysCooling, Until: reason.UntilOf(until)})
		default:
			blocks = append(blocks, reason.Of(reason.KeysQuarantined))
		}
	}
	for _, inst := range live.instances() {
		if b, ok := live.breakers[inst][d.ID]; ok {
			instances++
			if b.State == breaker.Open.String() {
				openOn++
			}
		}
	}
	if openOn > 0 {
		blocks = append(blocks, reason.Of(reason.BreakerOpen))
	}
	if st != nil && st.State == health.Down {
		blocks = append(blocks, reason.Of(reason.Unhealthy))
	}
	return blocks, keys, openOn, instances
}
