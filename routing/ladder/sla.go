// Package ladder keeps each route group × tier's recent service level on
// this instance, for the degradation ladder's tier step-down: when a tier's
// p95 latency or error rate over a window breaks its thresholds, its
// traffic steps down to a lighter tier for a hold time, then the tier is
// judged again on fresh calls.
//
// The window is per instance, like the circuit breakers, and for the same
// reasons: every instance sees the same vendors through the same load
// balancer, so each reaches the same verdict within a window on its own
// calls, without a Redis round trip on any request (the journey's hot path
// costs one map read and an atomic load to ask, a short lock to record an
// outcome after the answer is sent). Instances may disagree for at most a
// window, which is the resolution an SLA window has anyway.
package ladder

import (
	"math"
	"sync"
	"sync/atomic"
	"time"

	"switchyard/routing/config"
)

// slices is the number of time slices a window is cut into.
const slices = 10

// latency histogram: bucket i holds latencies below bound(i), bounds
// growing by 10 % from 1 ms (the last bucket is open).
const histBuckets = 160

var bounds = func() [histBuckets]float64 {
	var b [histBuckets]float64
	v := 1.0
	for i := range b {
		b[i] = v
		v *= 1.1
	}
	return b
}()

func bucketOf(ms float64) int {
	if ms < 1 {
		return 0
	}
	i := int(math.Log(ms)/math.Log(1.1)) + 1
	return min(i, histBuckets-1)
}

// Key names a route group's tier.
type Key struct {
	Group int64
	Tier  config.TierName
}

// State is a tier's service level as last judged.
type State struct {
	Calls        int64
	Failed       int64
	P95          time.Duration
	ErrorPercent float64
	// SteppedDown is set while the tier's traffic goes to the lighter
	// tier, until Until; Why is the window that broke the SLA.
	SteppedDown bool
	Until       time.Time
	Why         Violation
}

// Violation is what broke a tier's SLA: the window's figures against the
// rule's thresholds (the P95 or ErrorPercent threshold that was crossed is
// non-zero).
type Violation struct {
	Calls        int64
	P95          time.Duration
	ErrorPercent float64
	OverP95      time.Duration // the threshold crossed, 0 if latency was fine
	OverErrors   int           // the error threshold crossed, 0 if errors were fine
	At           time.Time
}

// Watch holds every tier's window. Safe for concurrent use.
type Watch struct {
	now   func() time.Time
	tiers sync.Map // Key → *tier
}

// New returns an empty Watch; now is the clock (nil: time.Now).
func New(now func() time.Time) *Watch {
	if now == nil {
		now = time.Now
	}
	return &Watch{now: now}
}

type tier struct {
	until atomic.Int64 // unix nanos the step-down lasts until; 0 none

	mu       sync.Mutex
	rule     config.RStepDown
	width    int64 // slice width, ns
	slice    [slices]int64
	calls    [slices]int64
	failed   [slices]int64
	hist     [slices][histBuckets]uint32
	lastEval int64
	why      Violation
}

func (w *Watch) tier(k Key) *tier {
	if t, ok := w.tiers.Load(k); ok {
		return t.(*tier)
	}
	t, _ := w.tiers.LoadOrStore(k, &tier{})
	return t.(*tier)
}

// SteppedDown reports whether tier k's traffic should step down now, and
// why. It takes no lock.
func (w *Watch) SteppedDown(k Key) (Violation, bool) {
	v, ok := w.tiers.Load(k)
	if !ok {
		return Violation{}, false
	}
	t := v.(*tier)
	until := t.until.Load()
	if until == 0 || w.now().UnixNano() >= until {
		return Violation{}, false
	}
	t.mu.Lock()
	why := t.why
	t.mu.Unlock()
	return why, true
}

// Observe records one call of tier k that rule r watches: its latency
// (to the first content for a stream) and whether it failed. A violation
// starts a step-down for the rule's hold and clears the window.
func (w *Watch) Observe(k Key, r *config.RStepDown, latency time.Duration, failed bool) {
	if r == nil {
		return
	}
	t := w.tier(k)
	now := w.now()
	ns := now.UnixNano()
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.rule != *r {
		t.reset(*r)
	}
	if until := t.until.Load(); until != 0 && ns < until {
		return // stepped down: the few calls still here (reasoning) judge nothing
	}
	cur := ns / t.width
	i := cur % slices
	if t.slice[i] != cur {
		t.slice[i], t.calls[i], t.failed[i] = cur, 0, 0
		clear(t.hist[i][:])
	}
	t.calls[i]++
	if failed {
		t.failed[i]++
	} else {
		t.hist[i][bucketOf(float64(latency)/float64(time.Millisecond))]++
	}
	// Judge at most twenty times a window.
	if ns-t.lastEval < t.width/2 {
		return
	}
	t.lastEval = ns
	s := t.sums(cur)
	if s.Calls < int64(t.rule.MinCalls) {
		return
	}
	var v Violation
	if t.rule.P95 > 0 && s.P95 > t.rule.P95 {
		v.OverP95 = t.rule.P95
	}
	if t.rule.ErrorPercent > 0 && s.ErrorPercent > float64(t.rule.ErrorPercent) {
		v.OverErrors = t.rule.ErrorPercent
	}
	if v.OverP95 == 0 && v.OverErrors == 0 {
		return
	}
	v.Calls, v.P95, v.ErrorPercent, v.At = s.Calls, s.P95, s.ErrorPercent, now
	t.why = v
	t.until.Store(now.Add(t.rule.Hold).UnixNano())
	t.clearWindow()
}

// State is tier k's figures now (for Test route and the dashboard).
func (w *Watch) State(k Key, r *config.RStepDown) State {
	v, ok := w.tiers.Load(k)
	if !ok || r == nil {
		return State{}
	}
	t := v.(*tier)
	now := w.now()
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.rule != *r {
		return State{}
	}
	s := t.sums(now.UnixNano() / t.width)
	if until := t.until.Load(); until != 0 && now.UnixNano() < until {
		s.SteppedDown, s.Until, s.Why = true, time.Unix(0, until), t.why
	}
	return s
}

func (t *tier) reset(r config.RStepDown) {
	t.rule = r
	t.width = max(int64(r.Window)/slices, int64(time.Millisecond))
	t.until.Store(0)
	t.clearWindow()
}

func (t *tier) clearWindow() {
	t.slice, t.calls, t.failed = [slices]int64{}, [slices]int64{}, [slices]int64{}
	t.hist = [slices][histBuckets]uint32{}
}

// sums adds up the slices still in the window ending in slice cur.
func (t *tier) sums(cur int64) State {
	var s State
	var h [histBuckets]int64
	for i := range slices {
		if t.slice[i] <= cur-slices || t.slice[i] > cur {
			continue
		}
		s.Calls += t.calls[i]
		s.Failed += t.failed[i]
		for b, n := range t.hist[i] {
			h[b] += int64(n)
		}
	}
	if s.Calls > 0 {
		s.ErrorPercent = 100 * float64(s.Failed) / float64(s.Calls)
	}
	s.P95 = quantile(h[:], 0.95)
	return s
}

// quantile estimates the q-quantile of a histogram by linear interpolation
// within the bucket it falls in.
func quantile(h []int64, q float64) time.Duration {
	var total int64
	for _, n := range h {
		total += n
	}
	if total == 0 {
		return 0
	}
	rank := q * float64(total)
	var seen float64
	for i, n := range h {
		if n == 0 {
			continue
		}
		if seen+float64(n) >= rank {
			lo := 0.0
			if i > 0 {
				lo = bounds[i-1]
			}
			hi := bounds[i]
			if i == histBuckets-1 {
				hi = lo
			}
			ms := lo + (hi-lo)*(rank-seen)/float64(n)
			return time.Duration(ms * float64(time.Millisecond))
		}
		seen += float64(n)
	}
	return 0
}
