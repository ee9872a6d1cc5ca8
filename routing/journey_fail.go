package routing

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"time"

	"switchyard/routing/adapter"
	"switchyard/routing/record"
)

// ErrShuttingDown is the cause a server gives a request's context when it
// cuts the request at the end of its shutdown grace. The journey then
// answers the caller (an error event on a stream, a 503 otherwise) instead
// of treating the cancellation as the caller's, and records the call as
// interrupted.
var ErrShuttingDown = errors.New("the gateway is shutting down")

// shuttingDown reports whether ctx was cancelled by a shutdown cut.
func shuttingDown(ctx context.Context) bool {
	return errors.Is(context.Cause(ctx), ErrShuttingDown)
}

// interrupted records the call as cut by this instance's shutdown.
func (x *exchange) interrupted() {
	x.rec.Status, x.rec.ErrorClass, x.rec.ErrorCode, x.rec.HTTPStatus = record.StatusInterrupted, "", string(CodeShuttingDown), http.StatusServiceUnavailable
}

// msgShuttingDown tells a cut caller what happened and that a retry is safe
// to send (to another instance).
const msgShuttingDown = "this gateway instance is shutting down and cut the request when its shutdown grace ran out; send it again"

// failed answers a request nothing could serve.
func (x *exchange) failed(f *Failure) {
	h := x.a.Header
	h.Set("X-Switchyard-Tier", x.tierHeader())
	h.Set("X-Switchyard-Attempts", strconv.Itoa(x.trail.Made()))
	x.rec.ErrorCode, x.rec.ErrorClass = string(f.Code), f.Class
	switch {
	case f.Class == adapter.ClassCancelled && shuttingDown(x.ctx):
		// The caller is still there: tell it, and that a retry is safe.
		x.interrupted()
		x.writeError(http.StatusServiceUnavailable, CodeShuttingDown, msgShuttingDown, nil) // with Retry-After: 1
		return
	case f.Class == adapter.ClassCancelled:
		x.rec.Status, x.rec.HTTPStatus = record.StatusClientCancelled, 499
		x.a.Status, x.a.Silent = 499, true // nobody is listening
		return
	case countAttempts(x.trail) == 0:
		x.rec.Status = record.StatusRejected
		if r := capRefusal(&x.trail, f); r != nil {
			x.a.Refusal = r
		}
	default:
		x.rec.Status = record.StatusUpstreamError
	}
	if x.degrade(f) {
		return
	}
	if f.RetryAfter > 0 {
		h.Set("Retry-After", strconv.Itoa(int((f.RetryAfter+time.Second-1)/time.Second)))
		h.Set("Retry-After-Ms", strconv.FormatInt(int64((f.RetryAfter+time.Millisecond-1)/time.Millisecond), 10))
		if f.Status == http.StatusTooManyRequests && x.gateDec.Allowed {
			x.gateDec.CapResets(f.RetryAfter).SetHeaders(h)
		}
	}
	if f.NoRetry {
		h.Set("x-should-retry", "false")
	}
	if f.Refusal != nil { // our queue refused it
		x.a.Refusal = f.Refusal
		if x.j.Watch != nil {
			x.j.Watch.Refused(string(f.Code))
		}
	}
	var param *string
	if f.Param != "" {
		param = &f.Param
	}
	x.writeError(f.Status, f.Code, f.Text(x.rec.RequestID), param)
}

func countAttempts(tr Trail) int {
	n := 0
	for _, a := range tr.Attempts {
		if a.Outcome != AttemptSkipped {
			n++
		}
	}
	return n
}
