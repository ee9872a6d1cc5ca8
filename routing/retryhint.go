package routing

import (
	"time"

	"switchyard/routing/adapter"
)

// upstreamRetry is the wait suggested after an upstream failure that said
// nothing about when to come back (a server error, a timeout).
const upstreamRetry = 5 * time.Second

// hintRetry sets the retry advice of a 503 no_available_model from what
// stood in the way: when every skip and failure is permanent (the model
// lacks a capability, is parked or disabled, its protocol is not
// implemented, its keys are quarantined or missing) a retry cannot help, so
// the caller is told not to retry (x-should-retry: false, no Retry-After);
// otherwise Retry-After is the earliest moment one obstacle is expected to
// pass (a key's cooling ends, a breaker half-opens, a slot frees).
func hintRetry(f *Failure, tr *Trail, now time.Time) {
	at, ok := firstPass(tr, now)
	if !ok {
		f.NoRetry, f.RetryAfter = true, 0
		return
	}
	f.NoRetry, f.RetryAfter = false, max(at.Sub(now), time.Millisecond)
}

// firstPass is the earliest time something that stopped the request is
// expected to pass by itself; ok is false when nothing will.
func firstPass(tr *Trail, now time.Time) (at time.Time, ok bool) {
	consider := func(t time.Time) {
		if !ok || t.Before(at) {
			at, ok = t, true
		}
	}
	for _, s := range tr.Skips {
		if t, temp := s.Reason.Passes(now); temp {
			consider(t)
		}
	}
	for _, a := range tr.Attempts {
		switch {
		case a.Outcome == AttemptSkipped && a.Skip != nil:
			if t, temp := a.Skip.Passes(now); temp {
				consider(t)
			}
		case a.Outcome == AttemptFailed:
			switch a.Class {
			case adapter.ClassAuth, adapter.ClassBilling, adapter.ClassBadRequest, adapter.ClassContentFilter:
				// the key is quarantined, or the request itself is refused
			default:
				consider(now.Add(upstreamRetry))
			}
		}
	}
	return at, ok
}
