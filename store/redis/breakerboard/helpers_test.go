package breakerboard

import (
	"log/slog"
	"sync"
	"testing"
	"time"

	"switchyard/routing/breaker"
)

type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func newFakeClock() *fakeClock { return &fakeClock{now: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func quietLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

func newTestSet(clock *fakeClock) *breaker.Set {
	return breaker.NewSet(breaker.Options{Clock: clock.Now, Logger: quietLogger()})
}

func calls(t *testing.T, s *breaker.Set, id int64, st breaker.Settings, o breaker.Outcome, n int) {
	t.Helper()
	for i := range n {
		p, ok := s.Allow(id, st)
		if !ok {
			t.Fatalf("call %d of %d refused (state %s)", i+1, n, s.State(id))
		}
		p.Done(o)
	}
}

// trip opens breaker id with settings st.
func trip(t *testing.T, s *breaker.Set, id int64, st breaker.Settings) {
	t.Helper()
	calls(t, s, id, st, breaker.Failure, st.WithDefaults().MinCalls)
	if got := s.State(id); got != breaker.Open {
		t.Fatalf("state after %d failures = %s, want open", st.WithDefaults().MinCalls, got)
	}
}
