package tracing

import (
	"context"
	"net/http"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"switchyard/routing"
	"switchyard/routing/config"
	"switchyard/routing/reason"
	"switchyard/routing/record"
)

func newTest(propagate bool) (*Tracer, *tracetest.InMemoryExporter) {
	exp := tracetest.NewInMemoryExporter()
	return New(sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp)), Options{Propagate: propagate}), exp
}

var deployment = &config.RDeployment{UpstreamModel: "gpt-x", Provider: &config.RProvider{Name: "azure-eu", Protocol: config.ProtocolAzure}, Model: &config.RModel{Code: "small"}}

const callerTrace = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

func attrs(s tracetest.SpanStub) map[string]string {
	m := map[string]string{}
	for _, kv := range s.Attributes {
		m[string(kv.Key)] = kv.Value.Emit()
	}
	return m
}

// A request's span continues the caller's trace, its attempts are its
// children, the GenAI attributes are set and the skips are events;
// without the group's switch no content is exported.
func TestRequestSpanContinuesTheCallerAndCarriesTheGenAIAttributes(t *testing.T) {
	tr, exp := newTest(false)
	start := time.Now()
	span := tr.Request(routing.EndpointChat, http.Header{"Traceparent": {callerTrace}}, start)
	a, out := span.Attempt(start, deployment, nil)
	if out != nil {
		t.Errorf("propagation off: the vendor got headers %v", out)
	}
	a.End(start.Add(time.Millisecond), routing.Attempt{Outcome: routing.AttemptFailed, Status: 500, Class: "server"})
	a, _ = span.Attempt(start, deployment, nil)
	a.End(start.Add(2*time.Millisecond), routing.Attempt{Outcome: routing.AttemptOK})
	in, outTok := int64(9), int64(7)
	span.End(start.Add(3*time.Millisecond), &routing.SpanEnd{
		Call: &record.Call{RequestID: "r1", Status: record.StatusOK, HTTPStatus: 200, RequestedModel: "fast", Tier: "fast", RouteGroup: "main", Caller: "app",
			PromptTokens: &in, CompletionTokens: &outTok},
		Trail:    &routing.Trail{Skips: []routing.Skip{{Model: "small", Deployment: "off", Reason: reason.Of(reason.DisabledByOperator)}}},
		Protocol: config.ProtocolAzure, ResponseModel: "gpt-x",
	})
	spans := exp.GetSpans()
	if len(spans) != 3 {
		t.Fatalf("%d spans, want the request and two attempts", len(spans))
	}
	req := spans[2]
	if got := req.SpanContext.TraceID().String(); got != "4bf92f3577b34da6a3ce929d0e0e4736" {
		t.Errorf("trace id %s: the caller's trace was not continued", got)
	}
	if req.Parent.SpanID().String() != "00f067aa0ba902b7" || req.SpanKind != trace.SpanKindServer || req.Name != "chat fast" {
		t.Errorf("request span: parent %s kind %v name %q", req.Parent.SpanID(), req.SpanKind, req.Name)
	}
	for _, at := range spans[:2] {
		if at.Parent.SpanID() != req.SpanContext.SpanID() || at.SpanKind != trace.SpanKindClient || at.Name != "chat gpt-x" {
			t.Errorf("attempt span %q: parent %s kind %v", at.Name, at.Parent.SpanID(), at.SpanKind)
		}
		if attrs(at)["gen_ai.provider.name"] != "azure.ai.openai" {
			t.Errorf("attempt attributes %v", attrs(at))
		}
	}
	if a := attrs(spans[0]); a["switchyard.attempt.outcome"] != "failed" || a["error.type"] != "server" || a["http.response.status_code"] != "500" {
		t.Errorf("failed attempt's attributes %v", a)
	}
	want := map[string]string{"gen_ai.operation.name": "chat", "gen_ai.provider.name": "azure.ai.openai", "gen_ai.request.model": "fast",
		"gen_ai.response.model": "gpt-x", "gen_ai.usage.input_tokens": "9", "gen_ai.usage.output_tokens": "7",
		"switchyard.tier": "fast", "switchyard.route_group": "main", "switchyard.caller": "app", "switchyard.attempts": "0"}
	got := attrs(req)
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
	if _, ok := got["gen_ai.input.messages"]; ok {
		t.Error("content exported without the group's switch")
	}
	if len(req.Events) != 1 || req.Events[0].Name != "switchyard.skip" || req.Events[0].Attributes[0].Value.AsString() != "disabled_by_operator" {
		t.Errorf("events %+v", req.Events)
	}
}

// With propagation allowed, the vendor gets the attempt's traceparent;
// with content on, the conversation and the answer are on the span.
func TestPropagationAndContent(t *testing.T) {
	tr, exp := newTest(true)
	start := time.Now()
	span := tr.Request(routing.EndpointChat, nil, start)
	a, out := span.Attempt(start, deployment, http.Header{"X-Static": {"1"}})
	a.End(start, routing.Attempt{Outcome: routing.AttemptOK})
	span.End(start, &routing.SpanEnd{Call: &record.Call{Status: record.StatusOK}, Trail: &routing.Trail{},
		Input:  []byte(`{"model":"fast","messages":[{"role":"user","content":"hi"}]}`),
		Output: []byte(`{"choices":[{"index":0,"message":{"role":"assistant","content":"hello"}}]}`)})
	spans := exp.GetSpans()
	attempt := spans[0].SpanContext
	if got, want := out.Get("Traceparent"), "00-"+attempt.TraceID().String()+"-"+attempt.SpanID().String()+"-01"; got != want || out.Get("X-Static") != "1" {
		t.Errorf("vendor headers %v, want traceparent %s", out, want)
	}
	got := attrs(spans[1])
	if got["gen_ai.input.messages"] != `[{"role":"user","content":"hi"}]` || got["gen_ai.output.messages"] != `[{"role":"assistant","content":"hello"}]` {
		t.Errorf("content %q / %q", got["gen_ai.input.messages"], got["gen_ai.output.messages"])
	}
}

func TestEnabledFollowsTheOTELVariables(t *testing.T) {
	for _, c := range []struct {
		env  map[string]string
		want bool
		err  bool
	}{
		{env: nil, want: false},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}, want: true},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://c:4318/v1/traces"}, want: true},
		{env: map[string]string{"OTEL_TRACES_EXPORTER": "otlp"}, want: true},
		{env: map[string]string{"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}, want: false},
		{env: map[string]string{"OTEL_SDK_DISABLED": "true", "OTEL_TRACES_EXPORTER": "otlp"}, want: false},
		{env: map[string]string{"OTEL_TRACES_EXPORTER": "zipkin"}, err: true},
	} {
		got, err := Enabled(func(k string) string { return c.env[k] })
		if got != c.want || (err != nil) != c.err {
			t.Errorf("%v: %v, %v", c.env, got, err)
		}
	}
	if _, err := exporter(context.Background(), func(k string) string {
		return map[string]string{"OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"}[k]
	}); err == nil {
		t.Error("http/json accepted")
	}
}

// BenchmarkRequestSpan is what tracing costs a request when on: its span
// and one attempt's, exported to memory.
func BenchmarkRequestSpan(b *testing.B) {
	tr, exp := newTest(false)
	in := int64(9)
	end := &routing.SpanEnd{Call: &record.Call{Status: record.StatusOK, RequestedModel: "fast", PromptTokens: &in, CompletionTokens: &in}, Trail: &routing.Trail{}, Protocol: config.ProtocolOpenAI}
	b.ReportAllocs()
	for b.Loop() {
		now := time.Now()
		s := tr.Request(routing.EndpointChat, nil, now)
		a, _ := s.Attempt(now, deployment, nil)
		a.End(now, routing.Attempt{Outcome: routing.AttemptOK})
		s.End(now, end)
		exp.Reset()
	}
}
