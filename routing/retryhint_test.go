package routing

import (
	"testing"
	"time"

	"switchyard/routing/config"
	"switchyard/routing/reason"
)

// untilBreakers are open until a time.
type untilBreakers map[int64]time.Time

func (b untilBreakers) Allow(id int64, _ config.BreakerSettings) (func(Outcome), bool) {
	_, open := b[id]
	return func(Outcome) {}, !open
}
func (b untilBreakers) Open(id int64) (time.Time, bool) { t, ok := b[id]; return t, ok }

// coolingKeys cool until a time (a zero time: quarantined).
type coolingKeys map[int64]time.Time

func (k coolingKeys) Pick(_ int64, ids []int64, _ []int64) (int64, reason.Reason, bool) {
	r, ok := k.Usable(ids)
	if !ok {
		return 0, r, false
	}
	return ids[0], reason.Reason{}, true
}
func (k coolingKeys) Usable(ids []int64) (reason.Reason, bool) {
	var first time.Time
	cooling := false
	for _, id := range ids {
		t, blocked := k[id]
		if !blocked {
			return reason.Reason{}, true
		}
		if !t.IsZero() {
			cooling = true
			if first.IsZero() || t.Before(first) {
				first = t
			}
		}
	}
	if cooling {
		return reason.Reason{Code: reason.KeysCooling, Until: reason.UntilOf(first)}, false
	}
	return reason.Of(reason.KeysQuarantined), false
}
func (coolingKeys) Cool(int64, time.Duration)  {}
func (coolingKeys) Quarantine(int64, KeyFault) {}

// TestNoAvailableModelRetryHint: a 503 no_available_model caused only by
// skips an operator must fix says "do not retry" and gives no wait; one
// caused by states that pass by themselves gives the earliest moment one
// of them passes.
func TestNoAvailableModelRetryHint(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	rt := world(t, nil)
	ex := func(st State) *Executor { return &Executor{State: st, Now: func() time.Time { return now }} }

	t.Run("permanent skips only", func(t *testing.T) {
		// Nothing in the standard tier can see images.
		p := plan(t, rt, "standard", Needs{Kind: config.KindChat, Vision: true}, nil)
		defer p.Release()
		f := ex(State{}).Unavailable(p, &Trail{})
		if f == nil || f.Code != "no_available_model" || !f.NoRetry || f.RetryAfter != 0 {
			t.Fatalf("failure: %+v", f)
		}
	})
	t.Run("quarantined keys and a parked model", func(t *testing.T) {
		rt := world(t, func(s *config.Snapshot) { s.LogicModels[0].Deployments[1].Weight = 0 }) // main on pb parked
		st := State{Keys: coolingKeys{11: {}, 12: {}, 21: {}}}
		p := plan(t, rt, "standard", chat(), &st)
		defer p.Release()
		if f := ex(st).Unavailable(p, &Trail{}); f == nil || !f.NoRetry || f.RetryAfter != 0 {
			t.Fatalf("failure: %+v", f)
		}
	})
	t.Run("cooling keys and an open breaker: the earliest recovery", func(t *testing.T) {
		// main on pa: breaker open 4 s more; main and canary on pb: pb's
		// only key cools 30 s; backup on pa: pa's keys cool 7 s and 9 s.
		st := State{
			Breakers: untilBreakers{101: now.Add(4 * time.Second)},
			Keys:     coolingKeys{11: now.Add(7 * time.Second), 12: now.Add(9 * time.Second), 21: now.Add(30 * time.Second)},
		}
		p := plan(t, rt, "standard", chat(), &st)
		defer p.Release()
		f := ex(st).Unavailable(p, &Trail{})
		if f == nil || f.Code != "no_available_model" || f.NoRetry || f.RetryAfter != 4*time.Second {
			t.Fatalf("failure: %+v", f)
		}
	})
	t.Run("a temporary skip among permanent ones still invites a retry", func(t *testing.T) {
		st := State{Keys: coolingKeys{11: {}, 12: {}, 21: now.Add(2500 * time.Millisecond)}}
		p := plan(t, rt, "standard", chat(), &st)
		defer p.Release()
		f := ex(st).Unavailable(p, &Trail{})
		if f == nil || f.NoRetry || f.RetryAfter != 2500*time.Millisecond {
			t.Fatalf("failure: %+v", f)
		}
	})
	t.Run("temporary without a known end: soon", func(t *testing.T) {
		tr := &Trail{Skips: []Skip{{Model: "m", Reason: reason.Reason{Code: reason.OverCapacity, Max: 4}}, {Model: "n", Reason: reason.Of(reason.DisabledByOperator)}}}
		f := &Failure{Code: "no_available_model"}
		hintRetry(f, tr, now)
		if f.NoRetry || f.RetryAfter != reason.SoonRetry {
			t.Fatalf("failure: %+v", f)
		}
	})
}

func TestReasonCodesTemporary(t *testing.T) {
	for _, c := range []reason.Code{reason.KeysCooling, reason.BreakerOpen, reason.OverCapacity, reason.Unhealthy, reason.LoadUnavailable, reason.KeysTried, reason.RetryBudgetExhausted} {
		if !c.Temporary() {
			t.Errorf("%s should be temporary", c)
		}
	}
	for _, c := range []reason.Code{reason.LacksCapability, reason.Parked, reason.CandidateParked, reason.DisabledByOperator, reason.ProviderDisabled,
		reason.NoProtocol, reason.NoKeys, reason.NoActiveKey, reason.KeysQuarantined, reason.WrongKind, reason.NoDeployments} {
		if c.Temporary() {
			t.Errorf("%s should be permanent", c)
		}
	}
}
