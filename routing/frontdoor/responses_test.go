package frontdoor

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/openai/openai-go/v3/responses"
	"github.com/tidwall/gjson"

	"switchyard/e2e/fakevendor"
	"switchyard/routing/adapter"
	"switchyard/routing/config"
)

func respFixture(t *testing.T, name string) []byte {
	t.Helper()
	return vendorFixture(t, "responses", name)
}

// respParse parses a Responses body, failing the test on an error.
func respParse(t *testing.T, body string) *ResponsesRequest {
	t.Helper()
	r, err := ParseResponsesRequest([]byte(body))
	if err != nil {
		t.Fatalf("parse %s: %v", body, err)
	}
	return r
}

// chatOf is the translation's chat body, decoded.
func chatOf(t *testing.T, r *ResponsesRequest) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.Chat.ChatBody(), &m); err != nil {
		t.Fatalf("chat body: %v\n%s", err, r.Chat.ChatBody())
	}
	return m
}

func jsonValue(t *testing.T, s string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("%v: %s", err, s)
	}
	return v
}

func TestParseResponsesRequestTranslates(t *testing.T) {
	cases := []struct {
		name string
		body string
		chat string // the expected chat-completions body
	}{
		{"string input", `{"model":"fast","input":"hello"}`,
			`{"model":"fast","messages":[{"role":"user","content":"hello"}]}`},
		{"instructions first, settings", `{"model":"m","instructions":"be brief","input":"hi","max_output_tokens":64,"temperature":0.2,"top_p":0.9,
			"parallel_tool_calls":false,"user":"u1","stream":true,"reasoning":{"effort":"high","summary":"auto"},"text":{"verbosity":"low"},"store":false,"metadata":{}}`,
			`{"model":"m","messages":[{"role":"system","content":"be brief"},{"role":"user","content":"hi"}],"max_completion_tokens":64,"temperature":0.2,"top_p":0.9,
			"parallel_tool_calls":false,"user":"u1","stream":true,"reasoning_effort":"high","verbosity":"low"}`},
		{"the documented image input", string(respFixture(t, "create-image.docs-example.request.json")),
			`{"model":"gpt-5.4","messages":[{"role":"user","content":[{"type":"text","text":"what is in this image?"},
			{"type":"image_url","image_url":{"url":"https://upload.wikimedia.org/wikipedia/commons/thumb/d/dd/Gfp-wisconsin-madison-the-nature-boardwalk.jpg/2560px-Gfp-wisconsin-madison-the-nature-boardwalk.jpg"}}]}]}`},
		{"the documented function tools", string(respFixture(t, "create-function-call.docs-example.request.json")),
			`{"model":"gpt-5.4","messages":[{"role":"user","content":"What is the weather like in Boston today?"}],
			"tools":[{"type":"function","function":{"name":"get_current_weather","description":"Get the current weather in a given location",
			"parameters":{"type":"object","properties":{"location":{"type":"string","description":"The city and state, e.g. San Francisco, CA"},"unit":{"type":"string","enum":["celsius","fahrenheit"]}},"required":["location","unit"]}}}]}`},
		{"a tool round trip: output items sent back as input", `{"model":"m","input":[
			{"type":"message","role":"user","content":[{"type":"input_text","text":"weather?"}]},
			{"type":"reasoning","id":"rs_1","summary":[]},
			{"type":"message","id":"msg_1","role":"assistant","status":"completed","content":[{"type":"output_text","text":"Let me look.","annotations":[]}]},
			{"type":"function_call","id":"fc_1","call_id":"call_a","name":"get_weather","arguments":"{\"city\":\"Paris\"}","status":"completed"},
			{"type":"function_call","call_id":"call_b","name":"get_time","arguments":"{}"},
			{"type":"function_call_output","call_id":"call_a","output":"sunny"},
			{"type":"function_call_output","call_id":"call_b","output":[{"type":"input_text","text":"noon"}]},
			{"role":"user","content":"thanks"}],
			"tools":[{"type":"function","name":"get_weather","parameters":{"type":"object"},"strict":true}],"tool_choice":{"type":"function","name":"get_weather"}}`,
			`{"model":"m","messages":[{"role":"user","content":"weather?"},
			{"role":"assistant","content":"Let me look.","tool_calls":[{"id":"call_a","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}},
				{"id":"call_b","type":"function","function":{"name":"get_time","arguments":"{}"}}]},
			{"role":"tool","tool_call_id":"call_a","content":"sunny"},{"role":"tool","tool_call_id":"call_b","content":"noon"},
			{"role":"user","content":"thanks"}],
			"tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object"},"strict":true}}],
			"tool_choice":{"type":"function","function":{"name":"get_weather"}}}`},
		{"json_schema text format", `{"model":"m","input":"x","text":{"format":{"type":"json_schema","name":"out","schema":{"type":"object"},"strict":true}}}`,
			`{"model":"m","messages":[{"role":"user","content":"x"}],"response_format":{"type":"json_schema","json_schema":{"name":"out","schema":{"type":"object"},"strict":true}}}`},
		{"json_object, developer role, tool_choice required", `{"model":"m","input":[{"role":"developer","content":"terse"},{"role":"user","content":"x"}],
			"text":{"format":{"type":"json_object"}},"tools":[{"type":"function","name":"f"}],"tool_choice":"required"}`,
			`{"model":"m","messages":[{"role":"developer","content":"terse"},{"role":"user","content":"x"}],"response_format":{"type":"json_object"},
			"tools":[{"type":"function","function":{"name":"f"}}],"tool_choice":"required"}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := respParse(t, c.body)
			if diff := cmp.Diff(jsonValue(t, c.chat), any(chatOf(t, r))); diff != "" {
				t.Errorf("chat body (-want +got):\n%s", diff)
			}
			if r.Chat.Untranslatable != "" {
				t.Errorf("untranslatable %q", r.Chat.Untranslatable)
			}
			n := r.Chat.Native
			if n == nil || n.Door != adapter.DoorResponses || !bytes.Equal(n.Body, []byte(c.body)) || n.View != r {
				t.Fatalf("native %+v", n)
			}
		})
	}
	// The canonical view is what routing reads.
	r := respParse(t, `{"model":"standard","input":[{"role":"user","content":[{"type":"input_image","image_url":"https://x/y.png"}]}],"reasoning":{"effort":"low"},"tools":[{"type":"function","name":"f"}]}`)
	if !r.Chat.WantsReasoning() || !r.Chat.NeedsVision() || !r.Chat.NeedsTools() || r.Model != "standard" {
		t.Fatalf("canonical view: reasoning %v vision %v tools %v", r.Chat.WantsReasoning(), r.Chat.NeedsVision(), r.Chat.NeedsTools())
	}
	if r := respParse(t, `{"model":"m","input":"x","reasoning":{"effort":"none"}}`); r.Chat.WantsReasoning() {
		t.Fatal("effort none asks for no reasoning")
	}
}

// codexRequest is shaped like the requests of Codex-style agents
// (codex-rs ResponsesApiRequest): long instructions, a developer message,
// an earlier reasoning item with encrypted content, a tool round trip,
// function tools with strict false, parallel_tool_calls false, store false,
// include, and always a prompt_cache_key.
const codexRequest = `{"model":"standard","instructions":"You are a coding agent.","input":[
	{"type":"message","role":"developer","content":[{"type":"input_text","text":"<permissions>"}]},
	{"type":"message","role":"user","content":[{"type":"input_text","text":"list the files"}]},
	{"type":"reasoning","id":"rs_1","summary":[{"type":"summary_text","text":"I will run ls."}],"content":null,"encrypted_content":"gAAAA"},
	{"type":"function_call","name":"shell","arguments":"{\"command\":[\"ls\"]}","call_id":"call_1"},
	{"type":"function_call_output","call_id":"call_1","output":"README.md\n"}],
	"tools":[{"type":"function","name":"shell","description":"Runs a command","strict":false,"parameters":{"type":"object","properties":{"command":{"type":"array","items":{"type":"string"}}},"required":["command"]}}],
	"tool_choice":"auto","parallel_tool_calls":false,"reasoning":null,"store":false,"stream":true,"include":[],"prompt_cache_key":"0199a1b2-c3d4"}`

func TestParseResponsesRequestCodexShaped(t *testing.T) {
	r := respParse(t, codexRequest)
	if r.Chat.Untranslatable != "" || !r.Stream || len(r.Chat.Conversation()) != 5 || r.Chat.Conversation()[3].ToolCalls[0].ID != "call_1" || r.Chat.Conversation()[4].Role != "tool" {
		t.Fatalf("untranslatable %q, messages %+v", r.Chat.Untranslatable, r.Chat.Conversation())
	}
	// One tool and parallel_tool_calls false: Gemini cannot be told, but
	// with a single tool the answer is the same, so it is dropped.
	for p, want := range map[config.Protocol][]string{
		config.ProtocolOpenAI:    {"input[] (reasoning)"},
		config.ProtocolAnthropic: {"input[] (reasoning)", "prompt_cache_key"},
		config.ProtocolGemini:    {"input[] (reasoning)", "parallel_tool_calls", "prompt_cache_key"},
	} {
		v := adapter.Judge(p, r.Chat, config.Capabilities{}, false)
		if v.Refused != "" || !slices.Equal(v.Dropped, want) {
			t.Errorf("%s: verdict %+v, want drops %v", p, v, want)
		}
	}
	if !strings.Contains(string(r.Chat.ChatBody()), `"prompt_cache_key":"0199a1b2-c3d4"`) || string(r.Echo.PromptCacheKey) != `"0199a1b2-c3d4"` {
		t.Fatalf("prompt_cache_key in the translation %s / echoed %s", r.Chat.ChatBody(), r.Echo.PromptCacheKey)
	}
}

func TestParseResponsesRequestNativeOnly(t *testing.T) {
	for body, want := range map[string]string{
		`{"model":"m","input":"x","tools":[{"type":"function","name":"f"},{"type":"file_search","vector_store_ids":["v"]}]}`:      "tools[1].type",
		`{"model":"m","input":"x","tool_choice":{"type":"file_search"}}`:                                                          "tool_choice",
		`{"model":"m","input":"x","include":["reasoning.encrypted_content","file_search_call.results"]}`:                          "include[1]",
		`{"model":"m","input":[{"role":"user","content":[{"type":"input_file","file_id":"file-1"}]}]}`:                            "input[0].content[0].type",
		`{"model":"m","input":[{"role":"user","content":[{"type":"input_image","file_id":"file-1"}]}]}`:                           "input[0].content[0].file_id",
		`{"model":"m","input":[{"type":"computer_call","call_id":"c","action":{}},{"role":"user","content":"x"}]}`:                "input[0].type",
		`{"model":"m","input":[{"type":"function_call_output","call_id":"c","output":[{"type":"input_image","image_url":"u"}]}]}`: "input[0].output[0].type",
		`{"model":"m","input":[{"role":"critic","content":"x"},{"role":"user","content":"y"}]}`:                                   "input[0].role",
		`{"model":"m","input":"x","truncation":"auto"}`:                                                                           "truncation",
		`{"model":"m","input":"x","top_logprobs":3}`:                                                                              "top_logprobs",
		`{"model":"m","input":"x","max_tool_calls":2}`:                                                                            "max_tool_calls",
		`{"model":"m","input":"x","prompt":{"id":"pmpt_1"}}`:                                                                      "prompt",
	} {
		r := respParse(t, body)
		if r.Chat.Untranslatable != want {
			t.Errorf("%s: untranslatable %q, want %q", body, r.Chat.Untranslatable, want)
		}
	}
	// Defaults ask for nothing.
	r := respParse(t, `{"model":"m","input":"x","truncation":"disabled","store":false,"background":false,
		"parallel_tool_calls":true,"service_tier":"auto","top_logprobs":0,"metadata":{},"stream_options":{"include_obfuscation":false},"text":{"format":{"type":"text"},"verbosity":"medium"}}`)
	if r.Chat.Untranslatable != "" || len(r.Chat.Drops) != 0 || len(r.Chat.Unknown) != 0 || !slices.Equal(r.Chat.Set.Names(), []string{"model", "messages"}) {
		t.Fatalf("defaults: untranslatable %q, drops %v, chat sets %v", r.Chat.Untranslatable, r.Chat.Drops, r.Chat.Set.Names())
	}
}

func TestParseResponsesRequestRefuses(t *testing.T) {
	cases := []struct {
		body, param, code, msg string
	}{
		{`{"model":"m","input":"x","store":true}`, "store", CodeStateless, "stateless"},
		{`{"model":"m","input":"x","previous_response_id":"resp_1"}`, "previous_response_id", CodeStateless, "send the whole conversation in input"},
		{`{"model":"m","input":"x","conversation":{"id":"conv_1"}}`, "conversation", CodeStateless, "stateless"},
		{`{"model":"m","input":"x","background":true}`, "background", CodeStateless, "stateless"},
		{`{"model":"m","input":[{"type":"item_reference","id":"msg_1"}]}`, "input[0].type", CodeStateless, "stateless"},
		{`{"input":"x"}`, "model", "", "model is required"},
		{`{"model":"m"}`, "input", "", "input is required"},
		{`{"model":"m","input":[]}`, "input", "", "empty"},
		{`{"model":"m","input":""}`, "input", "", "empty"},
		{`{"model":"m","input":42}`, "input", "", "a string or an array"},
		{`{"model":"m","input":[{"content":"x"}]}`, "input[0].type", "", "type or a role"},
		{`{"model":"m","input":[{"role":"user","content":[{"type":"input_text","text":7}]}]}`, "input[0].content[0].text", "", "a string"},
		{`{"model":"m","input":[{"role":"assistant","content":[{"type":"input_image","image_url":"u"}]}]}`, "input[0].content[0].type", "", "only allowed in user"},
		{`{"model":"m","input":[{"type":"function_call","name":"f","arguments":"{}"}]}`, "input[0].call_id", "", "call_id"},
		{`{"model":"m","input":[{"type":"function_call_output","output":"x"}]}`, "input[0].call_id", "", "call_id"},
		{`{"model":"m","input":"x","tools":[{"type":"function"}]}`, "tools[0].name", "", "name is required"},
		{`{"model":"m","input":"x","tools":{}}`, "tools", "", "an array"},
		{`{"model":"m","input":"x","tool_choice":"sometimes"}`, "tool_choice", "", "must be"},
		{`{"model":"m","input":"x","text":{"format":{"type":"json_schema","schema":{}}}}`, "text.format.name", "", "name is required"},
		{`{"model":"m","input":"x","text":{"format":{"type":"yaml"}}}`, "text.format.type", "", "must be"},
		{`{"model":"m","input":"x","max_output_tokens":0}`, "max_output_tokens", "", "between"},
		{`{"model":"m","input":"x","temperature":3}`, "temperature", "", "between"},
		{`{"model":"m","input":"x","model":"n"}`, "model", "", "duplicate"},
		{`{"model":"m","input":"x","metadata":[1]}`, "metadata", "", "an object"},
		{`[]`, "", "", "JSON object"},
		{`{"model":"m",`, "", "", "malformed JSON"},
	}
	for _, c := range cases {
		_, err := ParseResponsesRequest([]byte(c.body))
		var re *RequestError
		if !errors.As(err, &re) || !errors.Is(err, ErrInvalidRequest) {
			t.Errorf("%s: %v is not a RequestError", c.body, err)
			continue
		}
		if re.Param != c.param || re.Code != c.code || !strings.Contains(re.Message, c.msg) {
			t.Errorf("%s: param %q code %q message %q; want %q %q …%q…", c.body, re.Param, re.Code, re.Message, c.param, c.code, c.msg)
		}
	}
	// store omitted (OpenAI's default is true) is served as not stored.
	if r := respParse(t, `{"model":"m","input":"x"}`); r.Chat.Untranslatable != "" {
		t.Fatal(r.Chat.Untranslatable)
	}
}

func keysOf(v gjson.Result) []string {
	var out []string
	v.ForEach(func(k, _ gjson.Result) bool {
		out = append(out, k.Str)
		return true
	})
	return out
}

// missingKeys lists the members of want that got lacks, recursively through
// objects (arrays compare their first elements, when both are of one type).
func missingKeys(path string, want, got gjson.Result) []string {
	var out []string
	switch {
	case want.IsObject():
		for _, k := range keysOf(want) {
			g := got.Get(gjsonEscape(k))
			if !g.Exists() {
				out = append(out, path+"."+k)
				continue
			}
			out = append(out, missingKeys(path+"."+k, want.Get(gjsonEscape(k)), g)...)
		}
	case want.IsArray() && got.IsArray():
		w, g := want.Array(), got.Array()
		if len(w) > 0 && len(g) > 0 && w[0].Get("type").Str == g[0].Get("type").Str {
			out = append(out, missingKeys(path+"[0]", w[0], g[0])...)
		}
	}
	return out
}

func gjsonEscape(k string) string {
	return strings.NewReplacer(".", `\.`, "*", `\*`, "?", `\?`).Replace(k)
}

func TestResponsesFromChatMatchesTheDocumentedShapes(t *testing.T) {
	ids := ResponseIDs{Base: "0190abcd"}
	cases := []struct {
		chat, docs string
		check      func(t *testing.T, r responses.Response)
	}{
		{"chat-nonstream-default.response.json", "create-text.docs-example.json", func(t *testing.T, r responses.Response) {
			if r.OutputText() != "Hello! How can I assist you today?" || r.Usage.InputTokens != 19 || r.Usage.OutputTokens != 10 || r.Usage.TotalTokens != 29 {
				t.Fatalf("text %q usage %+v", r.OutputText(), r.Usage)
			}
		}},
		{"chat-nonstream-tool-calls.response.json", "create-function-call.docs-example.json", func(t *testing.T, r responses.Response) {
			if len(r.Output) != 1 {
				t.Fatalf("output %s", r.RawJSON())
			}
			fc := r.Output[0].AsFunctionCall()
			if fc.Type != "function_call" || fc.CallID != "call_abc123" || fc.Name != "get_current_weather" || !strings.Contains(fc.Arguments, "Boston") || fc.ID != "fc_0190abcd_0" {
				t.Fatalf("function call %+v", fc)
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.chat, func(t *testing.T) {
			// The documented request, with metadata: its tools are echoed.
			body := bytes.Replace(respFixture(t, "create-function-call.docs-example.request.json"), []byte(`"tool_choice": "auto"`), []byte(`"tool_choice": "auto", "metadata": {"k": "v"}`), 1)
			req := respParse(t, string(body))
			chat := vendorFixture(t, "openai", c.chat)
			res := chatResult(t, chat)
			b, err := ResponsesFromChat(req, chat, ids, "qwen3-max", 1700000000, res.Usage)
			if err != nil {
				t.Fatal(err)
			}
			var r responses.Response
			if err := json.Unmarshal(b, &r); err != nil {
				t.Fatalf("the SDK cannot read it: %v\n%s", err, b)
			}
			if r.ID != "resp_0190abcd" || r.Object != "response" || r.Status != "completed" || r.Model != "qwen3-max" || r.Metadata["k"] != "v" || gjson.GetBytes(b, "store").Type != gjson.False {
				t.Fatalf("response %s", b)
			}
			c.check(t, r)
			// Every member the API reference's example has, ours has too.
			docs := gjson.ParseBytes(respFixture(t, c.docs))
			if miss := missingKeys("", docs, gjson.ParseBytes(b)); len(miss) > 0 {
				// cache_write_tokens is in the reference's usage only; tools
				// are echoed as the caller sent them (the reference's server
				// fills in its default strict: true, which the translation
				// does not impose on chat-completions vendors).
				if miss = slices.DeleteFunc(miss, func(s string) bool {
					return strings.HasSuffix(s, "cache_write_tokens") || s == ".tools[0].strict"
				}); len(miss) > 0 {
					t.Fatalf("members the documented response has and ours lacks: %v\n%s", miss, b)
				}
			}
		})
	}
	// A reply cut by max_output_tokens is incomplete; reasoning text becomes a reasoning item.
	chat := []byte(`{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"Hel","reasoning_content":"thinking…"},"finish_reason":"length"}]}`)
	b, err := ResponsesFromChat(respParse(t, `{"model":"m","input":"x","max_output_tokens":3}`), chat, ids, "m", 1, adapter.Usage{Prompt: 2, Completion: 3, Known: true})
	if err != nil {
		t.Fatal(err)
	}
	var r responses.Response
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	if r.Status != "incomplete" || r.IncompleteDetails.Reason != "max_output_tokens" || r.MaxOutputTokens != 3 || len(r.Output) != 2 ||
		r.Output[0].Type != "reasoning" || r.Output[0].Content[0].Text != "thinking…" || r.OutputText() != "Hel" {
		t.Fatalf("cut reply %s", b)
	}
	if _, err := ResponsesFromChat(respParse(t, `{"model":"m","input":"x"}`), []byte(`{"choices":[]}`), ids, "m", 1, adapter.Usage{}); err == nil {
		t.Fatal("a completion without choices was rendered")
	}
}

// events splits an SSE stream of the Responses API into (event name, data).
func respEvents(t *testing.T, raw []byte) (names []string, datas [][]byte) {
	t.Helper()
	rd := adapter.NewSSEReader(bytes.NewReader(raw))
	for {
		ev, err := rd.Next()
		if errors.Is(err, io.EOF) {
			return names, datas
		}
		if err != nil {
			t.Fatal(err)
		}
		names, datas = append(names, ev.Event), append(datas, bytes.Clone(ev.Data))
	}
}

// collapse drops repeats of the same event type: the shape of a sequence.
func collapse(names []string) []string {
	var out []string
	for _, n := range names {
		if len(out) == 0 || out[len(out)-1] != n {
			out = append(out, n)
		}
	}
	return out
}

// translate runs a recorded chat stream through the events writer, as the
// gateway does: every chunk, then the clean end with the stream's usage.
func translate(t *testing.T, req *ResponsesRequest, chatSSE []byte) []byte {
	t.Helper()
	ev := NewResponsesEvents(req, ResponseIDs{Base: "0190abcd"}, "qwen3-max", 1700000000)
	rd := adapter.NewSSEReader(bytes.NewReader(chatSSE))
	var out []byte
	var u adapter.Usage
	for {
		e, err := rd.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if string(e.Data) == "[DONE]" {
			break
		}
		if v := gjson.GetBytes(e.Data, "usage"); v.IsObject() {
			u = chunkUsage(v)
		}
		out = ev.Chunk(out, e.Data)
	}
	return ev.Done(out, u)
}

// eventKind is an event's type and the type of the item or part it
// carries: what two events must share to be compared member by member.
func eventKind(name string, data []byte) string {
	return name + ":" + gjson.GetBytes(data, "item.type").Str + gjson.GetBytes(data, "part.type").Str
}

// checkEvents asserts what every stream must hold: names match types,
// sequence_number counts from 0, the SDK reads every event.
func checkEvents(t *testing.T, raw []byte) ([]string, [][]byte) {
	t.Helper()
	names, datas := respEvents(t, raw)
	for i, d := range datas {
		if gjson.GetBytes(d, "type").Str != names[i] || gjson.GetBytes(d, "sequence_number").Int() != int64(i) || !gjson.GetBytes(d, "sequence_number").Exists() {
			t.Fatalf("event %d: %s / %s", i, names[i], d)
		}
		var u responses.ResponseStreamEventUnion
		if err := json.Unmarshal(d, &u); err != nil || u.Type != names[i] {
			t.Fatalf("event %d: the SDK reads %q (%v): %s", i, u.Type, err, d)
		}
	}
	return names, datas
}

func TestResponsesEventsFromRecordedChatStreams(t *testing.T) {
	basic := respFixture(t, "stream-basic-text.sse")
	tools := respFixture(t, "stream-two-function-calls.sse")
	realNames, realDatas := respEvents(t, basic)
	toolNames, toolDatas := respEvents(t, tools)
	// The members of every real event, by type, to compare ours with.
	realByType := map[string]gjson.Result{}
	allDatas := append(slices.Clone(realDatas), toolDatas...)
	for i, n := range append(slices.Clone(realNames), toolNames...) {
		if k := eventKind(n, allDatas[i]); realByType[k].Raw == "" {
			realByType[k] = gjson.ParseBytes(allDatas[i])
		}
	}
	req := respParse(t, `{"model":"standard","input":"hi","stream":true}`)
	cases := []struct {
		chat   string
		shape  []string // the collapsed event sequence
		text   string
		status string
	}{
		{"chat-stream-text-include-usage.sse", collapse(realNames), "", "completed"},
		{"chat-stream-tool-call-include-usage.sse", collapse(toolNames[:20]), "", "completed"},
		{"chat-stream-finish-length.sse", nil, "", "incomplete"},
		{"chat-stream-refusal.sse", []string{"response.created", "response.in_progress", "response.output_item.added", "response.content_part.added",
			"response.refusal.delta", "response.refusal.done", "response.content_part.done", "response.output_item.done", "response.completed"}, "", "completed"},
	}
	cases[1].shape = append(cases[1].shape[:len(cases[1].shape)-1], "response.output_item.done", "response.completed")
	cases[1].shape = collapse(cases[1].shape)
	for _, c := range cases {
		t.Run(c.chat, func(t *testing.T) {
			chat := vendorFixture(t, "openai", c.chat)
			out := translate(t, req, chat)
			names, datas := checkEvents(t, out)
			if c.shape != nil {
				if diff := cmp.Diff(c.shape, collapse(names)); diff != "" {
					t.Errorf("event sequence (-real +ours):\n%s", diff)
				}
			}
			// Each event carries every member the real event of its type carries.
			for i, n := range names {
				if want, ok := realByType[eventKind(n, datas[i])]; ok {
					if miss := missingKeys(n, want, gjson.ParseBytes(datas[i])); len(miss) > 0 {
						t.Errorf("%s lacks %v: %s", n, miss, datas[i])
					}
				}
			}
			// The pieces add up to the whole.
			var text, args strings.Builder
			for i, n := range names {
				switch n {
				case "response.output_text.delta", "response.refusal.delta":
					text.WriteString(gjson.GetBytes(datas[i], "delta").Str)
				case "response.function_call_arguments.delta":
					args.WriteString(gjson.GetBytes(datas[i], "delta").Str)
				}
			}
			var done responses.Response
			last := datas[len(datas)-1]
			if err := json.Unmarshal([]byte(gjson.GetBytes(last, "response").Raw), &done); err != nil {
				t.Fatal(err)
			}
			if string(done.Status) != c.status || done.Model != "qwen3-max" || done.ID != "resp_0190abcd" || done.Usage.TotalTokens == 0 {
				t.Fatalf("terminal %s", last)
			}
			var whole strings.Builder
			for _, it := range done.Output {
				switch it.Type {
				case "message":
					for _, p := range it.Content {
						whole.WriteString(p.Text + p.Refusal)
					}
				case "function_call":
					if it.Arguments.OfString != args.String() || it.CallID != "call_CTf1nWJLqSeRgDqaCG27xZ74" || it.Name != "get_weather" {
						t.Fatalf("call %s, streamed args %q", it.RawJSON(), args.String())
					}
				}
			}
			if whole.String() != text.String() {
				t.Fatalf("deltas %q, final %q", text.String(), whole.String())
			}
		})
	}
}

func TestResponsesEventsItemsAndFailure(t *testing.T) {
	req := respParse(t, `{"model":"m","input":"hi","stream":true}`)
	ev := NewResponsesEvents(req, ResponseIDs{Base: "b"}, "m", 1)
	chunk := func(delta string) []byte {
		return []byte(`{"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":` + delta + `,"finish_reason":null}]}`)
	}
	var out []byte
	deltas := []string{`{"role":"assistant","content":""}`, `{"reasoning_content":"Let me "}`, `{"reasoning_content":"think."}`,
		`{"content":"Hi"}`, `{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"f","arguments":"{\"a\""}}]}`,
		`{"tool_calls":[{"index":0,"function":{"arguments":":1}"}}]}`}
	for _, d := range deltas {
		out = ev.Chunk(out, chunk(d))
	}
	out = ev.Fail(out, "server_error", "upstream_error", "the upstream failed (request r1)")
	out = ev.Done(out, adapter.Usage{}) // nothing after a failure
	names, datas := checkEvents(t, out)
	want := []string{"response.created", "response.in_progress",
		"response.output_item.added", "response.content_part.added", "response.reasoning_text.delta", "response.reasoning_text.delta",
		"response.reasoning_text.done", "response.content_part.done", "response.output_item.done",
		"response.output_item.added", "response.content_part.added", "response.output_text.delta",
		"response.output_text.done", "response.content_part.done", "response.output_item.done",
		"response.output_item.added", "response.function_call_arguments.delta", "response.function_call_arguments.delta",
		"error", "response.failed"}
	if diff := cmp.Diff(want, names); diff != "" {
		t.Fatalf("events (-want +got):\n%s", diff)
	}
	errEv, failed := gjson.ParseBytes(datas[len(datas)-2]), gjson.ParseBytes(datas[len(datas)-1])
	// The documented members at the top, the API's nested object too, and
	// each shape known to a fixture is covered.
	for _, fx := range []string{"error-event.docs-example.json", "error-event-nested.quoted.json"} {
		if miss := missingKeys("error", gjson.ParseBytes(respFixture(t, fx)), errEv); len(miss) > 0 {
			t.Errorf("error event lacks %v of %s: %s", miss, fx, errEv.Raw)
		}
	}
	if errEv.Get("code").Str != "upstream_error" || errEv.Get("error.type").Str != "server_error" || errEv.Get("param").Type != gjson.Null {
		t.Fatalf("error event %s", errEv.Raw)
	}
	if failed.Get("response.status").Str != "failed" || failed.Get("response.error.code").Str != "upstream_error" ||
		failed.Get("response.output.#").Int() != 3 || failed.Get("response.output.2.status").Str != "incomplete" ||
		failed.Get("response.output.2.arguments").Str != `{"a":1}` {
		t.Fatalf("response.failed %s", failed.Raw)
	}
	// An answer with nothing in it is still a message.
	ev = NewResponsesEvents(req, ResponseIDs{Base: "b"}, "m", 1)
	out = ev.Chunk(nil, chunk(`{"role":"assistant","content":""}`))
	out = ev.Done(out, adapter.Usage{Prompt: 1, Known: true})
	names, _ = checkEvents(t, out)
	if !slices.Contains(names, "response.output_text.done") || names[len(names)-1] != "response.completed" {
		t.Fatalf("empty answer %v", names)
	}
}

func TestResponsesRelayRenumbersAndSetsTheModel(t *testing.T) {
	raw := respFixture(t, "stream-basic-text.sse")
	names, datas := respEvents(t, raw)
	ev := NewResponsesEvents(respParse(t, `{"model":"m","input":"x"}`), ResponseIDs{Base: "b"}, "qwen3-max", 1)
	var out []byte
	for _, d := range datas[:5] {
		out = ev.Relay(out, d)
	}
	out = ev.Fail(out, "server_error", "upstream_error", "cut")
	gotNames, gotDatas := checkEvents(t, out)
	if diff := cmp.Diff(append(slices.Clone(names[:5]), "error", "response.failed"), gotNames); diff != "" {
		t.Fatal(diff)
	}
	for i, d := range gotDatas[:5] {
		// Byte for byte what the vendor sent, but for the model.
		if want := bytes.Replace(datas[i], []byte(`"model":"gpt-4-0613"`), []byte(`"model":"qwen3-max"`), 1); !bytes.Equal(d, want) {
			t.Fatalf("event %d:\n%s\nwant\n%s", i, d, want)
		}
	}
	if id := gjson.GetBytes(gotDatas[6], "response.id").Str; id != "resp_684b3e43e9648199951aea692dce026b010b42c5871a937b" {
		t.Fatalf("response.failed names %q, not the vendor's response", id)
	}
	// An upstream that numbers nothing is numbered.
	got := relayRewrite(nil, []byte(`{"type":"response.output_text.delta","delta":"x"}`), 7, "m")
	if string(got) != `{"sequence_number":7,"type":"response.output_text.delta","delta":"x"}` {
		t.Fatalf("%s", got)
	}
}

// responsesTarget is a native Responses deployment on srv.
func responsesTarget(url string) adapter.Target {
	return adapter.Target{BaseURL: url + "/v1", APIKey: "sk-test-0123456789abcdef", UpstreamModel: "gpt-5", Capabilities: config.Capabilities{ResponsesAPI: true}, Client: http.DefaultClient}
}

func TestOpenAIResponsesAgainstFakeVendor(t *testing.T) {
	ctx := context.Background()
	req := respParse(t, `{"model":"standard","input":"hello","instructions":"be brief"}`)
	// Through the adapter's chat entry points: native because the target declares responses_api.
	res, err := adapter.OpenAI{}.Chat(ctx, responsesTarget(fakeVendor(t, fakevendor.Fault{})), req.Chat)
	if err != nil {
		t.Fatal(err)
	}
	var r responses.Response
	if err := json.Unmarshal(res.Body, &r); err != nil {
		t.Fatal(err)
	}
	if r.OutputText() != "Hello from gpt-5. Hello from gpt-5. Hello from gpt-5." || !res.Usage.Known || res.Usage.Completion != 3 || res.FinishReason != "stop" || gjson.GetBytes(res.Body, "store").Type != gjson.False {
		t.Fatalf("answer %s, usage %+v", res.Body, res.Usage)
	}
	s, err := adapter.OpenAI{}.ChatStream(ctx, responsesTarget(fakeVendor(t, fakevendor.Fault{})), req.Chat)
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	firstContent := ""
	for {
		c, err := s.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		typ := gjson.GetBytes(c.Data, "type").Str
		types = append(types, typ)
		if c.Content && firstContent == "" {
			firstContent = typ
		}
		if c.FinishReason != "" && typ != "response.completed" {
			t.Fatalf("finish on %s", typ)
		}
	}
	s.Close()
	if firstContent != "response.output_text.delta" || types[len(types)-1] != "response.completed" || s.Usage().Completion != 3 {
		t.Fatalf("types %v, first content %q, usage %+v", types, firstContent, s.Usage())
	}
	// Without the capability the same request is translated to chat completions.
	tr := responsesTarget(fakeVendor(t, fakevendor.Fault{}))
	tr.Capabilities.ResponsesAPI = false
	res, err = adapter.OpenAI{}.Chat(ctx, tr, req.Chat)
	if err != nil || gjson.GetBytes(res.Body, "object").Str != "chat.completion" {
		t.Fatalf("translated: %v %s", err, res.Body)
	}

	faults := []struct {
		name  string
		f     fakevendor.Fault
		class adapter.Class
		after int // content chunks read before the error
	}{
		{"429", fakevendor.Fault{Status: 429, RetryAfter: 2e9}, adapter.ClassRateLimited, -1},
		{"error event before content", fakevendor.Fault{ErrorAfterChunks: -1}, adapter.ClassServer, 0},
		{"error event after two chunks", fakevendor.Fault{ErrorAfterChunks: 2}, adapter.ClassServer, 2},
		{"rate limit mid-stream", fakevendor.Fault{ErrorAfterChunks: 1, ErrorStatus: 429}, adapter.ClassRateLimited, 1},
		{"cut", fakevendor.Fault{CutAfterChunks: 2}, adapter.ClassNetwork, 2},
		{"content filter", fakevendor.Fault{ContentFilter: true}, adapter.ClassContentFilter, 0},
	}
	for _, f := range faults {
		t.Run(f.name, func(t *testing.T) {
			s, err := adapter.OpenAI{}.ChatStream(ctx, responsesTarget(fakeVendor(t, f.f)), req.Chat)
			if f.after < 0 {
				if adapter.ClassOf(err) != f.class {
					t.Fatalf("open: %v", err)
				}
				if ue := asError(t, err); f.class == adapter.ClassRateLimited && ue.RetryAfter != 2e9 {
					t.Fatalf("retry after %v", ue.RetryAfter)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			deltas := 0
			for {
				c, err := s.Next()
				if err != nil {
					if adapter.ClassOf(err) != f.class || deltas != f.after {
						t.Fatalf("after %d deltas: %v (%s)", deltas, err, adapter.ClassOf(err))
					}
					return
				}
				if gjson.GetBytes(c.Data, "type").Str == "response.output_text.delta" {
					deltas++
				}
			}
		})
	}
}
