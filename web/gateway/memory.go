package gateway

import (
	"context"
	"runtime"
	"runtime/debug"
	"time"

	"switchyard/web/guard"
)

// releaseHighMark is how many data-plane requests must have been in flight
// at once for their passing to hand memory back to the OS: about 100 KB
// each (two connections' buffers, four goroutine stacks with HTTP/1.1 on
// both sides, request state and the collector's headroom over them), so
// 20 MB and more at the mark.
const releaseHighMark = 200

// releaseEvery is how often the requests in flight are sampled.
const releaseEvery = time.Second

// releaseSettle is how many samples in a row a passed peak may keep
// closing idle connections while the requests in flight still fall (the
// last streams of a burst end and hand their connections back) before
// memory is returned.
const releaseSettle = 5

// releaseAgain is how many samples after returning memory it is returned
// once more: the callers' keep-alive connections the peak left (a server
// goroutine and buffers each) are closed by the idle timeout, 30 s by
// default, after the first release.
const releaseAgain = int(guard.DefaultIdleTimeout/releaseEvery) + 5

// Release steps, in order, once a peak has passed.
type releaseStep int

const (
	releaseNone releaseStep = iota
	// releaseIdle: close the idle upstream connections the peak left in
	// the pool, with their goroutines and buffers.
	releaseIdle
	// releaseMemory: collect, and return the freed memory to the OS.
	releaseMemory
)

// memRelease decides, from samples of the requests in flight, when a peak
// of at least high has passed: in flight at a quarter of the peak or less.
// Without it, a process that goes quiet after a peak keeps its memory: no
// allocation means no collection, and the runtime returns freed pages to
// the OS slowly and only down to the peak's heap goal.
type memRelease struct {
	high, peak int64
	last       int64 // in flight at the previous sample, while settling
	settling   int   // samples since the peak passed; 0: not passed
	again      int   // samples until memory is returned once more; 0: not due
}

// observe takes the most requests in flight at once since the previous
// sample (a burst shorter than the sampling period counts; never fewer
// than inFlight) and those in flight now, and says what to do: close the
// idle connections when the peak has passed, and on each sample after
// while in flight still falls (up to releaseSettle), then return memory,
// and once more releaseAgain samples later.
func (m *memRelease) observe(peak, inFlight int64) releaseStep {
	if m.settling > 0 {
		if inFlight < m.last && m.settling < releaseSettle {
			m.settling, m.last = m.settling+1, inFlight
			return releaseIdle
		}
		m.settling, m.peak, m.again = 0, inFlight, releaseAgain
		return releaseMemory
	}
	m.peak = max(m.peak, peak)
	if m.peak >= m.high && inFlight <= m.peak/4 {
		m.settling, m.last = 1, inFlight
		return releaseIdle
	}
	if m.again > 0 {
		if m.again--; m.again == 0 {
			return releaseMemory
		}
	}
	return releaseNone
}

// releaseAfterPeaks samples the requests in flight every releaseEvery
// until ctx ends and, once a peak has passed, closes the idle upstream
// connections, and when in flight has settled (their goroutines have
// ended) returns freed memory to the OS.
func (g *Gateway) releaseAfterPeaks(ctx context.Context) {
	t := time.NewTicker(releaseEvery)
	defer t.Stop()
	releaseLoop(ctx, t.C, func() (int64, int64) { return g.Data.PeakInFlight(), g.Data.InFlight() }, releaseActions{
		closeIdle: g.Exec.Client.CloseIdleConnections,
		free: func() {
			// What the peak left in sync.Pools (net/http's connection
			// buffers, the journey's pooled state) survives one
			// collection as the pools' victims, and goes in the second.
			runtime.GC()
			debug.FreeOSMemory()
			g.log.Debug("memory returned to the OS after a peak of requests in flight")
		},
	})
}

// releaseActions are what a passed peak does.
type releaseActions struct{ closeIdle, free func() }

// releaseLoop runs memRelease on each tick until ctx ends; sample is the
// most requests in flight at once since the previous tick, and those in
// flight now.
func releaseLoop(ctx context.Context, tick <-chan time.Time, sample func() (peak, now int64), do releaseActions) {
	m := &memRelease{high: releaseHighMark}
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick:
			switch m.observe(sample()) {
			case releaseIdle:
				do.closeIdle()
			case releaseMemory:
				do.free()
			}
		}
	}
}
