package routing

import (
	"time"

	"switchyard/routing/limit"
	"switchyard/routing/reason"
)

// recordRefusal writes the limit that refused the request onto its
// call-log row, as codes and numbers: every refusal that went through
// Answer.Refusal is stored the same way, whatever its kind.
func (x *exchange) recordRefusal() {
	r := x.a.Refusal
	if r == nil || r.Limit == limit.KindNone {
		return
	}
	x.rec.LimitKind = r.Limit
	if r.Value > 0 {
		x.rec.LimitValue = x.int64p(r.Value)
	}
	if r.RetryAfter > 0 {
		x.rec.LimitResetMS = x.int64p(int64((r.RetryAfter + time.Millisecond - 1) / time.Millisecond))
	}
}

// capRefusal names the deployment cap as the limit that refused a request
// nothing could serve when no vendor was called and every deployment the
// chain reached was skipped at its max concurrency (the plan's own skips —
// parked, disabled, lacking a capability — are configuration, not the
// refusal). Value is the concurrency of those deployments together (for
// one deployment, its max concurrency); RetryAfter is the failure's. nil
// when anything else stood in the way.
func capRefusal(tr *Trail, f *Failure) *Refusal {
	if f.Code != CodeNoAvailableModel {
		return nil
	}
	slots, capped := 0, 0
	for _, a := range tr.Attempts {
		if a.Outcome != AttemptSkipped || a.Skip == nil || a.Skip.Code != reason.OverCapacity {
			return nil
		}
		slots += a.Skip.Max
		capped++
	}
	if capped == 0 {
		return nil
	}
	return &Refusal{Limit: limit.KindDeploymentCap, Value: int64(slots), RetryAfter: f.RetryAfter}
}
