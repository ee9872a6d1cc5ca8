package healthboard

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"switchyard/routing/health"
	"switchyard/store/storetest"
)

// testRedis is the real Redis under a fresh prefix (see store/storetest).
func testRedis(t testing.TB) (redis.UniversalClient, string) { return storetest.TestRedis(t, "health") }

func TestNext(t *testing.T) {
	s := health.Settings{}.WithDefaults() // min 3 samples, degraded < 90 %, down < 50 %, 2 probes to recover
	now := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	earlier := now.Add(-time.Hour)
	healthy := health.Status{State: health.Healthy, Since: earlier}
	down := health.Status{State: health.Down, Since: earlier, Streak: -3}
	for _, tc := range []struct {
		name       string
		cur        health.Status
		c          health.Counts
		p          health.Probe
		want       health.State
		wantStreak int
		wantFrom   int64
		changed    bool
	}{
		{"first sight without samples is healthy", health.Status{}, health.Counts{}, health.NoProbe, health.Healthy, 0, 0, false},
		{"too few samples keep the state", healthy, health.Counts{Failed: 2}, health.NoProbe, health.Healthy, 0, 0, false},
		{"too few samples keep degraded", health.Status{State: health.Degraded, Since: earlier}, health.Counts{OK: 1}, health.NoProbe, health.Degraded, 0, 0, false},
		{"failing probes take it down", healthy, health.Counts{ProbeFailed: 3}, health.ProbeFailed, health.Down, -1, 0, true},
		{"live failures count too", healthy, health.Counts{OK: 4, Failed: 6}, health.NoProbe, health.Down, 0, 0, true},
		{"probes and live traffic combine", healthy, health.Counts{OK: 7, ProbeFailed: 3}, health.ProbeFailed, health.Degraded, -1, 0, true},
		{"at the degraded threshold is healthy", health.Status{State: health.Degraded, Since: earlier}, health.Counts{OK: 9, Failed: 1}, health.NoProbe, health.Healthy, 0, 0, true},
		{"exactly half is degraded", healthy, health.Counts{OK: 5, Failed: 5}, health.NoProbe, health.Degraded, 0, 0, true},
		{"down stays down on a good window without probes", down, health.Counts{OK: 100}, health.NoProbe, health.Down, -3, 0, false},
		{"one good probe is not enough", down, health.Counts{ProbeOK: 1}, health.ProbePassed, health.Down, 1, 0, false},
		{"two good probes in a row recover", health.Status{State: health.Down, Since: earlier, Streak: 1}, health.Counts{ProbeFailed: 3, ProbeOK: 2}, health.ProbePassed, health.Degraded, 2, 101, true},
		{"a failed probe resets the streak", health.Status{State: health.Down, Since: earlier, Streak: 1}, health.Counts{ProbeFailed: 3}, health.ProbeFailed, health.Down, -1, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := s.Next(tc.cur, tc.c, tc.p, now, 100)
			if got.State != tc.want || got.Streak != tc.wantStreak || got.From != tc.wantFrom {
				t.Fatalf("state %s streak %d from %d, want %s %d %d", got.State, got.Streak, got.From, tc.want, tc.wantStreak, tc.wantFrom)
			}
			if changed := got.Since.Equal(now) && !tc.cur.Since.Equal(now); changed != tc.changed && tc.cur.State != "" {
				t.Fatalf("since %s (changed %v, want %v)", got.Since, changed, tc.changed)
			}
			if tc.changed && got.Reason == "" {
				t.Fatal("a change without a reason")
			}
			if tc.want == health.Degraded && tc.cur.State == health.Down && got.Samples != 0 {
				t.Fatalf("a recovered deployment keeps %d old samples", got.Samples)
			}
		})
	}
}

func TestSettingsValidate(t *testing.T) {
	if err := (health.Settings{}).WithDefaults().Validate(); err != nil {
		t.Fatal(err)
	}
	if err := (health.Settings{DownBelow: 0.9, DegradedBelow: 0.5}).Validate(); err == nil {
		t.Fatal("down above degraded accepted")
	}
	if err := (health.Settings{DownBelow: 1.5, DegradedBelow: 2}).Validate(); err == nil {
		t.Fatal("thresholds above 1 accepted")
	}
}

// clock is a settable time for boards.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func TestBoardWindowSlidesAndEvaluates(t *testing.T) {
	rdb, prefix := testRedis(t)
	ctx := context.Background()
	clk := &clock{t: time.Now().Truncate(time.Minute)}
	b := NewBoard(rdb, prefix, health.Settings{Bucket: time.Minute, Window: 3 * time.Minute})
	b.now = clk.now

	// Minute 0: deployment 1 fails live traffic, deployment 2 succeeds.
	if err := b.Add(ctx, map[int64]health.Counts{1: {OK: 1, Failed: 4}, 2: {OK: 5}}); err != nil {
		t.Fatal(err)
	}
	changes, states, err := b.Evaluate(ctx, []int64{1, 2}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if states[1].State != health.Down || states[2].State != health.Healthy || len(changes) != 1 || changes[0].DeploymentID != 1 || changes[0].To != health.Down {
		t.Fatalf("states %+v changes %+v", states, changes)
	}
	if st := states[1]; st.Counts != (health.Counts{OK: 1, Failed: 4}) || st.Samples != 5 || st.Score != 0.2 {
		t.Fatalf("deployment 1 scored %+v", st)
	}
	if down, err := b.Down(ctx); err != nil || len(down) != 1 {
		t.Fatalf("down set %v, %v", down, err)
	} else if _, ok := down[1]; !ok {
		t.Fatalf("down set %v, want {1}", down)
	}

	// Three minutes on, minute 0 left the window: nothing counts any more.
	clk.add(3 * time.Minute)
	w, err := b.Window(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(w) != 0 {
		t.Fatalf("window after 3 minutes %+v, want empty", w)
	}
	// Still down: only probes bring it back.
	_, states, _ = b.Evaluate(ctx, []int64{1, 2}, nil)
	if states[1].State != health.Down {
		t.Fatalf("deployment 1 %s without probes", states[1].State)
	}
	b.Add(ctx, map[int64]health.Counts{1: {ProbeOK: 1}})
	_, states, _ = b.Evaluate(ctx, []int64{1, 2}, map[int64]health.Probe{1: health.ProbePassed})
	if states[1].State != health.Down {
		t.Fatal("one probe recovered it")
	}
	b.Add(ctx, map[int64]health.Counts{1: {ProbeOK: 1, Failed: 7}})
	changes, states, _ = b.Evaluate(ctx, []int64{1, 2}, map[int64]health.Probe{1: health.ProbePassed})
	if states[1].State != health.Degraded || len(changes) != 1 || changes[0].From != health.Down {
		t.Fatalf("after two probes: %+v %+v", states[1], changes)
	}
	if down, _ := b.Down(ctx); len(down) != 0 {
		t.Fatalf("down set after recovery %v", down)
	}
	// The recovery restarts the window: this minute's failures no longer count.
	clk.add(time.Minute)
	b.Add(ctx, map[int64]health.Counts{1: {OK: 3}})
	_, states, _ = b.Evaluate(ctx, []int64{1, 2}, nil)
	if states[1].State != health.Healthy || states[1].Samples != 3 {
		t.Fatalf("after recovery: %+v", states[1])
	}

	// A deployment no longer listed is dropped from the states.
	if _, _, err := b.Evaluate(ctx, []int64{1}, nil); err != nil {
		t.Fatal(err)
	}
	all, _ := b.Statuses(ctx)
	if _, ok := all[2]; ok || len(all) != 1 {
		t.Fatalf("states %+v, want deployment 2 dropped", all)
	}
	// Bucket keys expire.
	if ttl := rdb.PTTL(ctx, b.bucketKey(b.s.BucketOf(clk.now()))).Val(); ttl <= 0 || ttl > 5*time.Minute {
		t.Fatalf("bucket ttl %s", ttl)
	}
}

func TestTrackerRecordFlushRefresh(t *testing.T) {
	rdb, prefix := testRedis(t)
	ctx := context.Background()
	b := NewBoard(rdb, prefix, health.Settings{})
	tr := NewTracker(b, TrackerOptions{RefreshEvery: 20 * time.Millisecond, FlushEvery: 20 * time.Millisecond})

	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 100 {
				tr.Record(7, i%4 != 0) // 75 % success
			}
		}()
	}
	wg.Wait()
	if err := tr.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	w, err := b.Window(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if w[7] != (health.Counts{OK: 600, Failed: 200}) {
		t.Fatalf("window %+v", w[7])
	}
	if err := tr.Flush(ctx); err != nil { // nothing new: nothing written
		t.Fatal(err)
	}
	if w, _ := b.Window(ctx, nil); w[7].Samples() != 800 {
		t.Fatalf("second flush doubled counts: %+v", w[7])
	}

	// Down comes from the evaluated states, through a refresh.
	if tr.Down(7) {
		t.Fatal("down before any evaluation")
	}
	b.Add(ctx, map[int64]health.Counts{7: {Failed: 2000}})
	if _, _, err := b.Evaluate(ctx, []int64{7}, nil); err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { tr.Run(runCtx); close(done) }()
	deadline := time.Now().Add(2 * time.Second)
	for !tr.Down(7) && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if !tr.Down(7) || tr.Down(8) {
		t.Fatalf("Down(7)=%v health.Down(8)=%v after refresh", tr.Down(7), tr.Down(8))
	}
	// Outcomes recorded before shutdown are flushed on the way out.
	tr.Record(9, true)
	cancel()
	<-done
	if w, _ := b.Window(ctx, nil); w[9].OK != 1 {
		t.Fatalf("final flush lost outcomes: %+v", w[9])
	}
}

func TestTrackerKeepsOutcomesWhenRedisFails(t *testing.T) {
	rdb, prefix := testRedis(t)
	ctx := context.Background()
	b := NewBoard(rdb, prefix, health.Settings{})
	tr := NewTracker(b, TrackerOptions{})
	tr.Record(3, false)
	dead, cancel := context.WithCancel(ctx)
	cancel()
	if err := tr.Flush(dead); err == nil {
		t.Fatal("flush with a dead context succeeded")
	}
	if err := tr.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if w, _ := b.Window(ctx, nil); w[3].Failed != 1 {
		t.Fatalf("outcome lost across a failed flush: %+v", w[3])
	}
}

func BenchmarkTrackerRecordAndDown(b *testing.B) {
	tr := NewTracker(NewBoard(nil, "bench", health.Settings{}), TrackerOptions{})
	down := map[int64]struct{}{3: {}}
	tr.down.Store(&down)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		var id int64
		for pb.Next() {
			id = (id + 1) % 16
			if !tr.Down(id) {
				tr.Record(id, true)
			}
		}
	})
}
