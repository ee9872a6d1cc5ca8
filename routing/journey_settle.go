package routing

import (
	"switchyard/routing/adapter"
	"switchyard/routing/limit"
)

// account fills the record's usage and cost and settles the limits.
func (x *exchange) account(dec limit.Decision, served Served, u adapter.Usage, estimate int64) {
	d := served.Deployment
	x.traceServed(d)
	if d != nil {
		x.rec.LogicModel, x.rec.DeploymentID, x.rec.Provider, x.rec.KeyFingerprint = d.Model.Code, x.int64p(d.ID), d.Provider.Name, served.KeyFingerprint
	}
	actual := estimate // unknown usage keeps the reservation
	var costMicros int64
	if u.Known {
		p, c := u.Prompt, u.Completion
		x.rec.PromptTokens, x.rec.CompletionTokens, x.rec.UsageEstimated = x.int64p(p), x.int64p(c), u.Estimated
		if u.CachedKnown {
			x.rec.CachedTokens = x.int64p(u.Cached)
		}
		if u.ReasoningKnown {
			x.rec.ReasoningTokens = x.int64p(u.Reasoning)
		}
		actual = p + c
		if d != nil {
			pr := d.Prices
			cost := pr.CostMicros(p, c, u.Cached)
			x.rec.CostMicros, x.rec.Currency = x.int64p(cost), pr.Currency
			// A budget in another currency is refused at publish (dry-run
			// check budget_currency_mismatch); this guard only keeps a
			// stale runtime from charging the wrong money.
			if x.caller.BudgetCurrency == "" || x.caller.BudgetCurrency == pr.Currency {
				costMicros = cost
			}
		}
		x.j.avg.observe(x.tier, c)
	}
	x.settle(dec, actual, costMicros)
}

// settlement is the limit step's state after the call: what the request
// used, returned to the limits once the answer is on the wire.
type settlement struct {
	dec    limit.Decision // Allowed: a settlement waits for finish
	actual int64
	cost   int64
}

// settle schedules the return of unused reservations for after the answer
// is sent; it runs even if the client left.
func (x *exchange) settle(dec limit.Decision, actual, costMicros int64) {
	if x.j.Limits == nil || !dec.Allowed {
		return
	}
	x.settlement = settlement{dec: dec, actual: actual, cost: costMicros}
}

// settleNow returns the reservation a settlement waits to return (finish).
func (x *exchange) settleNow() {
	s := x.settlement
	if !s.dec.Allowed {
		return
	}
	if err := x.j.Limits.Settle(x.ctx, s.dec.Reservation, s.actual, s.cost); err != nil {
		x.j.Log.Warn("limit settle failed", "err", err, "request_id", x.rec.RequestID)
	}
}
