package routing

import (
	"net/http"
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
type BodyBudget struct {
	capacity int64
	used     atomic.Int64
}

// NewBodyBudget returns a budget of capacity bytes; nil (no bound) when
// capacity is 0 or less.
func NewBodyBudget(capacity int64) *BodyBudget {
	if capacity <= 0 {
		return nil
	}
	return &BodyBudget{capacity: capacity}
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
		x.j.BodyBytes.used.Add(-over)
		x.bodyCharge = int64(read)
	}
}

// releaseBody returns the body's charge (at the request's end).
func (x *exchange) releaseBody() {
	if x.bodyCharge > 0 && x.j.BodyBytes != nil {
		x.j.BodyBytes.used.Add(-x.bodyCharge)
		x.bodyCharge = 0
	}
}
