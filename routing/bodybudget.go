package routing

import (
	"net/http"
	"runtime"
	"sync/atomic"
	"time"

	"switchyard/routing/limit"
)

// BodyBudget bounds the request-body bytes in flight on this instance, beside
// the in-flight request cap: a request is charged its declared length (or the
// body limit when it declares none, trued up once read) before its body is
// read, and the charge is returned when the request is finished. A request
// that does not fit is answered 503 with Retry-After at once, before any of
// its body is read: many large bodies at once cannot take the instance's
// memory, however few requests they are.
//
// The budget also ends a burst: when the body bytes in flight fall to
// none after reaching BurstCollect (or half its capacity, when that is
// less), it collects garbage, at most once per BurstCollectEvery. The
// bodies and what parsing them left are garbage by then, but the runtime
// returns pages to the system only above a goal it sets at a collection
// from the heap in use when the previous collection ended (before its
// sweep): an instance gone idle after a burst would keep the burst's heap
// until the runtime's own collection two minutes later, and still after a
// single collection. So a burst's end runs two (collectBurst); each costs
// in proportion to the live heap, small once the burst is over, and the
// pages then go back at the runtime's own pace (its scavenger), never
// forced.
type BodyBudget struct {
	capacity int64
	used     atomic.Int64
	// peak is the most bytes charged since the last burst-end collection.
	peak atomic.Int64
	// collected is when that collection ran (unix ns); pending: one is
	// scheduled.
	collected atomic.Int64
	pending   atomic.Bool
	every     time.Duration
	burst     int64 // the peak that makes a burst
	// collect runs the collection (collectBurst; tests count calls).
	collect func()
}

// BurstCollect is the peak of body bytes in flight after which the
// budget's emptying runs a collection; BurstCollectEvery spaces them.
const (
	BurstCollect      = 32 << 20
	BurstCollectEvery = 10 * time.Second
)

// NewBodyBudget returns a budget of capacity bytes; nil (no bound) when
// capacity is 0 or less.
func NewBodyBudget(capacity int64) *BodyBudget {
	if capacity <= 0 {
		return nil
	}
	return &BodyBudget{capacity: capacity, every: BurstCollectEvery, burst: min(BurstCollect, capacity/2), collect: collectBurst}
}

// collectBurst runs the two collections after which the runtime's goal
// for the memory it keeps reflects the heap live after a burst.
func collectBurst() {
	runtime.GC()
	runtime.GC()
}

// release returns n charged bytes; the last of a burst schedules its
// collection (at once, or once BurstCollectEvery has passed since the
// last).
func (b *BodyBudget) release(n int64) {
	if b.used.Add(-n) != 0 || b.peak.Load() < b.burst || !b.pending.CompareAndSwap(false, true) {
		return
	}
	wait := time.Duration(b.collected.Load() + int64(b.every) - time.Now().UnixNano())
	time.AfterFunc(max(wait, 0), func() {
		b.peak.Store(b.used.Load())
		b.collected.Store(time.Now().UnixNano())
		b.pending.Store(false)
		b.collect()
	})
}

// InFlight is the body bytes charged now.
func (b *BodyBudget) InFlight() int64 {
	if b == nil {
		return 0
	}
	return b.used.Load()
}

// take charges n bytes; false when they do not fit.
func (b *BodyBudget) take(n int64) bool {
	for {
		u := b.used.Load()
		if u+n > b.capacity {
			return false
		}
		if b.used.CompareAndSwap(u, u+n) {
			for p := b.peak.Load(); u+n > p && !b.peak.CompareAndSwap(p, u+n); p = b.peak.Load() {
			}
			return true
		}
	}
}

// chargeBody charges the body about to be read (declared length, else max)
// to the instance's body budget; false when it refused (answer set).
func (x *exchange) chargeBody(max int64) bool {
	b := x.j.BodyBytes
	if b == nil {
		return true
	}
	n := max
	if d := x.req.BodyLen; d >= 0 && d <= max {
		n = d
	}
	if n == 0 {
		return true
	}
	if !b.take(n) {
		if x.j.Watch != nil {
			x.j.Watch.Refused(string(limit.KindBodyBytes))
		}
		x.a.Header.Set("Retry-After", "1")
		x.a.Refusal = &Refusal{Limit: limit.KindBodyBytes, Value: b.capacity, RetryAfter: time.Second}
		x.reject(http.StatusServiceUnavailable, CodeBodyBytesFull, ClassOverloaded, "this gateway instance is reading "+
			formatBytes(b.capacity)+" of request bodies already (its bound on body bytes in flight); retry shortly (request id "+x.rec.RequestID+")")
		return false
	}
	x.bodyCharge = n
	return true
}

// trueUpBody returns the part of the charge the body did not use.
func (x *exchange) trueUpBody(read int) {
	if over := x.bodyCharge - int64(read); over > 0 && x.j.BodyBytes != nil {
		x.j.BodyBytes.release(over)
		x.bodyCharge = int64(read)
	}
}

// releaseBody returns the body's charge (at the request's end).
func (x *exchange) releaseBody() {
	if x.bodyCharge > 0 && x.j.BodyBytes != nil {
		x.j.BodyBytes.release(x.bodyCharge)
		x.bodyCharge = 0
	}
}
