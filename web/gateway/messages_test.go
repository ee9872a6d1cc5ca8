package gateway_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/tidwall/gjson"

	"switchyard/e2e/fakevendor"
	"switchyard/routing/config"
	"switchyard/store"
	"switchyard/store/calllog"
	"switchyard/web/gateway/gatewaytest"
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
	t.Parallel()
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

// postMessages sends a raw body to path with the given auth headers.
func postMessages(t *testing.T, e *gatewaytest.Env, path, body string, hdr ...string) (int, http.Header, gjson.Result) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, e.URL+path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("anthropic-version", "2023-06-01")
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, res.Header, gjson.ParseBytes(b)
}

// TestMessagesDoorEdges: byte-for-byte pass-through of what only Anthropic
// understands, its refusal elsewhere as unsupported_parameter, errors and
// our own 429 in Anthropic's shape, both ways of sending the key,
// count_tokens, and the call-log rows with their front door.
func TestMessagesDoorEdges(t *testing.T) {
	t.Parallel()
	e, keys := messagesWorld(t)
	b := e.Build()
	limited := []config.TierLimit{{Tier: config.TierFast, RPM: 1}}
	_, keys["lim"] = b.Caller(config.Caller{Name: "c-lim", RouteGroup: "g-oa", Limits: limited})
	e.Publish("limited caller")
	ctx := context.Background()

	// cache_control, a signed thinking block, an unknown block and top_k.
	native := `{"model":"fast","max_tokens":300,"top_k":5,
	  "system":[{"type":"text","text":"sys","cache_control":{"type":"ephemeral"}}],
	  "messages":[{"role":"user","content":[{"type":"text","text":"q","cache_control":{"type":"ephemeral","ttl":"1h"}}]},
	    {"role":"assistant","content":[{"type":"thinking","thinking":"hmm","signature":"EqQBCkgIARABGAIiQL=="},{"type":"text","text":"a"}]},
	    {"role":"user","content":[{"type":"text","text":"more"},{"type":"future_block","payload":{"x":[1,2]}}]}]}`
	status, _, ans := postMessages(t, e, "/v1/messages", native, "x-api-key", keys["an"])
	if status != http.StatusOK || ans.Get("type").Str != "message" || ans.Get("model").Str != "an-main" {
		t.Fatalf("native: %d %s", status, ans.Raw)
	}
	sent := gjson.ParseBytes(e.Fake.LastBody("an-main-up"))
	gjson.Parse(native).ForEach(func(k, v gjson.Result) bool {
		if k.Str != "model" && sent.Get(k.Str).Raw != v.Raw {
			t.Errorf("%s changed on the way: %s → %s", k.Str, v.Raw, sent.Get(k.Str).Raw)
		}
		return true
	})

	// The same request cannot be translated — a block of a type this build
	// does not know has no place in another vendor's request: 400 naming
	// it, no vendor call (top_k and the caching hint alone would only be
	// dropped).
	before := e.Fake.Count("oa-main-up")
	status, hdr, ans := postMessages(t, e, "/v1/messages", native, "Authorization", "Bearer "+keys["oa"])
	if status != http.StatusBadRequest || ans.Get("type").Str != "error" || ans.Get("error.type").Str != "invalid_request_error" ||
		ans.Get("error.code").Str != "unsupported_parameter" || ans.Get("error.param").Str != "messages[2].content[1].type" || hdr.Get("x-should-retry") != "false" {
		t.Fatalf("untranslatable: %d %s", status, ans.Raw)
	}
	if status, _, ans = postMessages(t, e, "/v1/messages", native, "x-api-key", keys["ge"]); status != http.StatusBadRequest || ans.Get("error.param").Str != "messages[2].content[1].type" {
		t.Fatalf("unknown block to Gemini: %d %s", status, ans.Raw)
	}
	if e.Fake.Count("oa-main-up") != before {
		t.Fatal("an untranslatable request reached the vendor")
	}

	// Errors in Anthropic's shape.
	for _, c := range []struct {
		name, path, body string
		hdr              []string
		status           int
		typ              string
	}{
		{"no key", "/v1/messages", `{"model":"fast","max_tokens":5,"messages":[{"role":"user","content":"x"}]}`, nil, 401, "authentication_error"},
		{"bad key", "/v1/messages", `{"model":"fast","max_tokens":5,"messages":[{"role":"user","content":"x"}]}`, []string{"x-api-key", "sy-nope"}, 401, "authentication_error"},
		{"malformed", "/v1/messages", `{"model":`, []string{"x-api-key", keys["oa"]}, 400, "invalid_request_error"},
		{"no max_tokens", "/v1/messages", `{"model":"fast","messages":[{"role":"user","content":"x"}]}`, []string{"x-api-key", keys["oa"]}, 400, "invalid_request_error"},
		{"unknown model", "/v1/messages", `{"model":"nope","max_tokens":5,"messages":[{"role":"user","content":"x"}]}`, []string{"x-api-key", keys["oa"]}, 404, "not_found_error"},
		{"count_tokens malformed", "/v1/messages/count_tokens", `[]`, []string{"x-api-key", keys["an"]}, 400, "invalid_request_error"},
		{"unknown path", "/v1/messages/batches", `{}`, []string{"x-api-key", keys["an"]}, 404, "not_found_error"},
	} {
		status, _, ans := postMessages(t, e, c.path, c.body, c.hdr...)
		if status != c.status || ans.Get("type").Str != "error" || ans.Get("error.type").Str != c.typ || ans.Get("error.message").Str == "" {
			t.Errorf("%s: %d %s, want %d %s", c.name, status, ans.Raw, c.status, c.typ)
		}
	}

	// Idempotency-Key: the second send is the first answer, replayed.
	idem := `{"model":"fast","max_tokens":50,"messages":[{"role":"user","content":"once"}]}`
	calls := e.Fake.Count("an-main-up")
	_, _, first := postMessages(t, e, "/v1/messages", idem, "x-api-key", keys["an"], "Idempotency-Key", "msg-idem-1")
	status, hdr, again := postMessages(t, e, "/v1/messages", idem, "x-api-key", keys["an"], "Idempotency-Key", "msg-idem-1")
	if status != 200 || hdr.Get("Idempotent-Replayed") != "true" || again.Raw != first.Raw || e.Fake.Count("an-main-up") != calls+1 {
		t.Fatalf("replay: %d %q %s", status, hdr.Get("Idempotent-Replayed"), again.Raw)
	}

	// Our own rate limit: 429 rate_limit_error with Retry-After.
	lim := anthropicSDK(e, keys["lim"])
	if _, err := lim.Messages.New(ctx, anthropic.MessageNewParams{Model: "fast", MaxTokens: 50, Messages: userText("one")}); err != nil {
		t.Fatal(err)
	}
	_, err := lim.Messages.New(ctx, anthropic.MessageNewParams{Model: "fast", MaxTokens: 50, Messages: userText("two")})
	var apiErr *anthropic.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 429 || apiErr.Type() != "rate_limit_error" || apiErr.Response.Header.Get("Retry-After") == "" ||
		!strings.Contains(apiErr.RawJSON(), `"code":"rate_limited"`) {
		t.Fatalf("own 429: %v", err)
	}

	// count_tokens: Anthropic's own count, the tokenizer elsewhere.
	for _, p := range []string{"an", "oa"} {
		var cap capture
		cl := anthropicSDK(e, keys[p], cap.option())
		n, err := cl.Messages.CountTokens(ctx, anthropic.MessageCountTokensParams{Model: "fast", Messages: userText("count these tokens, please")})
		if err != nil || n.InputTokens <= 0 {
			t.Fatalf("%s count_tokens: %v %+v", p, err, n)
		}
		want := map[string]string{"an": "vendor", "oa": "estimate"}[p]
		if got := cap.header.Get("X-Switchyard-Token-Count"); got != want {
			t.Fatalf("%s count by %q, want %q", p, got, want)
		}
	}
	if e.Fake.Count("oa-main-up") != before+1 { // the limited caller's one call
		t.Fatalf("count_tokens called the OpenAI vendor: %d calls", e.Fake.Count("oa-main-up")-before)
	}

	// Metrics carry the front door. A request is counted as it settles,
	// just after its answer was written: the scrape may come first.
	wants := []string{`caller="c-an",class="",endpoint="messages",model="an-main",status="ok",tier="fast"`,
		`caller="c-an",class="",endpoint="count_tokens",model="an-main",status="ok",tier="fast"`}
	var missing []string
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		res, err := http.Get(e.URL + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		metrics, _ := io.ReadAll(res.Body)
		res.Body.Close()
		missing = missing[:0]
		for _, want := range wants {
			if !strings.Contains(string(metrics), "switchyard_requests_total{"+want+"}") {
				missing = append(missing, want)
			}
		}
		if len(missing) == 0 || time.Now().After(deadline) {
			break
		}
	}
	for _, m := range missing {
		t.Errorf("metrics lack %s", m)
	}

	// Every request is a call-log row with its front door and attempt trail.
	served, replayed := 0, 0
	for _, r := range waitCallLogs(t, e, calllog.Filter{Caller: "c-an", Endpoint: "messages", Status: "ok"}, 3) {
		switch {
		case r.IdempotencyReplay:
			replayed++
		case r.LogicModel == "an-main" && gjson.GetBytes(r.Attempts, "attempts.0.outcome").Str == "ok":
			served++
		}
	}
	if served != 2 || replayed != 1 {
		t.Fatalf("messages rows: %d served with a trail, %d replayed", served, replayed)
	}
	rows := waitCallLogs(t, e, calllog.Filter{Caller: "c-an", Endpoint: "count_tokens", Status: "ok"}, 1)
	if rows[0].Endpoint != "count_tokens" || rows[0].Status != "ok" {
		t.Fatalf("count_tokens row: %+v", rows[0])
	}
	found := false
	for _, r := range waitCallLogs(t, e, calllog.Filter{Caller: "c-oa", Endpoint: "messages", Status: "rejected"}, 4) {
		found = found || r.ErrorCode == "unsupported_parameter" && gjson.GetBytes(r.Attempts, "skips.0.reason.param").Str == "messages[2].content[1].type"
	}
	if !found {
		t.Fatal("no rejected row for the untranslatable request with its skip reasons")
	}
}

// TestMessagesTestRoute: Test route explains a Messages request — which
// deployments take it natively, which translate it, which are skipped
// for a field they cannot carry — and sends one through /v1/messages.
func TestMessagesTestRoute(t *testing.T) {
	t.Parallel()
	e, _ := messagesWorld(t)
	b := e.Build()
	chain := []config.Candidate{{LogicModel: "oa-main", Priority: 1, Weight: 100}, {LogicModel: "an-main", Priority: 2, Weight: 100}, {LogicModel: "ge-main", Priority: 3, Weight: 100}}
	b.Group("g-mix", map[config.TierName][]config.Candidate{config.TierFast: chain, config.TierStandard: chain, config.TierDeep: chain})
	mix, _ := b.Caller(config.Caller{Name: "c-mix", RouteGroup: "g-mix"})
	e.Publish("mixed group")
	admin := obsLogin(t, e, "ops", store.RoleAdmin)
	explain := func(body string) (steps, wires []string, skips []string) {
		t.Helper()
		v := url.Values{"caller": {itoa(mix)}, "model": {"fast"}, "door": {"messages"}, "body": {body}}
		res, doc, page := admin.get("/test-route?" + v.Encode())
		if res.StatusCode != http.StatusOK || testID(doc, "testroute-problem").Length() != 0 {
			t.Fatalf("explain: %d %s\n%s", res.StatusCode, testID(doc, "testroute-problem").Text(), page)
		}
		testID(doc, "testroute-step").Each(func(_ int, s *goquery.Selection) {
			steps = append(steps, s.AttrOr("data-model", ""))
			wires = append(wires, strings.TrimSpace(s.Find(`[data-testid="testroute-wire"]`).Text()))
		})
		testID(doc, "testroute-skip").Each(func(_ int, s *goquery.Selection) {
			skips = append(skips, s.AttrOr("data-reason", "")+": "+strings.TrimSpace(s.Text()))
		})
		return
	}
	steps, wires, skips := explain("")
	if strings.Join(steps, ",") != "oa-main,an-main,ge-main" || strings.Join(wires, ",") != "translated,native pass-through,translated" || len(skips) != 0 {
		t.Fatalf("flags: steps %v wires %v skips %v", steps, wires, skips)
	}
	// What a translated deployment would not get is said per step.
	v := url.Values{"caller": {itoa(mix)}, "model": {"fast"}, "door": {"messages"},
		"body": {`{"model":"fast","max_tokens":10,"context_management":{"edits":[]},"messages":[{"role":"user","content":"hi"}]}`}}
	if _, doc, _ := admin.get("/test-route?" + v.Encode()); testID(doc, "testroute-dropped").Length() != 2 ||
		!strings.Contains(testID(doc, "testroute-dropped").First().Text(), "context_management") {
		t.Fatalf("dropped per step: %q", testID(doc, "testroute-dropped").Text())
	}
	steps, _, skips = explain(`{"model":"fast","max_tokens":10,"messages":[{"role":"user","content":[{"type":"document","source":{"type":"text","media_type":"text/plain","data":"d"}}]}]}`)
	if strings.Join(steps, ",") != "an-main" || len(skips) != 2 || !strings.Contains(skips[0], "unsupported_parameter") || !strings.Contains(skips[0], "messages[0].content[0].type") {
		t.Fatalf("document block: steps %v skips %v", steps, skips)
	}

	// Send a real Messages test request: answered by the OpenAI deployment, translated.
	res, doc, page := admin.postForm("/test-route/send", url.Values{"caller": {itoa(mix)}, "model": {"fast"}, "door": {"messages"}, "message": {"hi"}})
	if res.StatusCode != http.StatusOK || !strings.Contains(testID(doc, "testroute-send-result").Text(), "Hello from oa-main-up") {
		t.Fatalf("send: %d\n%s", res.StatusCode, page)
	}
	rows := waitCallLogs(t, e, calllog.Filter{Caller: "c-mix", Endpoint: "messages"}, 1)
	if rows[0].Status != "ok" || rows[0].Provider != "oa" {
		t.Fatalf("test request row: %+v", rows[0])
	}
}

// TestClaudeCodeNativePassThrough: Claude Code's real first request (a
// mid-conversation system turn, adaptive thinking, output_config,
// context_management, deferred tools) reaches an Anthropic deployment
// byte for byte but for the model, with its anthropic-beta and
// anthropic-version headers and ?beta=true; a model id no tier or logic
// model has is resolved by an alias and does not force the deep tier.
func TestClaudeCodeNativePassThrough(t *testing.T) {
	t.Parallel()
	e, _ := messagesWorld(t)
	b := e.Build()
	b.Group("g-cc", map[config.TierName][]config.Candidate{
		config.TierFast: {{LogicModel: "an-main", Weight: 100}}, config.TierStandard: {{LogicModel: "an-backup", Weight: 100}},
		config.TierDeep: {{LogicModel: "an-deep", Weight: 100}}})
	snap, _, err := e.Store.Draft(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range snap.RouteGroups {
		if g.Name != "g-cc" {
			continue
		}
		if _, err := e.Store.AddModelAlias(context.Background(), g.ID, config.ModelAlias{Pattern: "claude-opus-*", Tier: config.TierStandard}); err != nil {
			t.Fatal(err)
		}
	}
	_, key := b.Caller(config.Caller{Name: "c-cc", RouteGroup: "g-cc"})
	e.Publish("claude code")
	body, err := os.ReadFile("../../routing/adapter/testdata/agents/claude-code-request.json")
	if err != nil {
		t.Fatal(err)
	}
	const beta = "claude-code-20250219,context-management-2025-06-27,effort-2025-11-24"
	status, hdr, _ := postMessagesRaw(t, e, "/v1/messages?beta=true", body, "x-api-key", key, "anthropic-beta", beta, "anthropic-version", "2023-06-01")
	if status != http.StatusOK || hdr.Get("X-Switchyard-Tier") != "standard" || hdr.Get("X-Switchyard-Model") != "an-backup" {
		t.Fatalf("status %d tier %q model %q", status, hdr.Get("X-Switchyard-Tier"), hdr.Get("X-Switchyard-Model"))
	}
	last, ok := e.Fake.LastRequest("an-backup-up")
	if !ok || last.RawQuery != "beta=true" || last.Header.Get("Anthropic-Beta") != beta || last.Header.Get("Anthropic-Version") != "2023-06-01" {
		t.Fatalf("vendor got %q %v", last.RawQuery, last.Header)
	}
	sent := gjson.ParseBytes(last.Body)
	gjson.ParseBytes(body).ForEach(func(k, v gjson.Result) bool {
		if k.Str != "model" && k.Str != "stream" && sent.Get(k.Str).Raw != v.Raw {
			t.Errorf("%s changed on the way", k.Str)
		}
		return true
	})
	if got := droppedFields(t, e, hdr.Get("X-Request-Id")); len(got) != 0 {
		t.Fatalf("a native call dropped %v", got)
	}
}

// postMessagesRaw posts a raw body to the Messages door with headers.
func postMessagesRaw(t *testing.T, e *gatewaytest.Env, path string, body []byte, hdr ...string) (int, http.Header, []byte) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, e.URL+path, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, res.Header, b
}
