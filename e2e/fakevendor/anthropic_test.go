package fakevendor

import (
	"context"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"
)

const anthropicToolBody = `{"model":"claude-sonnet-4-5","max_tokens":512,"stream":%s,"system":"be brief","messages":[{"role":"user","content":[{"type":"text","text":"What's the weather? Call tool get_weather."}]}],"tools":[{"name":"get_weather","input_schema":{"type":"object"}}]}`

func TestAnthropicMessageShape(t *testing.T) {
	_, base := start(t, Options{ReplyChunks: 2})
	h := anthropicWire.header("sk-ant")
	type message struct {
		ID         string `json:"id"`
		Type       string `json:"type"`
		Role       string `json:"role"`
		Model      string `json:"model"`
		StopReason string `json:"stop_reason"`
		Content    []struct {
			Type  string         `json:"type"`
			Text  string         `json:"text"`
			ID    string         `json:"id"`
			Name  string         `json:"name"`
			Input map[string]any `json:"input"`
		} `json:"content"`
		Usage struct {
			InputTokens          int `json:"input_tokens"`
			CacheReadInputTokens int `json:"cache_read_input_tokens"`
			OutputTokens         int `json:"output_tokens"`
		} `json:"usage"`
	}
	tests := []struct {
		name, body     string
		header         []string
		extra, missing []string
		check          func(t *testing.T, m message)
	}{
		{
			name:    "text",
			body:    `{"model":"claude-sonnet-4-5","max_tokens":100,"system":[{"type":"text","text":"abcd"}],"messages":[{"role":"user","content":"abcdefgh"}]}`,
			header:  []string{HeaderCachedTokens, "10"},
			missing: []string{"content[].id", "content[].name", "content[].input"},
			check: func(t *testing.T, m message) {
				if m.Type != "message" || m.Role != "assistant" || m.Model != "claude-sonnet-4-5" || !strings.HasPrefix(m.ID, "msg_") {
					t.Errorf("message = %+v", m)
				}
				if len(m.Content) != 1 || m.Content[0].Type != "text" || m.Content[0].Text != "Hello from claude-sonnet-4-5. Hello from claude-sonnet-4-5." || m.StopReason != "end_turn" {
					t.Errorf("content %+v stop %q", m.Content, m.StopReason)
				}
				// 12 bytes of prompt → 3 tokens, plus 10 cached; Anthropic's input_tokens excludes the cached ones.
				if m.Usage.InputTokens != 3 || m.Usage.CacheReadInputTokens != 10 || m.Usage.OutputTokens != 2 {
					t.Errorf("usage = %+v", m.Usage)
				}
			},
		},
		{
			name:    "tool use",
			body:    strings.Replace(anthropicToolBody, "%s", "false", 1),
			missing: []string{"content[].text", "content[].input"}, // our tool input is {}
			check: func(t *testing.T, m message) {
				if len(m.Content) != 1 || m.Content[0].Type != "tool_use" || m.Content[0].Name != "get_weather" || m.Content[0].Input == nil || len(m.Content[0].Input) != 0 || !strings.HasPrefix(m.Content[0].ID, "toolu_") {
					t.Errorf("content = %+v", m.Content)
				}
				if m.StopReason != "tool_use" {
					t.Errorf("stop_reason = %q", m.StopReason)
				}
			},
		},
		{
			name:    "refusal",
			body:    `{"model":"claude-sonnet-4-5","max_tokens":100,"messages":[{"role":"user","content":"x"}]}`,
			header:  []string{HeaderContentFilter, "true"},
			extra:   []string{"stop_details"},
			missing: []string{"content[]"},
			check: func(t *testing.T, m message) {
				if m.StopReason != "refusal" || len(m.Content) != 0 {
					t.Errorf("stop %q content %+v", m.StopReason, m.Content)
				}
			},
		},
		{
			name:    "max tokens",
			body:    `{"model":"claude-sonnet-4-5","max_tokens":1,"messages":[{"role":"user","content":"x"}]}`,
			missing: []string{"content[].id", "content[].name", "content[].input"},
			check: func(t *testing.T, m message) {
				if m.StopReason != "max_tokens" || m.Content[0].Text != "Hello from claude-sonnet-4-5." {
					t.Errorf("stop %q content %+v", m.StopReason, m.Content)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hh := h.Clone()
			for i := 0; i+1 < len(tt.header); i += 2 {
				hh.Set(tt.header[i], tt.header[i+1])
			}
			res := send(t, http.MethodPost, base+"/v1/messages", hh, tt.body)
			if res.status != 200 || res.header.Get("Request-Id") == "" {
				t.Fatalf("status %d request-id %q: %s", res.status, res.header.Get("Request-Id"), res.body)
			}
			sameShape(t, tt.name, keyPaths(t, res.body), keyPaths(t, readFixture(t, "anthropic-message-tool-use.json")), tt.extra, tt.missing)
			var m message
			decode(t, res.body, &m)
			tt.check(t, m)
		})
	}
}

func eventNames(events []sseEvent) []string {
	var out []string
	for _, e := range events {
		if len(out) > 0 && out[len(out)-1] == e.Event && e.Event == "content_block_delta" {
			continue // any number of deltas
		}
		out = append(out, e.Event)
	}
	return out
}

func eventData(t *testing.T, events []sseEvent) [][]byte {
	t.Helper()
	var out [][]byte
	for _, e := range events {
		if e.Raw != "" {
			t.Errorf("stray lines in event %+v", e)
		}
		out = append(out, []byte(e.Data))
	}
	return out
}

func TestAnthropicStreamShape(t *testing.T) {
	_, base := start(t, Options{ReplyChunks: 3})
	h := anthropicWire.header("sk-ant")
	tests := []struct {
		name, body, header string
		fixtures           []string
		extra, missing     []string
		wantEvents         []string
		check              func(t *testing.T, events []sseEvent)
	}{
		{
			name:       "text",
			body:       strings.Replace(anthropicWire.body("claude-sonnet-4-5", true), "Say hello", "0123456789abcdef", 1),
			fixtures:   []string{"anthropic-stream-text.sse", "anthropic-stream-recorded.sse"},
			missing:    []string{"content_block.id", "content_block.name", "content_block.input", "delta.partial_json"},
			wantEvents: []string{"message_start", "content_block_start", "ping", "content_block_delta", "content_block_stop", "message_delta", "message_stop"},
			check: func(t *testing.T, events []sseEvent) {
				var text string
				for _, e := range events {
					if e.Event == "content_block_delta" {
						var d struct {
							Delta struct{ Type, Text string }
						}
						decode(t, []byte(e.Data), &d)
						if d.Delta.Type != "text_delta" {
							t.Errorf("delta type %q", d.Delta.Type)
						}
						text += d.Delta.Text
					}
				}
				if want := "Hello from claude-sonnet-4-5." + strings.Repeat(" Hello from claude-sonnet-4-5.", 2); text != want {
					t.Errorf("text %q, want %q", text, want)
				}
				var start, delta struct {
					Message struct {
						Usage struct{ InputTokens, OutputTokens int } `json:"usage"`
					} `json:"message"`
					Delta struct {
						StopReason string `json:"stop_reason"`
					} `json:"delta"`
					Usage struct {
						InputTokens  int `json:"input_tokens"`
						OutputTokens int `json:"output_tokens"`
					} `json:"usage"`
				}
				decode(t, []byte(events[0].Data), &start)
				decode(t, []byte(events[len(events)-2].Data), &delta)
				// The final usage is cumulative: it repeats the input tokens and counts every output token.
				if delta.Delta.StopReason != "end_turn" || delta.Usage.OutputTokens != 3 || delta.Usage.InputTokens != 4 {
					t.Errorf("message_delta = %s", events[len(events)-2].Data)
				}
				if !strings.Contains(events[0].Data, `"stop_reason":null`) {
					t.Errorf("message_start lacks stop_reason null: %s", events[0].Data)
				}
			},
		},
		{
			name:       "tool use",
			body:       strings.Replace(anthropicToolBody, "%s", "true", 1),
			fixtures:   []string{"anthropic-stream-tool-use.sse", "anthropic-stream-recorded.sse"},
			missing:    []string{"content_block.text", "content_block.caller", "delta.text"},
			wantEvents: []string{"message_start", "content_block_start", "ping", "content_block_delta", "content_block_stop", "message_delta", "message_stop"},
			check: func(t *testing.T, events []sseEvent) {
				if !strings.Contains(events[1].Data, `"type":"tool_use"`) || !strings.Contains(events[1].Data, `"name":"get_weather"`) ||
					!strings.Contains(events[3].Data, `"partial_json":"{}"`) || !strings.Contains(events[5].Data, `"stop_reason":"tool_use"`) {
					t.Errorf("tool stream = %+v", events)
				}
			},
		},
		{
			name: "refusal", header: "true",
			body:       anthropicWire.body("claude-sonnet-4-5", true),
			fixtures:   []string{"anthropic-stream-refusal.sse"},
			extra:      []string{"message.usage.cache_creation", "message.usage.cache_creation_input_tokens", "message.usage.cache_read_input_tokens", "message.usage.service_tier", "usage.input_tokens", "usage.cache_creation_input_tokens", "usage.cache_read_input_tokens"},
			wantEvents: []string{"message_start", "content_block_start", "ping", "content_block_stop", "message_delta", "message_stop"},
			check: func(t *testing.T, events []sseEvent) {
				if !strings.Contains(events[4].Data, `"stop_reason":"refusal"`) || !strings.Contains(events[4].Data, `"stop_details":{"type":"refusal"`) {
					t.Errorf("message_delta = %s", events[4].Data)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hh := h.Clone()
			if tt.header != "" {
				hh.Set(HeaderContentFilter, tt.header)
			}
			events := mustEvents(t, send(t, http.MethodPost, base+"/v1/messages", hh, tt.body))
			if got := eventNames(events); !reflect.DeepEqual(got, tt.wantEvents) {
				t.Fatalf("events %v, want %v", got, tt.wantEvents)
			}
			var want []sseEvent
			for _, f := range tt.fixtures {
				want = append(want, fixtureEvents(t, f)...)
			}
			sameShape(t, tt.name, keyPaths(t, eventData(t, events)...), keyPaths(t, eventData(t, want)...), tt.extra, tt.missing)
			for _, e := range events {
				if !strings.Contains(e.Data, `"type":"`+e.Event+`"`) && !strings.Contains(e.Data, `"type": "`+e.Event+`"`) {
					t.Errorf("event %q carries data of another type: %s", e.Event, e.Data)
				}
			}
			tt.check(t, events)
		})
	}
}

func TestAnthropicErrors(t *testing.T) {
	_, base := start(t, Options{})
	body := anthropicWire.body("claude-sonnet-4-5", false)
	tests := []struct {
		name        string
		header      http.Header
		status      int
		typ         string
		shouldRetry string
	}{
		{"429", http.Header{HeaderStatus: {"429"}}, 429, "rate_limit_error", "true"},
		{"401", http.Header{HeaderStatus: {"401"}}, 401, "authentication_error", "false"},
		{"402", http.Header{HeaderStatus: {"402"}}, 402, "billing_error", "false"},
		{"403", http.Header{HeaderStatus: {"403"}}, 403, "permission_error", "false"},
		{"404", http.Header{HeaderStatus: {"404"}}, 404, "not_found_error", "false"},
		{"400", http.Header{HeaderStatus: {"400"}}, 400, "invalid_request_error", "false"},
		{"500", http.Header{HeaderStatus: {"500"}}, 500, "api_error", "true"},
		{"502 falls back to api_error", http.Header{HeaderStatus: {"502"}}, 502, "api_error", "true"},
		{"529", http.Header{HeaderStatus: {"529"}}, 529, "overloaded_error", "true"},
		{"bad key", http.Header{"X-Api-Key": {"bad-key"}}, 401, "authentication_error", "false"},
		{"broke key", http.Header{"X-Api-Key": {"broke-key"}}, 402, "billing_error", "false"},
		{"missing key", http.Header{"X-Api-Key": {""}}, 401, "authentication_error", "false"},
		{"missing version", http.Header{"Anthropic-Version": {""}}, 400, "invalid_request_error", "false"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := anthropicWire.header("sk-ant")
			for k, v := range tt.header {
				if v[0] == "" {
					h.Del(k)
				} else {
					h[k] = v
				}
			}
			res := send(t, http.MethodPost, base+"/v1/messages", h, body)
			var e struct {
				Type  string `json:"type"`
				Error struct {
					Type    string `json:"type"`
					Message string `json:"message"`
				} `json:"error"`
			}
			decode(t, res.body, &e)
			if res.status != tt.status || e.Type != "error" || e.Error.Type != tt.typ || e.Error.Message == "" {
				t.Errorf("status %d body %s, want %d %s", res.status, res.body, tt.status, tt.typ)
			}
			if got := res.header.Get("X-Should-Retry"); got != tt.shouldRetry {
				t.Errorf("x-should-retry = %q, want %q", got, tt.shouldRetry)
			}
			sameShape(t, tt.name, keyPaths(t, res.body), keyPaths(t, readFixture(t, "anthropic-error-529.json")), []string{"request_id"}, nil)
		})
	}

	for _, bad := range []string{`{"model":"m","messages":[{"role":"user","content":"x"}]}`, `{"model":"m","max_tokens":5,"messages":[]}`, `{"max_tokens":5,"messages":[{"role":"user","content":"x"}]}`, `nope`} {
		res := send(t, http.MethodPost, base+"/v1/messages", anthropicWire.header("sk-ant"), bad)
		if res.status != 400 || !strings.Contains(string(res.body), `"invalid_request_error"`) {
			t.Errorf("%s: status %d %s", bad, res.status, res.body)
		}
	}
}

func TestAnthropicModels(t *testing.T) {
	_, base := start(t, Options{Models: []string{"claude-a", "claude-b"}})
	res := send(t, http.MethodGet, base+"/v1/models", anthropicWire.header("sk-ant"), "")
	var list struct {
		Data []struct {
			Type string `json:"type"`
			ID   string `json:"id"`
		} `json:"data"`
		HasMore bool   `json:"has_more"`
		FirstID string `json:"first_id"`
		LastID  string `json:"last_id"`
	}
	decode(t, res.body, &list)
	if res.status != 200 || len(list.Data) != 2 || list.Data[1].ID != "claude-b" || list.Data[0].Type != "model" || list.FirstID != "claude-a" || list.LastID != "claude-b" {
		t.Errorf("status %d list %s", res.status, res.body)
	}
	// Without Anthropic headers the same path is OpenAI's list.
	res = send(t, http.MethodGet, base+"/v1/models", openaiWire.header("sk"), "")
	if !strings.Contains(string(res.body), `"object":"list"`) {
		t.Errorf("OpenAI list = %s", res.body)
	}
}

// Scripted tool calls through the official Anthropic Go client, whole and
// streamed: named call, unknown name, tool result (with a system-reminder
// after it), the web_search server tool; with system-reminder blocks, a
// mid-conversation system turn, adaptive thinking, output_config,
// context_management and defer_loading as Claude Code sends them.
func TestAnthropicScriptedTools(t *testing.T) {
	s, url := start(t, Options{ReplyChunks: 3})
	// This SDK sends WithAPIKey as a bearer token; the real API (and the fake) take x-api-key.
	c := anthropic.NewClient(aoption.WithBaseURL(url), aoption.WithHeader("X-Api-Key", "sk-ant"), aoption.WithMaxRetries(0))
	tools := []anthropic.ToolUnionParam{
		{OfTool: &anthropic.ToolParam{Name: "Bash", InputSchema: anthropic.ToolInputSchemaParam{}}},
		{OfTool: &anthropic.ToolParam{Name: "Read", InputSchema: anthropic.ToolInputSchemaParam{}, DeferLoading: anthropic.Bool(false)}},
	}
	for _, stream := range []bool{false, true} {
		for _, tc := range scriptedCases {
			t.Run(tc.name+map[bool]string{true: " streamed"}[stream], func(t *testing.T) {
				msgs := []anthropic.MessageParam{
					anthropic.NewUserMessage(anthropic.NewTextBlock("<system-reminder>\ncontext\n</system-reminder>"), anthropic.NewTextBlock(tc.prompt)),
					{OfSystem: &anthropic.SystemMessageParam{Content: []anthropic.TextBlockParam{{Text: "# Environment"}}}},
				}
				if tc.lastIsResult {
					msgs = append(msgs, anthropic.NewAssistantMessage(anthropic.NewToolUseBlock("toolu_1", map[string]any{"file_path": "/tmp/x/notes.txt"}, "Read")),
						anthropic.NewUserMessage(anthropic.NewToolResultBlock("toolu_1", readResult, false), anthropic.NewTextBlock("<system-reminder>later</system-reminder>")))
				}
				ts := tools
				if tc.webSearch {
					ts = append(tools[:len(tools):len(tools)], anthropic.ToolUnionParam{OfWebSearchTool20250305: &anthropic.WebSearchTool20250305Param{MaxUses: anthropic.Int(3)}})
				}
				p := anthropic.MessageNewParams{Model: "m", MaxTokens: 1024, Messages: msgs, Tools: ts,
					System:       []anthropic.TextBlockParam{{Text: "be brief"}},
					Thinking:     anthropic.ThinkingConfigParamUnion{OfAdaptive: &anthropic.ThinkingConfigAdaptiveParam{Display: "omitted"}},
					OutputConfig: anthropic.OutputConfigParam{Effort: "medium"}}
				opt := aoption.WithJSONSet("context_management", map[string]any{"edits": []any{map[string]any{"type": "clear_thinking_20251015", "keep": "all"}}})
				before := s.Stats().WebSearch
				var msg anthropic.Message
				if stream {
					st := c.Messages.NewStreaming(context.Background(), p, opt)
					for st.Next() {
						if err := msg.Accumulate(st.Current()); err != nil {
							t.Fatal(err)
						}
					}
					if err := st.Err(); err != nil {
						t.Fatal(err)
					}
				} else {
					res, err := c.Messages.New(context.Background(), p, opt)
					if err != nil {
						t.Fatal(err)
					}
					msg = *res
				}
				checkWebSearch(t, s, "m", before, tc.webSearch)
				if len(msg.Content) != 1 {
					t.Fatalf("content %+v", msg.Content)
				}
				b := msg.Content[0]
				if tc.tool != "" {
					if msg.StopReason != "tool_use" || b.Type != "tool_use" || b.Name != tc.tool || string(b.Input) != tc.args || b.ID == "" {
						t.Fatalf("stop %q block %s", msg.StopReason, b.RawJSON())
					}
					return
				}
				if msg.StopReason != "end_turn" || b.Type != "text" || b.Text != tc.text {
					t.Fatalf("stop %q text %q, want %q", msg.StopReason, b.Text, tc.text)
				}
			})
		}
	}
}
