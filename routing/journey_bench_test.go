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
)

// stubAdapter answers every chat call with a canned OpenAI answer or stream,
// without a network: what is left is the journey's own work.
type stubAdapter struct{}

var stubAnswer = []byte(`{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"up","choices":[{"index":0,"message":{"role":"assistant","content":"Hello there, how are you?"},"finish_reason":"stop"}],"usage":{"prompt_tokens":9,"completion_tokens":7,"total_tokens":16}}`)

var stubChunks = [][]byte{
	[]byte(`{"id":"c","object":"chat.completion.chunk","created":1,"model":"up","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}`),
	[]byte(`{"id":"c","object":"chat.completion.chunk","created":1,"model":"up","choices":[{"index":0,"delta":{"content":"Hello"},"finish_reason":null}]}`),
	[]byte(`{"id":"c","object":"chat.completion.chunk","created":1,"model":"up","choices":[{"index":0,"delta":{"content":" there"},"finish_reason":null}]}`),
	[]byte(`{"id":"c","object":"chat.completion.chunk","created":1,"model":"up","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`),
}

func (stubAdapter) Chat(context.Context, adapter.Target, *adapter.ChatRequest) (*adapter.ChatResult, error) {
	return &adapter.ChatResult{Body: stubAnswer, FinishReason: "stop", Usage: adapter.Usage{Prompt: 9, Completion: 7, Known: true}}, nil
}

func (stubAdapter) ChatStream(context.Context, adapter.Target, *adapter.ChatRequest) (adapter.Stream, error) {
	return &stubStream{}, nil
}

func (stubAdapter) Embed(context.Context, adapter.Target, *adapter.EmbedRequest) (*adapter.EmbedResult, error) {
	return nil, io.EOF
}

func (stubAdapter) ListModels(context.Context, adapter.Target) (*adapter.ModelList, error) {
	return nil, io.EOF
}

type stubStream struct{ i int }

func (s *stubStream) Next() (adapter.Chunk, error) {
	if s.i >= len(stubChunks) {
		return adapter.Chunk{}, io.EOF
	}
	s.i++
	c := adapter.Chunk{Data: stubChunks[s.i-1], Content: s.i == 2 || s.i == 3}
	if s.i == 4 {
		c.FinishReason = "stop"
	}
	return c, nil
}

func (s *stubStream) Usage() adapter.Usage {
	return adapter.Usage{Prompt: 9, Completion: 2, Known: true}
}
func (s *stubStream) Close() error { return nil }

type staticLive struct{ rt *config.Runtime }

func (l staticLive) Current() *config.Runtime { return l.rt }

func benchJourney(b *testing.B) *Journey {
	rt := world(b, nil)
	return &Journey{Live: staticLive{rt}, Exec: &Executor{Adapters: map[config.Protocol]adapter.Adapter{config.ProtocolOpenAI: stubAdapter{}}},
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
}

func benchServe(b *testing.B, j *Journey, ep Endpoint, path string, body []byte) {
	b.ReportAllocs()
	ctx := context.Background()
	for b.Loop() {
		a := j.Serve(ctx, Request{Endpoint: ep, Path: path, CallerID: 1, Body: bytes.NewReader(body)})
		if a.Status != 200 {
			b.Fatalf("status %d: %s", a.Status, a.Body)
		}
		if a.Stream != nil {
			for {
				if _, err := a.Stream.Next(); err != nil {
					break
				}
			}
		}
		a.Done(nil)
	}
}

// BenchmarkJourneyChat is the chat-completions door's own cost per
// request (parse, route, execute on a stub adapter, answer, log).
func BenchmarkJourneyChat(b *testing.B) {
	benchServe(b, benchJourney(b), EndpointChat, "/v1/chat/completions", []byte(`{"model":"fast","messages":[{"role":"user","content":"hi"}]}`))
}

func BenchmarkJourneyChatStream(b *testing.B) {
	benchServe(b, benchJourney(b), EndpointChat, "/v1/chat/completions", []byte(`{"model":"fast","stream":true,"messages":[{"role":"user","content":"hi"}]}`))
}

// nopTracer is tracing switched on with nothing behind it: what the
// journey's own hooks cost (web/tracing's BenchmarkRequestSpan measures the
// OpenTelemetry spans).
type nopTracer struct{}

type nopSpan struct{}

func (nopTracer) Request(Endpoint, http.Header, time.Time) RequestSpan { return nopSpan{} }

type nopAttempt struct{}

func (nopSpan) Attempt(_ time.Time, _ *config.RDeployment, out http.Header) (AttemptSpan, http.Header) {
	return nopAttempt{}, out
}
func (nopSpan) End(time.Time, *SpanEnd)   {}
func (nopAttempt) End(time.Time, Attempt) {}

// BenchmarkJourneyChatTraced is BenchmarkJourneyChat with tracing on; with
// tracing off (Journey.Trace nil, BenchmarkJourneyChat) the journey
// allocates nothing for it.
func BenchmarkJourneyChatTraced(b *testing.B) {
	j := benchJourney(b)
	j.Trace = nopTracer{}
	benchServe(b, j, EndpointChat, "/v1/chat/completions", []byte(`{"model":"fast","messages":[{"role":"user","content":"hi"}]}`))
}
