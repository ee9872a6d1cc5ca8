package breaker

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
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

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

func quietLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

func newTestSet(clock *fakeClock) *Set {
	return NewSet(Options{Clock: clock.Now, Logger: quietLogger()})
}

// call runs one call through the breaker and reports whether it was allowed.
func call(s *Set, id int64, st Settings, o Outcome) bool {
	p, ok := s.Allow(id, st)
	if ok {
		p.Done(o)
	}
	return ok
}

func calls(t *testing.T, s *Set, id int64, st Settings, o Outcome, n int) {
	t.Helper()
	for i := range n {
		if !call(s, id, st, o) {
			t.Fatalf("call %d of %d refused (state %s)", i+1, n, s.State(id))
		}
	}
}

// trip opens deployment id's breaker with default settings.
func trip(t *testing.T, s *Set, id int64, st Settings) {
	t.Helper()
	calls(t, s, id, st, Failure, st.WithDefaults().MinCalls)
	if got := s.State(id); got != Open {
		t.Fatalf("state after %d failures = %s, want open", st.WithDefaults().MinCalls, got)
	}
}

func TestSettingsWithDefaults(t *testing.T) {
	tests := []struct {
		name string
		in   Settings
		want Settings
	}{
		{"zero is defaults", Settings{}, Defaults},
		{"partial override", Settings{Window: 10, Open: time.Second}, Settings{Window: 10, MinCalls: 10, FailurePercent: 40, Open: time.Second, HalfOpenProbes: 3}},
		{"percent clamped", Settings{FailurePercent: 250}, Settings{Window: 50, MinCalls: 20, FailurePercent: 100, Open: 15 * time.Second, HalfOpenProbes: 3}},
		{"negative is default", Settings{Window: -1, HalfOpenProbes: -5}, Defaults},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.in.WithDefaults(); got != tt.want {
				t.Fatalf("WithDefaults() = %+v, want %+v", got, tt.want)
			}
		})
	}
	if Defaults != (Settings{50, 20, 40, 15 * time.Second, 3}) {
		t.Fatalf("Defaults = %+v", Defaults)
	}
}

func TestStaysClosedBelowMinCalls(t *testing.T) {
	s := newTestSet(newFakeClock())
	calls(t, s, 1, Settings{}, Failure, 19)
	if got := s.State(1); got != Closed {
		t.Fatalf("state after 19 of 19 failures = %s, want closed (below min calls)", got)
	}
	calls(t, s, 1, Settings{}, Failure, 1)
	if got := s.State(1); got != Open {
		t.Fatalf("state after 20 of 20 failures = %s, want open", got)
	}
}

func TestOpensExactlyAtThreshold(t *testing.T) {
	type step struct {
		o Outcome
		n int
	}
	tests := []struct {
		name  string
		st    Settings
		steps []step
		want  State
	}{
		{"39.x% stays closed", Settings{}, []step{{Success, 31}, {Failure, 19}}, Closed}, // 19/50 = 38 %
		{"35% at min calls stays closed", Settings{}, []step{{Success, 13}, {Failure, 7}}, Closed},
		{"40% at min calls opens", Settings{}, []step{{Success, 12}, {Failure, 8}}, Open},
		{"40% reached by a success opens", Settings{}, []step{{Failure, 8}, {Success, 12}}, Open},
		{"40% of a full window opens", Settings{}, []step{{Success, 30}, {Failure, 20}}, Open},
		{"old failures slide out", Settings{}, []step{{Failure, 7}, {Success, 50}, {Failure, 19}}, Closed}, // 19/50
		{"custom 50% of 10", Settings{Window: 10, MinCalls: 10, FailurePercent: 50}, []step{{Success, 5}, {Failure, 5}}, Open},
		{"custom 49% of 10", Settings{Window: 10, MinCalls: 10, FailurePercent: 50}, []step{{Success, 6}, {Failure, 4}}, Closed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newTestSet(newFakeClock())
			for i, sp := range tt.steps {
				last := i == len(tt.steps)-1
				for j := range sp.n {
					if !call(s, 7, tt.st, sp.o) {
						t.Fatalf("step %d call %d refused", i, j)
					}
					// Nothing opens before the very last call.
					if !(last && j == sp.n-1) && s.State(7) != Closed {
						t.Fatalf("opened early at step %d call %d", i, j)
					}
				}
			}
			if got := s.State(7); got != tt.want {
				t.Fatalf("state = %s, want %s (%+v)", got, tt.want, s.Snapshot()[7])
			}
		})
	}
}

func TestIgnoredNeverOpens(t *testing.T) {
	s := newTestSet(newFakeClock())
	// A storm of 429s and content filters.
	calls(t, s, 1, Settings{}, Ignored, 1000)
	if got := s.State(1); got != Closed {
		t.Fatalf("state after 1000 ignored = %s, want closed", got)
	}
	if st := s.Snapshot()[1]; st.Calls != 0 {
		t.Fatalf("ignored outcomes entered the window: %+v", st)
	}
	// Ignored outcomes dilute nothing either: 8 failures in 20 counted calls.
	calls(t, s, 1, Settings{}, Failure, 8)
	calls(t, s, 1, Settings{}, Ignored, 100)
	calls(t, s, 1, Settings{}, Success, 11)
	if got := s.State(1); got != Closed {
		t.Fatalf("state after 19 counted calls = %s", got)
	}
	calls(t, s, 1, Settings{}, Success, 1)
	if got := s.State(1); got != Open {
		t.Fatalf("state after 8 of 20 failures = %s, want open", got)
	}
	// The zero Outcome is treated as ignored.
	s2 := newTestSet(newFakeClock())
	calls(t, s2, 1, Settings{}, Outcome(0), 100)
	if st := s2.Snapshot()[1]; st.Calls != 0 {
		t.Fatalf("zero outcome counted: %+v", st)
	}
}

func TestOpenToHalfOpenAfterDuration(t *testing.T) {
	clock := newFakeClock()
	s := newTestSet(clock)
	trip(t, s, 1, Settings{})
	if call(s, 1, Settings{}, Success) {
		t.Fatal("open breaker allowed a call")
	}
	clock.Advance(15*time.Second - time.Millisecond)
	if call(s, 1, Settings{}, Success) {
		t.Fatal("breaker allowed a call before the open duration elapsed")
	}
	clock.Advance(time.Millisecond)
	if got := s.State(1); got != HalfOpen {
		t.Fatalf("state after 15s = %s, want half_open", got)
	}
	// A per-deployment open duration is honoured.
	st := Settings{Open: 2 * time.Second}
	trip(t, s, 2, st)
	clock.Advance(2 * time.Second)
	if got := s.State(2); got != HalfOpen {
		t.Fatalf("state after custom 2s = %s, want half_open", got)
	}
}

// TestOpenUntil: an open breaker says when it admits probes again — what a
// caller refused for it is told to wait.
func TestOpenUntil(t *testing.T) {
	clock := newFakeClock()
	s := newTestSet(clock)
	if _, open := s.OpenUntil(1); open {
		t.Fatal("an unknown breaker is open")
	}
	st := Settings{Open: 10 * time.Second}
	trip(t, s, 1, st)
	opened := clock.Now()
	clock.Advance(4 * time.Second)
	if until, open := s.OpenUntil(1); !open || !until.Equal(opened.Add(10*time.Second)) {
		t.Fatalf("OpenUntil = %v %v, want %v true", until, open, opened.Add(10*time.Second))
	}
	clock.Advance(6 * time.Second)
	if _, open := s.OpenUntil(1); open {
		t.Fatal("still open after its open duration (half-open admits probes)")
	}
}

func halfOpen(t *testing.T, clock *fakeClock, s *Set, id int64, st Settings) {
	t.Helper()
	trip(t, s, id, st)
	clock.Advance(st.WithDefaults().Open)
	if got := s.State(id); got != HalfOpen {
		t.Fatalf("state = %s, want half_open", got)
	}
}

func TestHalfOpenAdmitsOnlyNProbes(t *testing.T) {
	clock := newFakeClock()
	s := newTestSet(clock)
	halfOpen(t, clock, s, 1, Settings{})

	var permits []Permit
	for i := range 3 {
		p, ok := s.Allow(1, Settings{})
		if !ok {
			t.Fatalf("probe %d refused", i+1)
		}
		permits = append(permits, p)
	}
	if _, ok := s.Allow(1, Settings{}); ok {
		t.Fatal("a 4th concurrent probe was admitted")
	}
	if got := s.Snapshot()[1].ProbesInFlight; got != 3 {
		t.Fatalf("ProbesInFlight = %d, want 3", got)
	}
	// An ignored probe (a 429) gives its permit back; done twice it does
	// not give back two.
	permits[0].Done(Ignored)
	permits[0].Done(Ignored)
	p, ok := s.Allow(1, Settings{})
	if !ok {
		t.Fatal("permit not returned after an ignored probe")
	}
	if _, ok := s.Allow(1, Settings{}); ok {
		t.Fatal("double Done returned two permits")
	}
	// A recorded probe does not give its permit back: the window is 3 calls.
	permits[1].Done(Success)
	if _, ok := s.Allow(1, Settings{}); ok {
		t.Fatal("a recorded probe freed a permit beyond the probe window")
	}
	p.Done(Success)
	permits[2].Done(Success)
	if got := s.State(1); got != Closed {
		t.Fatalf("state after 3 successful probes = %s, want closed", got)
	}
}

func TestHalfOpenClosesAfterSuccessfulProbes(t *testing.T) {
	clock := newFakeClock()
	s := newTestSet(clock)
	halfOpen(t, clock, s, 1, Settings{})
	calls(t, s, 1, Settings{}, Success, 3)
	if got := s.State(1); got != Closed {
		t.Fatalf("state = %s, want closed", got)
	}
	// A fresh window: 19 failures do not reopen it.
	if st := s.Snapshot()[1]; st.Calls != 0 || st.Failures != 0 {
		t.Fatalf("window not fresh after closing: %+v", st)
	}
	calls(t, s, 1, Settings{}, Failure, 19)
	if got := s.State(1); got != Closed {
		t.Fatalf("state = %s, want closed below min calls of the fresh window", got)
	}
}

func TestHalfOpenReopensAfterFailedProbe(t *testing.T) {
	tests := []struct {
		name     string
		st       Settings
		outcomes []Outcome
		want     State
	}{
		// 2 of 3 = 67 % >= 40 %: open as soon as the second failure lands.
		{"two of three fail", Settings{}, []Outcome{Failure, Failure}, Open},
		{"first fails, then second", Settings{}, []Outcome{Success, Failure, Failure}, Open},
		// resilience4j: 1 of 3 = 33 % < 40 % closes.
		{"one of three fails", Settings{}, []Outcome{Failure, Success, Success}, Closed},
		{"single probe fails", Settings{HalfOpenProbes: 1}, []Outcome{Failure}, Open},
		{"one failure at 30%", Settings{FailurePercent: 30}, []Outcome{Failure}, Open},
		{"ignored probes then failures", Settings{}, []Outcome{Ignored, Ignored, Failure, Failure}, Open},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clock := newFakeClock()
			s := newTestSet(clock)
			halfOpen(t, clock, s, 1, tt.st)
			for i, o := range tt.outcomes {
				if !call(s, 1, tt.st, o) {
					t.Fatalf("probe %d refused", i+1)
				}
			}
			if got := s.State(1); got != tt.want {
				t.Fatalf("state = %s, want %s", got, tt.want)
			}
			if tt.want == Open {
				if call(s, 1, tt.st, Success) {
					t.Fatal("reopened breaker allowed a call")
				}
				// It waits a full open duration again.
				clock.Advance(tt.st.WithDefaults().Open)
				if got := s.State(1); got != HalfOpen {
					t.Fatalf("state after second open duration = %s", got)
				}
			}
		})
	}
}

func TestDroppedProbePermitIsReclaimed(t *testing.T) {
	clock := newFakeClock()
	s := NewSet(Options{Clock: clock.Now, Logger: quietLogger(), ProbeTimeout: 30 * time.Second})
	halfOpen(t, clock, s, 1, Settings{})
	var leaked []Permit
	for range 3 {
		p, ok := s.Allow(1, Settings{})
		if !ok {
			t.Fatal("probe refused")
		}
		leaked = append(leaked, p) // never completed: a bug in the caller
	}
	clock.Advance(30 * time.Second)
	if _, ok := s.Allow(1, Settings{}); ok {
		t.Fatal("permit reclaimed before its deadline")
	}
	clock.Advance(time.Millisecond)
	calls(t, s, 1, Settings{}, Success, 3)
	if got := s.State(1); got != Closed {
		t.Fatalf("state = %s, want closed after reclaimed probes succeeded", got)
	}
	// The leaked permits completing late change nothing.
	for _, p := range leaked {
		p.Done(Failure)
	}
	if st := s.Snapshot()[1]; st.State != Closed || st.Calls != 0 {
		t.Fatalf("late Done of reclaimed permits counted: %+v", st)
	}
}

func TestStalePermitsAreNotCounted(t *testing.T) {
	clock := newFakeClock()
	s := newTestSet(clock)
	// A slow call admitted while closed...
	slow, _ := s.Allow(1, Settings{})
	trip(t, s, 1, Settings{})
	clock.Advance(15 * time.Second)
	if s.State(1) != HalfOpen {
		t.Fatal("not half-open")
	}
	// ...finishing during half-open is not a probe.
	slow.Done(Success)
	slow.Done(Success)
	if st := s.Snapshot()[1]; st.Calls != 0 {
		t.Fatalf("stale closed permit counted in the probe window: %+v", st)
	}
	Permit{}.Done(Failure) // the zero permit is inert
}

func TestSettingsChangeKeepsRecentOutcomes(t *testing.T) {
	s := newTestSet(newFakeClock())
	st := Settings{}
	calls(t, s, 1, st, Failure, 5)
	calls(t, s, 1, st, Success, 15)
	// Shrink the window to 10: the last 10 outcomes (all successes) remain.
	small := Settings{Window: 10, MinCalls: 10}
	calls(t, s, 1, small, Success, 1)
	if got := s.Snapshot()[1]; got.Calls != 10 || got.Failures != 0 || got.Settings.Window != 10 {
		t.Fatalf("after shrink: %+v", got)
	}
	calls(t, s, 1, small, Failure, 3)
	if got := s.State(1); got != Closed {
		t.Fatalf("3/10 = %s, want closed", got)
	}
	calls(t, s, 1, small, Failure, 1)
	if got := s.State(1); got != Open {
		t.Fatalf("4/10 = %s, want open", got)
	}
}

func TestStateChangeIsLoggedAndReported(t *testing.T) {
	clock := newFakeClock()
	var buf bytes.Buffer
	var mu sync.Mutex
	var changes []string
	var s *Set
	s = NewSet(Options{
		Clock:  clock.Now,
		Logger: slog.New(slog.NewJSONHandler(&buf, nil)),
		OnStateChange: func(id int64, from, to State) {
			mu.Lock()
			changes = append(changes, from.String()+">"+to.String())
			mu.Unlock()
			_ = s.State(id) // calling back into the Set must not deadlock
		},
	})
	halfOpen(t, clock, s, 42, Settings{})
	calls(t, s, 42, Settings{}, Success, 3)

	want := "closed>open,open>half_open,half_open>closed"
	if got := strings.Join(changes, ","); got != want {
		t.Fatalf("changes = %s, want %s", got, want)
	}
	first := strings.SplitN(buf.String(), "\n", 2)[0]
	var rec map[string]any
	if err := json.Unmarshal([]byte(first), &rec); err != nil {
		t.Fatal(err)
	}
	if rec["msg"] != "breaker state change" || rec["deployment_id"] != float64(42) ||
		rec["from"] != "closed" || rec["to"] != "open" || rec["failure_rate"] != float64(100) {
		t.Fatalf("log record = %v", rec)
	}
}

func TestAllowClosedDoesNotAllocate(t *testing.T) {
	s := newTestSet(newFakeClock())
	st := Settings{Window: 100}
	call(s, 1, st, Success)
	allocs := testing.AllocsPerRun(1000, func() {
		p, _ := s.Allow(1, st)
		p.Done(Success)
	})
	if allocs != 0 {
		t.Fatalf("Allow+Done allocates %.1f times per call when closed", allocs)
	}
}

func TestConcurrentUse(t *testing.T) {
	clock := newFakeClock()
	var transitions atomic.Int64
	s := NewSet(Options{Clock: clock.Now, Logger: quietLogger(),
		OnStateChange: func(int64, State, State) { transitions.Add(1) }})
	st := Settings{Window: 20, MinCalls: 10, Open: time.Second, HalfOpenProbes: 2}

	stop := make(chan struct{})
	var bg sync.WaitGroup
	bg.Add(1)
	go func() { // time passes and the console reads snapshots
		defer bg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			clock.Advance(100 * time.Millisecond)
			for id, status := range s.Snapshot() {
				if status.ProbesInFlight > 2 {
					t.Errorf("deployment %d: %d probes in flight, max 2", id, status.ProbesInFlight)
				}
			}
			time.Sleep(time.Millisecond)
		}
	}()

	var wg sync.WaitGroup
	for g := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(g), 1))
			for range 5000 {
				id := int64(r.IntN(4))
				p, ok := s.Allow(id, st)
				if !ok {
					continue
				}
				switch n := r.IntN(10); {
				case n < 4:
					p.Done(Failure)
				case n < 5:
					p.Done(Ignored)
				default:
					p.Done(Success)
				}
			}
		}()
	}
	wg.Wait()
	close(stop)
	bg.Wait()
	if transitions.Load() == 0 {
		t.Fatal("no state transitions under a 40% failure mix")
	}
	for id, status := range s.Snapshot() {
		if status.ProbesInFlight != 0 {
			t.Errorf("deployment %d: %d probes still in flight", id, status.ProbesInFlight)
		}
	}
}

func BenchmarkAllowClosed(b *testing.B) {
	st := Settings{}
	b.Run("serial", func(b *testing.B) {
		s := NewSet(Options{Logger: quietLogger()})
		b.ReportAllocs()
		for b.Loop() {
			p, ok := s.Allow(1, st)
			if ok {
				p.Done(Success)
			}
		}
	})
	b.Run("parallel", func(b *testing.B) {
		s := NewSet(Options{Logger: quietLogger()})
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			var id int64
			for pb.Next() {
				id = (id + 1) & 7
				p, ok := s.Allow(id, st)
				if ok {
					p.Done(Success)
				}
			}
		})
	})
}
