package frontdoor

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"switchyard/routing/adapter"
	"switchyard/routing/config"
)

// What Claude Code and Codex really send (testdata/agents: their first
// requests, captured) is served natively as sent, and translated with what
// the policy drops named, never refused for a field the gateway does not
// know.

func TestClaudeCodeRequest(t *testing.T) {
	body := vendorFixture(t, "agents", "claude-code-request.json")
	r, err := ParseMessagesRequest(body)
	if err != nil {
		t.Fatal(err)
	}
	if r.Untranslatable != "" {
		t.Fatalf("untranslatable %q", r.Untranslatable)
	}
	var roles []string
	for _, m := range r.Conversation() {
		roles = append(roles, m.Role)
	}
	// The system prompt first, then the turns, the mid-conversation system
	// turn in its place.
	if !slices.Equal(roles, []string{"system", "user", "system"}) || !strings.HasPrefix(r.Conversation()[2].Text(), "# Environment") {
		t.Fatalf("roles %v", roles)
	}
	// Adaptive thinking and an effort hint: no request for reasoning, so
	// no forced deep tier.
	if !r.Adaptive() || r.WantsReasoning() || r.Effort != "medium" || len(r.Tools) != 5 {
		t.Fatalf("adaptive %v reasoning %v effort %q tools %d", r.Adaptive(), r.WantsReasoning(), r.Effort, len(r.Tools))
	}
	if v := adapter.Judge(config.ProtocolAnthropic, r, config.Capabilities{}, true); !v.Native {
		t.Fatalf("anthropic: %+v", v)
	}
	common := []string{"messages[].output_config", "cache_control", "metadata.user_id", "thinking.display", "context_management", "tools[].defer_loading"}
	for _, tc := range []struct {
		p     config.Protocol
		caps  config.Capabilities
		extra []string
	}{
		{config.ProtocolOpenAI, config.Capabilities{}, []string{"output_config.effort"}},
		{config.ProtocolOpenAI, config.Capabilities{Thinking: true}, nil},
		{config.ProtocolGemini, config.Capabilities{Thinking: true}, nil},
	} {
		v := adapter.Judge(tc.p, r, tc.caps, false)
		want := append(slices.Clone(common), tc.extra...)
		slices.Sort(want)
		got := slices.Sorted(slices.Values(v.Dropped))
		if v.Refused != "" || !slices.Equal(got, want) {
			t.Errorf("%s %+v: refused %q, dropped %v, want %v", tc.p, tc.caps, v.Refused, got, want)
		}
		if strict := adapter.Judge(tc.p, r, tc.caps, true); strict.Refused == "" {
			t.Errorf("%s strict: refuses nothing", tc.p)
		}
	}
}

func TestCodexRequest(t *testing.T) {
	body := vendorFixture(t, "agents", "codex-request.json")
	rr, err := ParseResponsesRequest(body)
	if err != nil {
		t.Fatal(err)
	}
	r := rr.Chat
	if r.Untranslatable != "" || !r.WantsReasoning() {
		t.Fatalf("untranslatable %q, reasoning %v", r.Untranslatable, r.WantsReasoning())
	}
	var names []string
	for _, tl := range r.Tools {
		names = append(names, tl.Name)
	}
	if !slices.Equal(names, []string{"exec_command", "apply_patch", "view_image"}) || !rr.Tools["apply_patch"].Custom {
		t.Fatalf("tools %v, names %+v", names, rr.Tools)
	}
	if p := gjson.GetBytes(r.ChatBody(), `tools.#(function.name=="apply_patch").function`); p.Get("parameters.properties.input.type").Str != "string" ||
		!strings.Contains(p.Get("description").Str, "lark grammar") {
		t.Fatalf("apply_patch: %s", p.Raw)
	}
	if v := adapter.Judge(config.ProtocolOpenAI, r, config.Capabilities{ResponsesAPI: true}, true); !v.Native {
		t.Fatalf("native: %+v", v)
	}
	// The hosted web search goes only where a deployment runs one.
	for _, p := range []config.Protocol{config.ProtocolOpenAI, config.ProtocolAnthropic, config.ProtocolGemini} {
		if v := adapter.Judge(p, r, config.Capabilities{Thinking: true}, false); v.Refused != "tools[] (web_search)" {
			t.Errorf("%s without web search: %+v", p, v)
		}
	}
	common := []string{"client_metadata", "include (reasoning.encrypted_content)", "tools[] (tool_search)", "tools[] (web_search).external_web_access",
		"tools[] (web_search).search_content_types", "tools[].format"}
	caps := config.Capabilities{Thinking: true, WebSearch: true}
	for p, extra := range map[config.Protocol][]string{
		config.ProtocolOpenAI:    nil,
		config.ProtocolAnthropic: {"prompt_cache_key", "text.verbosity"},
		config.ProtocolGemini:    {"prompt_cache_key", "text.verbosity"},
	} {
		v := adapter.Judge(p, r, caps, false)
		want := append(slices.Clone(common), extra...)
		slices.Sort(want)
		got := slices.Sorted(slices.Values(v.Dropped))
		if v.Refused != "" || !slices.Equal(got, want) {
			t.Errorf("%s: refused %q, dropped %v, want %v", p, v.Refused, got, want)
		}
	}
}

// A namespace's functions are flattened for a translated vendor and named
// back on the way out; a custom tool's call comes back as custom_tool_call
// with its input, whole and streamed.
func TestResponsesNamespacesAndCustomToolsRoundTrip(t *testing.T) {
	rr := respParse(t, `{"model":"m","input":[
		{"role":"user","content":"go"},
		{"type":"function_call","call_id":"c0","namespace":"mcp__files","name":"read","arguments":"{\"path\":\"a\"}"},
		{"type":"function_call_output","call_id":"c0","output":"A"},
		{"type":"custom_tool_call","call_id":"c1","name":"apply_patch","input":"*** Begin Patch"},
		{"type":"custom_tool_call_output","call_id":"c1","output":"done"}],
		"tools":[{"type":"namespace","name":"mcp__files","description":"files","tools":[{"type":"function","name":"read","parameters":{"type":"object"}}]},
		{"type":"custom","name":"apply_patch","description":"patch files"}]}`)
	flat := flatName("mcp__files", "read")
	if flat != "mcp__files__read" || rr.Tools[flat] != (ToolName{Namespace: "mcp__files", Name: "read"}) {
		t.Fatalf("flattened %q, names %+v", flat, rr.Tools)
	}
	first, second := rr.Chat.Conversation()[1].ToolCalls, rr.Chat.Conversation()[3].ToolCalls
	if len(first) != 1 || first[0].Name != flat || len(second) != 1 || second[0].Name != "apply_patch" || second[0].Arguments != `{"input":"*** Begin Patch"}` {
		t.Fatalf("earlier calls %+v %+v", first, second)
	}
	chat := []byte(`{"id":"x","object":"chat.completion","choices":[{"index":0,"finish_reason":"tool_calls","message":{"role":"assistant","content":null,"tool_calls":[
		{"id":"call_a","type":"function","function":{"name":"mcp__files__read","arguments":"{\"path\":\"b\"}"}},
		{"id":"call_b","type":"function","function":{"name":"apply_patch","arguments":"{\"input\":\"*** Begin Patch\\n*** End Patch\"}"}}]}}]}`)
	b, err := ResponsesFromChat(rr, chat, ResponseIDs{Base: "x"}, "m", 1, adapter.Usage{})
	if err != nil {
		t.Fatal(err)
	}
	out := gjson.GetBytes(b, "output")
	if fc := out.Get("0"); fc.Get("type").Str != "function_call" || fc.Get("namespace").Str != "mcp__files" || fc.Get("name").Str != "read" {
		t.Fatalf("function call %s", fc.Raw)
	}
	if cc := out.Get("1"); cc.Get("type").Str != "custom_tool_call" || cc.Get("name").Str != "apply_patch" || cc.Get("input").Str != "*** Begin Patch\n*** End Patch" {
		t.Fatalf("custom call %s", cc.Raw)
	}
	// Streamed: the same items, the custom input in its own events.
	chunks := []string{
		`{"choices":[{"index":0,"delta":{"role":"assistant","tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"mcp__files__read","arguments":""}}]}}]}`,
		`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"path\":\"b\"}"}}]}}]}`,
		`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"call_b","type":"function","function":{"name":"apply_patch","arguments":"{\"input\":"}}]}}]}`,
		`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"function":{"arguments":"\"*** Begin Patch\"}"}}]},"finish_reason":"tool_calls"}]}`,
	}
	ev := NewResponsesEvents(rr, ResponseIDs{Base: "x"}, "m", 1)
	var sse []byte
	for _, c := range chunks {
		sse = ev.Chunk(sse, []byte(c))
	}
	sse = ev.Done(sse, adapter.Usage{})
	names, datas := respEvents(t, sse)
	if !slices.Contains(names, "response.custom_tool_call_input.done") || !bytes.Contains(sse, []byte(`"namespace":"mcp__files"`)) {
		t.Fatalf("events %v", names)
	}
	last := datas[len(datas)-1]
	var resp map[string]any
	if err := json.Unmarshal(last, &resp); err != nil {
		t.Fatal(err)
	}
	if o := gjson.GetBytes(last, "response.output"); o.Get("0.namespace").Str != "mcp__files" || o.Get("1.input").Str != "*** Begin Patch" {
		t.Fatalf("completed output %s", o.Raw)
	}
	for _, n := range names {
		if n == "response.function_call_arguments.delta" && strings.Contains(string(sse), `"delta":"{\"input\":`) {
			t.Fatal("a custom tool's input leaked as function arguments")
		}
	}
}
