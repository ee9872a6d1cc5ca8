package gateway

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// A peak of requests in flight at or over the high mark, once fallen to a
// quarter of itself, closes the idle upstream connections, again on each
// sample while in flight still falls (a few at most), then returns memory;
// a smaller peak, or a fall that is not deep enough, does nothing; after a
// release only a new peak (the requests still in flight at it count)
// releases again.
func TestMemReleaseAfterPeak(t *testing.T) {
	m := &memRelease{high: 200}
	steps := []struct {
		inFlight int64
		want     releaseStep
	}{
		{150, releaseNone}, {0, releaseNone}, // under the mark
		{1000, releaseNone}, {600, releaseNone}, {251, releaseNone}, // not yet a quarter
		{250, releaseIdle}, {250, releaseMemory}, // passed
		{250, releaseNone}, // the peak is spent; the 250 left are a peak of their own
		{0, releaseIdle}, {0, releaseMemory},
		{150, releaseNone}, {0, releaseNone},
		{300, releaseNone}, {60, releaseIdle}, {900, releaseMemory},
		{900, releaseNone}, {100, releaseIdle}, // a burst whose last streams end over a few samples
		{50, releaseIdle}, {20, releaseIdle}, {10, releaseIdle}, {5, releaseIdle}, {1, releaseMemory},
	}
	for i, s := range steps {
		if got := m.observe(s.inFlight, s.inFlight); got != s.want {
			t.Fatalf("sample %d (%d in flight): step %d, want %d", i, s.inFlight, got, s.want)
		}
	}
	// Memory is returned once more when the callers' idle connections
	// have timed out, and then not again.
	for i := 1; i <= 3*releaseAgain; i++ {
		want := releaseNone
		if i == releaseAgain {
			want = releaseMemory
		}
		if got := m.observe(0, 0); got != want {
			t.Fatalf("sample %d after the release: step %d, want %d", i, got, want)
		}
	}
}

// A burst that opened and closed between two samples is a peak all the
// same: the sample carries the most in flight since the previous one.
func TestMemReleaseAfterBurstBetweenSamples(t *testing.T) {
	m := &memRelease{high: 200}
	for i, s := range []struct {
		peak, now int64
		want      releaseStep
	}{
		{10, 10, releaseNone},
		{1000, 0, releaseIdle}, // 1,000 streams came and went within the period
		{0, 0, releaseMemory},
		{150, 0, releaseNone}, // under the mark
		{0, 0, releaseNone},
	} {
		if got := m.observe(s.peak, s.now); got != s.want {
			t.Fatalf("sample %d (peak %d, %d in flight): step %d, want %d", i, s.peak, s.now, got, s.want)
		}
	}
}

// The loop closes the idle connections on the sample that finds the peak
// passed and on the next while in flight still falls, frees memory once it
// has settled, and stops with its context.
func TestReleaseLoopOrder(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	tick := make(chan time.Time)
	samples := make(chan int64, 1)
	var log []string
	done := make(chan struct{})
	go func() {
		defer close(done)
		releaseLoop(ctx, tick, func() (int64, int64) { n := <-samples; return n, n }, releaseActions{
			closeIdle: func() { log = append(log, "close idle") },
			free:      func() { log = append(log, "free") },
		})
	}()
	for _, n := range []int64{releaseHighMark * 2, releaseHighMark, releaseHighMark / 2, releaseHighMark / 4, releaseHighMark / 4} {
		samples <- n
		tick <- time.Time{}
	}
	samples <- 0
	tick <- time.Time{} // the last sample has been taken when this tick is
	cancel()
	<-done
	if want := "[close idle close idle free]"; fmt.Sprint(log) != want {
		t.Fatalf("actions %v, want %s", log, want)
	}
}
