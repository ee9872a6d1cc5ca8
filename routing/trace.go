package routing

import (
	"net/http"
	"time"

	"switchyard/routing/config"
	"switchyard/routing/record"
)

// Tracer starts one span per data-plane request (web/tracing implements it
// with OpenTelemetry). The journey's Trace is nil unless the operator
// configured an exporter: then no span is started and the journey
// allocates nothing for tracing.
type Tracer interface {
	// Request starts the span of a request to endpoint at start,
	// continuing the caller's W3C trace context when header carries one
	// (traceparent).
	Request(endpoint Endpoint, header http.Header, start time.Time) RequestSpan
}

// RequestSpan is the span of one request.
type RequestSpan interface {
	// Attempt starts the child span of one call to a vendor. out is the
	// headers the vendor is sent (nil: none yet); the returned headers are
	// the ones to send, with the attempt's trace context added when the
	// operator lets it propagate to vendors.
	Attempt(start time.Time, d *config.RDeployment, out http.Header) (AttemptSpan, http.Header)
	// End ends the request's span with its account.
	End(at time.Time, s *SpanEnd)
}

// AttemptSpan is the span of one call to a vendor.
type AttemptSpan interface {
	// End ends the attempt's span with how the call ended (a value: the
	// attempt stays on the stack of an untraced request).
	End(at time.Time, a Attempt)
}

// SpanEnd is a finished request's account, as the span exporter reads it.
type SpanEnd struct {
	Call  *record.Call
	Trail *Trail
	// Protocol and ResponseModel are the deployment that served (empty
	// when none did): its provider's protocol and its upstream model.
	Protocol      config.Protocol
	ResponseModel string
	// Input and Output are the request and answer bodies, set only when
	// the request's route group exports content (RGroup.TraceContent);
	// Output is empty for a streamed answer.
	Input, Output []byte
}

// traced is what the exchange keeps for its span (nil when not traced:
// an untraced exchange is a pointer larger, no more).
type traced struct {
	span          RequestSpan
	protocol      config.Protocol
	responseModel string
	input, output []byte
}

// startSpan starts the request's span when the journey traces.
func (x *exchange) startSpan() {
	if x.j.Trace != nil {
		x.tr = &traced{span: x.j.Trace.Request(x.req.Endpoint, x.req.Header, x.start)}
	}
}

// traceServed notes the deployment that served, for the span.
func (x *exchange) traceServed(d *config.RDeployment) {
	if x.tr != nil && d != nil {
		x.tr.protocol, x.tr.responseModel = d.Provider.Protocol, d.UpstreamModel
	}
}

// traceContent keeps the request's body for the span when its route group
// exports content.
func (x *exchange) traceContent(p *Plan, body []byte) {
	if x.tr != nil && p != nil && p.Group != nil && p.Group.TraceContent {
		x.tr.input = body
	}
}

// traceAnswer keeps the answer's body for the span when the request's
// content is exported.
func (x *exchange) traceAnswer(answer []byte) {
	if x.tr != nil && x.tr.input != nil {
		x.tr.output = answer
	}
}

// endAttempt ends an attempt's span, if it has one.
func endAttempt(span AttemptSpan, at time.Time, a Attempt) {
	if span != nil {
		span.End(at, a)
	}
}

// endSpan ends the request's span, once the row is complete.
func (x *exchange) endSpan() {
	if x.tr == nil {
		return
	}
	x.tr.span.End(x.j.now(), &SpanEnd{Call: &x.rec, Trail: &x.trail, Protocol: x.tr.protocol, ResponseModel: x.tr.responseModel,
		Input: x.tr.input, Output: x.tr.output})
}

// span is the request's span for its calls (nil when not traced).
func (x *exchange) span() RequestSpan {
	if x.tr == nil {
		return nil
	}
	return x.tr.span
}
