package ladder

import (
	"math"
	"testing"
	"time"

	"switchyard/routing/config"
)

type clock struct{ t time.Time }

func (c *clock) now() time.Time          { return c.t }
func (c *clock) step(d time.Duration)    { c.t = c.t.Add(d) }
func within(got, want, tol float64) bool { return math.Abs(got-want) <= tol }

func TestStepDownOnLatencyAndRecovery(t *testing.T) {
	c := &clock{t: time.Unix(1_700_000_000, 0)}
	w := New(c.now)
	k := Key{Group: 1, Tier: config.TierDeep}
	r := &config.RStepDown{From: config.TierDeep, To: config.TierStandard, P95: 800 * time.Millisecond, Window: 10 * time.Second, MinCalls: 20, Hold: 5 * time.Second}
	// 100 calls at 100..1090 ms: p95 ≈ 1 s, but only after 20 calls count.
	for i := range 100 {
		w.Observe(k, r, time.Duration(100+10*i)*time.Millisecond, false)
		c.step(60 * time.Millisecond)
		if i < 19 {
			if _, down := w.SteppedDown(k); down {
				t.Fatalf("stepped down after %d calls (min 20)", i+1)
			}
		}
	}
	why, down := w.SteppedDown(k)
	if !down || why.OverP95 != 800*time.Millisecond || why.OverErrors != 0 || why.P95 <= 800*time.Millisecond || why.Calls < 20 {
		t.Fatalf("not stepped down on p95: %v %+v", down, why)
	}
	st := w.State(k, r)
	if !st.SteppedDown || st.Until.Sub(why.At) != 5*time.Second || st.Calls != 0 {
		t.Fatalf("state while stepped down: %+v", st)
	}
	c.step(5 * time.Second)
	if _, down := w.SteppedDown(k); down {
		t.Fatal("still stepped down after the hold")
	}
	// Fresh, fast calls keep it up.
	for range 50 {
		w.Observe(k, r, 50*time.Millisecond, false)
		c.step(100 * time.Millisecond)
	}
	if _, down := w.SteppedDown(k); down {
		t.Fatal("stepped down on healthy calls")
	}
	if st := w.State(k, r); st.Calls != 50 || st.P95 > 60*time.Millisecond || st.ErrorPercent != 0 {
		t.Fatalf("healthy state %+v", st)
	}
}

func TestStepDownOnErrors(t *testing.T) {
	c := &clock{t: time.Unix(1_700_000_000, 0)}
	w := New(c.now)
	k := Key{Group: 2, Tier: config.TierStandard}
	r := &config.RStepDown{From: config.TierStandard, To: config.TierFast, ErrorPercent: 30, Window: 2 * time.Second, MinCalls: 10, Hold: time.Second}
	for i := range 40 {
		w.Observe(k, r, 10*time.Millisecond, i%4 == 0) // 25 %: under the threshold
		c.step(20 * time.Millisecond)
	}
	if _, down := w.SteppedDown(k); down {
		t.Fatal("stepped down at 25 % errors (threshold 30 %)")
	}
	if st := w.State(k, r); !within(st.ErrorPercent, 25, 3) {
		t.Fatalf("error rate %.1f, want ~25", st.ErrorPercent)
	}
	for i := range 40 {
		w.Observe(k, r, 10*time.Millisecond, i%2 == 0)
		c.step(20 * time.Millisecond)
	}
	why, down := w.SteppedDown(k)
	if !down || why.OverErrors != 30 || why.ErrorPercent <= 30 {
		t.Fatalf("not stepped down at ~40 %% errors: %+v", why)
	}
	// Old slices slide out of the window.
	c.step(3 * time.Second)
	if st := w.State(k, r); st.Calls != 0 {
		t.Fatalf("calls older than the window still count: %+v", st)
	}
}

func TestQuantile(t *testing.T) {
	var h [histBuckets]int64
	for ms := 1; ms <= 1000; ms++ {
		h[bucketOf(float64(ms))]++
	}
	if got := quantile(h[:], 0.95); !within(float64(got.Milliseconds()), 950, 50) {
		t.Fatalf("p95 of 1..1000 ms = %v", got)
	}
}

// The hot path: every tier request of a group with a step-down rule asks
// SteppedDown in route, and records one outcome after its answer.
func BenchmarkSteppedDown(b *testing.B) {
	w := New(nil)
	k := Key{Group: 1, Tier: config.TierDeep}
	r := &config.RStepDown{From: config.TierDeep, To: config.TierStandard, P95: time.Second, Window: time.Minute, MinCalls: 20, Hold: time.Second}
	w.Observe(k, r, time.Millisecond, false)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			w.SteppedDown(k)
		}
	})
}

func BenchmarkObserve(b *testing.B) {
	w := New(nil)
	k := Key{Group: 1, Tier: config.TierDeep}
	r := &config.RStepDown{From: config.TierDeep, To: config.TierStandard, P95: time.Second, Window: time.Minute, MinCalls: 20, Hold: time.Second}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		w.Observe(k, r, time.Duration(i%500)*time.Millisecond, i%50 == 0)
	}
}
