package adapter_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"switchyard/routing/adapter"
	"switchyard/routing/frontdoor"
	"sync"
	"sync/atomic"
	"testing"

	"time"

	"github.com/tidwall/gjson"

	"github.com/google/go-cmp/cmp"
)

const openaiTestKey = "sk-test-0123456789abcdef"

// openaiSeen is what the fake upstream received.
type openaiSeen struct {
	mu     sync.Mutex
	method string
	path   string
	query  string
	header http.Header
	body   []byte
}

func (s *openaiSeen) get() (string, string, http.Header, []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.method, s.path, s.header, s.body
}

// openaiUpstream starts a fake upstream; reply writes the answer.
func openaiUpstream(t testing.TB, reply func(w http.ResponseWriter, r *http.Request)) (*httptest.Server, *openaiSeen) {
	t.Helper()
	seen := &openaiSeen{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		seen.mu.Lock()
		seen.method, seen.path, seen.query, seen.header, seen.body = r.Method, r.URL.Path, r.URL.RawQuery, r.Header.Clone(), b
		seen.mu.Unlock()
		reply(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv, seen
}

func openaiTarget(srv *httptest.Server) adapter.Target {
	return adapter.Target{BaseURL: srv.URL + "/v1", APIKey: openaiTestKey, UpstreamModel: "gpt-4o-2024-08-06", Client: srv.Client()}
}

func openaiJSON(status int, body []byte, kv ...string) func(http.ResponseWriter, *http.Request) {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		for i := 0; i < len(kv); i += 2 {
			w.Header().Set(kv[i], kv[i+1])
		}
		w.WriteHeader(status)
		w.Write(body)
	}
}

func openaiParse(t testing.TB, body string) *adapter.ChatRequest {
	t.Helper()
	r, err := frontdoor.ParseChatRequest([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func openaiDecode(t testing.TB, b []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("forwarded body is not JSON: %v\n%s", err, b)
	}
	return m
}

// The caller's body as an SDK might send it: odd spacing, unknown fields,
// images, tools, response_format.
const openaiCallerBody = `{"model": "standard",
  "messages": [{"role":"system","content":"be brief"},
    {"role":"user","content":[{"type":"text","text":"what is this?"},{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0KGgo=","detail":"high"}}]}],
  "tools": [{"type":"function","function":{"name":"look","description":"d","parameters":{"type":"object","properties":{"q":{"type":"string"}}},"strict":true}}],
  "tool_choice": "auto",
  "response_format": {"type":"json_schema","json_schema":{"name":"x","schema":{"type":"object"}}},
  "logit_bias": {"50256":   -100},
  "metadata": {"team": "search", "ünï": "cödé"},
  "seed": 7, "n": 1, "parallel_tool_calls": false,
  "x_vendor_extension": [1, {"deep": [true, null]}]}`

func TestOpenAIChatForwardsBodyAndParsesResult(t *testing.T) {
	fixture := adapter.ClassifyFixture(t, "chat-nonstream-default.response.json")
	srv, seen := openaiUpstream(t, openaiJSON(200, fixture))
	r := openaiParse(t, openaiCallerBody)

	res, err := adapter.OpenAI{}.Chat(context.Background(), openaiTarget(srv), r)
	if err != nil {
		t.Fatal(err)
	}
	method, path, hdr, body := seen.get()
	if method != http.MethodPost || path != "/v1/chat/completions" {
		t.Errorf("%s %s", method, path)
	}
	if hdr.Get("Authorization") != "Bearer "+openaiTestKey || hdr.Get("Content-Type") != "application/json" {
		t.Errorf("headers %v", hdr)
	}
	got, orig := openaiDecode(t, body), openaiDecode(t, []byte(openaiCallerBody))
	if got["model"] != "gpt-4o-2024-08-06" || got["stream"] != false {
		t.Errorf("model %v stream %v", got["model"], got["stream"])
	}
	delete(got, "model")
	delete(got, "stream")
	delete(orig, "model")
	if diff := cmp.Diff(orig, got); diff != "" {
		t.Errorf("forwarded fields differ from the caller's (-caller +forwarded):\n%s", diff)
	}
	// Unknown fields travel byte for byte, spacing and all.
	for _, raw := range []string{`{"50256":   -100}`, `{"team": "search", "ünï": "cödé"}`, `[1, {"deep": [true, null]}]`} {
		if !bytes.Contains(body, []byte(raw)) {
			t.Errorf("forwarded body lost %s:\n%s", raw, body)
		}
	}
	if !bytes.Equal(r.Body, []byte(openaiCallerBody)) {
		t.Error("Chat modified the caller's body")
	}

	if !bytes.Equal(res.Body, fixture) || res.FinishReason != "stop" {
		t.Errorf("finish %q, body %d bytes", res.FinishReason, len(res.Body))
	}
	want := adapter.Usage{Prompt: 19, Completion: 10, Cached: 0, Reasoning: 0, Known: true, CachedKnown: true, ReasoningKnown: true}
	if res.Usage != want {
		t.Errorf("usage %+v, want %+v", res.Usage, want)
	}
}

func TestOpenAIChatResults(t *testing.T) {
	for _, tc := range []struct {
		name   string
		body   []byte
		finish string
		usage  adapter.Usage
	}{
		{"tool calls (fixture)", adapter.ClassifyFixture(t, "chat-nonstream-tool-calls.response.json"), "tool_calls",
			adapter.Usage{Prompt: 82, Completion: 17, Known: true, ReasoningKnown: true}},
		// No usage is never zero: the gateway counts the prompt ("hi" with
		// its framing) and the answer ("hi"), and marks the count estimated.
		{"no usage is counted and marked estimated", []byte(`{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}]}`), "stop",
			adapter.Usage{Prompt: 8, Completion: 1, Known: true, Estimated: true}},
		{"usage null", []byte(`{"choices":[{"message":{"content":"hi"},"finish_reason":"length"}],"usage":null}`), "length",
			adapter.Usage{Prompt: 8, Completion: 1, Known: true, Estimated: true}},
		{"DeepSeek cache hits", []byte(`{"choices":[{"finish_reason":"stop"}],"usage":{"prompt_tokens":100,"completion_tokens":5,"prompt_cache_hit_tokens":64,"prompt_cache_miss_tokens":36}}`), "stop",
			adapter.Usage{Prompt: 100, Completion: 5, Cached: 64, Known: true, CachedKnown: true}},
		{"reasoning tokens", []byte(`{"choices":[{"finish_reason":"stop"}],"usage":{"prompt_tokens":10,"completion_tokens":500,"prompt_tokens_details":{"cached_tokens":8},"completion_tokens_details":{"reasoning_tokens":448}}}`), "stop",
			adapter.Usage{Prompt: 10, Completion: 500, Cached: 8, Reasoning: 448, Known: true, CachedKnown: true, ReasoningKnown: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, _ := openaiUpstream(t, openaiJSON(200, tc.body))
			res, err := adapter.OpenAI{}.Chat(context.Background(), openaiTarget(srv), openaiParse(t, `{"model":"fast","messages":[{"role":"user","content":"hi"}]}`))
			if err != nil {
				t.Fatal(err)
			}
			if res.FinishReason != tc.finish || res.Usage != tc.usage {
				t.Errorf("finish %q usage %+v; want %q %+v", res.FinishReason, res.Usage, tc.finish, tc.usage)
			}
		})
	}
}

func TestOpenAIChatFailures(t *testing.T) {
	req := `{"model":"fast","messages":[{"role":"user","content":"hi"}]}`
	for _, tc := range []struct {
		name    string
		reply   func(http.ResponseWriter, *http.Request)
		class   adapter.Class
		msg     string
		retry   time.Duration
		withRes bool
	}{
		{"429 with Retry-After", openaiJSON(429, adapter.ClassifyFixture(t, "error-429-tokens-2023.json"), "Retry-After", "3"), adapter.ClassRateLimited, "Rate limit reached", 3 * time.Second, false},
		{"401 (fixture)", openaiJSON(401, adapter.ClassifyFixture(t, "error-401-invalid-api-key.json")), adapter.ClassAuth, "Incorrect API key", 0, false},
		{"401 echoing our key is scrubbed", openaiJSON(401, []byte(`{"error":{"message":"Incorrect API key provided: `+openaiTestKey+`.","type":"invalid_request_error","code":"invalid_api_key"}}`)), adapter.ClassAuth, "provided: [redacted].", 0, false},
		{"500 (fixture)", openaiJSON(500, adapter.ClassifyFixture(t, "error-500-server-error.json")), adapter.ClassServer, "The server had an error", 0, false},
		{"400 context length (fixture)", openaiJSON(400, adapter.ClassifyFixture(t, "error-400-context-length.json")), adapter.ClassBadRequest, "maximum context length", 0, false},
		{"200 with an error envelope", openaiJSON(200, []byte(`{"error":{"message":"quota","type":"insufficient_quota"}}`)), adapter.ClassBilling, "quota", 0, false},
		{"200 that is not JSON", openaiJSON(200, []byte(`<html>ok</html>`)), adapter.ClassServer, "not JSON", 0, false},
		{"200 without choices", openaiJSON(200, []byte(`{"choices":[]}`)), adapter.ClassServer, "without choices", 0, false},
		{"content filter keeps the result", openaiJSON(200, []byte(`{"choices":[{"index":0,"message":{"role":"assistant","content":null},"finish_reason":"content_filter"}],"usage":{"prompt_tokens":9,"completion_tokens":0}}`)), adapter.ClassContentFilter, "content filter", 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, _ := openaiUpstream(t, tc.reply)
			res, err := adapter.OpenAI{}.Chat(context.Background(), openaiTarget(srv), openaiParse(t, req))
			e := adapter.AsError(t, err)
			if e.Class != tc.class || !strings.Contains(e.Message, tc.msg) || e.RetryAfter != tc.retry {
				t.Errorf("got %+v; want class %q, message containing %q, retry %v", e, tc.class, tc.msg, tc.retry)
			}
			if strings.Contains(e.Error(), openaiTestKey) {
				t.Error("the key leaked into the error")
			}
			if tc.withRes != (res != nil) {
				t.Errorf("result %v", res)
			}
			if tc.withRes && (e.Status != 200 || !res.Usage.Known || res.Usage.Prompt != 9) {
				t.Errorf("status %d usage %+v", e.Status, res.Usage)
			}
		})
	}
}

func TestOpenAIURLTrailingSlash(t *testing.T) {
	// And against a live server, with a trailing slash.
	srv, seen := openaiUpstream(t, openaiJSON(200, adapter.ClassifyFixture(t, "chat-nonstream-default.response.json")))
	tg := openaiTarget(srv)
	tg.BaseURL += "/"
	if _, err := (adapter.OpenAI{}).Chat(context.Background(), tg, openaiParse(t, `{"model":"fast","messages":[{"role":"user","content":"hi"}]}`)); err != nil {
		t.Fatal(err)
	}
	if _, path, _, _ := seen.get(); path != "/v1/chat/completions" {
		t.Errorf("path %s", path)
	}
}

func TestOpenAIChatDeadline(t *testing.T) {
	srv, _ := openaiUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(10 * time.Second):
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := adapter.OpenAI{}.Chat(ctx, openaiTarget(srv), openaiParse(t, `{"model":"fast","messages":[{"role":"user","content":"hi"}]}`))
	if e := adapter.AsError(t, err); e.Class != adapter.ClassTimeout {
		t.Errorf("class %q, want timeout (%v)", e.Class, e)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("took %v: the deadline did not cut the attempt", d)
	}
}

func TestOpenAIChatNetworkFailure(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + ln.Addr().String() + "/v1"
	ln.Close()
	_, err = adapter.OpenAI{}.Chat(context.Background(), adapter.Target{BaseURL: base, APIKey: "k", UpstreamModel: "m"}, openaiParse(t, `{"model":"fast","messages":[{"role":"user","content":"hi"}]}`))
	if e := adapter.AsError(t, err); e.Class != adapter.ClassNetwork || e.Code != "connection_refused" {
		t.Errorf("%+v", e)
	}
}

// openaiWant is what a chunk should look like, derived with encoding/json,
// independently of the adapter's gjson code.
type openaiWant struct {
	Content, UsageOnly bool
	FinishReason       string
}

func openaiExpect(t testing.TB, stream []byte) []openaiWant {
	t.Helper()
	var out []openaiWant
	for _, line := range strings.Split(string(stream), "\n") {
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok || data == "[DONE]" {
			continue
		}
		var c struct {
			Choices []struct {
				Delta        map[string]json.RawMessage `json:"delta"`
				FinishReason *string                    `json:"finish_reason"`
			} `json:"choices"`
			Usage json.RawMessage `json:"usage"`
		}
		if err := json.Unmarshal([]byte(data), &c); err != nil {
			t.Fatal(err)
		}
		var w openaiWant
		for _, ch := range c.Choices {
			for _, k := range []string{"content", "reasoning_content", "refusal"} {
				var s *string
				json.Unmarshal(ch.Delta[k], &s)
				w.Content = w.Content || s != nil && *s != ""
			}
			var calls []any
			json.Unmarshal(ch.Delta["tool_calls"], &calls)
			w.Content = w.Content || len(calls) > 0
			if ch.FinishReason != nil && w.FinishReason == "" {
				w.FinishReason = *ch.FinishReason
			}
		}
		w.UsageOnly = len(c.Choices) == 0 && len(c.Usage) > 0 && string(c.Usage) != "null"
		out = append(out, w)
	}
	return out
}

// openaiDrain reads a stream to its end, returning the chunks and the error
// that ended it.
func openaiDrain(s adapter.Stream) ([]adapter.Chunk, error) {
	var chunks []adapter.Chunk
	for {
		c, err := s.Next()
		if err != nil {
			return chunks, err
		}
		chunks = append(chunks, c)
	}
}

func TestOpenAIChatStreamFixtures(t *testing.T) {
	for _, tc := range []struct {
		file   string
		finish string
		usage  adapter.Usage
	}{
		{"chat-stream-text-include-usage.sse", "stop", adapter.Usage{Prompt: 14, Completion: 30, Known: true, ReasoningKnown: true}},
		{"chat-stream-tool-call-include-usage.sse", "tool_calls", adapter.Usage{Prompt: 48, Completion: 19, Known: true, ReasoningKnown: true}},
		{"chat-stream-refusal.sse", "stop", adapter.Usage{Prompt: 79, Completion: 11, Known: true, ReasoningKnown: true}},
		{"chat-stream-finish-length.sse", "length", adapter.Usage{Prompt: 79, Completion: 1, Known: true, ReasoningKnown: true}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			fixture := adapter.ClassifyFixture(t, tc.file)
			srv, seen := openaiUpstream(t, adapter.OpenAISSE(fixture))
			r := openaiParse(t, `{"model":"fast","messages":[{"role":"user","content":"hi"}],"stream":true,"stream_options":{"include_usage":false,"include_obfuscation":false},"seed":1}`)
			s, err := adapter.OpenAI{}.ChatStream(context.Background(), openaiTarget(srv), r)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			chunks, err := openaiDrain(s)
			if err != io.EOF {
				t.Fatalf("ended with %v, want io.EOF", err)
			}

			_, _, hdr, body := seen.get()
			fwd := openaiDecode(t, body)
			if fwd["model"] != "gpt-4o-2024-08-06" || fwd["stream"] != true || fwd["seed"] != 1.0 {
				t.Errorf("forwarded %v", fwd)
			}
			if diff := cmp.Diff(map[string]any{"include_usage": true, "include_obfuscation": false}, fwd["stream_options"]); diff != "" {
				t.Errorf("stream_options (-want +got):\n%s", diff)
			}
			if hdr.Get("Accept") != "text/event-stream" {
				t.Errorf("Accept %q", hdr.Get("Accept"))
			}

			want := openaiExpect(t, fixture)
			if len(chunks) != len(want) {
				t.Fatalf("%d chunks, want %d", len(chunks), len(want))
			}
			lines := strings.Split(strings.TrimSpace(string(fixture)), "\n\n")
			for i, c := range chunks {
				got := openaiWant{c.Content, c.UsageOnly, c.FinishReason}
				if got != want[i] {
					t.Errorf("chunk %d: %+v, want %+v", i, got, want[i])
				}
				// Data is a copy: reading on did not overwrite it.
				if string(c.Data) != strings.TrimPrefix(lines[i], "data: ") {
					t.Errorf("chunk %d data changed: %s", i, c.Data)
				}
			}
			if chunks[len(chunks)-1].FinishReason != "" || chunks[len(chunks)-2].FinishReason != tc.finish {
				t.Errorf("finish reasons of the last two chunks: %q %q", chunks[len(chunks)-2].FinishReason, chunks[len(chunks)-1].FinishReason)
			}
			if !chunks[len(chunks)-1].UsageOnly {
				t.Error("the usage chunk is not flagged UsageOnly")
			}
			if s.Usage() != tc.usage {
				t.Errorf("usage %+v, want %+v", s.Usage(), tc.usage)
			}
			if _, err := s.Next(); err != io.EOF {
				t.Errorf("Next after the end: %v", err)
			}
		})
	}
}

func openaiStreamOf(t *testing.T, stream string) (adapter.Stream, *httptest.Server) {
	t.Helper()
	srv, _ := openaiUpstream(t, adapter.OpenAISSE([]byte(stream)))
	s, err := adapter.OpenAI{}.ChatStream(context.Background(), openaiTarget(srv), openaiParse(t, `{"model":"fast","messages":[{"role":"user","content":"hi"}],"stream":true}`))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, srv
}

func TestOpenAIChatStreamEnds(t *testing.T) {
	const (
		role    = `data: {"choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}],"usage":null}` + "\n\n"
		hello   = `data: {"choices":[{"index":0,"delta":{"content":"Hello"},"finish_reason":null}]}` + "\n\n"
		stop    = `data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}` + "\n\n"
		usage   = `data: {"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":1}}` + "\n\n"
		done    = "data: [DONE]\n\n"
		comment = ": keep-alive\n\n"
	)
	t.Run("missing usage is counted at the end and marked estimated", func(t *testing.T) {
		s, _ := openaiStreamOf(t, role+hello+stop+done)
		chunks, err := openaiDrain(s)
		if err != io.EOF || len(chunks) != 4 || !chunks[3].UsageOnly {
			t.Fatalf("%d chunks, %v", len(chunks), err)
		}
		// "hi" with its framing; "Hello" is one token.
		if u := s.Usage(); !u.Known || !u.Estimated || u.Prompt != 8 || u.Completion != 1 {
			t.Errorf("usage %+v", u)
		}
		if got := gjson.GetBytes(chunks[3].Data, "usage.completion_tokens").Int(); got != 1 {
			t.Errorf("usage chunk %s", chunks[3].Data)
		}
	})
	t.Run("finished but no [DONE] is a clean end", func(t *testing.T) {
		s, _ := openaiStreamOf(t, role+comment+hello+stop+usage)
		chunks, err := openaiDrain(s)
		if err != io.EOF || len(chunks) != 4 || !s.Usage().Known {
			t.Fatalf("%d chunks, %v, usage %+v", len(chunks), err, s.Usage())
		}
	})
	t.Run("unfinished and no [DONE] ended early", func(t *testing.T) {
		s, _ := openaiStreamOf(t, role+hello)
		chunks, err := openaiDrain(s)
		e := adapter.AsError(t, err)
		if len(chunks) != 2 || e.Class != adapter.ClassNetwork || !strings.Contains(e.Message, "stream ended early") {
			t.Fatalf("%d chunks, %+v", len(chunks), e)
		}
	})
	t.Run("truncated last event", func(t *testing.T) {
		s, _ := openaiStreamOf(t, role+`data: {"choices":[{"index":0,"delta":{"content":"Hel`)
		_, err := openaiDrain(s)
		if e := adapter.AsError(t, err); e.Class != adapter.ClassServer && e.Class != adapter.ClassNetwork {
			t.Fatalf("%+v", e)
		}
	})
	t.Run("mid-stream error event (fixture)", func(t *testing.T) {
		s, _ := openaiStreamOf(t, string(adapter.ClassifyFixture(t, "constructed-chat-stream-mid-error.sse")))
		chunks, err := openaiDrain(s)
		e := adapter.AsError(t, err)
		if len(chunks) != 2 || !chunks[1].Content || e.Class != adapter.ClassServer || e.Message != "upstream died" || e.Status != 200 {
			t.Fatalf("%d chunks, %+v", len(chunks), e)
		}
		if _, again := s.Next(); again != err {
			t.Errorf("the error is not sticky: %v", again)
		}
	})
	t.Run("error event by name", func(t *testing.T) {
		s, _ := openaiStreamOf(t, role+"event: error\ndata: {\"message\":\"overloaded\",\"type\":\"rate_limit_error\"}\n\n")
		_, err := openaiDrain(s)
		if e := adapter.AsError(t, err); e.Class != adapter.ClassRateLimited || e.Message != "overloaded" {
			t.Fatalf("%+v", e)
		}
	})
	t.Run("content filter before any content", func(t *testing.T) {
		s, _ := openaiStreamOf(t, string(adapter.ClassifyFixture(t, "constructed-chat-stream-content-filter.sse")))
		c, err := s.Next()
		if err != nil || c.Content {
			t.Fatalf("first chunk %+v, %v", c, err)
		}
		c, err = s.Next()
		if e := adapter.AsError(t, err); e.Class != adapter.ClassContentFilter || e.Status != 200 || c.FinishReason != "content_filter" {
			t.Fatalf("chunk %+v, error %+v", c, e)
		}
		// The executor decides; reading on still collects the usage.
		chunks, err := openaiDrain(s)
		if err != io.EOF || len(chunks) != 1 || !chunks[0].UsageOnly || s.Usage().Prompt != 12 {
			t.Fatalf("after the filter: %d chunks, %v, usage %+v", len(chunks), err, s.Usage())
		}
	})
	t.Run("usage on a chunk with choices is not usage-only", func(t *testing.T) {
		// vLLM's continuous usage stats and some vendors put usage on the
		// final choice chunk instead of a separate one.
		// The finish reason moves to a chunk of its own after the content
		// and the usage-only chunk is made from the vendor's usage.
		s, _ := openaiStreamOf(t, role+`data: {"choices":[{"index":0,"delta":{"content":"Hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":1}}`+"\n\n"+done)
		chunks, err := openaiDrain(s)
		if err != io.EOF || len(chunks) != 4 || chunks[1].UsageOnly || !chunks[1].Content || chunks[1].FinishReason != "" ||
			chunks[2].FinishReason != "stop" || !chunks[3].UsageOnly {
			t.Fatalf("%+v, %v", chunks, err)
		}
		if u := s.Usage(); !u.Known || u.Prompt != 3 || u.Completion != 1 {
			t.Errorf("usage %+v", u)
		}
	})
	t.Run("malformed chunk", func(t *testing.T) {
		s, _ := openaiStreamOf(t, role+"data: {not json}\n\n"+done)
		_, err := openaiDrain(s)
		if e := adapter.AsError(t, err); e.Class != adapter.ClassServer {
			t.Fatalf("%+v", e)
		}
	})
	t.Run("empty data and unknown fields are skipped", func(t *testing.T) {
		s, _ := openaiStreamOf(t, "data:\n\nid: 1\n\n"+role+hello+stop+done)
		chunks, err := openaiDrain(s)
		if err != io.EOF || len(chunks) != 4 {
			t.Fatalf("%d chunks, %v", len(chunks), err)
		}
	})
}

func TestOpenAIChatStreamRefusedBeforeStreaming(t *testing.T) {
	req := `{"model":"fast","messages":[{"role":"user","content":"hi"}],"stream":true}`
	for _, tc := range []struct {
		name  string
		reply func(http.ResponseWriter, *http.Request)
		class adapter.Class
	}{
		{"401", openaiJSON(401, adapter.ClassifyFixture(t, "error-401-invalid-api-key.json")), adapter.ClassAuth},
		{"429 insufficient_quota", openaiJSON(429, adapter.ClassifyFixture(t, "constructed-error-429-insufficient-quota.json")), adapter.ClassBilling},
		{"503 HTML", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(503); w.Write([]byte("<html>down</html>")) }, adapter.ClassServer},
		{"200 JSON error instead of a stream", openaiJSON(200, []byte(`{"error":{"message":"bad","type":"invalid_request_error","code":"context_length_exceeded"}}`)), adapter.ClassBadRequest},
		{"200 JSON completion instead of a stream", openaiJSON(200, adapter.ClassifyFixture(t, "chat-nonstream-default.response.json")), adapter.ClassServer},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, _ := openaiUpstream(t, tc.reply)
			s, err := adapter.OpenAI{}.ChatStream(context.Background(), openaiTarget(srv), openaiParse(t, req))
			if s != nil {
				t.Fatal("a stream was returned with the error")
			}
			if e := adapter.AsError(t, err); e.Class != tc.class {
				t.Errorf("%+v, want class %q", e, tc.class)
			}
		})
	}
}

// openaiStalling sends a role chunk, then waits until the client goes away,
// reporting when it noticed.
func openaiStalling(t *testing.T) (*httptest.Server, chan struct{}) {
	gone := make(chan struct{})
	srv, _ := openaiUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Write([]byte(`data: {"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}` + "\n\n"))
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
			close(gone)
		case <-time.After(10 * time.Second):
		}
	})
	return srv, gone
}

func TestOpenAIChatStreamDeadline(t *testing.T) {
	srv, gone := openaiStalling(t)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	s, err := adapter.OpenAI{}.ChatStream(ctx, openaiTarget(srv), openaiParse(t, `{"model":"fast","messages":[{"role":"user","content":"hi"}],"stream":true}`))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if c, err := s.Next(); err != nil || c.Content {
		t.Fatalf("first chunk %+v %v", c, err)
	}
	_, err = s.Next()
	if e := adapter.AsError(t, err); e.Class != adapter.ClassTimeout {
		t.Errorf("class %q, want timeout (%v)", e.Class, e)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("took %v", d)
	}
	select {
	case <-gone:
	case <-time.After(2 * time.Second):
		t.Error("the upstream never saw the request end")
	}
}

func TestOpenAIChatStreamClose(t *testing.T) {
	t.Run("aborts the upstream and unblocks Next", func(t *testing.T) {
		srv, gone := openaiStalling(t)
		s, err := adapter.OpenAI{}.ChatStream(context.Background(), openaiTarget(srv), openaiParse(t, `{"model":"fast","messages":[{"role":"user","content":"hi"}],"stream":true}`))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Next(); err != nil {
			t.Fatal(err)
		}
		errc := make(chan error, 1)
		go func() { _, err := s.Next(); errc <- err }()
		time.Sleep(50 * time.Millisecond) // let Next block on the read
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if err := s.Close(); err != nil {
			t.Fatal("second Close:", err)
		}
		select {
		case err := <-errc:
			if e := adapter.AsError(t, err); e.Class != adapter.ClassCancelled {
				t.Errorf("blocked Next ended with %+v", e)
			}
		case <-time.After(2 * time.Second):
			t.Fatal("Close did not unblock Next")
		}
		select {
		case <-gone:
		case <-time.After(2 * time.Second):
			t.Error("the upstream never saw the connection end")
		}
	})
	t.Run("client cancellation", func(t *testing.T) {
		srv, _ := openaiStalling(t)
		ctx, cancel := context.WithCancel(context.Background())
		s, err := adapter.OpenAI{}.ChatStream(ctx, openaiTarget(srv), openaiParse(t, `{"model":"fast","messages":[{"role":"user","content":"hi"}],"stream":true}`))
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		s.Next()
		time.AfterFunc(50*time.Millisecond, cancel)
		_, err = s.Next()
		if e := adapter.AsError(t, err); e.Class != adapter.ClassCancelled {
			t.Errorf("%+v", e)
		}
	})
	t.Run("after [DONE] the connection is reused", func(t *testing.T) {
		var conns atomic.Int32
		replay := adapter.OpenAISSE(adapter.ClassifyFixture(t, "chat-stream-finish-length.sse"))
		srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			replay(w, r)
			// The response ends a moment after [DONE], as over a real network:
			// closing the body at [DONE] would throw the connection away.
			time.Sleep(20 * time.Millisecond)
		}))
		srv.Config.ConnState = func(_ net.Conn, st http.ConnState) {
			if st == http.StateNew {
				conns.Add(1)
			}
		}
		srv.Start()
		defer srv.Close()
		for range 3 {
			s, err := adapter.OpenAI{}.ChatStream(context.Background(), openaiTarget(srv), openaiParse(t, `{"model":"fast","messages":[{"role":"user","content":"hi"}],"stream":true}`))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := openaiDrain(s); err != io.EOF {
				t.Fatal(err)
			}
			s.Close()
		}
		if n := conns.Load(); n != 1 {
			t.Errorf("%d connections for 3 sequential streams, want 1", n)
		}
	})
}

func TestOpenAIEmbed(t *testing.T) {
	srv, seen := openaiUpstream(t, openaiJSON(200, adapter.ClassifyFixture(t, "constructed-embeddings-out-of-order.response.json")))
	tg := openaiTarget(srv)
	tg.UpstreamModel = "text-embedding-3-small"
	res, err := adapter.OpenAI{}.Embed(context.Background(), tg, &adapter.EmbedRequest{Inputs: []string{"a", "b \"quoted\"\n", "ç"}, Dimensions: 3})
	if err != nil {
		t.Fatal(err)
	}
	want := [][]float32{{0.1, -0.1, 0.01}, {0.2, -0.2, 0.02}, {0.3, -0.3, 0.03}}
	if diff := cmp.Diff(want, res.Vectors); diff != "" {
		t.Errorf("vectors not in input order (-want +got):\n%s", diff)
	}
	if res.Usage != (adapter.Usage{Prompt: 9, Known: true}) {
		t.Errorf("usage %+v", res.Usage)
	}
	_, path, hdr, body := seen.get()
	if path != "/v1/embeddings" || hdr.Get("Authorization") != "Bearer "+openaiTestKey {
		t.Errorf("%s %v", path, hdr)
	}
	wantBody := map[string]any{"model": "text-embedding-3-small", "input": []any{"a", "b \"quoted\"\n", "ç"}, "dimensions": 3.0, "encoding_format": "float"}
	if diff := cmp.Diff(wantBody, openaiDecode(t, body)); diff != "" {
		t.Errorf("request body (-want +got):\n%s", diff)
	}
}

func TestOpenAIEmbedFailures(t *testing.T) {
	b64 := func(v ...float32) string {
		b := make([]byte, 4*len(v))
		for i, f := range v {
			binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(f))
		}
		return base64.StdEncoding.EncodeToString(b)
	}
	for _, tc := range []struct {
		name  string
		body  string
		dims  int
		class adapter.Class // "" means success
		msg   string
	}{
		{"base64 vectors", `{"data":[{"index":1,"embedding":"` + b64(3, 4) + `"},{"index":0,"embedding":"` + b64(1, 2) + `"}],"usage":{"prompt_tokens":2}}`, 0, "", ""},
		{"no index uses position", `{"data":[{"embedding":[1,2]},{"embedding":[3,4]}]}`, 0, "", ""},
		{"too few", `{"data":[{"index":0,"embedding":[1,2]}]}`, 0, adapter.ClassServer, "1 embeddings for 2 inputs"},
		{"duplicate index", `{"data":[{"index":0,"embedding":[1,2]},{"index":0,"embedding":[3,4]}]}`, 0, adapter.ClassServer, "index 0 twice"},
		{"index out of range", `{"data":[{"index":0,"embedding":[1,2]},{"index":2,"embedding":[3,4]}]}`, 0, adapter.ClassServer, "index 2"},
		{"ragged", `{"data":[{"index":0,"embedding":[1,2]},{"index":1,"embedding":[3]}]}`, 0, adapter.ClassServer, "different lengths"},
		{"wrong dimension", `{"data":[{"index":0,"embedding":[1,2]},{"index":1,"embedding":[3,4]}]}`, 3, adapter.ClassServer, "2-dimensional vectors where 3"},
		{"non-numeric", `{"data":[{"index":0,"embedding":[1,"x"]},{"index":1,"embedding":[3,4]}]}`, 0, adapter.ClassServer, "non-numeric"},
		{"no data", `{"object":"list"}`, 0, adapter.ClassServer, "without a data array"},
		{"error envelope", `{"error":{"message":"too many inputs","type":"invalid_request_error"}}`, 0, adapter.ClassBadRequest, "too many inputs"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, _ := openaiUpstream(t, openaiJSON(200, []byte(tc.body)))
			res, err := adapter.OpenAI{}.Embed(context.Background(), openaiTarget(srv), &adapter.EmbedRequest{Inputs: []string{"a", "b"}, Dimensions: tc.dims})
			if tc.class == "" {
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff([][]float32{{1, 2}, {3, 4}}, res.Vectors); diff != "" {
					t.Errorf("(-want +got):\n%s", diff)
				}
				return
			}
			e := adapter.AsError(t, err)
			if e.Class != tc.class || !strings.Contains(e.Message, tc.msg) {
				t.Errorf("%+v, want %q containing %q", e, tc.class, tc.msg)
			}
		})
	}
	if _, err := (adapter.OpenAI{}).Embed(context.Background(), adapter.Target{}, &adapter.EmbedRequest{}); adapter.ClassOf(err) != adapter.ClassBadRequest {
		t.Errorf("empty batch: %v", err)
	}
}

func TestOpenAIListModels(t *testing.T) {
	srv, seen := openaiUpstream(t, openaiJSON(200, adapter.ClassifyFixture(t, "constructed-models.response.json")))
	list, err := adapter.OpenAI{}.ListModels(context.Background(), openaiTarget(srv))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"gpt-4o", "text-embedding-3-small"}, list.Models); diff != "" {
		t.Error(diff)
	}
	if method, path, hdr, _ := seen.get(); method != http.MethodGet || path != "/v1/models" || hdr.Get("Authorization") != "Bearer "+openaiTestKey {
		t.Errorf("%s %s %v", method, path, hdr)
	}
	srv, _ = openaiUpstream(t, openaiJSON(401, adapter.ClassifyFixture(t, "error-401-invalid-api-key.json")))
	if _, err := (adapter.OpenAI{}).ListModels(context.Background(), openaiTarget(srv)); adapter.ClassOf(err) != adapter.ClassAuth {
		t.Errorf("401: %v", err)
	}
}

func BenchmarkOpenAIChatPassthrough(b *testing.B) {
	fixture := adapter.ClassifyFixture(b, "chat-nonstream-default.response.json")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.Write(fixture)
	}))
	defer srv.Close()
	tg := openaiTarget(srv)
	r := openaiParse(b, string(benchBody))
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		res, err := adapter.OpenAI{}.Chat(ctx, tg, r)
		if err != nil || !res.Usage.Known {
			b.Fatal(err)
		}
	}
}

func BenchmarkOpenAIChatStream(b *testing.B) {
	fixture := adapter.ClassifyFixture(b, "chat-stream-text-include-usage.sse")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		w.Write(fixture)
	}))
	defer srv.Close()
	tg := openaiTarget(srv)
	r := openaiParse(b, string(benchBody))
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		s, err := adapter.OpenAI{}.ChatStream(ctx, tg, r)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := openaiDrain(s); err != io.EOF {
			b.Fatal(err)
		}
		s.Close()
	}
}

// openaiCanned is a transport that answers every request with one canned
// response, so a benchmark measures the adapter rather than the loopback.
type openaiCanned struct {
	status int
	ctype  string
	body   []byte
}

func (c openaiCanned) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil {
		io.Copy(io.Discard, r.Body)
		r.Body.Close()
	}
	return &http.Response{
		StatusCode: c.status, Header: http.Header{"Content-Type": {c.ctype}},
		Body: io.NopCloser(bytes.NewReader(c.body)), ContentLength: int64(len(c.body)), Request: r,
	}, nil
}

func BenchmarkOpenAIChatAdapterOnly(b *testing.B) {
	tg := adapter.Target{BaseURL: "http://upstream.invalid/v1", APIKey: openaiTestKey, UpstreamModel: "gpt-4o-2024-08-06",
		Client: &http.Client{Transport: openaiCanned{200, "application/json", adapter.ClassifyFixture(b, "chat-nonstream-default.response.json")}}}
	r := openaiParse(b, string(benchBody))
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		res, err := adapter.OpenAI{}.Chat(ctx, tg, r)
		if err != nil || !res.Usage.Known {
			b.Fatal(err)
		}
	}
}

func BenchmarkOpenAIChatStreamAdapterOnly(b *testing.B) {
	tg := adapter.Target{BaseURL: "http://upstream.invalid/v1", APIKey: openaiTestKey, UpstreamModel: "gpt-4o-2024-08-06",
		Client: &http.Client{Transport: openaiCanned{200, "text/event-stream", adapter.ClassifyFixture(b, "chat-stream-text-include-usage.sse")}}}
	r := openaiParse(b, string(benchBody))
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		s, err := adapter.OpenAI{}.ChatStream(ctx, tg, r)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := openaiDrain(s); err != io.EOF {
			b.Fatal(err)
		}
		s.Close()
	}
}

// benchBody is a typical streamed chat request.
var benchBody = []byte(`{"model":"standard","messages":[{"role":"system","content":"You are a helpful assistant."},{"role":"user","content":"Write a haiku about the sea and the wind, please."}],"temperature":0.7,"max_tokens":256,"stream":true,"stream_options":{"include_usage":true}}`)

func TestOpenAIChatStreamContentFlags(t *testing.T) {
	// Role-only first chunks, from the real captures, are not content.
	for file, first := range map[string]bool{
		"chat-stream-text-include-usage.sse":      false, // content ""
		"chat-stream-refusal.sse":                 false, // content null, refusal ""
		"chat-stream-tool-call-include-usage.sse": true,  // already names the tool call
	} {
		srv, _ := openaiUpstream(t, adapter.OpenAISSE(adapter.ClassifyFixture(t, file)))
		s, err := adapter.OpenAI{}.ChatStream(context.Background(), openaiTarget(srv), openaiParse(t, `{"model":"fast","messages":[{"role":"user","content":"hi"}],"stream":true}`))
		if err != nil {
			t.Fatal(err)
		}
		c, err := s.Next()
		if err != nil || c.Content != first {
			t.Errorf("%s: first chunk Content %v (err %v), want %v", file, c.Content, err, first)
		}
		c, err = s.Next()
		if err != nil || !c.Content {
			t.Errorf("%s: second chunk Content %v (err %v), want true", file, c.Content, err)
		}
		s.Close()
	}
}
