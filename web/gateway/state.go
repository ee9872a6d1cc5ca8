package gateway

import (
	"context"
	"errors"
	"time"

	"switchyard/routing"
	"switchyard/routing/breaker"
	"switchyard/routing/config"
	"switchyard/routing/ladder"
	"switchyard/routing/queue"
	"switchyard/store/redis/loadcount"
	"switchyard/web/metrics"
)

// breakers bridges breaker.Set to routing.Breakers.
type breakers struct{ set *breaker.Set }

func settings(s config.BreakerSettings) breaker.Settings {
	return breaker.Settings{Window: s.Window, MinCalls: s.MinCalls, FailurePercent: s.FailurePercent,
		Open: time.Duration(s.OpenMS) * time.Millisecond, HalfOpenProbes: s.HalfOpenProbes}
}

func (b breakers) Allow(id int64, s config.BreakerSettings) (func(routing.Outcome), bool) {
	p, ok := b.set.Allow(id, settings(s))
	if !ok {
		return nil, false
	}
	return func(o routing.Outcome) { p.Done(breakerOutcome(o)) }, true
}

func breakerOutcome(o routing.Outcome) breaker.Outcome {
	switch o {
	case routing.OutcomeSuccess:
		return breaker.Success
	case routing.OutcomeFailure:
		return breaker.Failure
	}
	return breaker.Ignored
}

func (b breakers) Open(id int64) (time.Time, bool) { return b.set.OpenUntil(id) }

// load bridges loadcount.Counters to routing.Load.
type load struct{ c *loadcount.Counters }

func (l load) Acquire(ctx context.Context, r routing.LoadRequest) (func(), error) {
	d := r.Deployment
	release, err := l.c.Take(ctx, loadcount.Want{ID: d.ID, MaxSlots: d.MaxConcurrency, MaxTokens: d.MaxInflightTokens, Tokens: r.Tokens})
	switch {
	case errors.Is(err, loadcount.ErrFull):
		return nil, routing.ErrFull
	case errors.Is(err, loadcount.ErrTokensFull):
		return nil, routing.ErrTokensFull
	case err != nil:
		return nil, err
	}
	return release, nil
}

func (l load) Load(id int64) (int, int64) { return l.c.Load(id) }

// queueObserver feeds the queue's dequeues and refusals to the metrics
// (set once they exist).
type queueObserver struct{ m *metrics.Metrics }

func (o *queueObserver) Dequeued(c queue.Class, wait time.Duration) {
	if o.m != nil {
		o.m.QueueWait.WithLabelValues(c.String()).Observe(wait.Seconds())
	}
}

func (o *queueObserver) Refused(c queue.Class, why queue.Why) {
	if o.m != nil {
		o.m.QueueRefused.WithLabelValues(c.String(), string(why)).Inc()
	}
}

// slaWatch bridges ladder.Watch to routing.SLAWatch.
type slaWatch struct{ w *ladder.Watch }

func (s slaWatch) Observe(k routing.TierKey, r *config.RStepDown, latency time.Duration, failed bool) {
	s.w.Observe(ladder.Key{Group: k.Group, Tier: k.Tier}, r, latency, failed)
}

func (s slaWatch) SteppedDown(k routing.TierKey) (routing.SLAViolation, bool) {
	v, ok := s.w.SteppedDown(ladder.Key{Group: k.Group, Tier: k.Tier})
	return routing.SLAViolation{Calls: v.Calls, P95: v.P95, ErrorPercent: v.ErrorPercent, OverP95: v.OverP95, OverErrors: v.OverErrors}, ok
}
