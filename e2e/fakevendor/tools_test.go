package fakevendor

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

// The scripted tool rules, protocol aside.
func TestDecide(t *testing.T) {
	user := func(text string) turn { return turn{text: text} }
	result := func(r ...string) turn { return turn{results: r} }
	model := turn{model: true}
	ab := []offered{{name: "Bash"}, {name: "Read"}}
	long := strings.Repeat("é", 250)
	tests := []struct {
		name  string
		turns []turn
		tools []offered
		want  intent
	}{
		{"no directive", []turn{user("hello")}, ab, intent{}},
		{"bare", []turn{user("please call tool")}, ab, intent{tool: ab[0], args: "{}"}},
		{"bare without tools", []turn{user("please call tool")}, nil, intent{}},
		{"bare, punctuation after", []turn{user("Please call tool, now")}, ab, intent{tool: ab[0], args: "{}"}},
		{"not a whole word", []turn{user("recall tools")}, ab, intent{}},
		{"named", []turn{user("Call tool Read.")}, ab, intent{tool: ab[1], args: "{}"}},
		{"named, any case", []turn{user("CALL TOOL Read")}, ab, intent{tool: ab[1], args: "{}"}},
		{"named with words after", []turn{user("please call tool Read for me")}, ab, intent{tool: ab[1], args: "{}"}},
		{"named with arguments", []turn{user("do it: call tool Read {\"file_path\": \"/tmp/x/notes.txt\",\n \"limit\": 5} and tell me")}, ab,
			intent{tool: ab[1], args: `{"file_path":"/tmp/x/notes.txt","limit":5}`}},
		{"bad arguments", []turn{user(`call tool Read {"file_path":`)}, ab, intent{say: "call tool Read: the arguments are not a JSON object: unexpected EOF"}},
		{"unknown name", []turn{user(`call tool Grep {"pattern":"x"}`)}, ab, intent{say: "no tool Grep was offered; offered: Bash, Read"}},
		{"unknown name, no tools", []turn{user("call tool Grep")}, nil, intent{say: "no tool Grep was offered; offered: (none)"}},
		{"the last user text counts", []turn{user("call tool Read"), model, user("thanks")}, ab, intent{}},
		{"after the model's answer", []turn{user("call tool Read"), model}, ab, intent{tool: ab[1], args: "{}"}},
		{"tool result", []turn{user("call tool Read"), model, result("line one\nline two")}, ab, intent{say: "Tool result: line one\nline two"}},
		{"several results", []turn{user("x"), model, result("a"), result("b", "c")}, ab, intent{say: "Tool result: a\nb\nc"}},
		{"an empty result", []turn{user("x"), model, result("")}, ab, intent{say: "Tool result: "}},
		{"a long result is cut to 200 characters", []turn{user("x"), model, result(long)}, nil, intent{say: "Tool result: " + long[:400]}},
		{"a result with the user's words", []turn{user("call tool Read"), model, {text: "thanks, now answer", results: []string{"r"}}}, ab, intent{}},
		{"a result with a directive", []turn{user("x"), model, result("r"), user("call tool Bash")}, ab, intent{tool: ab[0], args: "{}"}},
		{"a result before the model's answer", []turn{user("call tool Read"), model, result("r"), model}, ab, intent{tool: ab[1], args: "{}"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := decide(tt.turns, tt.tools); got != tt.want {
				t.Errorf("decide = %+v, want %+v", got, tt.want)
			}
		})
	}
}

// Responses namespaces and custom tools, as the directive names them.
func TestDecideNamespacesAndCustomTools(t *testing.T) {
	tools := []offered{{name: "apply_patch", custom: true}, {name: "spawn", namespace: "multi_agent_v1"}, {name: "exec_command"}}
	patch := "*** Begin Patch\n*** Add File: a.txt\n+hi\n*** End Patch"
	tests := []struct {
		text string
		want intent
	}{
		{"call tool\n", intent{tool: tools[2], args: "{}"}}, // bare: the first plain tool
		{"call tool spawn {\"n\":1}", intent{tool: tools[1], args: `{"n":1}`}},
		{"call tool multi_agent_v1.spawn", intent{tool: tools[1], args: "{}"}},
		{"call tool multi_agent_v1spawn", intent{tool: tools[1], args: "{}"}},
		{"call tool apply_patch\n" + patch + "\n", intent{tool: tools[0], args: patch}},
		{"call tool nope", intent{say: "no tool nope was offered; offered: apply_patch, multi_agent_v1.spawn, exec_command"}},
	}
	for _, tt := range tests {
		if got := decide([]turn{{text: tt.text}}, tools); got != tt.want {
			t.Errorf("%q: %+v, want %+v", tt.text, got, tt.want)
		}
	}
	if got := decide([]turn{{text: "call tool"}}, tools[:1]); got != (intent{tool: tools[0]}) {
		t.Errorf("bare call of a custom tool: %+v", got)
	}
}

// jsonEdit decodes a JSON object, lets edit change it and encodes it again.
func jsonEdit(t *testing.T, doc []byte, edit func(m map[string]any)) string {
	t.Helper()
	var m map[string]any
	decode(t, doc, &m)
	edit(m)
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// setPrompt puts text in place of the captured prompt "say hi".
func setPrompt(t *testing.T, doc []byte, text string) []byte {
	t.Helper()
	q, _ := json.Marshal(text)
	out := strings.Replace(string(doc), `"say hi"`, string(q), 1)
	if out == string(doc) {
		t.Fatal(`no "say hi" prompt in the capture`)
	}
	return []byte(out)
}

// One tool round trip as Claude Code 2.1.328 makes it (testdata has its
// first request, texts shortened): system-reminders and the prompt as text
// blocks, a mid-conversation system turn, adaptive thinking, output_config,
// context_management, a deferred tool; then the tool_result with a
// system-reminder after it.
func TestClaudeCodeRoundTrip(t *testing.T) {
	s, base := start(t, Options{ReplyChunks: 3})
	h := anthropicWire.header("sk-test-cc")
	h.Set("Anthropic-Beta", "claude-code-20250219,interleaved-thinking-2025-05-14,context-management-2025-06-27,advanced-tool-use-2025-11-20,effort-2025-11-24")
	first := setPrompt(t, readFixture(t, "claude-code-request.json"), `Read the notes. call tool Read {"file_path":"/tmp/x/notes.txt"}`)
	events := mustEvents(t, send(t, http.MethodPost, base+"/v1/messages?beta=true", h, string(first)))
	var args strings.Builder
	for _, e := range events {
		if gjson.Get(e.Data, "delta.type").Str == "input_json_delta" {
			args.WriteString(gjson.Get(e.Data, "delta.partial_json").Str)
		}
	}
	use := gjson.Get(events[1].Data, "content_block")
	if use.Get("type").Str != "tool_use" || use.Get("name").Str != "Read" || args.String() != `{"file_path":"/tmp/x/notes.txt"}` ||
		!strings.Contains(events[len(events)-2].Data, `"stop_reason":"tool_use"`) {
		t.Fatalf("first turn: %+v", events)
	}
	second := jsonEdit(t, first, func(m map[string]any) {
		m["messages"] = append(m["messages"].([]any),
			map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "tool_use", "id": use.Get("id").Str, "name": "Read", "input": map[string]any{"file_path": "/tmp/x/notes.txt"}}}},
			map[string]any{"role": "user", "content": []any{
				map[string]any{"type": "tool_result", "tool_use_id": use.Get("id").Str, "content": []any{map[string]any{"type": "text", "text": "     1\tthe notes say 42\n"}}},
				map[string]any{"type": "text", "text": "<system-reminder>\nThe date changed.\n</system-reminder>"},
			}})
	})
	events = mustEvents(t, send(t, http.MethodPost, base+"/v1/messages?beta=true", h, second))
	var text strings.Builder
	for _, e := range events {
		text.WriteString(gjson.Get(e.Data, "delta.text").Str)
	}
	if text.String() != "Tool result:      1\tthe notes say 42\n" || !strings.Contains(events[len(events)-2].Data, `"stop_reason":"end_turn"`) {
		t.Fatalf("second turn %q: %+v", text.String(), events)
	}
	if st := s.Stats(); st.Requests != 2 || st.Models["claude-opus-5-5"].Statuses[200] != 2 || st.WebSearch != 0 {
		t.Errorf("stats %+v", st)
	}
}

// One tool round trip as Codex 0.169.0 makes it (testdata has its first
// request, texts shortened): developer messages, function tools, the custom
// apply_patch tool with its grammar, tool_search and the hosted web_search.
func TestCodexRoundTrip(t *testing.T) {
	s, base := start(t, Options{ReplyChunks: 3})
	h := openaiWire.header("sk-test-cx")
	capture := readFixture(t, "codex-request.json")
	completed := func(body []byte) gjson.Result {
		t.Helper()
		events := mustEvents(t, send(t, http.MethodPost, base+"/v1/responses", h, string(body)))
		last := events[len(events)-1]
		if last.Event != "response.completed" {
			t.Fatalf("stream ends with %s: %+v", last.Event, events)
		}
		return gjson.Get(last.Data, "response")
	}
	rounds := []struct{ prompt, call, input, output, result string }{
		{`call tool exec_command {"cmd":"cat /tmp/x/notes.txt"}`, "function_call", `{"cmd":"cat /tmp/x/notes.txt"}`, "function_call_output", "the notes say 42"},
		{"call tool apply_patch\n*** Begin Patch\n*** Add File: a.txt\n+hi\n*** End Patch\n", "custom_tool_call", "*** Begin Patch\n*** Add File: a.txt\n+hi\n*** End Patch", "custom_tool_call_output", "Done!"},
	}
	for _, r := range rounds {
		first := setPrompt(t, capture, r.prompt)
		resp := completed(first)
		call := resp.Get("output.1") // after the reasoning item
		in := call.Get("arguments").Str
		if r.call == "custom_tool_call" {
			in = call.Get("input").Str
		}
		if call.Get("type").Str != r.call || in != r.input || call.Get("call_id").Str == "" {
			t.Fatalf("%s: %s", r.call, resp.Raw)
		}
		second := jsonEdit(t, first, func(m map[string]any) {
			var item map[string]any
			decode(t, []byte(call.Raw), &item)
			m["input"] = append(m["input"].([]any), map[string]any{"type": "reasoning", "summary": []any{}}, item,
				map[string]any{"type": r.output, "call_id": call.Get("call_id").Str, "output": r.result})
		})
		resp = completed([]byte(second))
		if got := resp.Get(`output.#(type=="message").content.0.text`).Str; got != "Tool result: "+r.result {
			t.Fatalf("after %s: %q in %s", r.output, got, resp.Raw)
		}
	}
	if st := s.Stats(); st.WebSearch != 4 || st.Models["gpt-5.5-codex"].Statuses[200] != 4 {
		t.Errorf("stats %+v", st)
	}
	if req, _ := s.LastRequest("gpt-5.5-codex"); !req.WebSearch {
		t.Error("the last request is not marked as offering web search")
	}
}

// Odd but valid-JSON requests get an answer or the protocol's 400, never a
// panic; count_tokens takes the server tools too.
func TestOddToolShapes(t *testing.T) {
	s, base := start(t, Options{})
	tests := []struct {
		w    wire
		path string
		body string
		want int
	}{
		{openaiWire, "/v1/chat/completions", `{"model":"m","messages":[{"role":"tool","content":7},{"role":"user","content":{"x":1}}],"tools":[{"type":"function"}]}`, 200},
		{openaiWire, "/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"call tool"}],"tools":[{"type":"function","function":{}}]}`, 200},
		{openaiWire, "/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"hi"}],"tools":{}}`, 400},
		{anthropicWire, "/v1/messages", `{"model":"m","max_tokens":9,"messages":[{"role":"user","content":[{"type":"tool_result","content":5},{"type":"text","text":null}]}]}`, 200},
		{anthropicWire, "/v1/messages", `{"model":"m","max_tokens":9,"messages":[{"role":"user","content":[{"type":"tool_result"}]}]}`, 200},
		{anthropicWire, "/v1/messages", `{"model":"m","max_tokens":9,"messages":[{"role":"user","content":"call tool web_search"}],"tools":[{"type":"web_search_20250305","name":"web_search"}]}`, 200},
		{anthropicWire, "/v1/messages/count_tokens", `{"model":"m","messages":[{"role":"user","content":"hi"}],"tools":[{"type":"web_search_20260209","name":"web_search"}]}`, 200},
		{geminiWire, "/v1beta/models/m:generateContent", `{"contents":[{"parts":[{"functionResponse":{"name":"f","response":"x"}}]}],"tools":[{"googleSearchRetrieval":{}}]}`, 200},
		{geminiWire, "/v1beta/models/m:generateContent", `{"contents":[{"parts":[{"functionResponse":{}}]}]}`, 200},
		{geminiWire, "/v1beta/models/m:generateContent", `{"contents":[{"parts":[{"functionResponse":7}]}]}`, 400},
		{openaiWire, "/v1/responses", `{"model":"m","input":[{"type":"custom_tool_call_output","output":{"a":1}}],"tools":[{"type":"namespace","name":"ns"},{"type":"web_search_preview"}]}`, 200},
		{openaiWire, "/v1/responses", `{"model":"m","input":[{"type":"function_call_output"}],"tools":[{"type":"namespace","name":"ns","tools":{}}]}`, 400},
	}
	for _, tt := range tests {
		res := send(t, http.MethodPost, base+tt.path, tt.w.header("k"), tt.body)
		if res.status != tt.want {
			t.Errorf("%s %s: %d %s", tt.path, tt.body, res.status, res.body)
		}
	}
	if st := s.Stats(); st.WebSearch != 4 {
		t.Errorf("web search counted %d times, want 4 (Anthropic twice, Gemini and Responses once)", st.WebSearch)
	}
	// A web_search server tool is not offered to "call tool".
	res := send(t, http.MethodPost, base+"/v1/messages", anthropicWire.header("k"), tests[5].body)
	if !strings.Contains(string(res.body), "no tool web_search was offered; offered: (none)") {
		t.Errorf("server tool called: %s", res.body)
	}
}
