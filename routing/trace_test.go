package routing

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"switchyard/routing/adapter"
	"switchyard/routing/config"
	"switchyard/routing/record"
)

// recTracer records what the journey tells its tracer, and adds a header
// to every attempt's outgoing headers as a propagating tracer does.
type recTracer struct {
	endpoint Endpoint
	header   http.Header
	attempts []string
	ended    []Attempt
	end      *SpanEnd
}

func (r *recTracer) Request(ep Endpoint, h http.Header, _ time.Time) RequestSpan {
	r.endpoint, r.header = ep, h
	return r
}

func (r *recTracer) Attempt(_ time.Time, d *config.RDeployment, out http.Header) (AttemptSpan, http.Header) {
	r.attempts = append(r.attempts, d.UpstreamModel)
	if out == nil {
		out = http.Header{}
	}
	out.Set("Traceparent", "00-trace-"+d.UpstreamModel+"-01")
	return recAttempt{r}, out
}

func (r *recTracer) End(_ time.Time, s *SpanEnd) { r.end = s }

type recAttempt struct{ r *recTracer }

func (a recAttempt) End(_ time.Time, at Attempt) { a.r.ended = append(a.r.ended, at) }

// headerAdapter answers like stubAdapter and keeps the headers the vendor
// was sent.
type headerAdapter struct {
	stubAdapter
	got *http.Header
}

func (h headerAdapter) Chat(ctx context.Context, t adapter.Target, r *adapter.ChatRequest) (*adapter.ChatResult, error) {
	*h.got = t.Header
	return h.stubAdapter.Chat(ctx, t, r)
}

// A traced request: one request span continuing the caller's headers, one
// attempt span whose headers reach the vendor, and the account at the end;
// the content only when the route group exports it.
func TestJourneyTellsItsTracer(t *testing.T) {
	body := []byte(`{"model":"deep","messages":[{"role":"user","content":"hi"}]}`)
	for _, content := range []bool{false, true} {
		rt := world(t, func(s *config.Snapshot) { s.RouteGroups[0].TraceContent = content })
		var sent http.Header
		tr := &recTracer{}
		j := &Journey{Live: staticLive{rt}, Exec: &Executor{Adapters: map[config.Protocol]adapter.Adapter{config.ProtocolOpenAI: headerAdapter{got: &sent}}},
			Trace: tr, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
		caller := http.Header{"Traceparent": {"00-caller-01"}}
		a := j.Serve(context.Background(), Request{Endpoint: EndpointChat, CallerID: 1, Body: bytes.NewReader(body), Header: caller})
		if a.Status != 200 {
			t.Fatalf("status %d: %s", a.Status, a.Body)
		}
		a.Done(nil)
		if tr.endpoint != EndpointChat || tr.header.Get("Traceparent") != "00-caller-01" {
			t.Errorf("request span started for %v with %v", tr.endpoint, tr.header)
		}
		if len(tr.attempts) != 1 || tr.attempts[0] != "bk-a" || len(tr.ended) != 1 || tr.ended[0].Outcome != AttemptOK {
			t.Fatalf("attempt spans %v, ended %+v", tr.attempts, tr.ended)
		}
		if sent.Get("Traceparent") != "00-trace-bk-a-01" {
			t.Errorf("the vendor was sent %v", sent)
		}
		e := tr.end
		if e == nil || e.Call.Status != record.StatusOK || e.Call.RequestedModel != "deep" || e.ResponseModel != "bk-a" || e.Protocol != config.ProtocolOpenAI {
			t.Fatalf("span end %+v", e)
		}
		if got := e.Input != nil && e.Output != nil; got != content {
			t.Errorf("content switch %v: input %q output %q", content, e.Input, e.Output)
		}
	}
}
