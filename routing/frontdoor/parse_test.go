package frontdoor

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"switchyard/routing/adapter"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// parseCurlBody extracts the JSON body from a fixture's curl -d '...' command.
func parseCurlBody(t testing.TB, name string) []byte {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "adapter", "testdata", "openai", name))
	if err != nil {
		t.Fatal(err)
	}
	s := string(raw)
	i := strings.Index(s, "-d '")
	j := strings.LastIndex(s, "'")
	if i < 0 || j <= i+4 {
		t.Fatalf("%s: no -d '...' body", name)
	}
	return []byte(s[i+4 : j])
}

func parseIntPtr(n int) *int                { return &n }
func parseFloatPtr(f float64) *float64      { return &f }
func parseBoolPtr(b bool) *bool             { return &b }
func parseRawJSON(s string) json.RawMessage { return json.RawMessage(s) }

func TestParseChatRequestFixtures(t *testing.T) {
	t.Run("default", func(t *testing.T) {
		body := parseCurlBody(t, "chat-nonstream-default.request.curl.sh")
		r, err := ParseChatRequest(body)
		if err != nil {
			t.Fatal(err)
		}
		want := []adapter.Message{
			{Role: "developer", Content: []adapter.ContentPart{{Type: "text", Text: "You are a helpful assistant."}}},
			{Role: "user", Content: []adapter.ContentPart{{Type: "text", Text: "Hello!"}}},
		}
		if diff := cmp.Diff(want, r.Conversation()); diff != "" {
			t.Errorf("messages (-want +got):\n%s", diff)
		}
		if r.Model != "VAR_chat_model_id" || r.Stream || r.MaxTokens != nil || r.WantsReasoning() {
			t.Errorf("typed view: %+v", r)
		}
		if &r.Body[0] != &body[0] {
			t.Error("Body is not the caller's body")
		}
	})
	t.Run("tools", func(t *testing.T) {
		r, err := ParseChatRequest(parseCurlBody(t, "chat-nonstream-tool-calls.request.curl.sh"))
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Tools) != 1 || r.Tools[0].Name != "get_current_weather" ||
			r.Tools[0].Description != "Get the current weather in a given location" {
			t.Fatalf("tools: %+v", r.Tools)
		}
		var schema map[string]any
		if err := json.Unmarshal(r.Tools[0].Parameters, &schema); err != nil || schema["type"] != "object" {
			t.Errorf("parameters %q: %v", r.Tools[0].Parameters, err)
		}
		if string(r.ToolChoice) != `"auto"` || !r.NeedsTools() {
			t.Errorf("tool_choice %q", r.ToolChoice)
		}
	})
}

func TestParseChatRequestTypedView(t *testing.T) {
	body := `{
	  "model": "standard",
	  "messages": [
	    {"role": "system", "content": "be brief"},
	    {"role": "user", "name": "ann", "content": [
	      {"type": "text", "text": "what is this?"},
	      {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo=", "detail": "low"}}
	    ]},
	    {"role": "assistant", "content": null, "tool_calls": [
	      {"id": "call_1", "type": "function", "function": {"name": "look", "arguments": "{\"q\":\"x\"}"}}
	    ]},
	    {"role": "tool", "tool_call_id": "call_1", "content": "a cat"},
	    {"role": "assistant", "content": "A cat.\n"}
	  ],
	  "stream": true,
	  "stream_options": {"include_usage": true, "include_obfuscation": false},
	  "max_tokens": 50,
	  "max_completion_tokens": 70,
	  "temperature": 0.2,
	  "top_p": 1,
	  "stop": "\n\n",
	  "tools": [{"type": "function", "function": {"name": "look", "parameters": {"type": "object"}, "strict": true}}],
	  "tool_choice": {"type": "function", "function": {"name": "look"}},
	  "reasoning_effort": "high",
	  "thinking": {"type": "enabled", "budget_tokens": 2048},
	  "response_format": {"type": "json_object"},
	  "user": "u-42",
	  "seed": 7,
	  "logit_bias": {"50256": -100}
	}`
	r, err := ParseChatRequest([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	got := *r
	got.Body = nil
	got.Messages = r.Conversation() // the view the parser deferred
	want := adapter.ChatRequest{
		Model: "standard",
		Messages: []adapter.Message{
			{Role: "system", Content: []adapter.ContentPart{{Type: "text", Text: "be brief"}}},
			{Role: "user", Name: "ann", Content: []adapter.ContentPart{
				{Type: "text", Text: "what is this?"},
				{Type: "image_url", ImageURL: "data:image/png;base64,iVBORw0KGgo=", Detail: "low"},
			}},
			{Role: "assistant", ToolCalls: []adapter.ToolCall{{ID: "call_1", Name: "look", Arguments: `{"q":"x"}`}}},
			{Role: "tool", ToolCallID: "call_1", Content: []adapter.ContentPart{{Type: "text", Text: "a cat"}}},
			{Role: "assistant", Content: []adapter.ContentPart{{Type: "text", Text: "A cat.\n"}}},
		},
		Stream:          true,
		IncludeUsage:    true,
		MaxTokens:       parseIntPtr(70), // max_completion_tokens wins
		Temperature:     parseFloatPtr(0.2),
		TopP:            parseFloatPtr(1),
		Stop:            []string{"\n\n"},
		Tools:           []adapter.Tool{{Name: "look", Parameters: parseRawJSON(`{"type": "object"}`), Strict: parseBoolPtr(true)}},
		ToolChoice:      parseRawJSON(`{"type": "function", "function": {"name": "look"}}`),
		ReasoningEffort: "high",
		Thinking:        &adapter.Thinking{Type: "enabled", BudgetTokens: 2048},
		ResponseFormat:  parseRawJSON(`{"type": "json_object"}`),
		User:            "u-42",
		N:               1,
		Seed:            func() *int64 { n := int64(7); return &n }(),
		Format:          adapter.ResponseFormat{Type: adapter.FormatJSONObject},
		// top_p 1 asks for OpenAI's default; everything else here is set.
		Set: adapter.FieldSet(0).With("model").With("messages").With("stream").With("stream_options").With("max_tokens").
			With("max_completion_tokens").With("temperature").With("top_p").With("stop").With("tools").With("tool_choice").
			With("reasoning_effort").With("thinking").With("response_format").With("user").With("seed").With("logit_bias"),
	}
	if diff := cmp.Diff(want, got, cmpopts.IgnoreUnexported(adapter.ChatRequest{})); diff != "" {
		t.Errorf("typed view (-want +got):\n%s", diff)
	}
	if !r.NeedsVision() || !r.NeedsTools() || !r.WantsReasoning() || r.ThinkingBudget() != 2048 {
		t.Error("predicates disagree with the typed view")
	}
}

func TestParseChatRequestLenient(t *testing.T) {
	// Shapes real SDKs send that must be accepted.
	for _, tc := range []struct {
		name, body string
		check      func(*adapter.ChatRequest) bool
	}{
		{"nulls are absent", `{"model":"fast","messages":[{"role":"user","content":"hi"}],"stream":null,"stream_options":null,"max_tokens":null,"temperature":null,"top_p":null,"stop":null,"tools":null,"tool_choice":null,"reasoning_effort":null,"thinking":null,"response_format":null,"user":null}`,
			func(r *adapter.ChatRequest) bool {
				return !r.Stream && r.MaxTokens == nil && r.Temperature == nil && r.Stop == nil && r.Tools == nil && r.ToolChoice == nil && r.Thinking == nil
			}},
		{"max_tokens alone", `{"model":"fast","messages":[{"role":"user","content":"hi"}],"max_tokens":12}`,
			func(r *adapter.ChatRequest) bool { return *r.MaxTokens == 12 }},
		{"integral float max_tokens", `{"model":"fast","messages":[{"role":"user","content":"hi"}],"max_tokens":12.0}`,
			func(r *adapter.ChatRequest) bool { return *r.MaxTokens == 12 }},
		{"stop array", `{"model":"fast","messages":[{"role":"user","content":"hi"}],"stop":["a","b"]}`,
			func(r *adapter.ChatRequest) bool { return len(r.Stop) == 2 && r.Stop[1] == "b" }},
		{"empty string content", `{"model":"fast","messages":[{"role":"user","content":""}]}`,
			func(r *adapter.ChatRequest) bool {
				return len(r.Conversation()[0].Content) == 1 && r.Conversation()[0].Text() == ""
			}},
		{"escaped text", `{"model":"fast","messages":[{"role":"user","content":"a\u00e9\"\n"}]}`,
			func(r *adapter.ChatRequest) bool { return r.Conversation()[0].Text() == "aé\"\n" }},
		{"stream without options", `{"model":"fast","messages":[{"role":"user","content":"hi"}],"stream":true}`,
			func(r *adapter.ChatRequest) bool { return r.Stream && !r.IncludeUsage }},
		{"assistant with content and tool_calls", `{"model":"fast","messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"let me look","tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c","content":"ok"}]}`,
			func(r *adapter.ChatRequest) bool {
				return len(r.Conversation()[1].ToolCalls) == 1 && r.Conversation()[1].Text() == "let me look"
			}},
		{"thinking disabled", `{"model":"fast","messages":[{"role":"user","content":"hi"}],"thinking":{"type":"disabled"}}`,
			func(r *adapter.ChatRequest) bool { return !r.WantsReasoning() }},
		{"whitespace around", " \n{\"model\":\"fast\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}\r\n",
			func(r *adapter.ChatRequest) bool { return r.Model == "fast" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := ParseChatRequest([]byte(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			if !tc.check(r) {
				t.Errorf("typed view: %+v", r)
			}
		})
	}
}

func TestParseChatRequestRefuses(t *testing.T) {
	const user = `{"role":"user","content":"hi"}`
	msgs := func(m ...string) string { return `"messages":[` + strings.Join(m, ",") + `]` }
	req := func(extra string) string { return `{"model":"fast",` + msgs(user) + extra + `}` }
	asst := `{"role":"assistant","content":null,"tool_calls":[%s]}`
	call := func(c string) string { return `{"model":"fast",` + msgs(user, strings.Replace(asst, "%s", c, 1)) + `}` }
	part := func(role, p string) string {
		return `{"model":"fast",` + msgs(`{"role":"`+role+`","content":[`+p+`]}`) + `}`
	}
	deep := strings.Repeat("[", 10001) + strings.Repeat("]", 10001)

	for _, tc := range []struct {
		name, body, param, msg string
	}{
		{"empty body", ``, "", "empty"},
		{"blank body", " \n\t", "", "empty"},
		{"truncated JSON", `{"model":"fast","messages":[`, "", "malformed JSON"},
		{"trailing garbage", req(``) + ` x`, "", "malformed JSON"},
		{"single quotes", `{'model':'fast'}`, "", "malformed JSON"},
		{"nesting bomb", `{"model":"fast","x":` + deep + `}`, "", "malformed JSON"},
		{"array body", `[` + user + `]`, "", "JSON object"},
		{"string body", `"hi"`, "", "JSON object"},
		{"invalid UTF-8 in content", "{\"model\":\"fast\",\"messages\":[{\"role\":\"user\",\"content\":\"caf\xe9\"}]}", "", "UTF-8 (at byte 57)"},
		{"invalid UTF-8 in unknown field", req(",\"x\":\"\xff\""), "", "UTF-8"},
		{"model missing", `{` + msgs(user) + `}`, "model", "required"},
		{"model empty", `{"model":"",` + msgs(user) + `}`, "model", "required"},
		{"model blank", `{"model":"  ",` + msgs(user) + `}`, "model", "required"},
		{"model number", `{"model":4,` + msgs(user) + `}`, "model", "must be a string, got a number"},
		{"model null", `{"model":null,` + msgs(user) + `}`, "model", "got null"},
		{"duplicate model", `{"model":"fast","model":"gpt-5-pro",` + msgs(user) + `}`, "model", "duplicate"},
		{"duplicate escaped model", `{"model":"fast","mod\u0065l":"gpt-5-pro",` + msgs(user) + `}`, "model", "duplicate"},
		{"messages missing", `{"model":"fast"}`, "messages", "required"},
		{"messages empty", `{"model":"fast","messages":[]}`, "messages", "empty"},
		{"messages object", `{"model":"fast","messages":{"role":"user"}}`, "messages", "must be an array"},
		{"messages null", `{"model":"fast","messages":null}`, "messages", "must be an array"},
		{"message not object", `{"model":"fast",` + msgs(`"hi"`) + `}`, "messages[0]", "must be an object"},
		{"role missing", `{"model":"fast",` + msgs(`{"content":"hi"}`) + `}`, "messages[0].role", "required"},
		{"role number", `{"model":"fast",` + msgs(`{"role":1,"content":"hi"}`) + `}`, "messages[0].role", "must be a string"},
		{"user content null", `{"model":"fast",` + msgs(`{"role":"user","content":null}`) + `}`, "messages[0].content", "required"},
		{"user content absent", `{"model":"fast",` + msgs(`{"role":"user"}`) + `}`, "messages[0].content", "required"},
		{"assistant without content or tool_calls", `{"model":"fast",` + msgs(user, `{"role":"assistant"}`) + `}`, "messages[1].content", "content or tool_calls"},
		{"assistant with empty tool_calls", call(``), "messages[1].content", "content or tool_calls"},
		{"content number", `{"model":"fast",` + msgs(`{"role":"user","content":5}`) + `}`, "messages[0].content", "must be a string, an array of content parts or null"},
		{"content object", `{"model":"fast",` + msgs(`{"role":"user","content":{"type":"text","text":"hi"}}`) + `}`, "messages[0].content", "got an object"},
		{"content empty array", part("user", ``), "messages[0].content", "empty array"},
		{"part not object", part("user", `"hi"`), "messages[0].content[0]", "content part object"},
		{"part without type", part("user", `{"text":"hi"}`), "messages[0].content[0].type", `"text" or "image_url"`},
		{"text part without text", part("user", `{"type":"text"}`), "messages[0].content[0].text", "must be a string"},
		{"text part number", part("user", `{"type":"text","text":1}`), "messages[0].content[0].text", "must be a string"},
		{"image_url as string", part("user", `{"type":"image_url","image_url":"https://x/y.png"}`), "messages[0].content[0].image_url", "must be an object"},
		{"image_url without url", part("user", `{"type":"image_url","image_url":{"detail":"low"}}`), "messages[0].content[0].image_url.url", "required"},
		{"image_url url number", part("user", `{"type":"image_url","image_url":{"url":1}}`), "messages[0].content[0].image_url.url", "must be a string"},
		{"image in system message", part("system", `{"type":"image_url","image_url":{"url":"https://x/y.png"}}`), "messages[0].content[0].type", "only allowed in user messages"},
		{"name number", `{"model":"fast",` + msgs(`{"role":"user","name":1,"content":"hi"}`) + `}`, "messages[0].name", "must be a string"},
		{"tool_calls on user", `{"model":"fast",` + msgs(`{"role":"user","content":"hi","tool_calls":[]}`) + `}`, "messages[0].tool_calls", "only allowed on assistant"},
		{"tool_calls object", `{"model":"fast",` + msgs(user, `{"role":"assistant","tool_calls":{}}`) + `}`, "messages[1].tool_calls", "must be an array"},
		{"tool call without id", call(`{"type":"function","function":{"name":"f","arguments":"{}"}}`), "messages[1].tool_calls[0].id", "required"},
		{"tool call without function", call(`{"id":"c","type":"function"}`), "messages[1].tool_calls[0].function", "must be an object"},
		{"tool call without name", call(`{"id":"c","type":"function","function":{"arguments":"{}"}}`), "messages[1].tool_calls[0].function.name", "required"},
		{"tool call object arguments", call(`{"id":"c","type":"function","function":{"name":"f","arguments":{}}}`), "messages[1].tool_calls[0].function.arguments", "must be a string"},
		{"tool message without tool_call_id", `{"model":"fast",` + msgs(user, `{"role":"tool","content":"ok"}`) + `}`, "messages[1].tool_call_id", "tool_call_id"},
		{"temperature string", req(`,"temperature":"0.5"`), "temperature", "must be a number, got a string"},
		{"temperature too high", req(`,"temperature":2.5`), "temperature", "between 0 and 2"},
		{"temperature negative", req(`,"temperature":-0.1`), "temperature", "between 0 and 2"},
		{"top_p too high", req(`,"top_p":1.5`), "top_p", "between 0 and 1"},
		{"max_tokens fractional", req(`,"max_tokens":1.5`), "max_tokens", "must be an integer"},
		{"max_tokens zero", req(`,"max_tokens":0`), "max_tokens", "between 1 and"},
		{"max_tokens negative", req(`,"max_tokens":-1`), "max_tokens", "between 1 and"},
		{"max_tokens huge", req(`,"max_tokens":1e400`), "max_tokens", "must be an integer"},
		{"max_tokens string", req(`,"max_tokens":"100"`), "max_tokens", "must be an integer, got a string"},
		{"max_completion_tokens bool", req(`,"max_completion_tokens":true`), "max_completion_tokens", "must be an integer, got a boolean"},
		{"stream string", req(`,"stream":"true"`), "stream", "must be a boolean, got a string"},
		{"stream_options without stream", req(`,"stream_options":{"include_usage":true}`), "stream_options", "only allowed when stream is true"},
		{"stream_options with stream false", req(`,"stream":false,"stream_options":{"include_usage":true}`), "stream_options", "only allowed when stream is true"},
		{"stream_options array", req(`,"stream":true,"stream_options":[]`), "stream_options", "must be an object"},
		{"include_usage string", req(`,"stream":true,"stream_options":{"include_usage":"yes"}`), "stream_options.include_usage", "must be a boolean"},
		{"stop number", req(`,"stop":1`), "stop", "a string or an array of strings"},
		{"stop element number", req(`,"stop":["a",2]`), "stop[1]", "must be a string"},
		{"tools object", req(`,"tools":{}`), "tools", "must be an array"},
		{"tool not object", req(`,"tools":["f"]`), "tools[0]", "must be an object"},
		{"tool without type", req(`,"tools":[{"function":{"name":"f"}}]`), "tools[0].type", `"function"`},
		{"tool without function", req(`,"tools":[{"type":"function"}]`), "tools[0].function", "must be an object"},
		{"tool without name", req(`,"tools":[{"type":"function","function":{"description":"d"}}]`), "tools[0].function.name", "required"},
		{"tool empty name", req(`,"tools":[{"type":"function","function":{"name":""}}]`), "tools[0].function.name", "required"},
		{"tool parameters array", req(`,"tools":[{"type":"function","function":{"name":"f","parameters":[]}}]`), "tools[0].function.parameters", "JSON Schema object"},
		{"tool strict string", req(`,"tools":[{"type":"function","function":{"name":"f","strict":"yes"}}]`), "tools[0].function.strict", "must be a boolean"},
		{"second tool bad", req(`,"tools":[{"type":"function","function":{"name":"f"}},{"type":"function","function":{"name":7}}]`), "tools[1].function.name", "must be a string"},
		{"tool_choice unknown string", req(`,"tool_choice":"sometimes"`), "tool_choice", `"sometimes"`},
		{"tool_choice number", req(`,"tool_choice":1`), "tool_choice", "got a number"},
		{"reasoning_effort number", req(`,"reasoning_effort":3`), "reasoning_effort", "must be a string"},
		{"thinking string", req(`,"thinking":"on"`), "thinking", "must be an object"},
		{"thinking budget string", req(`,"thinking":{"type":"enabled","budget_tokens":"lots"}`), "thinking.budget_tokens", "must be an integer"},
		{"thinking type number", req(`,"thinking":{"type":1}`), "thinking.type", "must be a string"},
		{"response_format string", req(`,"response_format":"json"`), "response_format", "must be an object"},
		{"user number", req(`,"user":42`), "user", "must be a string"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := ParseChatRequest([]byte(tc.body))
			if err == nil {
				t.Fatalf("accepted: %+v", r)
			}
			parseCheckRefusal(t, err, tc.param, tc.msg)
		})
	}
}

func parseCheckRefusal(t *testing.T, err error, param, msg string) {
	t.Helper()
	if !errors.Is(err, ErrInvalidRequest) {
		t.Errorf("%v does not wrap ErrInvalidRequest", err)
	}
	var re *RequestError
	if !errors.As(err, &re) {
		t.Fatalf("%T is not a *RequestError", err)
	}
	if re.Param != param {
		t.Errorf("Param = %q, want %q (%v)", re.Param, param, err)
	}
	if !strings.Contains(re.Message, msg) {
		t.Errorf("Message = %q, want it to contain %q", re.Message, msg)
	}
}

func TestParseEmbeddingRequest(t *testing.T) {
	body := parseCurlBody(t, "embeddings.request.curl.sh")
	r, err := ParseEmbeddingRequest(body)
	if err != nil {
		t.Fatal(err)
	}
	want := EmbeddingRequest{Body: body, Model: "text-embedding-ada-002", Inputs: []string{"The food was delicious and the waiter..."}, EncodingFormat: "float"}
	if diff := cmp.Diff(want, *r); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}

	r, err = ParseEmbeddingRequest([]byte(`{"model":"emb","input":["a","b\n"],"dimensions":256,"encoding_format":"base64","input_type":"query","user":"u","extra":1}`))
	if err != nil {
		t.Fatal(err)
	}
	r.Body = nil
	want = EmbeddingRequest{Model: "emb", Inputs: []string{"a", "b\n"}, Dimensions: 256, EncodingFormat: "base64", InputType: "query", User: "u"}
	if diff := cmp.Diff(want, *r); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}

	for _, tc := range []struct{ name, body, param, msg string }{
		{"empty", ``, "", "empty"},
		{"not JSON", `model=emb`, "", "malformed JSON"},
		{"invalid UTF-8", "{\"model\":\"emb\",\"input\":\"\xc3\"}", "", "UTF-8"},
		{"model missing", `{"input":"a"}`, "model", "required"},
		{"model number", `{"model":1,"input":"a"}`, "model", "must be a string"},
		{"input missing", `{"model":"emb"}`, "input", "required"},
		{"input empty string", `{"model":"emb","input":""}`, "input", "must not be empty"},
		{"input empty array", `{"model":"emb","input":[]}`, "input", "empty array"},
		{"input empty element", `{"model":"emb","input":["a",""]}`, "input[1]", "must not be empty"},
		{"input tokens", `{"model":"emb","input":[1212,318]}`, "input[0]", "token-array input is not supported"},
		{"input token arrays", `{"model":"emb","input":[[1212,318]]}`, "input[0]", "token-array input is not supported"},
		{"input object", `{"model":"emb","input":{"text":"a"}}`, "input", "a string or an array of strings"},
		{"input element null", `{"model":"emb","input":["a",null]}`, "input[1]", "must be a string"},
		{"dimensions zero", `{"model":"emb","input":"a","dimensions":0}`, "dimensions", "between 1 and"},
		{"dimensions string", `{"model":"emb","input":"a","dimensions":"256"}`, "dimensions", "must be an integer"},
		{"encoding_format unknown", `{"model":"emb","input":"a","encoding_format":"int8"}`, "encoding_format", `"int8"`},
		{"input_type unknown", `{"model":"emb","input":"a","input_type":"passage"}`, "input_type", `"query" or "document"`},
		{"user number", `{"model":"emb","input":"a","user":1}`, "user", "must be a string"},
		{"duplicate input", `{"model":"emb","input":"a","input":"b"}`, "input", "duplicate"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := ParseEmbeddingRequest([]byte(tc.body))
			if err == nil {
				t.Fatalf("accepted: %+v", r)
			}
			parseCheckRefusal(t, err, tc.param, tc.msg)
		})
	}
}

func TestParseChatRequestDoesNotPinBodyThroughModel(t *testing.T) {
	body := []byte(`{"model":"fast","user":"u-1","messages":[{"role":"user","content":"hi"}]}`)
	r, err := ParseChatRequest(body)
	if err != nil {
		t.Fatal(err)
	}
	// Model and User end up in long-lived call-log rows: they must be
	// copies; roles are constants.
	msgs := r.Conversation()
	copy(body, strings.Repeat("x", len(body)))
	if r.Model != "fast" || r.User != "u-1" || msgs[0].Role != "user" {
		t.Errorf("model %q user %q role %q changed with the body", r.Model, r.User, msgs[0].Role)
	}
}

var parseBenchBody = []byte(`{"model":"standard","messages":[{"role":"system","content":"You are a helpful assistant."},{"role":"user","content":"Write a haiku about the sea and the wind, please."}],"temperature":0.7,"max_tokens":256,"stream":true,"stream_options":{"include_usage":true}}`)

func BenchmarkParseChatRequest(b *testing.B) {
	b.ReportAllocs()
	b.SetBytes(int64(len(parseBenchBody)))
	for b.Loop() {
		r, err := ParseChatRequest(parseBenchBody)
		if err != nil || len(r.Conversation()) != 2 {
			b.Fatal(err)
		}
	}
}

// What only an OpenAI-protocol vendor takes — a role, a content part, a
// tool or a tool call of a type this build does not translate — is
// accepted (it passes to OpenAI-compatible vendors as sent) and named as
// what a translation cannot carry.
func TestParseChatRequestUntranslatable(t *testing.T) {
	user := `{"role":"user","content":"hi"}`
	msgs := func(m ...string) string { return `"messages":[` + strings.Join(m, ",") + `]` }
	part := func(role, parts string) string {
		return `{"model":"fast",` + msgs(`{"role":"`+role+`","content":[`+parts+`]}`) + `}`
	}
	call := func(tc string) string {
		return `{"model":"fast",` + msgs(user, `{"role":"assistant","content":null,"tool_calls":[`+tc+`]}`) + `}`
	}
	req := func(extra string) string { return `{"model":"fast",` + msgs(user) + extra + `}` }
	for _, tc := range []struct{ name, body, param string }{
		{"role unknown", `{"model":"fast",` + msgs(user, `{"role":"robot","content":"hi"}`) + `}`, "messages[1].role"},
		{"role legacy function", `{"model":"fast",` + msgs(`{"role":"function","name":"f","content":"hi"}`) + `}`, "messages[0].role"},
		{"part unknown type", part("user", `{"type":"text","text":"a"},{"type":"input_audio","input_audio":{"data":"","format":"wav"}}`), "messages[0].content[1].type"},
		{"part input_text", part("user", `{"type":"input_text","text":"hi"}`), "messages[0].content[0].type"},
		{"tool call custom type", call(`{"id":"c","type":"custom","function":{"name":"f","arguments":""}}`), "messages[1].tool_calls[0].type"},
		{"tool custom type", req(`,"tools":[{"type":"custom","custom":{"name":"f"}}]`), "tools[0].type"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := ParseChatRequest([]byte(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			if r.Untranslatable != tc.param {
				t.Fatalf("untranslatable %q, want %q", r.Untranslatable, tc.param)
			}
		})
	}
}
