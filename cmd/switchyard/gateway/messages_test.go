package gateway_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/tidwall/gjson"

	"switchyard/cmd/switchyard/gateway/gatewaytest"
	"switchyard/routing/adapter/fakevendor"
	"switchyard/routing/config"
)

// messagesWorld is one provider per protocol on the fake vendor and, per
// protocol P (oa, an, ge), logic models P-main, P-backup and P-deep
// (upstream models P-main-up, …), a group g-P — fast: P-main; standard:
// P-main then P-backup; deep: P-deep — and a caller c-P. It returns the
// callers' keys by protocol prefix.
func messagesWorld(t *testing.T) (*gatewaytest.Env, map[string]string) {
	e := gatewaytest.New(t)
	b := e.Build()
	keys := map[string]string{}
	caps := config.Capabilities{Tools: true, Vision: true, Thinking: true}
	for _, p := range []struct {
		short string
		proto config.Protocol
	}{{"oa", config.ProtocolOpenAI}, {"an", config.ProtocolAnthropic}, {"ge", config.ProtocolGemini}} {
		b.Provider(p.short, p.proto, "", "sk-"+p.short+"-key-0000001")
		for _, m := range []string{"main", "backup", "deep"} {
			b.Model(config.LogicModel{Code: p.short + "-" + m, Kind: config.KindChat},
				config.Deployment{Provider: p.short, UpstreamModel: p.short + "-" + m + "-up", Weight: 100, Enabled: true, Capabilities: caps,
					Prices: config.Prices{InputMicros: config.Unit, OutputMicros: 2 * config.Unit, Currency: "USD"}})
		}
		b.Group("g-"+p.short, map[config.TierName][]config.Candidate{
			config.TierFast:     {{LogicModel: p.short + "-main", Priority: 1, Weight: 100}},
			config.TierStandard: {{LogicModel: p.short + "-main", Priority: 1, Weight: 100}, {LogicModel: p.short + "-backup", Priority: 2, Weight: 100}},
			config.TierDeep:     {{LogicModel: p.short + "-deep", Priority: 1, Weight: 100}},
		})
		_, keys[p.short] = b.Caller(config.Caller{Name: "c-" + p.short, RouteGroup: "g-" + p.short})
	}
	e.Publish("messages world")
	return e, keys
}

var protocols = []string{"oa", "an", "ge"}

func anthropicSDK(e *gatewaytest.Env, key string, opts ...aoption.RequestOption) anthropic.Client {
	return anthropic.NewClient(append([]aoption.RequestOption{aoption.WithBaseURL(e.URL), aoption.WithAPIKey(key), aoption.WithMaxRetries(0)}, opts...)...)
}

// capture records the last request body and response headers the SDK saw.
type capture struct {
	body   []byte
	header http.Header
}

func (c *capture) option() aoption.RequestOption {
	return aoption.WithMiddleware(func(r *http.Request, next aoption.MiddlewareNext) (*http.Response, error) {
		if r.Body != nil {
			c.body, _ = io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(c.body))
		}
		res, err := next(r)
		if res != nil {
			c.header = res.Header
		}
		return res, err
	})
}

func userText(s string) []anthropic.MessageParam {
	return []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(s))}
}

// accumulate reads a whole stream, returning the message and the event types.
func accumulate(t *testing.T, stream interface {
	Next() bool
	Current() anthropic.MessageStreamEventUnion
	Err() error
}) (anthropic.Message, []string, error) {
	t.Helper()
	var msg anthropic.Message
	var types []string
	for stream.Next() {
		ev := stream.Current()
		types = append(types, ev.Type)
		if err := msg.Accumulate(ev); err != nil {
			t.Fatalf("accumulate %s: %v", ev.Type, err)
		}
	}
	return msg, types, stream.Err()
}

func textOf(m *anthropic.Message) string {
	var s strings.Builder
	for _, b := range m.Content {
		if b.Type == "text" {
			s.WriteString(b.Text)
		}
	}
	return s.String()
}

// TestMessagesSDK drives /v1/messages with the official Anthropic Go SDK
// against each upstream protocol: non-stream, stream, a tools round trip,
// thinking → deep, failover before the first content (invisible), a
// failure after it (an error event ends the stream) and a vendor 429 in
// Anthropic's shape.
func TestMessagesSDK(t *testing.T) {
	e, keys := messagesWorld(t)
	ctx := context.Background()
	for _, p := range protocols {
		t.Run(p, func(t *testing.T) {
			var cap capture
			client := anthropicSDK(e, keys[p], cap.option())
			main, backup := p+"-main-up", p+"-backup-up"

			// Non-stream.
			msg, err := client.Messages.New(ctx, anthropic.MessageNewParams{Model: "fast", MaxTokens: 256, Messages: userText("hello"),
				System: []anthropic.TextBlockParam{{Text: "be brief"}}, StopSequences: []string{"STOP"}})
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(textOf(msg), "Hello from "+main) || string(msg.Model) != p+"-main" || msg.StopReason != anthropic.StopReasonEndTurn {
				t.Fatalf("answer: model %q stop %q text %q", msg.Model, msg.StopReason, textOf(msg))
			}
			if msg.Usage.InputTokens <= 0 || msg.Usage.OutputTokens <= 0 {
				t.Fatalf("usage: %+v", msg.Usage)
			}
			if got := cap.header.Get("X-Switchyard-Provider"); got != p {
				t.Fatalf("provider %q", got)
			}
			sent := gjson.ParseBytes(e.Fake.LastBody(main))
			switch p {
			case "an": // native: every member but model and stream byte for byte
				gjson.ParseBytes(cap.body).ForEach(func(k, v gjson.Result) bool {
					if k.Str != "model" && k.Str != "stream" && sent.Get(k.Str).Raw != v.Raw {
						t.Errorf("native %s: sent %s, upstream got %s", k.Str, v.Raw, sent.Get(k.Str).Raw)
					}
					return true
				})
				if sent.Get("model").Str != main {
					t.Errorf("upstream model %q", sent.Get("model").Str)
				}
			case "oa":
				if sent.Get("messages.0.role").Str != "system" || sent.Get("stop.0").Str != "STOP" || sent.Get("max_tokens").Int() != 256 {
					t.Errorf("translated to OpenAI: %s", sent.Raw)
				}
			case "ge":
				if sent.Get("systemInstruction").Raw == "" || sent.Get("generationConfig.stopSequences.0").Str != "STOP" {
					t.Errorf("translated to Gemini: %s", sent.Raw)
				}
			}

			// Stream: Anthropic's event sequence, usage in message_delta.
			got, types, err := accumulate(t, client.Messages.NewStreaming(ctx, anthropic.MessageNewParams{Model: "fast", MaxTokens: 256, Messages: userText("stream please")}))
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(textOf(&got), "Hello from "+main) || string(got.Model) != p+"-main" || got.Usage.OutputTokens <= 0 || got.StopReason != anthropic.StopReasonEndTurn {
				t.Fatalf("stream: model %q stop %q usage %+v text %q", got.Model, got.StopReason, got.Usage, textOf(&got))
			}
			seq := strings.Join(types, " ")
			if types[0] != "message_start" || types[len(types)-1] != "message_stop" ||
				!strings.Contains(seq, "content_block_start content_block_delta") || !strings.Contains(seq, "content_block_stop message_delta message_stop") {
				t.Fatalf("event sequence: %s", seq)
			}

			// Tools round trip: tool_use, then its tool_result.
			tools := []anthropic.ToolUnionParam{{OfTool: &anthropic.ToolParam{Name: "get_time", Description: anthropic.String("the time"),
				InputSchema: anthropic.ToolInputSchemaParam{Properties: map[string]any{"zone": map[string]any{"type": "string"}}}}}}
			first, err := client.Messages.New(ctx, anthropic.MessageNewParams{Model: "fast", MaxTokens: 256, Tools: tools, Messages: userText("please call tool")})
			if err != nil {
				t.Fatal(err)
			}
			var use *anthropic.ContentBlockUnion
			for i := range first.Content {
				if first.Content[i].Type == "tool_use" {
					use = &first.Content[i]
				}
			}
			if first.StopReason != anthropic.StopReasonToolUse || use == nil || use.Name != "get_time" || use.ID == "" {
				t.Fatalf("tool call: stop %q content %+v", first.StopReason, first.Content)
			}
			second, err := client.Messages.New(ctx, anthropic.MessageNewParams{Model: "fast", MaxTokens: 256, Tools: tools, Messages: []anthropic.MessageParam{
				anthropic.NewUserMessage(anthropic.NewTextBlock("please call tool")), first.ToParam(),
				anthropic.NewUserMessage(anthropic.NewToolResultBlock(use.ID, "12:00 UTC", false), anthropic.NewTextBlock("thanks, now answer")),
			}})
			if err != nil {
				t.Fatal(err)
			}
			if second.StopReason != anthropic.StopReasonEndTurn || !strings.Contains(textOf(second), "Hello from") {
				t.Fatalf("after the tool result: stop %q %q", second.StopReason, textOf(second))
			}
			sent = gjson.ParseBytes(e.Fake.LastBody(main))
			switch p {
			case "oa":
				if sent.Get(`messages.#(role=="tool").tool_call_id`).Str != use.ID || sent.Get(`messages.#(role=="assistant").tool_calls.0.id`).Str != use.ID {
					t.Errorf("tool result translated: %s", sent.Get("messages").Raw)
				}
			case "an":
				if sent.Get("messages.2.content.0.tool_use_id").Str != use.ID {
					t.Errorf("tool result passed: %s", sent.Get("messages").Raw)
				}
			case "ge":
				if !strings.Contains(sent.Get("contents").Raw, "functionResponse") {
					t.Errorf("tool result translated: %s", sent.Get("contents").Raw)
				}
			}
			streamed, _, err := accumulate(t, client.Messages.NewStreaming(ctx, anthropic.MessageNewParams{Model: "fast", MaxTokens: 256, Tools: tools, Messages: userText("please call tool")}))
			if err != nil || streamed.StopReason != anthropic.StopReasonToolUse || len(streamed.Content) == 0 || streamed.Content[len(streamed.Content)-1].Name != "get_time" {
				t.Fatalf("streamed tool call: %v %+v", err, streamed.Content)
			}

			// Thinking routes to deep, whatever tier was asked for.
			deep, err := client.Messages.New(ctx, anthropic.MessageNewParams{Model: "standard", MaxTokens: 4096, Messages: userText("think"),
				Thinking: anthropic.ThinkingConfigParamOfEnabled(2048)})
			if err != nil {
				t.Fatal(err)
			}
			if string(deep.Model) != p+"-deep" || cap.header.Get("X-Switchyard-Tier") != "deep" {
				t.Fatalf("thinking served by %q on tier %q", deep.Model, cap.header.Get("X-Switchyard-Tier"))
			}
			sent = gjson.ParseBytes(e.Fake.LastBody(p + "-deep-up"))
			if want := map[string]string{"an": "thinking.budget_tokens", "oa": "thinking.budget_tokens", "ge": "generationConfig.thinkingConfig.thinkingBudget"}[p]; sent.Get(want).Int() != 2048 {
				t.Fatalf("thinking not sent upstream (%s): %s", want, sent.Raw)
			}

			// A failure before the first content fails over invisibly.
			e.Fake.SetRules(fakevendor.Rule{Model: main, Fault: fakevendor.Fault{ErrorAfterChunks: -1}})
			got, _, err = accumulate(t, client.Messages.NewStreaming(ctx, anthropic.MessageNewParams{Model: "standard", MaxTokens: 256, Messages: userText("fail over")}))
			if err != nil || !strings.Contains(textOf(&got), "Hello from "+backup) || string(got.Model) != p+"-backup" {
				t.Fatalf("failover: %v, model %q, %q", err, got.Model, textOf(&got))
			}
			if cap.header.Get("X-Switchyard-Attempts") != "2" {
				t.Fatalf("attempts %q", cap.header.Get("X-Switchyard-Attempts"))
			}

			// A failure after the first content ends the stream with an error event.
			e.Fake.SetRules(fakevendor.Rule{Model: main, Fault: fakevendor.Fault{ErrorAfterChunks: 2, ReplyChunks: 6}})
			got, _, err = accumulate(t, client.Messages.NewStreaming(ctx, anthropic.MessageNewParams{Model: "fast", MaxTokens: 256, Messages: userText("break")}))
			var apiErr *anthropic.Error
			if !errors.As(err, &apiErr) || textOf(&got) == "" {
				t.Fatalf("mid-stream failure: err %v, text before it %q", err, textOf(&got))
			}
			if typ := apiErr.Type(); typ != "api_error" && typ != "overloaded_error" {
				t.Fatalf("mid-stream error type %q", typ)
			}

			// The vendor's 429 reaches the caller as Anthropic's rate_limit_error.
			e.Fake.SetRules(fakevendor.Rule{Model: main, Fault: fakevendor.Fault{Status: http.StatusTooManyRequests}})
			_, err = client.Messages.New(ctx, anthropic.MessageNewParams{Model: "fast", MaxTokens: 256, Messages: userText("too many")})
			if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusTooManyRequests || apiErr.Type() != "rate_limit_error" {
				t.Fatalf("429: %v", err)
			}
			if apiErr.Response.Header.Get("Retry-After") == "" {
				t.Fatal("429 without Retry-After")
			}
			e.Fake.ClearRules()
		})
	}
}
