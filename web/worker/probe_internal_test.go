package worker

import (
	"testing"
	"time"
)

// TestScheduleSpreadsStablyOverTheInterval: 5,000 deployments in a round
// that starts with its tick are placed over the first 80% of the interval,
// evenly (no tenth of the spread holds much more than a tenth of them), at
// about the same point every round (the jitter moves a point by at most
// 2.5% of the spread, or wraps it around the spread's end), and a round
// that starts late squeezes into what is left of the tick, never below a
// quarter interval.
func TestScheduleSpreadsStablyOverTheInterval(t *testing.T) {
	const every = time.Minute
	ids := make([]int64, 5000)
	for i := range ids {
		ids[i] = int64(i + 1)
	}
	tick := time.Unix(0, 1_800_000_000_000_000_000/int64(every)*int64(every))
	span := time.Duration(float64(every) * spreadShare)

	a := schedule(ids, tick, every, 1)
	b := schedule(ids, tick, every, 2)
	var tenths [10]int
	for i := range ids {
		d := a[i].Sub(tick)
		if d < 0 || d >= span {
			t.Fatalf("deployment %d at %s, outside [0, %s)", ids[i], d, span)
		}
		tenths[d*10/span]++
		moved := (b[i].Sub(a[i]) + span) % span // distance on the circle
		moved = min(moved, span-moved)
		if moved > time.Duration(float64(span)*jitterShare)+time.Millisecond {
			t.Fatalf("deployment %d moved %s between rounds", ids[i], moved)
		}
	}
	for k, n := range tenths {
		if n > 650 || n < 350 { // 500 expected
			t.Fatalf("tenth %d of the spread holds %d of 5000 probes: %v", k, n, tenths)
		}
	}

	// Started 30 s into the tick: spread over the 18 s left of the 48 s.
	late := tick.Add(30 * time.Second)
	for i, at := range schedule(ids, late, every, 3) {
		if d := at.Sub(late); d < 0 || d >= 18*time.Second {
			t.Fatalf("late round: deployment %d at +%s", ids[i], d)
		}
	}
	// Started 50 s in, past the spread's end: a quarter interval from now.
	late = tick.Add(50 * time.Second)
	var last time.Duration
	for _, at := range schedule(ids, late, every, 4) {
		d := at.Sub(late)
		if d < 0 || d >= every/4 {
			t.Fatalf("very late round: a probe at +%s", d)
		}
		last = max(last, d)
	}
	if last < every/8 {
		t.Fatalf("very late round squeezed into %s", last)
	}
}
