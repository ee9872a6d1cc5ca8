package routing

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"switchyard/routing/adapter"
	"switchyard/routing/idem"
	"switchyard/routing/record"
)

// idempotent handles Idempotency-Key: it returns false when the answer is
// already decided (replay, conflict or error).
func (x *exchange) idempotent(body []byte) bool {
	key := x.req.IdempotencyKey
	if key == "" {
		return true
	}
	if err := idem.ValidKey(key); err != nil {
		x.reject(http.StatusBadRequest, CodeInvalidRequest, adapter.ClassBadRequest, "Idempotency-Key must be 1–255 printable ASCII characters")
		return false
	}
	if x.j.Idem == nil {
		x.reject(http.StatusServiceUnavailable, CodeIdempotencyUnavailable, "", "idempotency keys are not available on this instance")
		return false
	}
	out, err := x.j.Idem.Begin(x.ctx, x.caller.ID, key, idem.Fingerprint([]byte(x.req.Path), body))
	switch {
	case err != nil:
		if x.ctx.Err() != nil {
			x.rec.Status, x.rec.ErrorClass = record.StatusClientCancelled, adapter.ClassCancelled
			x.rec.HTTPStatus = 499
			x.a.Status, x.a.Silent = 499, true
			return false
		}
		x.j.Log.Error("idempotency store unavailable", "err", err, "request_id", x.rec.RequestID)
		x.reject(http.StatusServiceUnavailable, CodeIdempotencyUnavailable, "", "the idempotency store is unreachable; retry, or send the request without Idempotency-Key")
		return false
	case out.Conflict:
		x.a.Header.Set("x-should-retry", "false")
		x.reject(http.StatusUnprocessableEntity, CodeIdempotencyConflict, adapter.ClassBadRequest, "Idempotency-Key "+strconv.Quote(key)+" was already used with a different request body")
		return false
	case out.Replay != nil:
		x.rec.IdempotencyReplay = true
		x.rec.Status = record.StatusOK
		if out.Replay.Status >= 400 {
			x.rec.Status = record.StatusUpstreamError
		}
		for k, v := range out.Replay.Header {
			x.a.Header.Set(k, v)
		}
		x.a.Header.Set("Idempotent-Replayed", "true")
		x.a.Header.Set("X-Request-Id", x.rec.RequestID)
		ctype := out.Replay.Header["Content-Type"]
		if ctype == "" {
			ctype = "application/json"
		}
		x.writeBody(out.Replay.Status, ctype, out.Replay.Body)
		return false
	}
	x.idem.claim = &out.Claim
	x.idem.capture = &capture{}
	return true
}

// finishIdempotency stores a result worth replaying, or releases the claim.
// Only what a retry cannot change is stored: a complete success, and a
// vendor's refusal of the request itself (invalid, content filtered).
// Rejections of ours, upstream failures and a stream that failed or was cut
// after it started release the key, so the retry runs.
func (x *exchange) finishIdempotency() {
	if x.idem.claim == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(x.ctx), 2*time.Second)
	defer cancel()
	cp := x.idem.capture
	if !replayable(cp.status, x.rec.Status, x.rec.ErrorClass) {
		if err := x.j.Idem.Abandon(ctx, *x.idem.claim); err != nil {
			x.j.Log.Warn("idempotency abandon failed", "err", err, "request_id", x.rec.RequestID)
		}
		return
	}
	hdr := map[string]string{"Content-Type": cp.ctype}
	for _, k := range []string{"X-Switchyard-Tier", "X-Switchyard-Model", "X-Switchyard-Provider", "X-Switchyard-Attempts"} {
		if v := x.a.Header.Get(k); v != "" {
			hdr[k] = v
		}
	}
	if err := x.j.Idem.Complete(ctx, *x.idem.claim, idem.Result{Status: cp.status, Header: hdr, Body: cp.buf, Stream: cp.stream}); err != nil {
		x.j.Log.Warn("idempotency complete failed", "err", err, "request_id", x.rec.RequestID)
	}
}

// replayable reports an answer a retry cannot change: a complete success
// (status 200 and the call ended ok — a stream that ended with an error
// event also began with 200), or the vendor's refusal of the request as
// invalid or filtered (400 of an upstream error that is not a failure).
func replayable(status int, st record.Status, class adapter.Class) bool {
	switch {
	case status == http.StatusOK:
		return st == record.StatusOK
	case status == http.StatusBadRequest:
		return st == record.StatusUpstreamError && (class == adapter.ClassBadRequest || class == adapter.ClassContentFilter)
	}
	return false
}

// idemState is the idempotency step's state: the claim on the key and
// what was sent, to store for a replay (both nil without Idempotency-Key).
type idemState struct {
	claim   *idem.Claim
	capture *capture
}

// capture keeps what was sent to the caller.
type capture struct {
	status int
	ctype  string
	stream bool
	buf    []byte
}
