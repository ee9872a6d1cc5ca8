package handlers

import (
	"context"
	"strconv"
	"time"

	"switchyard/routing"
	"switchyard/routing/config"
	"switchyard/routing/ladder"
	"switchyard/views/pages/calllogs"
	"switchyard/views/pages/testroute"
)

// ResilienceState is a tier's retry budget and SLA window and its group's
// answer-cache size, as the instance reads them for Test route.
type ResilienceState struct {
	Budget    routing.BudgetVerdict
	BudgetErr error
	SLA       ladder.State
	CacheSize int64
	CacheErr  error
}

// explainResilience fills Test route's view of the tier's retry budget and
// of the group's degradation ladder; stepped are the step-downs the route
// took.
func (h *Handler) explainResilience(ctx context.Context, group *config.RGroup, tier string, stepped []routing.Degraded) testroute.Resilience {
	r := testroute.Resilience{Group: group.Name, Tier: tier}
	if tier == "" {
		r.BudgetOff = group.Budget.Off
		return r
	}
	st := h.Ops.Resilience(ctx, group, config.TierName(tier))
	b := group.Budget
	r.BudgetOff = b.Off
	r.BudgetRule = "retries may be " + strconv.Itoa(b.Percent) + "% of tier " + tier + "'s first attempts over " + b.Window.String() +
		", at least " + strconv.Itoa(b.MinPerS) + "/s, counted across every instance."
	if st.BudgetErr != nil {
		r.BudgetProblem = "The budget could not be read: " + st.BudgetErr.Error()
	}
	r.Firsts, r.Retries, r.Allowance, r.BudgetLocal = st.Budget.Firsts, st.Budget.Retries, st.Budget.Allowance, st.Budget.Local
	r.Window, r.MinPerS = b.Window.String(), b.MinPerS
	l := group.Ladder
	if l == nil {
		return r
	}
	r.Ladder = true
	if sd := l.StepDownFor(config.TierName(tier)); sd != nil {
		r.StepDown = stepDownWords(sd)
	}
	// The tier asked for may have stepped down: its rule is the one to show.
	for _, s := range stepped {
		r.Stepped = append(r.Stepped, calllogs.ExplainDegraded(s))
		if sd := l.StepDownFor(config.TierName(s.From)); sd != nil && s.From != tier {
			r.StepDown = stepDownWords(sd)
		}
	}
	r.SLACalls, r.SLAP95, r.SLAErrors = st.SLA.Calls, st.SLA.P95, st.SLA.ErrorPercent
	r.SteppedDown, r.SteppedUntil = st.SLA.SteppedDown, st.SLA.Until
	if c := l.Cache; c != nil {
		scope := "the caller's own"
		if c.GroupScope {
			scope = "any caller of " + group.Name + "'s"
		}
		r.Cache = "serves " + scope + " earlier answers to the same cacheable request (kept " + c.TTL.String() + ", at most " + strconv.Itoa(c.MaxEntries) + ")"
		r.CacheSize = st.CacheSize
		if st.CacheErr != nil {
			r.CacheProblem = "size unavailable: " + st.CacheErr.Error()
		}
	}
	r.Static = l.Static
	return r
}

func stepDownWords(sd *config.RStepDown) string {
	s := "tier " + string(sd.From) + " steps down to " + string(sd.To) + " for " + sd.Hold.String() + " when, over " + sd.Window.String() + " (at least " + strconv.Itoa(sd.MinCalls) + " calls),"
	if sd.P95 > 0 {
		s += " its p95 latency is above " + sd.P95.Round(time.Millisecond).String()
		if sd.ErrorPercent > 0 {
			s += " or"
		}
	}
	if sd.ErrorPercent > 0 {
		s += " more than " + strconv.Itoa(sd.ErrorPercent) + "% of its calls fail"
	}
	return s
}
