package routing

import (
	"cmp"
	"slices"

	"switchyard/routing/config"
	"switchyard/routing/reason"
)

// Servability answers "can each route group × tier serve right now?" from
// the live version and the runtime state, by building the plan a plain
// request to the tier would get (Build, the journey's own route step) and
// reading what it kept and skipped. A tier is VerdictUnservable exactly when such
// a request finds nothing to try, which the journey answers with 503
// no_available_model before spending any limit.

// Verdict is a route group × tier's servability.
type Verdict int

// Verdicts, best first.
const (
	// VerdictServable: a request is served by the tier's own chain with nothing
	// out of service but what an operator parked or disabled.
	VerdictServable Verdict = iota
	// VerdictDegraded: requests are served, but some of the chain is out of
	// service for a runtime reason (breaker open, unhealthy, keys
	// quarantined or cooling, ...) or only the fallback group serves.
	VerdictDegraded
	// VerdictUnservable: every request to the tier gets 503 no_available_model.
	VerdictUnservable
)

// String is the verdict's code (the view turns it into words).
func (v Verdict) String() string {
	switch v {
	case VerdictDegraded:
		return "degraded"
	case VerdictUnservable:
		return "unservable"
	}
	return "servable"
}

// Cause is one reason the plan left deployments or candidates out, with
// how many it left out for it (the reason of the first such skip).
type Cause struct {
	Reason reason.Reason
	Count  int
}

// TierVerdict is one route group × tier's verdict with its causes.
type TierVerdict struct {
	GroupID int64
	Group   string
	Tenant  string
	Tier    config.TierName
	Verdict Verdict
	// Serving is how many deployments a request may try; Fallback how many
	// of them come from the fallback group.
	Serving  int
	Fallback int
	// Causes are the skips by code, in the order first met: for an
	// unservable tier why nothing serves, for a degraded one what is out
	// of service; empty for a servable tier (what an operator parked or
	// disabled is configuration) and for a tier with no candidates (Empty).
	Causes []Cause
	// Empty: the tier lists no candidate at all.
	Empty bool
}

// Servability is every route group × tier's verdict, by group name then
// tier order, for a request of the tier's kind needing no capability.
func Servability(rt *config.Runtime, st *State) []TierVerdict {
	if rt == nil {
		return nil
	}
	var out []TierVerdict
	for _, g := range rt.Groups {
		for _, t := range config.TierNames {
			out = append(out, TierServability(g, t, st))
		}
	}
	slices.SortStableFunc(out, func(a, b TierVerdict) int {
		return cmp.Or(cmp.Compare(a.Group, b.Group), cmp.Compare(tierOrder(a.Tier), tierOrder(b.Tier)))
	})
	return out
}

func tierOrder(t config.TierName) int { return slices.Index(config.TierNames, t) }

// TierServability is one route group × tier's verdict.
func TierServability(g *config.RGroup, tier config.TierName, st *State) TierVerdict {
	v := TierVerdict{GroupID: g.ID, Group: g.Name, Tenant: g.Tenant, Tier: tier}
	caller := &config.RCaller{Group: g, Enabled: true}
	p := NewPlan()
	defer p.Release()
	Build(p, caller, Target{Tier: tier}, Needs{Kind: tierKind(g, tier)}, st)
	v.Serving = len(p.Steps)
	for _, s := range p.Steps {
		if s.Fallback {
			v.Fallback++
		}
	}
	runtime := false
	for _, s := range p.Skips {
		if s.Reason.Code == reason.WrongKind {
			continue // a request of the other kind would use it
		}
		if !deliberate(s.Reason.Code) {
			runtime = true
		}
		v.Causes = addCause(v.Causes, s.Reason)
	}
	v.Empty = len(v.Causes) == 0 && v.Serving == 0
	switch {
	case v.Serving == 0:
		v.Verdict = VerdictUnservable
	case runtime || v.Fallback == v.Serving:
		v.Verdict = VerdictDegraded
	}
	if v.Verdict != VerdictUnservable {
		v.Causes = slices.DeleteFunc(v.Causes, func(c Cause) bool { return deliberate(c.Reason.Code) })
	}
	return v
}

// deliberate reports a skip an operator chose (parking, disabling): on a
// tier that still serves it is configuration, not degradation.
func deliberate(c reason.Code) bool {
	switch c {
	case reason.Parked, reason.CandidateParked, reason.DisabledByOperator, reason.ProviderDisabled, reason.AlreadyInChain:
		return true
	}
	return false
}

func addCause(cs []Cause, r reason.Reason) []Cause {
	for i := range cs {
		if cs[i].Reason.Code == r.Code {
			cs[i].Count++
			return cs
		}
	}
	return append(cs, Cause{Reason: r, Count: 1})
}

// tierKind is the kind of request the tier serves: chat when any of its
// candidates (or its fallback's) is a chat model, else embedding.
func tierKind(g *config.RGroup, tier config.TierName) config.Kind {
	kind := config.Kind("")
	for _, grp := range []*config.RGroup{g, g.Fallback} {
		if grp == nil {
			continue
		}
		if t := grp.Tier(tier); t != nil {
			for _, l := range t.Levels {
				for _, c := range l.Candidates {
					if c.Model.Kind == config.KindChat {
						return config.KindChat
					}
					kind = c.Model.Kind
				}
			}
		}
	}
	return cmp.Or(kind, config.KindChat)
}
