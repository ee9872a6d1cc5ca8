package routing

import (
	"errors"
	"net/http"
	"strconv"
	"time"

	"switchyard/routing/adapter"
	"switchyard/routing/limit"
	"switchyard/routing/queue"
	"switchyard/routing/record"
)

// admit takes one of the instance's in-flight slots
// (SWITCHYARD_MAX_INFLIGHT), waiting in the caller's class queue while the
// instance is at its cap; a full queue answers 429 queue_full (a full
// interactive queue sheds a batch waiter first), and a request still waiting
// at its deadline 504.
func (x *exchange) admit() bool {
	q := x.j.Exec.Queue
	if q == nil {
		return true
	}
	class := queue.ClassOf(x.caller.PriorityClass)
	rel, waited, err := q.Admit(x.ctx, class, x.deadlineAt)
	x.trail.waited(waited)
	if err == nil {
		x.release = rel
		return true
	}
	return x.queueRefused(q, class, waited, err)
}

// queueRefused answers a request the instance's queue did not admit.
func (x *exchange) queueRefused(q *queue.Queue, class queue.Class, waited queue.Waited, err error) bool {
	var r *queue.Refusal
	switch {
	case errors.As(err, &r) && !q.Queues(class):
		// This class does not queue: refused at the instance's cap at once.
		if x.j.Watch != nil {
			x.j.Watch.Refused(string(limit.KindInstance))
		}
		x.a.Header.Set("Retry-After", "1")
		x.a.Refusal = &Refusal{Limit: limit.KindInstance, Class: class.String(), Value: int64(q.InstanceCap()), RetryAfter: time.Second}
		x.reject(http.StatusTooManyRequests, CodeRateLimited, adapter.ClassRateLimited, "this gateway instance is at its in-flight cap of "+strconv.Itoa(q.InstanceCap())+
			" and "+class.String()+" requests do not queue; retry shortly (request id "+x.rec.RequestID+")")
	case errors.As(err, &r):
		f := refusedByQueue(r, nil, nil)
		if x.j.Watch != nil {
			x.j.Watch.Refused(string(f.Code))
		}
		x.a.Header.Set("Retry-After", strconv.Itoa(int(QueueRetryAfter/time.Second)))
		x.a.Refusal = f.Refusal
		x.reject(http.StatusTooManyRequests, f.Code, adapter.ClassRateLimited, f.Told.Text(x.rec.RequestID))
	case errors.Is(err, queue.ErrExpired):
		x.reject(http.StatusGatewayTimeout, CodeTimeout, adapter.ClassTimeout, "the request's time budget ran out after waiting "+
			waited.For.Round(time.Millisecond).String()+" in the "+class.String()+" queue for this gateway instance's in-flight cap (request id "+x.rec.RequestID+")")
	default: // the caller left
		x.rec.Status, x.rec.ErrorClass, x.rec.ErrorCode, x.rec.HTTPStatus = record.StatusClientCancelled, adapter.ClassCancelled, string(CodeClientCancelled), 499
		x.a.Status, x.a.Silent = 499, true
	}
	return false
}

// recordQueue puts the caller's class and the time queued (for the
// instance's cap and for deployments at capacity) in the call-log row.
func (x *exchange) recordQueue() {
	if x.caller != nil {
		x.rec.PriorityClass = x.caller.PriorityClass
	}
	if x.trail.queued {
		x.rec.QueueWaitMS = x.intp(int(x.trail.QueuedMS))
	}
}
