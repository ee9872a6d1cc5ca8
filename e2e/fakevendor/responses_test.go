package fakevendor

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
	"github.com/openai/openai-go/v3/shared"
	"github.com/tidwall/gjson"
)

func responsesClient(url, key string) openai.Client {
	return openai.NewClient(option.WithBaseURL(url+"/v1"), option.WithAPIKey(key), option.WithMaxRetries(0))
}

// The fake's /v1/responses, read by the official openai-go Responses
// client: the deterministic reply, whole and streamed, a function call, a
// reasoning item, max_output_tokens, the content filter and the faults.
func TestResponsesThroughTheSDK(t *testing.T) {
	s, url := start(t, Options{ReplyChunks: 3})
	ctx := context.Background()
	c := responsesClient(url, "sk-good")
	in := responses.ResponseNewParamsInputUnion{OfString: openai.String("Say hello")}

	r, err := c.Responses.New(ctx, responses.ResponseNewParams{Model: "gpt-5", Input: in, Store: openai.Bool(false)})
	if err != nil {
		t.Fatal(err)
	}
	if r.OutputText() != "Hello from gpt-5. Hello from gpt-5. Hello from gpt-5." || r.Status != "completed" || r.Usage.OutputTokens != 3 ||
		r.Usage.InputTokens != 3 || gjson.Get(r.RawJSON(), "store").Type != gjson.False {
		t.Fatalf("%s", r.RawJSON())
	}
	if s.Count("gpt-5") != 1 || gjson.GetBytes(s.LastBody("gpt-5"), "input").Str != "Say hello" {
		t.Fatalf("count %d, body %s", s.Count("gpt-5"), s.LastBody("gpt-5"))
	}

	// A stream: numbered events, the text in deltas, usage at the end.
	st := c.Responses.NewStreaming(ctx, responses.ResponseNewParams{Model: "gpt-5", Input: in})
	var types []string
	var text strings.Builder
	var done responses.Response
	for i := 0; st.Next(); i++ {
		ev := st.Current()
		if ev.SequenceNumber != int64(i) {
			t.Fatalf("event %d numbered %d", i, ev.SequenceNumber)
		}
		types = append(types, ev.Type)
		if ev.Type == "response.output_text.delta" {
			text.WriteString(ev.Delta)
		}
		if ev.Type == "response.completed" {
			done = ev.Response
		}
	}
	if err := st.Err(); err != nil {
		t.Fatal(err)
	}
	want := "response.created response.in_progress response.output_item.added response.content_part.added " +
		"response.output_text.delta response.output_text.delta response.output_text.delta response.output_text.done " +
		"response.content_part.done response.output_item.done response.completed"
	if strings.Join(types, " ") != want || text.String() != r.OutputText() || done.OutputText() != r.OutputText() || done.Usage.TotalTokens != 6 {
		t.Fatalf("events %v, text %q, done %s", types, text.String(), done.RawJSON())
	}

	// A function call, and a reasoning item before it when reasoning is asked.
	tool := responses.ToolUnionParam{OfFunction: &responses.FunctionToolParam{Name: "get_weather", Parameters: map[string]any{"type": "object"}}}
	r, err = c.Responses.New(ctx, responses.ResponseNewParams{Model: "o3", Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("please call tool")},
		Tools: []responses.ToolUnionParam{tool}, Reasoning: shared.ReasoningParam{Effort: shared.ReasoningEffortLow}})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Output) != 2 || r.Output[0].Type != "reasoning" || r.Output[1].Type != "function_call" || r.Output[1].Name != "get_weather" || r.Output[1].CallID == "" {
		t.Fatalf("%s", r.RawJSON())
	}
	// max_output_tokens below the reply cuts it: incomplete.
	r, err = c.Responses.New(ctx, responses.ResponseNewParams{Model: "gpt-5", Input: in, MaxOutputTokens: openai.Int(2)})
	if err != nil || r.Status != "incomplete" || r.IncompleteDetails.Reason != "max_output_tokens" || r.Usage.OutputTokens != 2 {
		t.Fatalf("%v %s", err, r.RawJSON())
	}

	// Faults: an injected status in OpenAI's error shape; a bad key.
	s.SetRules(Rule{Model: "limited", Fault: Fault{Status: 429}}, Rule{Model: "filtered", Fault: Fault{ContentFilter: true}}, Rule{Model: "broken", Fault: Fault{ErrorAfterChunks: 1, ErrorCode: "server_error"}})
	_, err = c.Responses.New(ctx, responses.ResponseNewParams{Model: "limited", Input: in})
	var oe *openai.Error
	if !errors.As(err, &oe) || oe.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("429: %v", err)
	}
	bad := responsesClient(url, "bad-key")
	_, err = bad.Responses.New(ctx, responses.ResponseNewParams{Model: "gpt-5", Input: in})
	if !errors.As(err, &oe) || oe.StatusCode != http.StatusUnauthorized || oe.Code != "invalid_api_key" {
		t.Fatalf("bad key: %v", err)
	}
	r, err = c.Responses.New(ctx, responses.ResponseNewParams{Model: "filtered", Input: in})
	if err != nil || r.Status != "incomplete" || r.IncompleteDetails.Reason != "content_filter" || len(r.Output) != 0 {
		t.Fatalf("filter: %v %s", err, r.RawJSON())
	}
	// A mid-stream error: the nested error event ends the SDK's stream as
	// an error, after the first delta.
	st = c.Responses.NewStreaming(ctx, responses.ResponseNewParams{Model: "broken", Input: in})
	deltas := 0
	for st.Next() {
		if st.Current().Type == "response.output_text.delta" {
			deltas++
		}
	}
	if err := st.Err(); err == nil || !strings.Contains(err.Error(), "server_error") || deltas != 1 {
		t.Fatalf("after %d deltas: %v", deltas, err)
	}
}

// The raw wire of a failed stream: error, then response.failed, both numbered.
func TestResponsesStreamFailureOnTheWire(t *testing.T) {
	_, url := start(t, Options{ReplyChunks: 2, Fault: Fault{ErrorAfterChunks: 1, ErrorStatus: 429}})
	req, _ := http.NewRequest(http.MethodPost, url+"/v1/responses", strings.NewReader(`{"model":"m","input":"hi","stream":true}`))
	req.Header.Set("Authorization", "Bearer sk-good")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	raw := string(b)
	events := strings.Split(strings.TrimSpace(raw), "\n\n")
	n := len(events)
	if n < 4 || !strings.HasPrefix(events[n-2], "event: error\n") || !strings.HasPrefix(events[n-1], "event: response.failed\n") {
		t.Fatalf("%s", raw)
	}
	errData := strings.TrimPrefix(strings.SplitN(events[n-2], "\n", 2)[1], "data: ")
	failed := strings.TrimPrefix(strings.SplitN(events[n-1], "\n", 2)[1], "data: ")
	if gjson.Get(errData, "error.code").Str != "rate_limit_exceeded" || gjson.Get(errData, "sequence_number").Int() != int64(n-2) ||
		gjson.Get(failed, "response.status").Str != "failed" || gjson.Get(failed, "response.error.code").Str != "rate_limit_exceeded" {
		t.Fatalf("error %s\nfailed %s", errData, failed)
	}
}

// responsesAsk sends p whole or streamed and returns the response, and for
// a stream the event types and the call's input as its deltas carried it.
func responsesAsk(t *testing.T, c openai.Client, p responses.ResponseNewParams, stream bool) (r responses.Response, types []string, deltas string) {
	t.Helper()
	if !stream {
		res, err := c.Responses.New(context.Background(), p)
		if err != nil {
			t.Fatal(err)
		}
		return *res, nil, ""
	}
	st := c.Responses.NewStreaming(context.Background(), p)
	for st.Next() {
		ev := st.Current()
		types = append(types, ev.Type)
		switch ev.Type {
		case "response.function_call_arguments.delta", "response.custom_tool_call_input.delta":
			deltas += ev.Delta
		case "response.completed":
			r = ev.Response
		}
	}
	if err := st.Err(); err != nil {
		t.Fatal(err)
	}
	return r, types, deltas
}

// Scripted tool calls through the official openai-go Responses client,
// whole and streamed: named call, unknown name, function_call_output,
// web_search (with tool_search, a custom and a namespace tool beside it),
// then calls of a namespaced and a custom tool and a custom_tool_call_output.
func TestResponsesScriptedTools(t *testing.T) {
	s, url := start(t, Options{ReplyChunks: 3})
	c := responsesClient(url, "sk-good")
	fn := func(name string) responses.ToolUnionParam {
		return responses.ToolUnionParam{OfFunction: &responses.FunctionToolParam{Name: name, Parameters: map[string]any{"type": "object"}}}
	}
	hosted := []responses.ToolUnionParam{
		{OfWebSearch: &responses.WebSearchToolParam{Type: responses.WebSearchToolTypeWebSearch}},
		{OfToolSearch: &responses.ToolSearchToolParam{Execution: "client"}},
		{OfCustom: &responses.CustomToolParam{Name: "apply_patch"}},
		{OfNamespace: &responses.NamespaceToolParam{Name: "agents", Description: "sub-agents", Tools: []responses.NamespaceToolToolUnionParam{
			{OfFunction: &responses.NamespaceToolToolFunctionParam{Name: "spawn", Parameters: map[string]any{"type": "object"}}}}}},
	}
	cases := append(scriptedCases[:len(scriptedCases):len(scriptedCases)],
		scriptedCase{name: "namespaced call", prompt: `call tool agents.spawn {"task": "x"}`, webSearch: true, tool: "agents.spawn", args: `{"task":"x"}`},
		scriptedCase{name: "custom call", prompt: "call tool apply_patch *** Begin Patch\n*** End Patch", webSearch: true, tool: "apply_patch", args: "*** Begin Patch\n*** End Patch"},
		scriptedCase{name: "custom tool result", prompt: "call tool apply_patch x", webSearch: true, lastIsResult: true, text: "Tool result: Done!"})
	for _, stream := range []bool{false, true} {
		for _, tc := range cases {
			t.Run(tc.name+map[bool]string{true: " streamed"}[stream], func(t *testing.T) {
				in := responses.ResponseInputParam{responses.ResponseInputItemParamOfMessage("be brief", responses.EasyInputMessageRoleDeveloper),
					responses.ResponseInputItemParamOfMessage(tc.prompt, responses.EasyInputMessageRoleUser)}
				switch {
				case tc.lastIsResult && tc.name == "custom tool result":
					in = append(in, responses.ResponseInputItemParamOfCustomToolCall("call_1", "x", "apply_patch"), responses.ResponseInputItemParamOfCustomToolCallOutput("call_1", "Done!"))
				case tc.lastIsResult:
					in = append(in, responses.ResponseInputItemParamOfFunctionCall(readArgs, "call_1", "Read"), responses.ResponseInputItemUnionParam{OfFunctionCallOutput: &responses.ResponseInputItemFunctionCallOutputParam{
						CallID: openai.String("call_1"), Output: responses.ResponseInputItemFunctionCallOutputOutputUnionParam{OfString: openai.String(readResult)}}})
				}
				tools := []responses.ToolUnionParam{fn("Bash"), fn("Read")}
				if tc.webSearch {
					tools = append(tools, hosted...)
				}
				p := responses.ResponseNewParams{Model: "m", Input: responses.ResponseNewParamsInputUnion{OfInputItemList: in}, Tools: tools,
					Reasoning: shared.ReasoningParam{Effort: shared.ReasoningEffortMedium}, Store: openai.Bool(false)}
				before := s.Stats().WebSearch
				r, types, deltas := responsesAsk(t, c, p, stream)
				checkWebSearch(t, s, "m", before, tc.webSearch)
				if r.Status != "completed" || len(r.Output) != 2 || r.Output[0].Type != "reasoning" {
					t.Fatalf("%s", r.RawJSON())
				}
				it := r.Output[1]
				if tc.tool == "" {
					if it.Type != "message" || r.OutputText() != tc.text {
						t.Fatalf("text %q, want %q: %s", r.OutputText(), tc.text, r.RawJSON())
					}
					return
				}
				name, input := it.Name, it.Arguments.OfString
				if it.Namespace != "" {
					name = it.Namespace + "." + name
				}
				if it.Type == "custom_tool_call" {
					input = it.Input
				}
				if name != tc.tool || input != tc.args || it.CallID == "" || (stream && deltas != tc.args) {
					t.Fatalf("call %s %q (deltas %q), want %s %q: %s", name, input, deltas, tc.tool, tc.args, r.RawJSON())
				}
				kind, typ := "function_call_arguments", "function_call"
				if strings.HasPrefix(tc.tool, "apply_patch") {
					kind, typ = "custom_tool_call_input", "custom_tool_call"
				}
				if it.Type != typ {
					t.Errorf("item type %s, want %s", it.Type, typ)
				}
				want := "response.output_item.added response." + kind + ".delta response." + kind + ".done response.output_item.done response.completed"
				if seq := strings.Join(types, " "); stream && !strings.HasSuffix(seq, want) {
					t.Errorf("events %s, want them to end with %s", seq, want)
				}
			})
		}
	}
}
