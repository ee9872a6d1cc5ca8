package tracing

import (
	"context"
	"net/http"
	"time"

	"github.com/tidwall/gjson"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"switchyard/routing"
	"switchyard/routing/config"
	"switchyard/routing/record"
)

// The GenAI semantic conventions' attribute names the spans set.
const (
	attrOperation     = "gen_ai.operation.name"
	attrProvider      = "gen_ai.provider.name"
	attrRequestModel  = "gen_ai.request.model"
	attrResponseModel = "gen_ai.response.model"
	attrInputTokens   = "gen_ai.usage.input_tokens"
	attrOutputTokens  = "gen_ai.usage.output_tokens"
	attrInput         = "gen_ai.input.messages"
	attrOutput        = "gen_ai.output.messages"
	attrErrorType     = "error.type"
	attrHTTPStatus    = "http.response.status_code"
)

// operation is the gen_ai.operation.name of a request to ep ("chat" for
// the three chat doors); models listings are no GenAI operation.
func operation(ep routing.Endpoint) string {
	switch ep {
	case routing.EndpointChat, routing.EndpointMessages, routing.EndpointResponses:
		return "chat"
	case routing.EndpointEmbeddings:
		return "embeddings"
	case routing.EndpointCountTokens:
		return "count_tokens"
	}
	return ""
}

// providerNames are the gen_ai.provider.name well-known values of our
// protocols.
var providerNames = map[config.Protocol]string{
	config.ProtocolOpenAI:    "openai",
	config.ProtocolAnthropic: "anthropic",
	config.ProtocolGemini:    "gcp.gemini",
	config.ProtocolAzure:     "azure.ai.openai",
	config.ProtocolBedrock:   "aws.bedrock",
	config.ProtocolVertex:    "gcp.vertex_ai",
}

// providerName is p's gen_ai.provider.name (the protocol itself when the
// conventions have no value for it).
func providerName(p config.Protocol) string {
	if n, ok := providerNames[p]; ok {
		return n
	}
	return string(p)
}

type requestSpan struct {
	t    *Tracer
	ctx  context.Context
	span trace.Span
	op   string
}

// Attempt starts the client span of one call to a vendor and, when the
// operator allows it, puts its trace context in the vendor's headers.
func (r *requestSpan) Attempt(start time.Time, d *config.RDeployment, out http.Header) (routing.AttemptSpan, http.Header) {
	name := d.UpstreamModel
	if r.op != "" {
		name = r.op + " " + name
	}
	ctx, span := r.t.tracer.Start(r.ctx, name, trace.WithSpanKind(trace.SpanKindClient), trace.WithTimestamp(start),
		trace.WithAttributes(
			attribute.String(attrOperation, r.op),
			attribute.String(attrProvider, providerName(d.Provider.Protocol)),
			attribute.String(attrRequestModel, d.UpstreamModel),
			attribute.String("switchyard.provider", d.Provider.Name),
			attribute.String("switchyard.deployment", d.Label()),
			attribute.String("switchyard.logic_model", d.Model.Code),
		))
	if r.t.propagate {
		if out == nil {
			out = make(http.Header, 2)
		}
		r.t.prop.Inject(ctx, propagation.HeaderCarrier(out))
	}
	return attemptSpan{span}, out
}

// End names the span after its operation and model and sets the
// request's account on it: the GenAI attributes, ours, the skips as
// events and, when the route group exports it, the content.
func (r *requestSpan) End(at time.Time, s *routing.SpanEnd) {
	c := s.Call
	if c.RequestedModel != "" && r.op != "" {
		r.span.SetName(r.op + " " + c.RequestedModel)
	}
	attrs := []attribute.KeyValue{
		attribute.String("switchyard.request_id", c.RequestID),
		attribute.String("switchyard.status", string(c.Status)),
		attribute.Int(attrHTTPStatus, c.HTTPStatus),
		attribute.Int("switchyard.attempts", s.Trail.Made()),
	}
	attrs = appendStr(attrs, attrOperation, r.op)
	attrs = appendStr(attrs, attrRequestModel, c.RequestedModel)
	attrs = appendStr(attrs, attrResponseModel, s.ResponseModel)
	if s.Protocol != "" {
		attrs = append(attrs, attribute.String(attrProvider, providerName(s.Protocol)))
	}
	attrs = appendTokens(attrs, c)
	attrs = appendStr(attrs, "switchyard.tier", string(c.Tier))
	attrs = appendStr(attrs, "switchyard.route_group", c.RouteGroup)
	attrs = appendStr(attrs, "switchyard.caller", c.Caller)
	attrs = appendStr(attrs, "switchyard.logic_model", c.LogicModel)
	attrs = appendStr(attrs, "switchyard.provider", c.Provider)
	attrs = appendStr(attrs, "switchyard.degraded", c.Degraded)
	if s.Input != nil {
		attrs = append(attrs, attribute.String(attrInput, inputMessages(s.Input)))
	}
	if s.Output != nil {
		attrs = append(attrs, attribute.String(attrOutput, outputMessages(s.Output)))
	}
	if c.Status != record.StatusOK {
		attrs = appendStr(attrs, attrErrorType, c.ErrorCode)
		r.span.SetStatus(codes.Error, c.ErrorCode)
	}
	r.span.SetAttributes(attrs...)
	skipEvents(r.span, s.Trail, at)
	r.span.End(trace.WithTimestamp(at))
}

// appendTokens adds the usage the vendor reported (or we estimated).
func appendTokens(attrs []attribute.KeyValue, c *record.Call) []attribute.KeyValue {
	if c.PromptTokens != nil {
		attrs = append(attrs, attribute.Int64(attrInputTokens, *c.PromptTokens))
	}
	if c.CompletionTokens != nil {
		attrs = append(attrs, attribute.Int64(attrOutputTokens, *c.CompletionTokens))
	}
	return attrs
}

func appendStr(attrs []attribute.KeyValue, k, v string) []attribute.KeyValue {
	if v == "" {
		return attrs
	}
	return append(attrs, attribute.String(k, v))
}

// skipEvents adds one event per step not tried: the plan's skips, then the
// steps skipped at run time, each with its reason's code.
func skipEvents(span trace.Span, tr *routing.Trail, at time.Time) {
	for _, sk := range tr.Skips {
		span.AddEvent("switchyard.skip", trace.WithTimestamp(at), trace.WithAttributes(
			attribute.String("switchyard.skip.reason", string(sk.Reason.Code)),
			attribute.String("switchyard.skip.stage", "plan"),
			attribute.String("switchyard.logic_model", sk.Model),
			attribute.String("switchyard.deployment", sk.Deployment)))
	}
	for _, a := range tr.Attempts {
		if a.Outcome != routing.AttemptSkipped || a.Skip == nil {
			continue
		}
		span.AddEvent("switchyard.skip", trace.WithTimestamp(at), trace.WithAttributes(
			attribute.String("switchyard.skip.reason", string(a.Skip.Code)),
			attribute.String("switchyard.skip.stage", "run"),
			attribute.String("switchyard.logic_model", a.Model),
			attribute.String("switchyard.deployment", a.Deployment)))
	}
}

// inputMessages is the request's conversation as the caller sent it: its
// messages (chat, Messages) or input (Responses), else the whole body.
func inputMessages(body []byte) string {
	for _, k := range []string{"messages", "input"} {
		if v := gjson.GetBytes(body, k); v.Exists() {
			return v.Raw
		}
	}
	return string(body)
}

// outputMessages is the answer's messages in the caller's shape: the chat
// choices' messages, Messages' content or Responses' output, else the
// whole answer.
func outputMessages(body []byte) string {
	for _, k := range []string{"choices.#.message", "content", "output"} {
		if v := gjson.GetBytes(body, k); v.Exists() {
			return v.Raw
		}
	}
	return string(body)
}

type attemptSpan struct{ span trace.Span }

// End sets how the call ended and ends the span.
func (a attemptSpan) End(at time.Time, att routing.Attempt) {
	a.span.SetAttributes(attribute.String("switchyard.attempt.outcome", string(att.Outcome)))
	if att.Status != 0 {
		a.span.SetAttributes(attribute.Int(attrHTTPStatus, att.Status))
	}
	if att.Outcome == routing.AttemptFailed {
		a.span.SetAttributes(attribute.String(attrErrorType, string(att.Class)))
		a.span.SetStatus(codes.Error, string(att.Class))
	}
	a.span.End(trace.WithTimestamp(at))
}
