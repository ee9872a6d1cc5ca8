// Package tracing exports the data plane's spans with OpenTelemetry: one
// span per request following the GenAI semantic conventions, a child span
// per call to a vendor, skips as events. It is configured by the standard
// OTEL_* environment variables and is off unless they name an exporter.
package tracing

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"switchyard/routing"
)

// ErrUnsupported is an OTEL_* setting this build cannot honour.
var ErrUnsupported = errors.New("tracing: unsupported setting")

// Options are the settings of ours beside the OTEL_* variables.
type Options struct {
	// Propagate sends each attempt's W3C trace context (traceparent) to
	// the vendor it calls.
	Propagate bool
}

// Enabled reports whether the OTEL_* environment asks for traces:
// OTEL_TRACES_EXPORTER=otlp, or unset with an OTLP endpoint configured;
// never with OTEL_SDK_DISABLED=true or OTEL_TRACES_EXPORTER=none.
func Enabled(getenv func(string) string) (bool, error) {
	if strings.EqualFold(getenv("OTEL_SDK_DISABLED"), "true") {
		return false, nil
	}
	switch exp := strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER")); exp {
	case "none":
		return false, nil
	case "otlp":
		return true, nil
	case "":
		return getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != "", nil
	default:
		return false, fmt.Errorf("%w: OTEL_TRACES_EXPORTER=%s (otlp or none)", ErrUnsupported, exp)
	}
}

// Tracer is the journey's tracer over an OpenTelemetry tracer provider.
type Tracer struct {
	provider  *sdktrace.TracerProvider
	tracer    trace.Tracer
	prop      propagation.TraceContext
	propagate bool
}

// FromEnv builds the tracer the OTEL_* environment configures, or nil when
// tracing is off. The OTLP exporter reads its endpoint, headers, timeout
// and TLS settings from the environment itself; the provider its sampler
// (OTEL_TRACES_SAMPLER) and batching (OTEL_BSP_*).
func FromEnv(ctx context.Context, o Options) (*Tracer, error) {
	on, err := Enabled(os.Getenv)
	if err != nil || !on {
		return nil, err
	}
	exp, err := exporter(ctx, os.Getenv)
	if err != nil {
		return nil, err
	}
	res, err := resource.New(ctx,
		resource.WithAttributes(attribute.String("service.name", "switchyard")),
		resource.WithFromEnv(), resource.WithTelemetrySDK())
	if err != nil {
		return nil, fmt.Errorf("tracing: resource: %w", err)
	}
	return New(sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res)), o), nil
}

// exporter is the OTLP exporter over the protocol the environment names
// (OTEL_EXPORTER_OTLP_TRACES_PROTOCOL, else OTEL_EXPORTER_OTLP_PROTOCOL;
// default http/protobuf).
func exporter(ctx context.Context, getenv func(string) string) (sdktrace.SpanExporter, error) {
	proto := getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
	if proto == "" {
		proto = getenv("OTEL_EXPORTER_OTLP_PROTOCOL")
	}
	switch proto {
	case "", "http/protobuf":
		return otlptracehttp.New(ctx)
	case "grpc":
		return otlptracegrpc.New(ctx)
	default:
		return nil, fmt.Errorf("%w: OTLP protocol %q (http/protobuf or grpc)", ErrUnsupported, proto)
	}
}

// New is a tracer over provider (tests pass one with an in-memory
// exporter).
func New(provider *sdktrace.TracerProvider, o Options) *Tracer {
	return &Tracer{provider: provider, tracer: provider.Tracer("switchyard"), propagate: o.Propagate}
}

// Shutdown flushes the spans not yet exported and stops the exporter.
func (t *Tracer) Shutdown(ctx context.Context) error { return t.provider.Shutdown(ctx) }

// Request starts a request's span, the child of the caller's span when
// header carries a valid traceparent. Its name is the operation until
// End names the model too.
func (t *Tracer) Request(ep routing.Endpoint, header http.Header, start time.Time) routing.RequestSpan {
	ctx := context.Background()
	if header != nil {
		ctx = t.prop.Extract(ctx, propagation.HeaderCarrier(header))
	}
	op := operation(ep)
	ctx, span := t.tracer.Start(ctx, op, trace.WithSpanKind(trace.SpanKindServer), trace.WithTimestamp(start),
		trace.WithAttributes(attribute.String("switchyard.endpoint", ep.String())))
	return &requestSpan{t: t, ctx: ctx, span: span, op: op}
}
