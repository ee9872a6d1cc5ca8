package frontdoor

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/google/go-cmp/cmp"
	"github.com/tidwall/gjson"

	"switchyard/routing/adapter"
	"switchyard/routing/config"
)

func readFixture(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "adapter", "testdata", "anthropic", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A real request the Anthropic Go SDK sent (tool_use and tool_result
// turns) becomes the canonical request a chat client would have sent.
func TestParseMessagesRecordedRequest(t *testing.T) {
	body := readFixture(t, "recorded-nonstream-tool-use.2.request.json")
	r, err := ParseMessagesRequest(body)
	if err != nil {
		t.Fatal(err)
	}
	if r.Native == nil || !bytes.Equal(r.Native.Body, body) || r.Untranslatable != "" || r.Native.Door != adapter.DoorMessages {
		t.Fatalf("native: %+v", r.Native)
	}
	if r.Model != "claude-3-7-sonnet-latest" || r.MaxTokens == nil || *r.MaxTokens != 512 || len(r.Tools) != 1 || r.Tools[0].Name != "get_weather" {
		t.Fatalf("typed view: model %q max %v tools %+v", r.Model, r.MaxTokens, r.Tools)
	}
	roles := []string{}
	for _, m := range r.Conversation() {
		roles = append(roles, m.Role)
	}
	if diff := cmp.Diff([]string{"user", "assistant", "tool"}, roles); diff != "" {
		t.Fatalf("roles (-want +got):\n%s", diff)
	}
	a, tool := r.Conversation()[1], r.Conversation()[2]
	if len(a.ToolCalls) != 1 || a.ToolCalls[0].ID != "toolu_01TZR6ZrLHdpAWdmhVPuDfjQ" || gjson.Get(a.ToolCalls[0].Arguments, "city").Str != "San Francisco" {
		t.Fatalf("tool call: %+v", a.ToolCalls)
	}
	if tool.ToolCallID != a.ToolCalls[0].ID || !strings.Contains(tool.Text(), "68 degrees") {
		t.Fatalf("tool result: %+v", tool)
	}
	for _, p := range []config.Protocol{config.ProtocolOpenAI, config.ProtocolAnthropic, config.ProtocolGemini} {
		if v := adapter.Judge(p, r, config.Capabilities{}, false); v.Refused != "" || len(v.Dropped) != 0 {
			t.Errorf("%s: verdict %+v", p, v)
		}
	}
}

// What a translation drops or cannot carry is named in Messages notation;
// an Anthropic deployment takes everything.
func TestMessagesVerdicts(t *testing.T) {
	const msg = `"messages":[{"role":"user","content":"hi"}]`
	type want struct {
		refused string
		dropped []string
	}
	tests := []struct {
		name, body     string
		openai, gemini want
	}{
		{"plain", `{"model":"m","max_tokens":9,` + msg + `}`, want{}, want{}},
		{"cache hints", `{"model":"m","max_tokens":9,"cache_control":{"type":"ephemeral"},"system":[{"type":"text","text":"s","cache_control":{"type":"ephemeral"}}],` + msg + `}`,
			want{dropped: []string{"cache_control"}}, want{dropped: []string{"cache_control"}}},
		{"top_k: Gemini's topK, OpenAI has none", `{"model":"m","max_tokens":9,"top_k":3,` + msg + `}`, want{dropped: []string{"top_k"}}, want{}},
		{"hosted web search without the capability", `{"model":"m","max_tokens":9,"tools":[{"type":"web_search_20250305","name":"web_search","max_uses":3}],` + msg + `}`,
			want{refused: "tools[] (web_search)"}, want{refused: "tools[] (web_search)"}},
		{"another server tool", `{"model":"m","max_tokens":9,"tools":[{"type":"bash_20250124","name":"bash"}],` + msg + `}`, want{refused: "tools[0].type"}, want{refused: "tools[0].type"}},
		{"document block", `{"model":"m","max_tokens":9,"messages":[{"role":"user","content":[{"type":"document","source":{"type":"text","media_type":"text/plain","data":"d"}}]}]}`,
			want{refused: "messages[0].content[0].type"}, want{refused: "messages[0].content[0].type"}},
		{"file image", `{"model":"m","max_tokens":9,"messages":[{"role":"user","content":[{"type":"image","source":{"type":"file","file_id":"f1"}}]}]}`,
			want{refused: "messages[0].content[0].source.type"}, want{refused: "messages[0].content[0].source.type"}},
		{"effort: nothing to give it to", `{"model":"m","max_tokens":9,"output_config":{"effort":"low"},` + msg + `}`,
			want{dropped: []string{"output_config.effort"}}, want{dropped: []string{"output_config.effort"}}},
		{"metadata", `{"model":"m","max_tokens":9,"metadata":{"user_id":"u","tenant":"x"},` + msg + `}`,
			want{dropped: []string{"metadata.user_id", "metadata.tenant"}}, want{dropped: []string{"metadata.user_id", "metadata.tenant"}}},
		{"service tier", `{"model":"m","max_tokens":9,"service_tier":"standard_only",` + msg + `}`, want{dropped: []string{"service_tier"}}, want{dropped: []string{"service_tier"}}},
		{"one tool at a time: Gemini drops it for one tool", `{"model":"m","max_tokens":9,"tools":[{"name":"f","input_schema":{"type":"object"}}],"tool_choice":{"type":"auto","disable_parallel_tool_use":true},` + msg + `}`,
			want{}, want{dropped: []string{"tool_choice.disable_parallel_tool_use"}}},
		{"one tool at a time: Gemini refuses it for two", `{"model":"m","max_tokens":9,"tools":[{"name":"f","input_schema":{"type":"object"}},{"name":"g","input_schema":{"type":"object"}}],"tool_choice":{"type":"auto","disable_parallel_tool_use":true},` + msg + `}`,
			want{}, want{refused: "tool_choice.disable_parallel_tool_use"}},
		{"a role newer than this build", `{"model":"m","max_tokens":9,"messages":[{"role":"critic","content":"x"},{"role":"user","content":"y"}]}`,
			want{refused: "messages[0].role"}, want{refused: "messages[0].role"}},
		{"a field newer than this build", `{"model":"m","max_tokens":9,"future":{"x":1},` + msg + `}`, want{dropped: []string{"future"}}, want{dropped: []string{"future"}}},
		{"hosted features", `{"model":"m","max_tokens":9,"mcp_servers":[{"type":"url","url":"https://x","name":"x"}],` + msg + `}`, want{refused: "mcp_servers"}, want{refused: "mcp_servers"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := ParseMessagesRequest([]byte(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			if v := adapter.Judge(config.ProtocolAnthropic, r, config.Capabilities{}, true); !v.Native || v.Refused != "" {
				t.Errorf("anthropic: %+v", v)
			}
			for p, w := range map[config.Protocol]want{config.ProtocolOpenAI: tt.openai, config.ProtocolGemini: tt.gemini} {
				v := adapter.Judge(p, r, config.Capabilities{}, false)
				if v.Refused != w.refused || !slices.Equal(v.Dropped, w.dropped) {
					t.Errorf("%s: refused %q dropped %q, want %q %q", p, v.Refused, v.Dropped, w.refused, w.dropped)
				}
			}
		})
	}
}

func TestParseMessagesTranslation(t *testing.T) {
	body := `{"model":"deep","max_tokens":4000,"temperature":0.5,"stop_sequences":["END"],"metadata":{"user_id":"u-7"},
	  "system":[{"type":"text","text":"one"},{"type":"text","text":"two"}],
	  "thinking":{"type":"enabled","budget_tokens":2048},
	  "tools":[{"name":"f","description":"d","input_schema":{"type":"object","properties":{"a":{"type":"string"}}}}],
	  "tool_choice":{"type":"tool","name":"f"},
	  "messages":[{"role":"user","content":[{"type":"text","text":"look"},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBOR"}}]},
	    {"role":"assistant","content":[{"type":"thinking","thinking":"t","signature":"s"},{"type":"tool_use","id":"tu1","name":"f","input":{"a":"b"}}]},
	    {"role":"user","content":[{"type":"tool_result","tool_use_id":"tu1","is_error":true,"content":[{"type":"text","text":"boom"}]}]}]}`
	r, err := ParseMessagesRequest([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	if !r.WantsReasoning() || r.ThinkingBudget() != 2048 || !r.NeedsVision() || !r.NeedsTools() || r.User != "" || len(r.Stop) != 1 || *r.Temperature != 0.5 {
		t.Fatalf("typed view: %+v", r)
	}
	if r.Conversation()[0].Role != "system" || r.Conversation()[0].Text() != "one\n\ntwo" {
		t.Fatalf("system: %+v", r.Conversation()[0])
	}
	if img := r.Conversation()[1].Content[1]; img.Type != "image_url" || img.ImageURL != "data:image/png;base64,iVBOR" {
		t.Fatalf("image: %+v", img)
	}
	if a := r.Conversation()[2]; a.Role != "assistant" || len(a.ToolCalls) != 1 || a.ToolCalls[0].Arguments != `{"a":"b"}` || a.Text() != "" {
		t.Fatalf("assistant (thinking dropped): %+v", a)
	}
	if tr := r.Conversation()[3]; tr.Role != "tool" || tr.Text() != "[tool error] boom" {
		t.Fatalf("tool result: %+v", tr)
	}
	if gjson.GetBytes(r.ChatBody(), "tool_choice.function.name").Str != "f" {
		t.Fatalf("tool_choice: %s", r.ChatBody())
	}
}

func TestParseMessagesInvalid(t *testing.T) {
	for _, tt := range []struct{ body, param string }{
		{`{"max_tokens":5,"messages":[{"role":"user","content":"x"}]}`, "model"},
		{`{"model":"m","messages":[{"role":"user","content":"x"}]}`, "max_tokens"},
		{`{"model":"m","max_tokens":0,"messages":[{"role":"user","content":"x"}]}`, "max_tokens"},
		{`{"model":"m","max_tokens":5}`, "messages"},
		{`{"model":"m","max_tokens":5,"messages":[]}`, "messages"},
		{`{"model":"m","max_tokens":5,"messages":[{"role":7,"content":"x"}]}`, "messages[0].role"},
		{`{"model":"m","max_tokens":5,"messages":[{"role":"user","content":7}]}`, "messages[0].content"},
		{`{"model":"m","max_tokens":5,"messages":[{"role":"user","content":[{"type":"tool_use","id":"a","name":"f"}]}]}`, "messages[0].content[0].type"},
		{`{"model":"m","max_tokens":5,"temperature":1.5,"messages":[{"role":"user","content":"x"}]}`, "temperature"},
		{`{"model":"m","max_tokens":5,"thinking":{"type":"enabled"},"messages":[{"role":"user","content":"x"}]}`, "thinking.budget_tokens"},
		{`{"model":"m","max_tokens":5,"tool_choice":{"type":"tool"},"messages":[{"role":"user","content":"x"}]}`, "tool_choice.name"},
		{`{"model":"m","model":"n","max_tokens":5,"messages":[{"role":"user","content":"x"}]}`, "model"},
		{`{"model":"m","max_tokens":5,"messages":[{"role":"user","content":[{"type":"tool_result"}]}]}`, "messages[0].content[0].tool_use_id"},
		{`[1]`, ""},
	} {
		_, err := ParseMessagesRequest([]byte(tt.body))
		var re *RequestError
		if !errors.As(err, &re) || re.Param != tt.param {
			t.Errorf("%s: err %v, want param %q", tt.body, err, tt.param)
		}
	}
	if _, err := ParseCountTokensRequest([]byte(`{"model":"m","messages":[{"role":"user","content":"x"}]}`)); err != nil {
		t.Errorf("count_tokens needs no max_tokens: %v", err)
	}
}

func FuzzParseMessagesRequest(f *testing.F) {
	for _, name := range []string{"recorded-nonstream-tool-use.1.request.json", "recorded-nonstream-tool-use.2.request.json", "recorded-stream-tool-use.2.request.json"} {
		b, err := os.ReadFile(filepath.Join("..", "adapter", "testdata", "anthropic", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`{"model":"m","max_tokens":1,"messages":[{"role":"user","content":[{"type":"image","source":{"type":"url","url":"http://x"}}]}]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		r, err := ParseMessagesRequest(body)
		if err == nil && (r.Native == nil || r.Model == "") {
			t.Fatal("accepted without its native body or model")
		}
		if err == nil && len(r.Conversation()) == 0 {
			t.Fatalf("accepted, but its translation has no messages: %s", r.ChatBody())
		}
		var re *RequestError
		if err != nil && !errors.As(err, &re) {
			t.Fatalf("error of type %T", err)
		}
	})
}

// The translated stream is what the Anthropic SDK accumulates into the
// same message: reasoning → a thinking block, text, two tool calls whose
// arguments arrive in pieces, the stop reason and the usage.
func TestMessagesStreamTranslation(t *testing.T) {
	chunks := []string{
		`{"id":"c1","object":"chat.completion.chunk","model":"x","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}`,
		`{"id":"c1","object":"chat.completion.chunk","model":"x","choices":[{"index":0,"delta":{"reasoning_content":"let me"},"finish_reason":null}]}`,
		`{"id":"c1","object":"chat.completion.chunk","model":"x","choices":[{"index":0,"delta":{"reasoning_content":" think"},"finish_reason":null}]}`,
		`{"id":"c1","object":"chat.completion.chunk","model":"x","choices":[{"index":0,"delta":{"content":"Hi"},"finish_reason":null}]}`,
		`{"id":"c1","object":"chat.completion.chunk","model":"x","choices":[{"index":0,"delta":{"content":" there"},"finish_reason":null}]}`,
		`{"id":"c1","object":"chat.completion.chunk","model":"x","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"f","arguments":"{\"a\":"}}]},"finish_reason":null}]}`,
		`{"id":"c1","object":"chat.completion.chunk","model":"x","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"1}"}}]},"finish_reason":null}]}`,
		`{"id":"c1","object":"chat.completion.chunk","model":"x","choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"call_b","type":"function","function":{"name":"g","arguments":"{}"}}]},"finish_reason":null}]}`,
		`{"id":"c1","object":"chat.completion.chunk","model":"x","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`,
		`{"id":"c1","object":"chat.completion.chunk","model":"x","choices":[],"usage":{"prompt_tokens":30,"completion_tokens":7}}`,
	}
	s := NewMessagesStream("logic", "msg_1", false)
	var out []byte
	for i, c := range chunks {
		out = s.Chunk(out, adapter.Chunk{Data: []byte(c), UsageOnly: i == len(chunks)-1})
	}
	out = s.End(out, adapter.Usage{Prompt: 30, Completion: 7, Cached: 10, Known: true})

	var msg anthropic.Message
	sse := adapter.NewSSEReader(bytes.NewReader(out))
	var types []string
	for {
		ev, err := sse.Next()
		if err != nil {
			break
		}
		var e anthropic.MessageStreamEventUnion
		if err := json.Unmarshal(ev.Data, &e); err != nil {
			t.Fatal(err)
		}
		if e.Type != ev.Event {
			t.Fatalf("event %q carries type %q", ev.Event, e.Type)
		}
		types = append(types, e.Type)
		if e.Type == "ping" {
			continue
		}
		if err := msg.Accumulate(e); err != nil {
			t.Fatalf("%s: %v\n%s", e.Type, err, out)
		}
	}
	if types[0] != "message_start" || types[len(types)-2] != "message_delta" || types[len(types)-1] != "message_stop" {
		t.Fatalf("sequence %v", types)
	}
	if msg.ID != "msg_1" || msg.Model != "logic" || msg.StopReason != "tool_use" || msg.Usage.OutputTokens != 7 || msg.Usage.InputTokens != 20 || msg.Usage.CacheReadInputTokens != 10 {
		t.Fatalf("message: %+v", msg)
	}
	var got []string
	for _, b := range msg.Content {
		switch b.Type {
		case "thinking":
			got = append(got, "thinking:"+b.Thinking)
		case "text":
			got = append(got, "text:"+b.Text)
		case "tool_use":
			got = append(got, "tool:"+b.ID+":"+b.Name+":"+string(b.Input))
		}
	}
	want := []string{"thinking:let me think", "text:Hi there", `tool:call_a:f:{"a":1}`, "tool:call_b:g:{}"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("blocks (-want +got):\n%s", diff)
	}

	// A stream that fails after content ends with Anthropic's error event.
	fail := string(NewMessagesStream("m", "msg_2", false).Fail(nil, http.StatusBadGateway, "upstream_error", "boom"))
	if !strings.HasPrefix(fail, "event: error\ndata: ") || gjson.Get(strings.TrimPrefix(strings.TrimSpace(fail), "event: error\ndata: "), "error.type").Str != "api_error" {
		t.Fatalf("fail event: %q", fail)
	}
}

// A native message_start names the logic model; other events pass as they are.
func TestMessagesStreamNative(t *testing.T) {
	s := NewMessagesStream("logic", "msg_x", true)
	start := "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"model\":\"claude-x\",\"content\":[]}}\n\n"
	got := string(s.Chunk(nil, adapter.Chunk{Data: []byte(start)}))
	if !strings.Contains(got, `"model":"logic"`) || strings.Contains(got, "claude-x") {
		t.Fatalf("message_start: %q", got)
	}
	delta := "event: content_block_delta\ndata: {\"model\":\"keep\"}\n\n"
	if got := string(s.Chunk(nil, adapter.Chunk{Data: []byte(delta)})); got != delta {
		t.Fatalf("delta changed: %q", got)
	}
	if len(s.End(nil, adapter.Usage{})) != 0 {
		t.Fatal("a native stream's end adds events")
	}
}

func TestMessagesAnswer(t *testing.T) {
	chat := `{"id":"chatcmpl-1","object":"chat.completion","model":"up","choices":[{"index":0,"message":{"role":"assistant","content":"Hi","reasoning_content":"hmm",
	  "tool_calls":[{"id":"call_1","type":"function","function":{"name":"f","arguments":"{\"a\":1}"}}]},"finish_reason":"tool_calls"}]}`
	b, err := MessagesAnswer(nil, []byte(chat), "logic", MessagesID("chatcmpl-1"), adapter.Usage{Prompt: 12, Completion: 5, Known: true})
	if err != nil {
		t.Fatal(err)
	}
	var got, want any
	_ = json.Unmarshal(b, &got)
	_ = json.Unmarshal([]byte(`{"id":"msg_chatcmpl1","type":"message","role":"assistant","model":"logic",
	  "content":[{"type":"thinking","thinking":"hmm","signature":""},{"type":"text","text":"Hi"},{"type":"tool_use","id":"call_1","name":"f","input":{"a":1}}],
	  "stop_reason":"tool_use","stop_sequence":null,
	  "usage":{"input_tokens":12,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":5}}`), &want)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("answer (-want +got):\n%s", diff)
	}
	// The SDK reads it.
	var m anthropic.Message
	if err := json.Unmarshal(b, &m); err != nil || len(m.Content) != 3 {
		t.Fatalf("SDK: %v %+v", err, m)
	}
	if _, err := MessagesAnswer(nil, []byte(`{"choices":[{"message":{"tool_calls":[{"id":"c","function":{"name":"f","arguments":"[1"}}]}}]}`), "m", "x", adapter.Usage{}); err == nil {
		t.Fatal("broken tool arguments accepted")
	}
}

func TestMessagesErrorTypes(t *testing.T) {
	for status, typ := range map[int]string{400: "invalid_request_error", 401: "authentication_error", 403: "permission_error", 404: "not_found_error",
		413: "request_too_large", 422: "invalid_request_error", 429: "rate_limit_error", 500: "api_error", 502: "api_error", 503: "overloaded_error",
		504: "timeout_error", 529: "overloaded_error"} {
		b := MessagesError(status, "c", "m", nil)
		if v := gjson.ParseBytes(b); v.Get("type").Str != "error" || v.Get("error.type").Str != typ || v.Get("error.message").Str != "m" || v.Get("error.code").Str != "c" {
			t.Errorf("%d: %s", status, b)
		}
	}
}
