package gateway_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
	"github.com/tidwall/gjson"

	"switchyard/e2e/fakevendor"
	"switchyard/routing/config"
	"switchyard/store"
	"switchyard/web/gateway/gatewaytest"
	"switchyard/web/webtest"
)

// quirksWorld: provider "r1" whose model "reasoner" (upstream r1-up)
// answers with reasoning_content the DeepSeek-R1 way; providers "strict"
// (with every provider quirk set) and "raw" (none) whose models
// "strict-ok" (strict-up) and "strict-raw" (raw-up) refuse stream_options,
// max_completion_tokens and developer messages as a strict older vendor
// does. Group default: reasoner fast, strict-ok standard, strict-raw deep.
func quirksWorld(t *testing.T) (*gatewaytest.Env, string) {
	e := gatewaytest.New(t)
	b := e.Build()
	strictFault := fakevendor.Fault{RejectStreamOptions: true, RejectMaxCompletionTokens: true, RejectDeveloper: true}
	e.Fake.SetRules(
		fakevendor.Rule{Model: "r1-up", Fault: fakevendor.Fault{ReasoningContent: true}},
		fakevendor.Rule{Model: "strict-up", Fault: strictFault},
		fakevendor.Rule{Model: "raw-up", Fault: strictFault},
	)
	b.Provider("r1", config.ProtocolOpenAI, "", "sk-r1-key-0000001")
	b.CloudProvider(config.Provider{Name: "strict", Protocol: config.ProtocolOpenAI, BaseURL: e.FakeURL + "/v1", Quirks: config.ProviderQuirks}, "sk-strict-key-0001")
	b.Provider("raw", config.ProtocolOpenAI, "", "sk-raw-key-0000001")
	prices := config.Prices{InputMicros: config.Unit, OutputMicros: 2 * config.Unit, Currency: "USD"}
	caps := config.Capabilities{Tools: true, Thinking: true}
	for _, m := range []struct{ code, provider, upstream string }{{"reasoner", "r1", "r1-up"}, {"strict-ok", "strict", "strict-up"}, {"strict-raw", "raw", "raw-up"}} {
		b.Model(config.LogicModel{Code: m.code, Kind: config.KindChat},
			config.Deployment{Provider: m.provider, UpstreamModel: m.upstream, Weight: 100, Enabled: true, Capabilities: caps, Prices: prices})
	}
	b.Group("default", map[config.TierName][]config.Candidate{
		config.TierFast: {{LogicModel: "reasoner", Weight: 100}}, config.TierStandard: {{LogicModel: "strict-ok", Weight: 100}}, config.TierDeep: {{LogicModel: "strict-raw", Weight: 100}}})
	_, key := b.Caller(config.Caller{Name: "app", RouteGroup: "default"})
	e.Publish("quirks world")
	return e, key
}

// TestQuirkReasoningContent: a vendor's reasoning_content reaches each door
// as that door's reasoning — Messages thinking blocks, Responses reasoning
// items, chat's own reasoning_content — and never as content.
func TestQuirkReasoningContent(t *testing.T) {
	t.Parallel()
	e, key := quirksWorld(t)
	ctx := context.Background()
	const reasoning = fakevendor.ReasoningText

	thinkingOf := func(m *anthropic.Message) (thinking string, types []string) {
		for _, b := range m.Content {
			types = append(types, b.Type)
			if b.Type == "thinking" {
				thinking += b.Thinking
			}
		}
		return thinking, types
	}
	t.Run("messages", func(t *testing.T) {
		client := anthropicSDK(e, key)
		p := anthropic.MessageNewParams{Model: "reasoner", MaxTokens: 256, Messages: userText("hello")}
		msg, err := client.Messages.New(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		thinking, types := thinkingOf(msg)
		if thinking != reasoning || len(types) != 2 || types[0] != "thinking" || types[1] != "text" || strings.Contains(textOf(msg), reasoning) || !strings.Contains(textOf(msg), "Hello from r1-up") {
			t.Fatalf("blocks %v, thinking %q, text %q", types, thinking, textOf(msg))
		}
		streamed, evTypes, err := accumulate(t, client.Messages.NewStreaming(ctx, p))
		if err != nil {
			t.Fatal(err)
		}
		thinking, types = thinkingOf(&streamed)
		if thinking != reasoning || len(types) != 2 || types[0] != "thinking" || strings.Contains(textOf(&streamed), reasoning) || !strings.Contains(textOf(&streamed), "Hello from r1-up") {
			t.Fatalf("streamed blocks %v (events %v), thinking %q, text %q", types, evTypes, thinking, textOf(&streamed))
		}
	})

	t.Run("responses", func(t *testing.T) {
		client := sdk(e, key)
		p := responses.ResponseNewParams{Model: "reasoner", Input: responsesInput("hello")}
		resp, err := client.Responses.New(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.Output) != 2 || resp.Output[0].Type != "reasoning" || resp.Output[1].Type != "message" {
			t.Fatalf("output %s", resp.RawJSON())
		}
		if got := gjson.Get(resp.RawJSON(), "output.0.content.0.text").Str; got != reasoning {
			t.Fatalf("reasoning item %q in %s", got, resp.RawJSON())
		}
		if txt := resp.OutputText(); strings.Contains(txt, reasoning) || !strings.Contains(txt, "Hello from r1-up") {
			t.Fatalf("text %q", txt)
		}
		evs, err := readResponsesStream(client, p)
		if err != nil {
			t.Fatal(err)
		}
		checkSequence(t, evs, true)
		var deltas strings.Builder
		var done string
		for _, ev := range evs {
			switch ev.Type {
			case "response.reasoning_text.delta":
				deltas.WriteString(ev.Delta)
			case "response.completed":
				done = ev.Response.RawJSON()
			}
		}
		if deltas.String() != reasoning || gjson.Get(done, "output.0.type").Str != "reasoning" || gjson.Get(done, "output.0.content.0.text").Str != reasoning {
			t.Fatalf("reasoning deltas %q, completed %s", deltas.String(), done)
		}
		if txt := responsesText(evs); strings.Contains(txt, reasoning) || !strings.Contains(txt, "Hello from r1-up") {
			t.Fatalf("streamed text %q", txt)
		}
	})

	t.Run("chat passes reasoning_content on", func(t *testing.T) {
		status, body := quirkChat(t, e, key, `{"model":"reasoner","messages":[{"role":"user","content":"hello"}]}`)
		msg := gjson.GetBytes(body, "choices.0.message")
		if status != 200 || msg.Get("reasoning_content").Str != reasoning || strings.Contains(msg.Get("content").Str, reasoning) {
			t.Fatalf("%d %s", status, body)
		}
		status, body = quirkChat(t, e, key, `{"model":"reasoner","stream":true,"messages":[{"role":"user","content":"hello"}]}`)
		var got, content strings.Builder
		for _, line := range strings.Split(string(body), "\n") {
			if d, ok := strings.CutPrefix(line, "data: "); ok {
				got.WriteString(gjson.Get(d, "choices.0.delta.reasoning_content").Str)
				content.WriteString(gjson.Get(d, "choices.0.delta.content").Str)
			}
		}
		if status != 200 || got.String() != reasoning || strings.Contains(content.String(), reasoning) {
			t.Fatalf("%d reasoning %q content %q", status, got.String(), content.String())
		}
	})
}

// TestQuirkStrictVendor: a request with stream_options,
// max_completion_tokens and a developer message is served by a strict
// vendor whose provider has the quirks set (the vendor receives the older
// forms, and the stream's usage, which it no longer reports, is estimated
// and marked so); without the quirks the vendor's 400 reaches the caller as
// a bad request.
func TestQuirkStrictVendor(t *testing.T) {
	t.Parallel()
	e, key := quirksWorld(t)
	const modern = `{"model":%q,"stream":%s,%s"max_completion_tokens":64,"messages":[{"role":"developer","content":"be brief"},{"role":"user","content":"hello"}]}`
	body := func(model string, stream bool) string {
		opts := ""
		if stream {
			opts = `"stream_options":{"include_usage":true},`
		}
		return fmt.Sprintf(modern, model, strconv.FormatBool(stream), opts)
	}
	for _, stream := range []bool{false, true} {
		name := map[bool]string{false: "non-stream", true: "stream"}[stream]
		t.Run(name+" with the quirks", func(t *testing.T) {
			status, out, id := quirkChatID(t, e, key, body("strict-ok", stream))
			if status != 200 || !strings.Contains(string(out), "Hello from strict-up") {
				t.Fatalf("%d %s", status, out)
			}
			sent := gjson.ParseBytes(e.Fake.LastBody("strict-up"))
			if sent.Get("stream_options").Exists() || sent.Get("max_completion_tokens").Exists() || sent.Get("max_tokens").Int() != 64 ||
				sent.Get("messages.0.role").Str != "system" || sent.Get("messages.0.content").Str != "be brief" || sent.Get("messages.1.role").Str != "user" {
				t.Fatalf("the vendor received %s", sent.Raw)
			}
			var prompt, completion int64
			var estimated bool
			waitRow(t, e.Store.DB(), id)
			if err := e.Store.DB().QueryRow(`SELECT coalesce(prompt_tokens, 0), coalesce(completion_tokens, 0), usage_estimated FROM call_logs WHERE request_id = $1`, id).
				Scan(&prompt, &completion, &estimated); err != nil {
				t.Fatal(err)
			}
			// Not streamed the vendor reports usage; streamed without
			// stream_options it does not, and the gateway counts.
			if prompt == 0 || completion == 0 || estimated != stream {
				t.Fatalf("usage %d/%d estimated %v", prompt, completion, estimated)
			}
			if stream && !strings.Contains(string(out), `"usage":{`) {
				t.Fatalf("the caller asked for usage and got none: %s", out)
			}
		})
		t.Run(name+" without the quirks", func(t *testing.T) {
			status, out, id := quirkChatID(t, e, key, body("strict-raw", stream))
			if status != http.StatusBadRequest || gjson.GetBytes(out, "error.type").Str != "invalid_request_error" {
				t.Fatalf("%d %s", status, out)
			}
			waitRow(t, e.Store.DB(), id)
			var class, st string
			if err := e.Store.DB().QueryRow(`SELECT coalesce(error_class, ''), status FROM call_logs WHERE request_id = $1`, id).Scan(&class, &st); err != nil {
				t.Fatal(err)
			}
			if class != "bad_request" || st != "upstream_error" {
				t.Fatalf("call log: class %q status %q", class, st)
			}
		})
	}
}

// TestQuirkResponsesToStrictVendor: a Responses caller (a Codex-style
// developer message, max_output_tokens) reaches a strict vendor through the
// translation, whose max_completion_tokens and developer role the quirks
// turn into the older forms.
func TestQuirkResponsesToStrictVendor(t *testing.T) {
	t.Parallel()
	e, key := quirksWorld(t)
	client := sdk(e, key)
	ctx := context.Background()
	params := func(model string) responses.ResponseNewParams {
		return responses.ResponseNewParams{Model: model, MaxOutputTokens: openai.Int(64), Input: responses.ResponseNewParamsInputUnion{OfInputItemList: responses.ResponseInputParam{
			responses.ResponseInputItemParamOfMessage("be brief", responses.EasyInputMessageRoleDeveloper),
			responses.ResponseInputItemParamOfMessage("hello", responses.EasyInputMessageRoleUser)}}}
	}
	resp, err := client.Responses.New(ctx, params("strict-ok"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(resp.OutputText(), "Hello from strict-up") {
		t.Fatalf("answer %s", resp.RawJSON())
	}
	sent := gjson.ParseBytes(e.Fake.LastBody("strict-up"))
	if sent.Get("max_completion_tokens").Exists() || sent.Get("max_tokens").Int() != 64 || sent.Get("messages.0.role").Str != "system" {
		t.Fatalf("the vendor received %s", sent.Raw)
	}
	evs, err := readResponsesStream(client, params("strict-ok"))
	if err != nil {
		t.Fatal(err)
	}
	if txt := responsesText(evs); !strings.Contains(txt, "Hello from strict-up") {
		t.Fatalf("streamed text %q", txt)
	}
	if sent := gjson.ParseBytes(e.Fake.LastBody("strict-up")); sent.Get("stream_options").Exists() {
		t.Fatalf("the vendor received stream_options: %s", sent.Raw)
	}
	_, err = client.Responses.New(ctx, params("strict-raw"))
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusBadRequest {
		t.Fatalf("without the quirks: %v", err)
	}
}

func quirkChat(t *testing.T, e *gatewaytest.Env, key, body string) (int, []byte) {
	t.Helper()
	status, out, _ := quirkChatID(t, e, key, body)
	return status, out
}

// quirkChatID posts a chat completion and returns the status, the body and
// the request id.
func quirkChatID(t *testing.T, e *gatewaytest.Env, key, body string) (int, []byte, string) {
	t.Helper()
	if !json.Valid([]byte(body)) {
		t.Fatalf("test body is not JSON: %s", body)
	}
	req, err := http.NewRequest(http.MethodPost, e.URL+"/v1/chat/completions", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, out, resp.Header.Get("X-Request-Id")
}

// TestQuirkConsole: the onboarding template shows its vendor's quirks and
// sets them on the provider; the provider form edits them as checkboxes,
// the Providers page lists them, and they survive the export and an import
// (ReplaceDraft) of the canonical text.
func TestQuirkConsole(t *testing.T) {
	t.Parallel()
	env := webtest.New(t)
	c := env.Login(t, "admin", store.RoleAdmin)
	fake := onbFake(t)
	ctx := t.Context()

	res, doc := c.Get("/onboarding/templates/deepseek")
	onbStatus(t, res, http.StatusOK, doc)
	if shown := onbText(doc, "template-quirks"); !strings.Contains(shown, "Refuses the developer role") || !strings.Contains(shown, "Reasons in reasoning_content") {
		t.Fatalf("the deepseek template shows %q", shown)
	}
	v := onbFormValues(doc, `[data-testid="onboarding-form"]`)
	v.Set("base_url", fake)
	v.Set("key", "sk-deepseek-quirks-0001")
	res, doc = c.PostForm("/onboarding/review", v)
	onbStatus(t, res, http.StatusOK, doc)
	res, doc = c.PostForm("/onboarding/create", onbFormValues(doc, `[data-testid="review-form"]`))
	if res.StatusCode != http.StatusOK {
		t.Fatalf("confirm: %d %s", res.StatusCode, doc.Text())
	}
	quirksOf := func(name string) config.Quirks {
		t.Helper()
		snap, _, err := env.Store.Draft(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range snap.Providers {
			if p.Name == name {
				return p.Quirks
			}
		}
		t.Fatalf("no provider %s in the draft", name)
		return nil
	}
	if got := quirksOf("deepseek"); !slices.Equal(got, config.Quirks{config.QuirkNoDeveloperRole}) {
		t.Fatalf("onboarded deepseek has quirks %v", got)
	}

	// By hand: two boxes ticked, then one unticked.
	res, doc = c.Get("/providers/new")
	onbStatus(t, res, http.StatusOK, doc)
	if n := webtest.TestID(doc, "provider-quirks-form").Find(`input[type="checkbox"]`).Length(); n != len(config.ProviderQuirks) {
		t.Fatalf("%d quirk checkboxes", n)
	}
	form := url.Values{"name": {"mistral-x"}, "protocol": {"openai"}, "base_url": {fake}, "timeout_ms": {"60000"}, "enabled": {"on"},
		"quirk_no_stream_options": {"on"}, "quirk_max_tokens": {"on"}}
	res, doc = c.PostForm("/providers", form)
	onbStatus(t, res, http.StatusOK, doc)
	if got := quirksOf("mistral-x"); !slices.Equal(got, config.Quirks{config.QuirkMaxTokens, config.QuirkNoStreamOptions}) {
		t.Fatalf("saved quirks %v", got)
	}
	if shown := webtest.TestID(doc, "provider-mistral-x").Find(`[data-testid="provider-quirks"]`).Text(); !strings.Contains(shown, "refuses stream_options") || !strings.Contains(shown, "refuses max_completion_tokens") {
		t.Fatalf("the Providers page says %q", shown)
	}
	var id int64
	if err := env.Store.DB().QueryRowContext(ctx, `SELECT id FROM providers WHERE name = 'mistral-x'`).Scan(&id); err != nil {
		t.Fatal(err)
	}
	res, doc = c.Get("/providers/" + strconv.FormatInt(id, 10) + "/edit")
	onbStatus(t, res, http.StatusOK, doc)
	edit := onbFormValues(doc, `[data-testid="provider-form"]`)
	if edit.Get("quirk_max_tokens") != "on" || edit.Get("quirk_no_stream_options") != "on" || edit.Has("quirk_no_developer_role") {
		t.Fatalf("the edit form ticks %v", edit)
	}
	edit.Del("quirk_max_tokens")
	res, doc = c.PostForm("/providers/"+strconv.FormatInt(id, 10), edit)
	onbStatus(t, res, http.StatusOK, doc)
	if got := quirksOf("mistral-x"); !slices.Equal(got, config.Quirks{config.QuirkNoStreamOptions}) {
		t.Fatalf("after unticking: %v", got)
	}

	// The export carries them; an import of it keeps them.
	_, _, text := c.GetRaw("/config/export")
	if !strings.Contains(text, "    quirks:\n      - no_stream_options\n") || !strings.Contains(text, "    quirks:\n      - no_developer_role\n") {
		t.Fatalf("export:\n%s", text)
	}
	snap, err := config.Decode([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	for i := range snap.Providers {
		if snap.Providers[i].Name == "mistral-x" {
			snap.Providers[i].Quirks = config.Quirks{config.QuirkNoDeveloperRole, config.QuirkMaxTokens}
		}
	}
	if _, err := env.Store.ReplaceDraft(ctx, snap); err != nil {
		t.Fatal(err)
	}
	if got := quirksOf("mistral-x"); !slices.Equal(got, config.Quirks{config.QuirkMaxTokens, config.QuirkNoDeveloperRole}) {
		t.Fatalf("after the import: %v", got)
	}
}
