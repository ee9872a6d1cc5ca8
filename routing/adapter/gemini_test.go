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

func TestGeminiRequestGolden(t *testing.T) {
	for _, tc := range vendorGoldenRequests() {
		t.Run(tc.name, func(t *testing.T) {
			body, err := geminiRequestBody(tc.req)
			if err != nil {
				t.Fatal(err)
			}
			vendorGolden(t, "gemini", "request-"+tc.name+".golden.json", body)
		})
	}
}

func TestGeminiRequestDetails(t *testing.T) {
	user := Message{Role: "user", Content: vtText("hi")}
	tools := []Tool{{Name: "f", Parameters: json.RawMessage(`{"type":"object","properties":{"a":{"type":"string"}}}`)}, {Name: "g"}}
	tests := []struct {
		name string
		req  *ChatRequest
		want string // a fragment of the compact body
	}{
		{"no generationConfig when nothing is set", &ChatRequest{Messages: []Message{user}},
			`{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`},
		{"tool_choice auto", &ChatRequest{Messages: []Message{user}, Tools: tools, ToolChoice: json.RawMessage(`"auto"`)},
			`"toolConfig":{"functionCallingConfig":{"mode":"AUTO"}}`},
		{"tool_choice required", &ChatRequest{Messages: []Message{user}, Tools: tools, ToolChoice: json.RawMessage(`"required"`)},
			`"toolConfig":{"functionCallingConfig":{"mode":"ANY"}}`},
		{"tool_choice none", &ChatRequest{Messages: []Message{user}, Tools: tools, ToolChoice: json.RawMessage(`"none"`)},
			`"toolConfig":{"functionCallingConfig":{"mode":"NONE"}}`},
		{"tool_choice function", &ChatRequest{Messages: []Message{user}, Tools: tools, ToolChoice: json.RawMessage(`{"type":"function","function":{"name":"g"}}`)},
			`"toolConfig":{"functionCallingConfig":{"mode":"ANY","allowedFunctionNames":["g"]}}`},
		{"a function without parameters declares none", &ChatRequest{Messages: []Message{user}, Tools: tools},
			`{"name":"g"}`},
		{"json_object response format", &ChatRequest{Messages: []Message{user}, Format: ResponseFormat{Type: FormatJSONObject}},
			`"generationConfig":{"responseMimeType":"application/json"}`},
		{"json_schema response format", &ChatRequest{Messages: []Message{user}, Format: ResponseFormat{Type: FormatJSONSchema, Name: "x", Schema: json.RawMessage(`{"type":"object","additionalProperties":false}`)}},
			`"generationConfig":{"responseMimeType":"application/json","responseJsonSchema":{"type":"object","additionalProperties":false}}`},
		{"n, seed and penalties", &ChatRequest{Messages: []Message{user}, N: 3, Seed: vtInt64(7), FrequencyPenalty: vtFloat(0.5), PresencePenalty: vtFloat(-1)},
			`"generationConfig":{"candidateCount":3,"seed":7,"frequencyPenalty":0.5,"presencePenalty":-1}`},
		{"thinking budget", &ChatRequest{Messages: []Message{user}, Thinking: &Thinking{Type: "enabled", BudgetTokens: 3000}},
			`"generationConfig":{"thinkingConfig":{"thinkingBudget":3000,"includeThoughts":true}}`},
		{"image URL without an extension", &ChatRequest{Messages: []Message{{Role: "user", Content: []ContentPart{{Type: "image_url", ImageURL: "https://example.com/img?id=3"}}}}},
			`{"fileData":{"mimeType":"image/jpeg","fileUri":"https://example.com/img?id=3"}}`},
		{"tool result named by the tool message when no call precedes it", &ChatRequest{Messages: []Message{{Role: "tool", ToolCallID: "x", Name: "f", Content: vtText("ok")}}},
			`{"functionResponse":{"name":"f","response":{"content":"ok"}}}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			body, err := geminiRequestBody(tc.req)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Contains(body, []byte(tc.want)) {
				t.Errorf("body lacks %s:\n%s", tc.want, body)
			}
		})
	}
}

func TestGeminiSchema(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"strict OpenAI schema",
			`{"$schema":"x","type":"object","properties":{"a":{"type":"string","format":"uri"},"b":{"type":["integer","null"]}},"required":["a"],"additionalProperties":false,"strict":true}`,
			`{"properties":{"a":{"type":"string"},"b":{"nullable":true,"type":"integer"}},"required":["a"],"type":"object"}`},
		{"nested arrays and enums",
			`{"type":"object","properties":{"tags":{"type":"array","items":{"type":"string","enum":["x","y"],"additionalProperties":false}},"n":{"type":"integer","enum":[1,2]},"k":{"const":"only"}}}`,
			`{"properties":{"k":{"enum":["only"],"type":"string"},"n":{"type":"integer"},"tags":{"items":{"enum":["x","y"],"type":"string"},"type":"array"}},"type":"object"}`},
		{"anyOf and oneOf",
			`{"type":"object","properties":{"v":{"oneOf":[{"type":"string"},{"type":"number","format":"double"}]}}}`,
			`{"properties":{"v":{"anyOf":[{"type":"string"},{"format":"double","type":"number"}]}},"type":"object"}`},
		{"no properties means no parameters", `{"type":"object","properties":{}}`, ``},
		{"absent", ``, ``},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := geminiSchema(json.RawMessage(tc.in))
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
	if _, err := geminiSchema(json.RawMessage(`{"type":`)); vendorErrClass(err) != ClassBadRequest {
		t.Errorf("invalid schema: %v", err)
	}
}

func TestGeminiRequestErrors(t *testing.T) {
	tests := []struct {
		name string
		req  *ChatRequest
	}{
		{"invalid tool arguments", &ChatRequest{Messages: []Message{{Role: "assistant", ToolCalls: []ToolCall{{ID: "c", Name: "f", Arguments: `not json`}}}}}},
		{"tool result for an unknown call", &ChatRequest{Messages: []Message{{Role: "tool", ToolCallID: "nope", Content: vtText("x")}}}},
		{"file image", &ChatRequest{Messages: []Message{{Role: "user", Content: []ContentPart{{Type: "image_url", ImageURL: "file:///etc/passwd"}}}}}},
		{"unknown role", &ChatRequest{Messages: []Message{{Role: "critic", Content: vtText("x")}}}},
		{"bad tool_choice", &ChatRequest{Messages: []Message{{Role: "user", Content: vtText("x")}}, Tools: []Tool{{Name: "f"}}, ToolChoice: json.RawMessage(`{"type":"function"}`)}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Gemini{}.Chat(context.Background(), Target{BaseURL: "http://127.0.0.1:1", UpstreamModel: "m"}, tc.req)
			if got := vendorErrClass(err); got != ClassBadRequest {
				t.Errorf("err = %v, class %q, want bad_request", err, got)
			}
		})
	}
}

func TestGeminiWire(t *testing.T) {
	body := vendorFixture(t, "gemini", "generate-basic-reply-short.json")
	tests := []struct {
		base, model, path string
	}{
		{"", "gemini-2.0-flash", "/v1beta/models/gemini-2.0-flash:generateContent"},
		{"/", "models/gemini-2.0-flash", "/v1beta/models/gemini-2.0-flash:generateContent"},
		{"/v1beta", "gemini-2.0-flash", "/v1beta/models/gemini-2.0-flash:generateContent"},
		{"/v1beta/", "tunedModels/my-tune", "/v1beta/tunedModels/my-tune:generateContent"},
	}
	for _, tc := range tests {
		t.Run(tc.base+" "+tc.model, func(t *testing.T) {
			up := newVendorUpstream(t, http.StatusOK, nil, body)
			_, err := Gemini{}.Chat(context.Background(), Target{BaseURL: up.URL + tc.base, APIKey: "AIza-key", UpstreamModel: tc.model},
				&ChatRequest{Messages: []Message{{Role: "user", Content: vtText("hi")}}})
			if err != nil {
				t.Fatal(err)
			}
			r := up.requests()[0]
			if r.Method != http.MethodPost || r.Path != tc.path || r.RawQuery != "" {
				t.Errorf("%s %s?%s, want POST %s", r.Method, r.Path, r.RawQuery, tc.path)
			}
			if r.Header.Get("X-Goog-Api-Key") != "AIza-key" || r.Header.Get("Content-Type") != "application/json" {
				t.Errorf("headers %v", r.Header)
			}
		})
	}
	t.Run("stream", func(t *testing.T) {
		up := newVendorUpstream(t, http.StatusOK, nil, vendorFixture(t, "gemini", "stream-basic-reply-short.sse"))
		s, err := Gemini{}.ChatStream(context.Background(), Target{BaseURL: up.URL, APIKey: "AIza-key", UpstreamModel: "gemini-2.0-flash"},
			&ChatRequest{Stream: true, Messages: []Message{{Role: "user", Content: vtText("hi")}}})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		if _, err := vendorCollect(t, s); !errors.Is(err, io.EOF) {
			t.Fatal(err)
		}
		r := up.requests()[0]
		if r.Path != "/v1beta/models/gemini-2.0-flash:streamGenerateContent" || r.RawQuery != "alt=sse" || r.Header.Get("X-Goog-Api-Key") != "AIza-key" {
			t.Errorf("%s?%s %v", r.Path, r.RawQuery, r.Header)
		}
	})
}

func TestGeminiChat(t *testing.T) {
	calls := []byte(`{"candidates":[{"content":{"role":"model","parts":[{"text":"Checking."},{"functionCall":{"name":"getTemperature","args":{"city":"San Jose"}}},{"functionCall":{"name":"getTime"}}]},"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":20,"candidatesTokenCount":8,"totalTokenCount":28},"modelVersion":"gemini-2.0-flash","responseId":"resp-1"}`)
	thinking := []byte(`{"candidates":[{"content":{"role":"model","parts":[{"text":"Add them.","thought":true},{"text":"4"}]},"finishReason":"MAX_TOKENS"}],"usageMetadata":{"promptTokenCount":9,"candidatesTokenCount":1,"cachedContentTokenCount":3,"thoughtsTokenCount":25,"totalTokenCount":35},"modelVersion":"gemini-2.5-pro"}`)
	type want struct {
		model     string
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
		{"basic reply", vendorFixture(t, "gemini", "generate-basic-reply-short.json"), want{
			model:   "gemini-2.0-flash",
			content: vtStr("Google's headquarters, also known as the Googleplex, is located in **Mountain View, California**.\n"),
			finish:  "stop", usage: vtUsageOf(7, 22, vtInt64(0), vtInt64(0)),
			res: Usage{Prompt: 7, Completion: 22, Known: true, CachedKnown: true, ReasoningKnown: true},
		}},
		{"function calls", calls, want{
			model: "gemini-2.0-flash", content: vtStr("Checking."),
			calls: []vtToolCall{
				vtCall(0, "call_0", "getTemperature", `{"city":"San Jose"}`),
				vtCall(0, "call_1", "getTime", `{}`),
			},
			finish: "tool_calls", usage: vtUsageOf(20, 8, vtInt64(0), vtInt64(0)),
			res: Usage{Prompt: 20, Completion: 8, Known: true, CachedKnown: true, ReasoningKnown: true},
		}},
		{"thinking", thinking, want{
			model: "gemini-2.5-pro", content: vtStr("4"), reasoning: "Add them.",
			finish: "length", usage: vtUsageOf(9, 26, vtInt64(3), vtInt64(25)),
			res: Usage{Prompt: 9, Completion: 26, Cached: 3, Reasoning: 25, Known: true, CachedKnown: true, ReasoningKnown: true},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			up := newVendorUpstream(t, http.StatusOK, nil, tc.body)
			res, err := Gemini{}.Chat(context.Background(), Target{BaseURL: up.URL, UpstreamModel: "gemini-x"},
				&ChatRequest{Messages: []Message{{Role: "user", Content: vtText("hi")}}})
			if err != nil {
				t.Fatal(err)
			}
			var got vtCompletion
			if err := json.Unmarshal(res.Body, &got); err != nil {
				t.Fatalf("body: %v\n%s", err, res.Body)
			}
			if got.Object != "chat.completion" || got.ID == "" || len(got.Choices) != 1 || got.Choices[0].Message.Role != "assistant" {
				t.Fatalf("not a chat.completion: %s", res.Body)
			}
			m := got.Choices[0].Message
			gotW := want{got.Model, m.Content, m.ReasoningContent, m.ToolCalls, got.Choices[0].FinishReason, got.Usage, res.Usage}
			if diff := cmp.Diff(tc.want, gotW, cmp.AllowUnexported(want{})); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			if res.FinishReason != tc.want.finish {
				t.Errorf("FinishReason = %q", res.FinishReason)
			}
		})
	}
}

func TestGeminiChatFailures(t *testing.T) {
	tests := []struct {
		name   string
		status int
		body   []byte
		want   Class
		code   string
	}{
		{"finishReason SAFETY", 200, vendorFixture(t, "gemini", "generate-finish-reason-safety.json"), ClassContentFilter, "SAFETY"},
		{"only promptFeedback", 200, vendorFixture(t, "gemini", "generate-only-prompt-feedback.json"), ClassContentFilter, "BLOCKED"},
		{"prompt blocked (Vertex)", 200, vendorFixture(t, "gemini", "vertex-generate-prompt-blocked-safety.json"), ClassContentFilter, "SAFETY"},
		{"PROHIBITED_CONTENT", 200, []byte(`{"candidates":[{"finishReason":"PROHIBITED_CONTENT"}]}`), ClassContentFilter, "PROHIBITED_CONTENT"},
		{"RECITATION", 200, []byte(`{"candidates":[{"content":{"parts":[{"text":"Once upon"}]},"finishReason":"RECITATION"}]}`), ClassContentFilter, "RECITATION"},
		{"no candidates", 200, []byte(`{"candidates":[],"modelVersion":"g"}`), ClassServer, ""},
		{"API key invalid", 400, vendorFixture(t, "gemini", "error-400-api-key-invalid.json"), ClassAuth, "API_KEY_INVALID"},
		{"unknown model", 404, vendorFixture(t, "gemini", "error-404-unknown-model.json"), ClassBadRequest, "NOT_FOUND"},
		{"quota exceeded", 429, vendorFixture(t, "gemini", "vertex-error-429-quota-exceeded.json"), ClassRateLimited, "RATE_LIMIT_EXCEEDED"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			up := newVendorUpstream(t, tc.status, nil, tc.body)
			_, err := Gemini{}.Chat(context.Background(), Target{BaseURL: up.URL, UpstreamModel: "g"}, &ChatRequest{Messages: []Message{{Role: "user", Content: vtText("hi")}}})
			var ue *Error
			if !errors.As(err, &ue) || ue.Class != tc.want || ue.Code != tc.code {
				t.Errorf("err = %#v, want class %q code %q", err, tc.want, tc.code)
			}
		})
	}
}

func TestClassifyGemini(t *testing.T) {
	body := func(code int, status, msg, details string) []byte {
		b, _ := json.Marshal(map[string]any{"error": map[string]any{"code": code, "status": status, "message": msg, "details": json.RawMessage("[" + details + "]")}})
		return b
	}
	retryInfo := `{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"37s"}`
	tests := []struct {
		name   string
		status int
		header http.Header
		body   []byte
		want   Class
		code   string
		retry  time.Duration
	}{
		{"API key invalid", 400, nil, vendorFixture(t, "gemini", "error-400-api-key-invalid.json"), ClassAuth, "API_KEY_INVALID", 0},
		{"API key expired", 400, nil, body(400, "INVALID_ARGUMENT", "API key expired. Please renew the API key.", `{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"API_KEY_INVALID"}`), ClassAuth, "API_KEY_INVALID", 0},
		{"unknown model", 404, nil, vendorFixture(t, "gemini", "error-404-unknown-model.json"), ClassBadRequest, "NOT_FOUND", 0},
		{"quota exceeded (Vertex)", 429, nil, vendorFixture(t, "gemini", "vertex-error-429-quota-exceeded.json"), ClassRateLimited, "RATE_LIMIT_EXCEEDED", 0},
		{"free tier quota with RetryInfo", 429, nil, body(429, "RESOURCE_EXHAUSTED", "You exceeded your current quota, please check your plan and billing details. Quota exceeded for metric: generativelanguage.googleapis.com/generate_content_free_tier_requests", retryInfo), ClassRateLimited, "RESOURCE_EXHAUSTED", 37 * time.Second},
		{"Retry-After header wins", 429, http.Header{"Retry-After": {"5"}}, body(429, "RESOURCE_EXHAUSTED", "quota", retryInfo), ClassRateLimited, "RESOURCE_EXHAUSTED", 5 * time.Second},
		{"failed precondition (location)", 400, nil, vendorFixture(t, "gemini", "vertex-stream-http-error-400.json"), ClassBadRequest, "FAILED_PRECONDITION", 0},
		{"free tier unavailable: enable billing", 400, nil, body(400, "FAILED_PRECONDITION", "Gemini API free tier is not available in your country. Please enable billing on your project in Google AI Studio.", ""), ClassBilling, "FAILED_PRECONDITION", 0},
		{"billing disabled", 403, nil, body(403, "PERMISSION_DENIED", "This API method requires billing to be enabled.", `{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"BILLING_DISABLED"}`), ClassBilling, "BILLING_DISABLED", 0},
		{"permission denied", 403, nil, body(403, "PERMISSION_DENIED", "Method doesn't allow unregistered callers.", ""), ClassAuth, "PERMISSION_DENIED", 0},
		{"unauthenticated", 401, nil, body(401, "UNAUTHENTICATED", "Request had invalid authentication credentials.", ""), ClassAuth, "UNAUTHENTICATED", 0},
		{"invalid argument", 400, nil, body(400, "INVALID_ARGUMENT", "Invalid JSON payload received. Unknown name \"foo\"", ""), ClassBadRequest, "INVALID_ARGUMENT", 0},
		{"internal", 500, nil, body(500, "INTERNAL", "An internal error has occurred.", ""), ClassServer, "INTERNAL", 0},
		{"unavailable", 503, nil, body(503, "UNAVAILABLE", "The model is overloaded. Please try again later.", ""), ClassServer, "UNAVAILABLE", 0},
		{"deadline exceeded", 504, nil, body(504, "DEADLINE_EXCEEDED", "Deadline expired before operation could complete.", ""), ClassTimeout, "DEADLINE_EXCEEDED", 0},
		{"array envelope", 429, nil, []byte(`[{"error":{"code":429,"message":"Resource has been exhausted","status":"RESOURCE_EXHAUSTED"}}]`), ClassRateLimited, "RESOURCE_EXHAUSTED", 0},
		{"HTML 502", 502, nil, []byte("<html>bad gateway</html>"), ClassServer, "", 0},
		{"bare 403", 403, nil, nil, ClassAuth, "", 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := ClassifyGemini(tc.status, tc.header, tc.body)
			if e.Class != tc.want || e.Code != tc.code || e.Status != tc.status || e.RetryAfter != tc.retry {
				t.Errorf("got class %q code %q status %d retry %v, want %q %q %d %v", e.Class, e.Code, e.Status, e.RetryAfter, tc.want, tc.code, tc.status, tc.retry)
			}
			if e.Message == "" {
				t.Error("no message")
			}
		})
	}
}

func TestGeminiStream(t *testing.T) {
	tests := []struct {
		file string
		want vtSummary
		use  Usage
	}{
		{"stream-basic-reply-short.sse", vtSummary{
			Model: "gemini-2.0-flash", Content: "The capital of Wyoming is **Cheyenne**.\n", Finish: "stop",
			Usage: vtUsageOf(7, 10, vtInt64(0), vtInt64(0)),
		}, Usage{Prompt: 7, Completion: 10, Known: true, CachedKnown: true, ReasoningKnown: true}},
		{"vertex-stream-function-call.sse", vtSummary{
			Model:     "gemini-x",
			ToolCalls: []vtToolCall{vtCall(0, "call_0", "getTemperature", `{"city":"San Jose"}`)},
			Finish:    "tool_calls",
			// No usageMetadata: counted by the gateway, marked estimated.
			Usage: vtUsageOf(8, 8, nil, nil),
		}, Usage{Prompt: 8, Completion: 8, Known: true, Estimated: true}},
		{"stream-thinking.constructed.sse", vtSummary{
			ID: "resp-thinking-constructed", Model: "gemini-2.5-flash",
			Reasoning: "The user wants a sum.", Content: "2 + 2 = 4", Finish: "length",
			Usage: vtUsageOf(12, 37, vtInt64(4), vtInt64(30)),
		}, Usage{Prompt: 12, Completion: 37, Cached: 4, Reasoning: 30, Known: true, CachedKnown: true, ReasoningKnown: true}},
		{"stream-prompt-blocked-safety.sse", vtSummary{ErrClass: ClassContentFilter, ErrCode: "SAFETY"}, Usage{}},
		{"vertex-stream-finish-reason-safety.sse", vtSummary{
			Model: "gemini-1.5-flash", ErrClass: ClassContentFilter, ErrCode: "SAFETY",
		}, Usage{Prompt: 10, Completion: 66, Known: true, CachedKnown: true, ReasoningKnown: true}},
		{"vertex-stream-error-mid-stream.constructed.sse", vtSummary{
			Model: "gemini-2.0-flash", Content: "The capital of Wyoming", ErrClass: ClassBadRequest, ErrCode: "FAILED_PRECONDITION",
		}, Usage{Prompt: 7, Known: true, CachedKnown: true, ReasoningKnown: true}},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			up := newVendorUpstream(t, http.StatusOK, http.Header{"Content-Type": {"text/event-stream"}}, vendorFixture(t, "gemini", tc.file))
			s, err := Gemini{}.ChatStream(context.Background(), Target{BaseURL: up.URL, APIKey: "k", UpstreamModel: "gemini-x"},
				&ChatRequest{Stream: true, Messages: []Message{{Role: "user", Content: vtText("hi")}}})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			chunks, err := vendorCollect(t, s)
			got := vendorSummarize(t, chunks, err)
			if tc.want.ID == "" && (got.ID == "" || strings.HasPrefix(got.ID, "chatcmpl-")) {
				got.ID = "" // generated: the response carried no responseId
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.use, s.Usage()); diff != "" {
				t.Errorf("Usage() (-want +got):\n%s", diff)
			}
		})
	}
}

func TestGeminiStreamMidStreamErrorStatus(t *testing.T) {
	raw := vendorFixture(t, "gemini", "vertex-stream-error-mid-stream.constructed.sse")
	s := newGeminiStream(context.Background(), io.NopCloser(bytes.NewReader(raw)), "g", "id", vendorNow)
	_, err := vendorCollect(t, s)
	var ue *Error
	if !errors.As(err, &ue) || ue.Status != 400 || !strings.Contains(ue.Message, "$grpcMessage") {
		t.Errorf("err = %#v, want the upstream's 400", err)
	}
}

func TestGeminiStreamFailures(t *testing.T) {
	t.Run("HTTP error before the stream", func(t *testing.T) {
		up := newVendorUpstream(t, 400, nil, vendorFixture(t, "gemini", "error-400-api-key-invalid.json"))
		_, err := Gemini{}.ChatStream(context.Background(), Target{BaseURL: up.URL, UpstreamModel: "g"}, &ChatRequest{Messages: []Message{{Role: "user", Content: vtText("hi")}}})
		if vendorErrClass(err) != ClassAuth {
			t.Errorf("err = %v", err)
		}
	})
	t.Run("ended without finishReason", func(t *testing.T) {
		raw := vendorFixture(t, "gemini", "stream-basic-reply-short.sse")
		cut := raw[:bytes.Index(raw, []byte(`data: {"candidates": [{"content": {"parts": [{"text": " is`))]
		s := newGeminiStream(context.Background(), io.NopCloser(bytes.NewReader(cut)), "g", "id", vendorNow)
		chunks, err := vendorCollect(t, s)
		got := vendorSummarize(t, chunks, err)
		if got.ErrClass != ClassNetwork || got.Content != "The capital of Wyoming" || !strings.Contains(err.Error(), "stream ended early") {
			t.Errorf("got %+v, err %v", got, err)
		}
	})
	t.Run("bare JSON array error", func(t *testing.T) {
		raw := []byte("data: {\"candidates\": [{\"content\": {\"parts\": [{\"text\": \"A\"}]}}]}\n\n[{\n  \"error\": {\"code\": 503, \"message\": \"The model is overloaded.\", \"status\": \"UNAVAILABLE\"}\n}\n]\n")
		s := newGeminiStream(context.Background(), io.NopCloser(bytes.NewReader(raw)), "g", "id", vendorNow)
		chunks, err := vendorCollect(t, s)
		if got := vendorSummarize(t, chunks, err); got.ErrClass != ClassServer || got.Content != "A" {
			t.Errorf("got %+v", got)
		}
	})
	t.Run("data: error object", func(t *testing.T) {
		raw := []byte("data: {\"error\": {\"code\": 429, \"message\": \"Resource has been exhausted\", \"status\": \"RESOURCE_EXHAUSTED\"}}\n\n")
		s := newGeminiStream(context.Background(), io.NopCloser(bytes.NewReader(raw)), "g", "id", vendorNow)
		if _, err := vendorCollect(t, s); vendorErrClass(err) != ClassRateLimited {
			t.Errorf("err = %v", err)
		}
	})
}

func TestGeminiStreamTorture(t *testing.T) {
	files := []string{
		"stream-basic-reply-short.sse", "stream-prompt-blocked-safety.sse", "vertex-stream-finish-reason-safety.sse",
		"vertex-stream-function-call.sse", "vertex-stream-error-mid-stream.constructed.sse", "stream-thinking.constructed.sse",
	}
	for _, f := range files {
		t.Run(f, func(t *testing.T) {
			vendorCheckTorture(t, vendorFixture(t, "gemini", f), func(body io.ReadCloser) Stream {
				return newGeminiStream(context.Background(), body, "gemini-x", "chatcmpl-test", vendorNow)
			})
		})
	}
}

func TestGeminiTransportFailures(t *testing.T) {
	req := &ChatRequest{Messages: []Message{{Role: "user", Content: vtText("hi")}}}
	for _, tc := range vendorTransportCases() {
		t.Run("chat "+tc.name, func(t *testing.T) {
			_, err := Gemini{}.Chat(tc.ctx(t), Target{BaseURL: tc.base(t), UpstreamModel: "g"}, req)
			if got := vendorErrClass(err); got != tc.want {
				t.Errorf("err = %v, class %q, want %q", err, got, tc.want)
			}
		})
	}
	t.Run("stream deadline after the first event", func(t *testing.T) {
		raw := vendorFixture(t, "gemini", "stream-basic-reply-short.sse")
		head := raw[:bytes.Index(raw, []byte(`data: {"candidates": [{"content": {"parts": [{"text": " capital`))]
		srv := newVendorStall(t, head)
		ctx, cancel := context.WithTimeout(context.Background(), 150*time.Millisecond)
		defer cancel()
		s, err := Gemini{}.ChatStream(ctx, Target{BaseURL: srv.URL, UpstreamModel: "g"}, req)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		chunks, err := vendorCollect(t, s)
		if got := vendorSummarize(t, chunks, err); got.ErrClass != ClassTimeout || got.Content != "The" {
			t.Errorf("got %+v, want the first text then a timeout", got)
		}
	})
}

func TestGeminiEmbed(t *testing.T) {
	up := newVendorUpstream(t, http.StatusOK, nil, []byte(`{"embeddings":[{"values":[0.1,0.2]},{"values":[0.3,-0.4]}]}`))
	res, err := Gemini{}.Embed(context.Background(), Target{BaseURL: up.URL + "/v1beta", APIKey: "k", UpstreamModel: "gemini-embedding-001"},
		&EmbedRequest{Inputs: []string{"What is the meaning of life?", "How does the brain work?"}, Dimensions: 2})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([][]float32{{0.1, 0.2}, {0.3, -0.4}}, res.Vectors); diff != "" {
		t.Error(diff)
	}
	if res.Usage.Known {
		t.Error("usage reported as known; batchEmbedContents reports none")
	}
	r := up.requests()[0]
	if r.Path != "/v1beta/models/gemini-embedding-001:batchEmbedContents" || r.Header.Get("X-Goog-Api-Key") != "k" {
		t.Errorf("%s %v", r.Path, r.Header)
	}
	vendorJSONEqual(t, []byte(`{"requests":[
		{"model":"models/gemini-embedding-001","content":{"parts":[{"text":"What is the meaning of life?"}]},"outputDimensionality":2},
		{"model":"models/gemini-embedding-001","content":{"parts":[{"text":"How does the brain work?"}]},"outputDimensionality":2}]}`), r.Body)

	short := newVendorUpstream(t, http.StatusOK, nil, []byte(`{"embeddings":[{"values":[1]}]}`))
	if _, err := (Gemini{}).Embed(context.Background(), Target{BaseURL: short.URL, UpstreamModel: "e"}, &EmbedRequest{Inputs: []string{"a", "b"}}); vendorErrClass(err) != ClassServer {
		t.Errorf("count mismatch: %v", err)
	}
	if _, err := (Gemini{}).Embed(context.Background(), Target{BaseURL: short.URL, UpstreamModel: "e"}, &EmbedRequest{}); vendorErrClass(err) != ClassBadRequest {
		t.Errorf("no inputs: %v", err)
	}
}

func TestGeminiListModels(t *testing.T) {
	up := newVendorUpstream(t, http.StatusOK, nil, []byte(`{"models":[{"name":"models/gemini-2.0-flash","supportedGenerationMethods":["generateContent"]},{"name":"models/gemini-embedding-001"}]}`))
	list, err := Gemini{}.ListModels(context.Background(), Target{BaseURL: up.URL + "/", APIKey: "k"})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"gemini-2.0-flash", "gemini-embedding-001"}, list.Models); diff != "" {
		t.Error(diff)
	}
	if r := up.requests()[0]; r.Method != http.MethodGet || r.Path != "/v1beta/models" || r.Header.Get("X-Goog-Api-Key") != "k" {
		t.Errorf("%s %s %v", r.Method, r.Path, r.Header)
	}
	bad := newVendorUpstream(t, 400, nil, vendorFixture(t, "gemini", "error-400-api-key-invalid.json"))
	if _, err := (Gemini{}).ListModels(context.Background(), Target{BaseURL: bad.URL}); vendorErrClass(err) != ClassAuth {
		t.Errorf("bad key: %v", err)
	}
}
