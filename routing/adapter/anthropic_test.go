package adapter

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestAnthropicRequestGolden(t *testing.T) {
	for _, tc := range vendorGoldenRequests() {
		t.Run(tc.name, func(t *testing.T) {
			body, err := Anthropic{}.requestBody("claude-sonnet-4-5", tc.req, tc.req.Stream)
			if err != nil {
				t.Fatal(err)
			}
			vendorGolden(t, "anthropic", "request-"+tc.name+".golden.json", body)
		})
	}
}

// Our translation of the OpenAI equivalent of a recorded official-SDK call is
// the body that SDK sent.
func TestAnthropicRequestMatchesRecordedSDK(t *testing.T) {
	weather := json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"},"units":{"type":"string","enum":["celsius","fahrenheit"]}},"required":["city"]}`)
	tests := []struct {
		file   string
		prompt string
		stream bool
	}{
		{"recorded-nonstream-tool-use.1.request.json", "What's the weather in San Francisco? Use fahrenheit.", false},
		{"recorded-stream-tool-use.1.request.json", "Weather in SF in fahrenheit?", true},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			r := &ChatRequest{
				Messages:  []Message{{Role: "user", Content: vtText(tc.prompt)}},
				MaxTokens: vtInt(512),
				Tools:     []Tool{{Name: "get_weather", Description: "Get weather", Parameters: weather}},
			}
			got, err := Anthropic{}.requestBody("claude-3-7-sonnet-latest", r, tc.stream)
			if err != nil {
				t.Fatal(err)
			}
			vendorJSONEqual(t, vendorFixture(t, "anthropic", tc.file), got)
		})
	}
}

func TestAnthropicRequestDetails(t *testing.T) {
	user := Message{Role: "user", Content: vtText("hi")}
	tests := []struct {
		name string
		a    Anthropic
		req  *ChatRequest
		want string // gjson-free: a substring of the compact body
	}{
		{"default max_tokens", Anthropic{}, &ChatRequest{Messages: []Message{user}}, `"max_tokens":4096`},
		{"configured default", Anthropic{DefaultMaxTokens: 1000}, &ChatRequest{Messages: []Message{user}}, `"max_tokens":1000`},
		{"caller max_tokens wins", Anthropic{DefaultMaxTokens: 1000}, &ChatRequest{Messages: []Message{user}, MaxTokens: vtInt(77)}, `"max_tokens":77`},
		{"temperature and top_p both go out", Anthropic{}, &ChatRequest{Messages: []Message{user}, Temperature: vtFloat(0.5), TopP: vtFloat(0.8)}, `"temperature":0.5,"top_p":0.8`},
		{"top_p 1 beside temperature asks for nothing", Anthropic{}, &ChatRequest{Messages: []Message{user}, Temperature: vtFloat(0.5), TopP: vtFloat(1)}, `"temperature":0.5}`},
		{"parallel_tool_calls false", Anthropic{}, &ChatRequest{Messages: []Message{user}, Tools: []Tool{{Name: "f"}}, ParallelToolCalls: vtBool(false)},
			`"tool_choice":{"type":"auto","disable_parallel_tool_use":true}`},
		{"safety_identifier is the user id", Anthropic{}, &ChatRequest{Messages: []Message{user}, User: "u", SafetyIdentifier: "s"}, `"metadata":{"user_id":"s"}`},
		{"thinking raises max_tokens over the budget", Anthropic{}, &ChatRequest{Messages: []Message{user}, MaxTokens: vtInt(100), Thinking: &Thinking{Type: "enabled", BudgetTokens: 2000}},
			`"max_tokens":6096,"messages"`},
		{"thinking keeps a large max_tokens", Anthropic{}, &ChatRequest{Messages: []Message{user}, MaxTokens: vtInt(30000), ReasoningEffort: "low"},
			`"thinking":{"type":"enabled","budget_tokens":2048}`},
		{"tool_choice auto", Anthropic{}, &ChatRequest{Messages: []Message{user}, Tools: []Tool{{Name: "f"}}, ToolChoice: json.RawMessage(`"auto"`)},
			`"tool_choice":{"type":"auto"}`},
		{"tool_choice without tools is not sent", Anthropic{}, &ChatRequest{Messages: []Message{user}, ToolChoice: json.RawMessage(`"required"`)},
			`{"model":"m","max_tokens":4096,"messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}]}`},
		{"tool results come before text in a merged user turn", Anthropic{}, &ChatRequest{Messages: []Message{
			{Role: "assistant", ToolCalls: []ToolCall{{ID: "t1", Name: "f", Arguments: "{}"}}},
			{Role: "user", Content: vtText("also this")},
			{Role: "tool", ToolCallID: "t1", Content: vtText("done")},
		}}, `{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"done"},{"type":"text","text":"also this"}]}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			body, err := tc.a.requestBody("m", tc.req, false)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Contains(body, []byte(tc.want)) {
				t.Errorf("body lacks %s:\n%s", tc.want, body)
			}
		})
	}
}

func TestAnthropicRequestErrors(t *testing.T) {
	tests := []struct {
		name string
		req  *ChatRequest
	}{
		{"invalid tool arguments", &ChatRequest{Messages: []Message{{Role: "assistant", ToolCalls: []ToolCall{{ID: "c", Name: "f", Arguments: `{"a":`}}}}}},
		{"arguments not an object", &ChatRequest{Messages: []Message{{Role: "assistant", ToolCalls: []ToolCall{{ID: "c", Name: "f", Arguments: `[1]`}}}}}},
		{"ftp image", &ChatRequest{Messages: []Message{{Role: "user", Content: []ContentPart{{Type: "image_url", ImageURL: "ftp://x/y.png"}}}}}},
		{"data URL without base64", &ChatRequest{Messages: []Message{{Role: "user", Content: []ContentPart{{Type: "image_url", ImageURL: "data:image/png,abc"}}}}}},
		{"data URL with bad base64", &ChatRequest{Messages: []Message{{Role: "user", Content: []ContentPart{{Type: "image_url", ImageURL: "data:image/png;base64,@@@"}}}}}},
		{"unknown role", &ChatRequest{Messages: []Message{{Role: "function", Content: vtText("x")}}}},
		{"tool message without id", &ChatRequest{Messages: []Message{{Role: "tool", Content: vtText("x")}}}},
		{"bad tool_choice", &ChatRequest{Messages: []Message{{Role: "user", Content: vtText("x")}}, Tools: []Tool{{Name: "f"}}, ToolChoice: json.RawMessage(`"sometimes"`)}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// The adapter answers before any upstream call: the URL is never dialled.
			_, err := Anthropic{}.Chat(context.Background(), Target{BaseURL: "http://127.0.0.1:1", UpstreamModel: "m"}, tc.req)
			if got := vendorErrClass(err); got != ClassBadRequest {
				t.Errorf("err = %v, class %q, want bad_request", err, got)
			}
		})
	}
}

func TestAnthropicChat(t *testing.T) {
	thinking := []byte(`{"id":"msg_think","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"thinking","thinking":"6 times 7.","signature":"sig"},{"type":"text","text":"42"}],"stop_reason":"max_tokens","stop_sequence":null,"usage":{"input_tokens":10,"cache_creation_input_tokens":5,"cache_read_input_tokens":100,"output_tokens":7}}`)
	type want struct {
		id, model string
		content   *string
		reasoning string
		calls     []vtToolCall
		finish    string
		usage     *vtUsage
		res       Usage
	}
	tests := []struct {
		name string
		body []byte
		want want
	}{
		{"recorded tool use", vendorFixture(t, "anthropic", "recorded-nonstream-tool-use.1.response.json"), want{
			id: "msg_01VLZuPg94y7NULJySZhEDJY", model: "claude-3-7-sonnet-20250219",
			content: vtStr("I'll get the current weather in San Francisco for you in Fahrenheit."),
			calls:   []vtToolCall{vtCall(0, "toolu_01TZR6ZrLHdpAWdmhVPuDfjQ", "get_weather", `{"city":"San Francisco","units":"fahrenheit"}`)},
			finish:  "tool_calls", usage: vtUsageOf(402, 89, vtInt64(0), nil),
			res: Usage{Prompt: 402, Completion: 89, Known: true, CachedKnown: true},
		}},
		{"recorded answer after tool result", vendorFixture(t, "anthropic", "recorded-nonstream-tool-use.2.response.json"), want{
			id: "msg_014SddXAzPYwR72fa37nJ8N2", model: "claude-3-7-sonnet-20250219",
			content: vtStr("The current temperature in San Francisco is 68 degrees Fahrenheit."),
			finish:  "stop", usage: vtUsageOf(514, 19, vtInt64(0), nil),
			res: Usage{Prompt: 514, Completion: 19, Known: true, CachedKnown: true},
		}},
		{"thinking and cache", thinking, want{
			id: "msg_think", model: "claude-sonnet-4-5", content: vtStr("42"), reasoning: "6 times 7.",
			finish: "length", usage: vtUsageOf(115, 7, vtInt64(100), nil),
			res: Usage{Prompt: 115, Completion: 7, Cached: 100, CacheCreation: 5, Known: true, CachedKnown: true},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			up := newVendorUpstream(t, http.StatusOK, http.Header{"Content-Type": {"application/json"}}, tc.body)
			res, err := Anthropic{}.Chat(context.Background(), Target{BaseURL: up.URL, APIKey: "sk-ant-test", UpstreamModel: "claude-x"},
				&ChatRequest{Messages: []Message{{Role: "user", Content: vtText("hi")}}})
			if err != nil {
				t.Fatal(err)
			}
			var got vtCompletion
			if err := json.Unmarshal(res.Body, &got); err != nil {
				t.Fatalf("body: %v\n%s", err, res.Body)
			}
			if got.Object != "chat.completion" || len(got.Choices) != 1 || got.Choices[0].Message.Role != "assistant" {
				t.Fatalf("not a chat.completion: %s", res.Body)
			}
			m := got.Choices[0].Message
			gotW := want{got.ID, got.Model, m.Content, m.ReasoningContent, m.ToolCalls, got.Choices[0].FinishReason, got.Usage, res.Usage}
			if diff := cmp.Diff(tc.want, gotW, cmp.AllowUnexported(want{})); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			if res.FinishReason != tc.want.finish {
				t.Errorf("FinishReason = %q", res.FinishReason)
			}
		})
	}
}

func TestAnthropicWire(t *testing.T) {
	body := vendorFixture(t, "anthropic", "recorded-nonstream-tool-use.2.response.json")
	for _, base := range []string{"", "/", "/v1", "/v1/"} {
		t.Run("base"+base, func(t *testing.T) {
			up := newVendorUpstream(t, http.StatusOK, nil, body)
			_, err := Anthropic{}.Chat(context.Background(), Target{BaseURL: up.URL + base, APIKey: "sk-ant-key", UpstreamModel: "claude-x"},
				&ChatRequest{Messages: []Message{{Role: "user", Content: vtText("hi")}}})
			if err != nil {
				t.Fatal(err)
			}
			r := up.requests()[0]
			if r.Method != http.MethodPost || r.Path != "/v1/messages" {
				t.Errorf("%s %s", r.Method, r.Path)
			}
			for k, v := range map[string]string{"X-Api-Key": "sk-ant-key", "Anthropic-Version": "2023-06-01", "Content-Type": "application/json"} {
				if got := r.Header.Get(k); got != v {
					t.Errorf("%s = %q, want %q", k, got, v)
				}
			}
			if r.Header.Get("Authorization") != "" {
				t.Error("Authorization header sent to Anthropic")
			}
		})
	}
}

func TestAnthropicChatFailures(t *testing.T) {
	tests := []struct {
		name   string
		status int
		header http.Header
		body   []byte
		want   Class
		retry  time.Duration
	}{
		{"529 overloaded", 529, nil, vendorFixture(t, "anthropic", "error-529-overloaded.json"), ClassServer, 0},
		{"429 with Retry-After", 429, http.Header{"Retry-After": {"7"}}, []byte(`{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}`), ClassRateLimited, 7 * time.Second},
		{"refusal", 200, nil, []byte(`{"id":"m","type":"message","role":"assistant","model":"c","content":[],"stop_reason":"refusal","usage":{"input_tokens":5,"output_tokens":0}}`), ClassContentFilter, 0},
		{"error body with 200", 200, nil, vendorFixture(t, "anthropic", "error-529-overloaded.json"), ClassServer, 0},
		{"malformed body", 200, nil, []byte(`<html>`), ClassServer, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			up := newVendorUpstream(t, tc.status, tc.header, tc.body)
			_, err := Anthropic{}.Chat(context.Background(), Target{BaseURL: up.URL, UpstreamModel: "c"}, &ChatRequest{Messages: []Message{{Role: "user", Content: vtText("hi")}}})
			var ue *Error
			if !errors.As(err, &ue) || ue.Class != tc.want || ue.RetryAfter != tc.retry {
				t.Errorf("err = %#v, want class %q retry %v", err, tc.want, tc.retry)
			}
		})
	}
}

func TestClassifyAnthropic(t *testing.T) {
	now := time.Now()
	reset := func(d time.Duration) string { return now.Add(d).UTC().Format(time.RFC3339) }
	body := func(typ, msg string) []byte {
		return []byte(`{"type":"error","error":{"type":"` + typ + `","message":"` + msg + `"},"request_id":"req_1"}`)
	}
	tests := []struct {
		name     string
		status   int
		header   http.Header
		body     []byte
		want     Class
		code     string
		minRetry time.Duration
	}{
		{"invalid_request_error", 400, nil, body("invalid_request_error", "max_tokens: field required"), ClassBadRequest, "invalid_request_error", 0},
		{"prompt too long", 400, nil, body("invalid_request_error", "prompt is too long: 210000 tokens > 200000 maximum"), ClassBadRequest, "invalid_request_error", 0},
		{"credit balance too low", 400, nil, body("invalid_request_error", "Your credit balance is too low to access the Anthropic API. Please go to Plans & Billing to upgrade or purchase credits."), ClassBilling, "invalid_request_error", 0},
		{"authentication_error", 401, nil, body("authentication_error", "invalid x-api-key"), ClassAuth, "authentication_error", 0},
		{"billing_error", 402, nil, body("billing_error", "billing issue"), ClassBilling, "billing_error", 0},
		{"402 without body", 402, nil, nil, ClassBilling, "", 0},
		{"permission_error", 403, nil, body("permission_error", "no access to model"), ClassAuth, "permission_error", 0},
		{"not_found_error", 404, nil, body("not_found_error", "model: claude-9"), ClassBadRequest, "not_found_error", 0},
		{"request_too_large", 413, nil, body("request_too_large", "Request exceeds the maximum allowed number of bytes."), ClassBadRequest, "request_too_large", 0},
		{"rate_limit_error with Retry-After", 429, http.Header{"Retry-After": {"12"}}, body("rate_limit_error", "Number of request tokens has exceeded your per-minute rate limit"), ClassRateLimited, "rate_limit_error", 12 * time.Second},
		{"rate_limit_error with reset headers", 429, http.Header{
			"Anthropic-Ratelimit-Requests-Remaining": {"3"}, "Anthropic-Ratelimit-Requests-Reset": {reset(2 * time.Second)},
			"Anthropic-Ratelimit-Tokens-Remaining": {"0"}, "Anthropic-Ratelimit-Tokens-Reset": {reset(40 * time.Second)},
		}, body("rate_limit_error", "tokens"), ClassRateLimited, "rate_limit_error", 35 * time.Second},
		{"api_error", 500, nil, body("api_error", "Internal server error"), ClassServer, "api_error", 0},
		{"timeout_error", 504, nil, body("timeout_error", "Request timed out"), ClassTimeout, "timeout_error", 0},
		{"overloaded_error 529", 529, nil, vendorFixture(t, "anthropic", "error-529-overloaded.json"), ClassServer, "overloaded_error", 0},
		{"HTML 502 from a proxy", 502, nil, []byte("<html>bad gateway</html>"), ClassServer, "", 0},
		{"bare 429", 429, nil, nil, ClassRateLimited, "", 0},
		{"bare 401", 401, nil, []byte("unauthorized"), ClassAuth, "", 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := ClassifyAnthropic(tc.status, tc.header, tc.body)
			if e.Class != tc.want || e.Code != tc.code || e.Status != tc.status {
				t.Errorf("got class %q code %q status %d, want %q %q %d", e.Class, e.Code, e.Status, tc.want, tc.code, tc.status)
			}
			if e.RetryAfter < tc.minRetry || (tc.minRetry == 0 && e.RetryAfter != 0) || e.RetryAfter > tc.minRetry+10*time.Second {
				t.Errorf("RetryAfter = %v, want about %v", e.RetryAfter, tc.minRetry)
			}
			if e.Message == "" {
				t.Error("no message")
			}
		})
	}
}

func TestAnthropicStream(t *testing.T) {
	tests := []struct {
		file string
		want vtSummary
		use  Usage
	}{
		{"stream-basic-text.sse", vtSummary{
			ID: "msg_4QpJur2dWWDjF6C758FbBw5vm12BaVipnK", Model: "claude-3-opus-latest",
			Content: "Hello there!", Finish: "stop", Usage: vtUsageOf(11, 6, nil, nil),
		}, Usage{Prompt: 11, Completion: 6, Known: true}},
		{"stream-tool-use.sse", vtSummary{
			ID: "msg_019Q1hrJbZG26Fb9BQhrkHEr", Model: "claude-sonnet-4-20250514",
			Content:   "I'll check the current weather in Paris for you.",
			ToolCalls: []vtToolCall{vtCall(0, "toolu_01NRLabsLyVHZPKxbKvkfSMn", "get_weather", `{"location": "Paris"}`)},
			Finish:    "tool_calls", Usage: vtUsageOf(377, 65, vtInt64(0), nil),
		}, Usage{Prompt: 377, Completion: 65, Known: true, CachedKnown: true}},
		{"recorded-stream-tool-use.1.response.sse", vtSummary{
			ID: "msg_01H1pwRRkQxKbUGKi785gT4M", Model: "claude-3-7-sonnet-20250219",
			Content:   "I'll get the current weather in San Francisco for you in Fahrenheit.",
			ToolCalls: []vtToolCall{vtCall(0, "toolu_01RaX2WYWRWCbaeFHssmGJXG", "get_weather", `{"city": "San Francisco", "units": "fahrenheit"}`)},
			Finish:    "tool_calls", Usage: vtUsageOf(397, 89, vtInt64(0), nil),
		}, Usage{Prompt: 397, Completion: 89, Known: true, CachedKnown: true}},
		{"recorded-stream-tool-use.2.response.sse", vtSummary{
			ID: "msg_01Hh7yjeiaEaEREnpywjByCo", Model: "claude-3-7-sonnet-20250219",
			Content: "The current weather in San Francisco is 68 degrees Fahrenheit.",
			Finish:  "stop", Usage: vtUsageOf(509, 19, vtInt64(0), nil),
		}, Usage{Prompt: 509, Completion: 19, Known: true, CachedKnown: true}},
		{"stream-thinking.constructed.sse", vtSummary{
			ID: "msg_01ThinkingConstructed", Model: "claude-sonnet-4-20250514",
			Reasoning: "27 * 453 = 27 * 400 + 27 * 53 = 10800 + 1431 = 12231.",
			Content:   "27 × 453 = 12,231", Finish: "length", Usage: vtUsageOf(260, 120, vtInt64(200), nil),
		}, Usage{Prompt: 260, Completion: 120, Cached: 200, CacheCreation: 10, Known: true, CachedKnown: true}},
		{"stream-refusal.sse", vtSummary{
			ID: "msg_01RefusalTestMessage123456789", Model: "claude-opus-4-7",
			ErrClass: ClassContentFilter, ErrCode: "refusal",
		}, Usage{Prompt: 20, Completion: 0, Known: true}},
		{"stream-error-overloaded.constructed.sse", vtSummary{
			ID: "msg_01OverloadedConstructed", Model: "claude-sonnet-4-20250514",
			Content: "Hel", ErrClass: ClassServer, ErrCode: "overloaded_error",
		}, Usage{Prompt: 12, Completion: 1, Known: true}},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			raw := vendorFixture(t, "anthropic", tc.file)
			up := newVendorUpstream(t, http.StatusOK, http.Header{"Content-Type": {"text/event-stream"}}, raw)
			s, err := Anthropic{}.ChatStream(context.Background(), Target{BaseURL: up.URL, APIKey: "k", UpstreamModel: "claude-x"},
				&ChatRequest{Stream: true, Messages: []Message{{Role: "user", Content: vtText("hi")}}})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			chunks, err := vendorCollect(t, s)
			got := vendorSummarize(t, chunks, err)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.use, s.Usage()); diff != "" {
				t.Errorf("Usage() (-want +got):\n%s", diff)
			}
			if r := up.requests()[0]; !bytes.Contains(r.Body, []byte(`"stream":true`)) || r.Header.Get("Accept") != "text/event-stream" {
				t.Errorf("not a stream request: %s %v", r.Body, r.Header)
			}
		})
	}
}

func TestAnthropicStreamTorture(t *testing.T) {
	files := []string{
		"stream-basic-text.sse", "stream-tool-use.sse", "stream-refusal.sse", "stream-thinking.constructed.sse",
		"recorded-stream-tool-use.1.response.sse", "recorded-stream-tool-use.2.response.sse", "stream-error-overloaded.constructed.sse",
	}
	for _, f := range files {
		t.Run(f, func(t *testing.T) {
			vendorCheckTorture(t, vendorFixture(t, "anthropic", f), func(body io.ReadCloser) Stream {
				return newAnthropicStream(context.Background(), body, "claude-x", vendorNow)
			})
		})
	}
}

func TestAnthropicStreamEndedEarly(t *testing.T) {
	raw := vendorFixture(t, "anthropic", "stream-basic-text.sse")
	cut := raw[:bytes.Index(raw, []byte("event: message_delta"))]
	s := newAnthropicStream(context.Background(), io.NopCloser(bytes.NewReader(cut)), "claude-x", vendorNow)
	chunks, err := vendorCollect(t, s)
	got := vendorSummarize(t, chunks, err)
	if got.ErrClass != ClassNetwork || got.Content != "Hello there!" {
		t.Errorf("got %+v, want network failure after the text", got)
	}
	if !strings.Contains(err.Error(), "stream ended early") {
		t.Errorf("err = %v", err)
	}

	// message_stop lost after a complete message_delta: still a clean end.
	cut = raw[:bytes.Index(raw, []byte("event: message_stop"))]
	s = newAnthropicStream(context.Background(), io.NopCloser(bytes.NewReader(cut)), "claude-x", vendorNow)
	chunks, err = vendorCollect(t, s)
	if got := vendorSummarize(t, chunks, err); got.ErrClass != "" || got.Finish != "stop" || got.Usage == nil {
		t.Errorf("got %+v, want a clean end", got)
	}
}

func TestAnthropicTransportFailures(t *testing.T) {
	req := &ChatRequest{Messages: []Message{{Role: "user", Content: vtText("hi")}}}
	for _, tc := range vendorTransportCases() {
		t.Run("chat "+tc.name, func(t *testing.T) {
			_, err := Anthropic{}.Chat(tc.ctx(t), Target{BaseURL: tc.base(t), UpstreamModel: "c"}, req)
			if got := vendorErrClass(err); got != tc.want {
				t.Errorf("err = %v, class %q, want %q", err, got, tc.want)
			}
		})
	}
	t.Run("stream deadline after the first events", func(t *testing.T) {
		raw := vendorFixture(t, "anthropic", "stream-basic-text.sse")
		head := raw[:bytes.Index(raw, []byte("event: content_block_stop"))]
		srv := newVendorStall(t, head)
		ctx, cancel := context.WithTimeout(context.Background(), 150*time.Millisecond)
		defer cancel()
		s, err := Anthropic{}.ChatStream(ctx, Target{BaseURL: srv.URL, UpstreamModel: "c"}, req)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		chunks, err := vendorCollect(t, s)
		got := vendorSummarize(t, chunks, err)
		if got.ErrClass != ClassTimeout || got.Content != "Hello there!" {
			t.Errorf("got %+v, want the text then a timeout", got)
		}
	})
}

func TestAnthropicEmbedAndModels(t *testing.T) {
	_, err := Anthropic{}.Embed(context.Background(), Target{}, &EmbedRequest{Inputs: []string{"x"}})
	var ue *Error
	if !errors.As(err, &ue) || ue.Class != ClassBadRequest || !strings.Contains(ue.Message, "no embeddings") {
		t.Errorf("Embed err = %v", err)
	}

	up := newVendorUpstream(t, http.StatusOK, nil, []byte(`{"data":[{"type":"model","id":"claude-sonnet-4-5","display_name":"Claude Sonnet 4.5"},{"type":"model","id":"claude-haiku-4-5"}],"has_more":false}`))
	list, err := Anthropic{}.ListModels(context.Background(), Target{BaseURL: up.URL + "/v1/", APIKey: "k"})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"claude-sonnet-4-5", "claude-haiku-4-5"}, list.Models); diff != "" {
		t.Error(diff)
	}
	if r := up.requests()[0]; r.Method != http.MethodGet || r.Path != "/v1/models" || r.Header.Get("X-Api-Key") != "k" {
		t.Errorf("request %s %s %v", r.Method, r.Path, r.Header)
	}

	bad := newVendorUpstream(t, http.StatusUnauthorized, nil, []byte(`{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}`))
	if _, err := (Anthropic{}).ListModels(context.Background(), Target{BaseURL: bad.URL}); vendorErrClass(err) != ClassAuth {
		t.Errorf("ListModels with a bad key: %v", err)
	}
}
