package gateway

import (
	"time"

	"switchyard/routing"
	"switchyard/routing/config"
	"switchyard/store/redis/healthboard"
)

// Recorder takes live outcomes of deployments (healthboard.Tracker).
type Recorder interface {
	Record(deploymentID int64, ok bool)
}

// recordingBreakers feeds the outcome of every attempt the breakers see to
// the health tracker: exactly the outcomes that count for health (success,
// and server / timeout / network failures), once per deployment tried.
type recordingBreakers struct {
	inner routing.Breakers
	rec   Recorder
}

func (b recordingBreakers) Allow(id int64, s config.BreakerSettings) (func(routing.Outcome), bool) {
	if inner, ok := b.inner.(breakers); ok { // one closure for the breaker and the tracker
		p, ok := inner.set.Allow(id, settings(s))
		if !ok {
			return nil, false
		}
		return func(o routing.Outcome) {
			p.Done(breakerOutcome(o))
			b.record(id, o)
		}, true
	}
	done := func(routing.Outcome) {}
	if b.inner != nil {
		d, ok := b.inner.Allow(id, s)
		if !ok {
			return nil, false
		}
		done = d
	}
	return func(o routing.Outcome) {
		done(o)
		b.record(id, o)
	}, true
}

// record gives the tracker the outcomes that count for health.
func (b recordingBreakers) record(id int64, o routing.Outcome) {
	switch o {
	case routing.OutcomeSuccess:
		b.rec.Record(id, true)
	case routing.OutcomeFailure:
		b.rec.Record(id, false)
	}
}

func (b recordingBreakers) Open(id int64) (time.Time, bool) {
	if b.inner == nil {
		return time.Time{}, false
	}
	return b.inner.Open(id)
}

// WithHealth returns st with t consulted for down deployments (the router
// skips them as "unhealthy") and fed every attempt's outcome as a live
// sample. Record is an in-memory counter; nothing on the request path
// waits for Redis.
func WithHealth(st routing.State, t *healthboard.Tracker) routing.State {
	if rb, ok := st.Breakers.(recordingBreakers); ok {
		st.Breakers = rb.inner // replace an earlier tracker, never feed two
	}
	st.Health = t
	st.Breakers = recordingBreakers{inner: st.Breakers, rec: t}
	return st
}
