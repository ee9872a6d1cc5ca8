package gateway_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
	"github.com/openai/openai-go/v3/shared"
	"github.com/tidwall/gjson"

	"switchyard/e2e/fakevendor"
	"switchyard/routing/config"
	"switchyard/store"
	"switchyard/store/calllog"
	"switchyard/web/gateway/gatewaytest"
)

// The Responses API front door through the official openai-go Responses
// client (client.Responses.New / NewStreaming), against every kind of
// upstream the door serves: an OpenAI deployment that speaks the Responses
// API (passed through natively), an OpenAI chat-completions-only one, an
// Anthropic one and a Gemini one (translated).

// responsesUpstream is one kind of upstream in responsesWorld.
type responsesUpstream struct {
	name     string // the logic model's code, and the prefix of the others
	upstream string // its deployment's upstream model
	protocol config.Protocol
	native   bool // an OpenAI deployment declaring responses_api
}

var responsesUpstreams = []responsesUpstream{
	{name: "resp", upstream: "resp-x", protocol: config.ProtocolOpenAI, native: true},
	{name: "gpt", upstream: "gpt-x", protocol: config.ProtocolOpenAI},
	{name: "claude", upstream: "claude-x", protocol: config.ProtocolAnthropic},
	{name: "gem", upstream: "gemini-x", protocol: config.ProtocolGemini},
}

// responsesWorld publishes, per upstream kind u:
//   - logic models u (healthy), u-mid (its streams fail after two content
//     chunks), u-lim (on a provider of its own whose vendor answers 429) and
//     u-broken (its streams fail before any content);
//   - a route group g-u whose standard tier tries u-broken first and u
//     second, and whose deep tier is u, with a caller c-u;
//   - group "default" listing every logic model in every tier, with
//     caller "app", so each model can be named explicitly.
//
// It returns the keys: "app" and one per upstream kind.
func responsesWorld(t *testing.T, e *gatewaytest.Env) map[string]string {
	t.Helper()
	b := e.Build()
	price := config.Prices{InputMicros: config.Unit, OutputMicros: 2 * config.Unit, Currency: "USD"}
	caps := config.Capabilities{Tools: true, Vision: true, Thinking: true}
	keys := map[string]string{}
	var all []config.Candidate
	var rules []fakevendor.Rule
	for _, u := range responsesUpstreams {
		c := caps
		c.ResponsesAPI = u.native
		b.Provider("p-"+u.name, u.protocol, "", "key-"+u.name+"-0001")
		b.Provider("p-"+u.name+"-lim", u.protocol, "", "key-"+u.name+"-lim-0001")
		dep := func(provider, upstream string) config.Deployment {
			return config.Deployment{Provider: provider, UpstreamModel: upstream, Weight: 100, Enabled: true, Prices: price, Capabilities: c}
		}
		b.Model(config.LogicModel{Code: u.name, Kind: config.KindChat}, dep("p-"+u.name, u.upstream))
		b.Model(config.LogicModel{Code: u.name + "-mid", Kind: config.KindChat}, dep("p-"+u.name, u.name+"-mid-x"))
		b.Model(config.LogicModel{Code: u.name + "-broken", Kind: config.KindChat}, dep("p-"+u.name, u.name+"-broken-x"))
		b.Model(config.LogicModel{Code: u.name + "-lim", Kind: config.KindChat}, dep("p-"+u.name+"-lim", u.name+"-lim-x"))
		rules = append(rules,
			fakevendor.Rule{Model: u.name + "-mid-x", Fault: fakevendor.Fault{ErrorAfterChunks: 2}},
			fakevendor.Rule{Model: u.name + "-broken-x", Fault: fakevendor.Fault{ErrorAfterChunks: -1}},
			fakevendor.Rule{Model: u.name + "-lim-x", Fault: fakevendor.Fault{Status: http.StatusTooManyRequests}},
		)
		for _, m := range []string{u.name, u.name + "-mid", u.name + "-lim"} {
			all = append(all, config.Candidate{LogicModel: m, Weight: 100})
		}
		b.Group("g-"+u.name, map[config.TierName][]config.Candidate{
			config.TierFast:     {{LogicModel: u.name, Weight: 100}},
			config.TierStandard: {{LogicModel: u.name + "-broken", Weight: 100, Priority: 1}, {LogicModel: u.name, Weight: 100, Priority: 2}},
			config.TierDeep:     {{LogicModel: u.name, Weight: 100}},
		})
		_, keys[u.name] = b.Caller(config.Caller{Name: "c-" + u.name, RouteGroup: "g-" + u.name})
	}
	b.Group("default", map[config.TierName][]config.Candidate{config.TierFast: all, config.TierStandard: all, config.TierDeep: all})
	_, keys["app"] = b.Caller(config.Caller{Name: "app", RouteGroup: "default"})
	var mix []config.Candidate
	for i, u := range responsesUpstreams {
		mix = append(mix, config.Candidate{LogicModel: u.name, Weight: 100, Priority: i + 1})
	}
	b.Group("g-mix", map[config.TierName][]config.Candidate{config.TierFast: mix, config.TierStandard: mix, config.TierDeep: mix})
	mixID, _ := b.Caller(config.Caller{Name: "c-mix", RouteGroup: "g-mix"})
	keys["c-mix id"] = itoa(mixID)
	var one []config.TierLimit
	for _, tier := range []config.TierName{config.TierFast, config.TierStandard, config.TierDeep} {
		one = append(one, config.TierLimit{Tier: tier, RPM: 1})
	}
	_, keys["tight"] = b.Caller(config.Caller{Name: "tight", RouteGroup: "default", Limits: one})
	e.Fake.SetRules(rules...)
	e.Publish("responses world")
	return keys
}

func responsesInput(text string) responses.ResponseNewParamsInputUnion {
	return responses.ResponseNewParamsInputUnion{OfString: openai.String(text)}
}

// readResponsesStream reads a whole stream through the SDK: its events,
// and the error that ended it (nil for a clean end).
func readResponsesStream(client openai.Client, p responses.ResponseNewParams, opts ...option.RequestOption) ([]responses.ResponseStreamEventUnion, error) {
	s := client.Responses.NewStreaming(context.Background(), p, opts...)
	defer s.Close()
	var out []responses.ResponseStreamEventUnion
	for s.Next() {
		out = append(out, s.Current())
	}
	return out, s.Err()
}

// checkSequence asserts the documented shape of a stream: sequence_number
// 0, 1, 2, … on every event, response.created then response.in_progress
// first, and (when complete) response.completed last.
func checkSequence(t *testing.T, evs []responses.ResponseStreamEventUnion, complete bool) {
	t.Helper()
	if len(evs) < 3 {
		t.Fatalf("%d events", len(evs))
	}
	for i, ev := range evs {
		if ev.SequenceNumber != int64(i) {
			t.Fatalf("event %d (%s) has sequence_number %d", i, ev.Type, ev.SequenceNumber)
		}
		if !gjson.Get(ev.RawJSON(), "sequence_number").Exists() {
			t.Fatalf("event %d (%s) lacks sequence_number: %s", i, ev.Type, ev.RawJSON())
		}
	}
	if evs[0].Type != "response.created" || evs[1].Type != "response.in_progress" {
		t.Fatalf("stream starts %s, %s", evs[0].Type, evs[1].Type)
	}
	if last := evs[len(evs)-1].Type; complete && last != "response.completed" {
		t.Fatalf("stream ends with %s", last)
	}
}

func responsesText(evs []responses.ResponseStreamEventUnion) string {
	var b strings.Builder
	for _, ev := range evs {
		if ev.Type == "response.output_text.delta" {
			b.WriteString(ev.Delta)
		}
	}
	return b.String()
}

// TestResponsesDoor runs every check of the door on one instance (one
// database and world, built once: it is most of the cost).
func TestResponsesDoor(t *testing.T) {
	t.Parallel() // its own database, Redis prefix and fake vendor: it shares nothing
	e := gatewaytest.New(t)
	keys := responsesWorld(t, e)
	t.Run("non-stream and stream", func(t *testing.T) { responsesBasics(t, e, keys) })
	t.Run("tools, reasoning and failures", func(t *testing.T) { responsesToolsReasoningAndFailures(t, e, keys) })
	t.Run("refusals, call log and idempotency", func(t *testing.T) { responsesRefusalsCallLogAndIdempotency(t, e, keys) })
	t.Run("Test route", func(t *testing.T) { responsesTestRoute(t, e, keys) })
}

// responsesTestRoute: Test route explains a Responses request — which
// deployment takes it natively, which translate it, which are skipped for a
// field they cannot carry — and sends one through /v1/responses.
func responsesTestRoute(t *testing.T, e *gatewaytest.Env, keys map[string]string) {
	admin := obsLogin(t, e, "ops", store.RoleAdmin)
	explain := func(body string) (steps, wires, skips []string) {
		t.Helper()
		v := url.Values{"caller": {keys["c-mix id"]}, "model": {"fast"}, "door": {"responses"}, "body": {body}}
		res, doc, page := admin.get("/test-route?" + v.Encode())
		if res.StatusCode != http.StatusOK || testID(doc, "testroute-problem").Length() != 0 {
			t.Fatalf("explain: %d %s\n%s", res.StatusCode, testID(doc, "testroute-problem").Text(), page)
		}
		if _, ok := doc.Find(`[data-testid="testroute-door"] option[value="responses"]`).Attr("selected"); !ok {
			t.Fatal("the Responses door is not the one selected")
		}
		testID(doc, "testroute-step").Each(func(_ int, s *goquery.Selection) {
			steps = append(steps, s.AttrOr("data-model", ""))
			wires = append(wires, strings.TrimSpace(s.Find(`[data-testid="testroute-wire"]`).Text()))
		})
		testID(doc, "testroute-skip").Each(func(_ int, s *goquery.Selection) {
			skips = append(skips, s.AttrOr("data-reason", "")+": "+strings.TrimSpace(s.Text()))
		})
		return steps, wires, skips
	}
	steps, wires, skips := explain("")
	if strings.Join(steps, ",") != "resp,gpt,claude,gem" || strings.Join(wires, ",") != "native pass-through,translated,translated,translated" || len(skips) != 0 {
		t.Fatalf("flags: steps %v wires %v skips %v", steps, wires, skips)
	}
	steps, _, skips = explain(`{"model":"fast","input":"news?","tools":[{"type":"web_search"}]}`)
	if strings.Join(steps, ",") != "resp" || len(skips) != 3 || !strings.Contains(skips[0], "unsupported_parameter") || !strings.Contains(skips[0], "tools[] (web_search)") {
		t.Fatalf("web_search: steps %v skips %v", steps, skips)
	}
	steps, _, skips = explain(`{"model":"fast","input":"hi","parallel_tool_calls":false,"tools":[{"type":"function","name":"f"},{"type":"function","name":"g"}]}`)
	if strings.Join(steps, ",") != "resp,gpt,claude" || len(skips) != 1 || !strings.Contains(skips[0], "parallel_tool_calls") {
		t.Fatalf("parallel_tool_calls: steps %v skips %v", steps, skips)
	}
	// A real test request through /v1/responses: served natively.
	res, doc, page := admin.postForm("/test-route/send", url.Values{"caller": {keys["c-mix id"]}, "model": {"fast"}, "door": {"responses"}, "message": {"hi"}})
	if res.StatusCode != http.StatusOK || !strings.Contains(testID(doc, "testroute-send-result").Text(), "Hello from resp-x") {
		t.Fatalf("send: %d\n%s", res.StatusCode, page)
	}
	rows := waitCallLogs(t, e, calllog.Filter{Caller: "c-mix", Endpoint: "responses"}, 1)
	if rows[0].Status != "ok" || rows[0].Provider != "p-resp" {
		t.Fatalf("test request row: %+v", rows[0])
	}
}

func responsesBasics(t *testing.T, e *gatewaytest.Env, keys map[string]string) {
	app := sdk(e, keys["app"])
	ctx := context.Background()
	for _, u := range responsesUpstreams {
		want := "Hello from " + u.upstream + "."
		t.Run(u.name+"/non-stream", func(t *testing.T) {
			var hdr http.Header
			resp, err := app.Responses.New(ctx, responses.ResponseNewParams{Model: u.name, Input: responsesInput("hello"), Instructions: openai.String("be brief"),
				Metadata: shared.Metadata{"trace": "t1"}}, option.WithResponseInto(new(*http.Response)), captureHeaders(&hdr))
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(resp.OutputText(), want) || resp.Status != responses.ResponseStatusCompleted || resp.Model != u.name {
				t.Fatalf("text %q, status %q, model %q", resp.OutputText(), resp.Status, resp.Model)
			}
			if resp.Usage.InputTokens <= 0 || resp.Usage.OutputTokens != 5 || resp.Usage.TotalTokens != resp.Usage.InputTokens+resp.Usage.OutputTokens {
				t.Fatalf("usage %+v", resp.Usage)
			}
			if hdr.Get("X-Switchyard-Model") != u.name || hdr.Get("X-Request-Id") == "" {
				t.Fatalf("headers %v", hdr)
			}
			body := e.Fake.LastBody(u.upstream)
			if u.native {
				// Passed through: the Responses body, model replaced, store false.
				if gjson.GetBytes(body, "model").Str != u.upstream || gjson.GetBytes(body, "store").Type != gjson.False ||
					gjson.GetBytes(body, "instructions").Str != "be brief" || gjson.GetBytes(body, "input").Str != "hello" {
					t.Fatalf("native body %s", body)
				}
				return
			}
			if resp.Metadata["trace"] != "t1" || resp.Instructions.OfString != "be brief" {
				t.Fatalf("echo: metadata %v, instructions %+v", resp.Metadata, resp.Instructions)
			}
			if strings.Contains(string(body), "trace") || !strings.Contains(string(body), "be brief") {
				t.Fatalf("translated body %s", body)
			}
		})
		t.Run(u.name+"/stream", func(t *testing.T) {
			evs, err := readResponsesStream(app, responses.ResponseNewParams{Model: u.name, Input: responsesInput("hello")})
			if err != nil {
				t.Fatal(err)
			}
			checkSequence(t, evs, true)
			if got := responsesText(evs); got != want+strings.Repeat(" "+want, 4) {
				t.Fatalf("text %q", got)
			}
			done := evs[len(evs)-1].Response
			if done.OutputText() != responsesText(evs) || done.Usage.OutputTokens != 5 || done.Model != u.name {
				t.Fatalf("completed: %q, usage %+v, model %q", done.OutputText(), done.Usage, done.Model)
			}
		})
	}
}

// weatherTool is the function the tool round trips offer.
var weatherTool = responses.ToolUnionParam{OfFunction: &responses.FunctionToolParam{Name: "get_weather",
	Description: openai.String("the weather in a city"),
	Parameters:  map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}}}}

// toolResultSeen reports whether upstream's last request carried the result
// of call callID in its protocol's own form.
func toolResultSeen(u responsesUpstream, body []byte, callID string) bool {
	var found bool
	switch {
	case u.native:
		gjson.GetBytes(body, "input").ForEach(func(_, it gjson.Result) bool {
			found = it.Get("type").Str == "function_call_output" && it.Get("call_id").Str == callID && it.Get("output").Str == "sunny"
			return !found
		})
	case u.protocol == config.ProtocolOpenAI:
		gjson.GetBytes(body, "messages").ForEach(func(_, m gjson.Result) bool {
			found = m.Get("role").Str == "tool" && m.Get("tool_call_id").Str == callID && m.Get("content").Str == "sunny"
			return !found
		})
	case u.protocol == config.ProtocolAnthropic:
		gjson.GetBytes(body, "messages.#.content").ForEach(func(_, blocks gjson.Result) bool {
			blocks.ForEach(func(_, b gjson.Result) bool {
				found = b.Get("type").Str == "tool_result" && b.Get("tool_use_id").Str == callID && strings.Contains(b.Raw, "sunny")
				return !found
			})
			return !found
		})
	case u.protocol == config.ProtocolGemini:
		gjson.GetBytes(body, "contents.#.parts").ForEach(func(_, parts gjson.Result) bool {
			parts.ForEach(func(_, p gjson.Result) bool {
				found = p.Get("functionResponse.name").Str == "get_weather" && strings.Contains(p.Raw, "sunny")
				return !found
			})
			return !found
		})
	}
	return found
}

// askedToReason reports whether upstream's last request asked for
// reasoning, in its protocol's own form.
func askedToReason(u responsesUpstream, body []byte) bool {
	switch {
	case u.native:
		return gjson.GetBytes(body, "reasoning.effort").Str == "high"
	case u.protocol == config.ProtocolOpenAI:
		return gjson.GetBytes(body, "reasoning_effort").Str == "high"
	case u.protocol == config.ProtocolAnthropic:
		return gjson.GetBytes(body, "thinking.budget_tokens").Int() > 0
	}
	return gjson.GetBytes(body, "generationConfig.thinkingConfig").Exists()
}

func responsesToolsReasoningAndFailures(t *testing.T, e *gatewaytest.Env, keys map[string]string) {
	app := sdk(e, keys["app"])
	ctx := context.Background()
	for _, u := range responsesUpstreams {
		want := "Hello from " + u.upstream + "."
		t.Run(u.name+"/tools round trip", func(t *testing.T) {
			ask := responses.ResponseInputItemParamOfMessage("please call tool get_weather for Paris", responses.EasyInputMessageRoleUser)
			p := responses.ResponseNewParams{Model: u.name, Tools: []responses.ToolUnionParam{weatherTool},
				Input: responses.ResponseNewParamsInputUnion{OfInputItemList: responses.ResponseInputParam{ask}}}
			// Streamed: the function call's own events.
			evs, err := readResponsesStream(app, p)
			if err != nil {
				t.Fatal(err)
			}
			checkSequence(t, evs, true)
			var types []string
			for _, ev := range evs {
				types = append(types, ev.Type)
			}
			seq := strings.Join(types, " ")
			for _, want := range []string{"response.output_item.added", "response.function_call_arguments.delta", "response.function_call_arguments.done", "response.output_item.done"} {
				if !strings.Contains(seq, want) {
					t.Fatalf("no %s in %s", want, seq)
				}
			}
			// Not streamed: the call, then its output sent back.
			resp, err := app.Responses.New(ctx, p)
			if err != nil {
				t.Fatal(err)
			}
			var call responses.ResponseFunctionToolCall
			for _, it := range resp.Output {
				if it.Type == "function_call" {
					call = it.AsFunctionCall()
				}
			}
			if call.Name != "get_weather" || call.CallID == "" || call.Arguments == "" {
				t.Fatalf("no function call in %s", resp.RawJSON())
			}
			p.Input.OfInputItemList = append(p.Input.OfInputItemList,
				responses.ResponseInputItemParamOfFunctionCall(call.Arguments, call.CallID, call.Name),
				responses.ResponseInputItemUnionParam{OfFunctionCallOutput: &responses.ResponseInputItemFunctionCallOutputParam{
					CallID: openai.String(call.CallID), Output: responses.ResponseInputItemFunctionCallOutputOutputUnionParam{OfString: openai.String("sunny")}}})
			resp, err = app.Responses.New(ctx, p)
			if err != nil {
				t.Fatal(err)
			}
			if resp.Status != responses.ResponseStatusCompleted || len(resp.Output) == 0 {
				t.Fatalf("second turn: %s", resp.RawJSON())
			}
			if body := e.Fake.LastBody(u.upstream); !toolResultSeen(u, body, call.CallID) {
				t.Fatalf("the upstream did not get the result of %s: %s", call.CallID, body)
			}
		})
		t.Run(u.name+"/reasoning.effort goes to deep", func(t *testing.T) {
			var hdr http.Header
			cl := sdk(e, keys[u.name])
			resp, err := cl.Responses.New(ctx, responses.ResponseNewParams{Model: "standard", Input: responsesInput("think"),
				Reasoning: shared.ReasoningParam{Effort: shared.ReasoningEffortHigh}}, captureHeaders(&hdr))
			if err != nil {
				t.Fatal(err)
			}
			if hdr.Get("X-Switchyard-Tier") != "deep" || hdr.Get("X-Switchyard-Model") != u.name || !strings.HasPrefix(resp.OutputText(), want) {
				t.Fatalf("tier %q, model %q, text %q", hdr.Get("X-Switchyard-Tier"), hdr.Get("X-Switchyard-Model"), resp.OutputText())
			}
			if resp.Reasoning.Effort != shared.ReasoningEffortHigh {
				t.Fatalf("reasoning echo %+v", resp.Reasoning)
			}
			if body := e.Fake.LastBody(u.upstream); !askedToReason(u, body) {
				t.Fatalf("the upstream was not asked to reason: %s", body)
			}
		})
		t.Run(u.name+"/error before first content fails over invisibly", func(t *testing.T) {
			before := e.Fake.Count(u.name + "-broken-x")
			var hdr http.Header
			evs, err := readResponsesStream(sdk(e, keys[u.name]), responses.ResponseNewParams{Model: "standard", Input: responsesInput("hello")}, captureHeaders(&hdr))
			if err != nil {
				t.Fatal(err)
			}
			checkSequence(t, evs, true)
			if got := responsesText(evs); got != want+strings.Repeat(" "+want, 4) {
				t.Fatalf("text %q", got)
			}
			for _, ev := range evs {
				if ev.Type == "error" || ev.Type == "response.failed" {
					t.Fatalf("the caller saw the failed attempt: %s", ev.RawJSON())
				}
			}
			if e.Fake.Count(u.name+"-broken-x") != before+1 || hdr.Get("X-Switchyard-Attempts") != "2" || hdr.Get("X-Switchyard-Model") != u.name {
				t.Fatalf("broken tried %d times, attempts %q, model %q", e.Fake.Count(u.name+"-broken-x")-before, hdr.Get("X-Switchyard-Attempts"), hdr.Get("X-Switchyard-Model"))
			}
		})
		t.Run(u.name+"/error after first content ends the stream with an error event", func(t *testing.T) {
			evs, err := readResponsesStream(app, responses.ResponseNewParams{Model: u.name + "-mid", Input: responsesInput("hello")})
			var se interface{ Error() string }
			if err == nil || !errors.As(err, &se) || !strings.Contains(err.Error(), "upstream_error") {
				t.Fatalf("stream error %v", err)
			}
			if got := responsesText(evs); !strings.HasPrefix(got, "Hello from "+u.name+"-mid-x.") {
				t.Fatalf("text before the failure %q", got)
			}
			// On the wire: the error event (documented fields at the top,
			// OpenAI's nested error too), then response.failed.
			_, raw := post(t, e, keys["app"], "/v1/responses", `{"model":"`+u.name+`-mid","input":"hello","stream":true}`)
			names, datas := sseEvents(t, raw)
			n := len(names)
			if n < 4 || names[n-2] != "error" || names[n-1] != "response.failed" {
				t.Fatalf("stream ends %v", names)
			}
			errEv, failed := datas[n-2], datas[n-1]
			if gjson.Get(errEv, "code").Str != "upstream_error" || gjson.Get(errEv, "message").Str == "" || !gjson.Get(errEv, "param").Exists() ||
				gjson.Get(errEv, "error.code").Str != "upstream_error" || gjson.Get(errEv, "sequence_number").Int() != int64(n-2) {
				t.Fatalf("error event %s", errEv)
			}
			if gjson.Get(failed, "response.status").Str != "failed" || gjson.Get(failed, "response.error.code").Str != "upstream_error" ||
				gjson.Get(failed, "sequence_number").Int() != int64(n-1) || strings.Contains(failed, "Sorry about that") {
				t.Fatalf("response.failed %s", failed)
			}
		})
		t.Run(u.name+"/429 in OpenAI's error shape", func(t *testing.T) {
			var hdr http.Header
			_, err := app.Responses.New(ctx, responses.ResponseNewParams{Model: u.name + "-lim", Input: responsesInput("hello")}, captureHeaders(&hdr))
			var oe *openai.Error
			if !errors.As(err, &oe) || oe.StatusCode != http.StatusTooManyRequests || oe.Code != "rate_limited" || oe.Type != "rate_limit_error" {
				t.Fatalf("error %v", err)
			}
			if hdr.Get("Retry-After") == "" || !gjson.Get(oe.RawJSON(), "message").Exists() {
				t.Fatalf("Retry-After %q, body %s", hdr.Get("Retry-After"), oe.RawJSON())
			}
		})
	}
	t.Run("a caller over its limit gets 429 in OpenAI's error shape", func(t *testing.T) {
		tight := sdk(e, keys["tight"])
		p := responses.ResponseNewParams{Model: "gpt", Input: responsesInput("hello")}
		if _, err := tight.Responses.New(ctx, p); err != nil {
			t.Fatal(err)
		}
		_, err := tight.Responses.New(ctx, p)
		var oe *openai.Error
		if !errors.As(err, &oe) || oe.StatusCode != http.StatusTooManyRequests || oe.Code != "rate_limited" || oe.Response.Header.Get("Retry-After") == "" {
			t.Fatalf("error %v", err)
		}
	})
}

// sseEvents splits a raw event stream into event names and data.
func sseEvents(t *testing.T, raw []byte) (names, datas []string) {
	t.Helper()
	for _, block := range strings.Split(strings.TrimSpace(string(raw)), "\n\n") {
		var name, data string
		for _, line := range strings.Split(block, "\n") {
			if v, ok := strings.CutPrefix(line, "event: "); ok {
				name = v
			}
			if v, ok := strings.CutPrefix(line, "data: "); ok {
				data = v
			}
		}
		if name == "" || !gjson.Valid(data) || gjson.Get(data, "type").Str != name {
			t.Fatalf("malformed event %q", block)
		}
		names, datas = append(names, name), append(datas, data)
	}
	return names, datas
}

// callLogRow waits for a request's call-log row: its front door, status,
// error code and attempt trail.
func callLogRow(t *testing.T, e *gatewaytest.Env, requestID string) (endpoint, status, code, attempts string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := e.Store.DB().QueryRowContext(context.Background(), `SELECT coalesce(endpoint, ''), status, coalesce(error_code, ''), coalesce(attempts::text, '')
			FROM call_logs WHERE request_id = $1`, requestID).Scan(&endpoint, &status, &code, &attempts)
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no call-log row for %s: %v", requestID, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func responsesRefusalsCallLogAndIdempotency(t *testing.T, e *gatewaytest.Env, keys map[string]string) {
	app := sdk(e, keys["app"])
	ctx := context.Background()
	t.Run("store true is refused: the gateway is stateless", func(t *testing.T) {
		for _, body := range []string{`{"model":"gpt","input":"hi","store":true}`, `{"model":"resp","input":"hi","previous_response_id":"resp_1"}`} {
			res, raw := post(t, e, keys["app"], "/v1/responses", body)
			if res.StatusCode != http.StatusBadRequest || gjson.GetBytes(raw, "error.code").Str != "stateless_gateway" ||
				!strings.Contains(gjson.GetBytes(raw, "error.message").Str, "send the whole conversation in input") || res.Header.Get("x-should-retry") != "false" {
				t.Fatalf("%s: %d %s", body, res.StatusCode, raw)
			}
			if ep, st, code, _ := callLogRow(t, e, res.Header.Get("X-Request-Id")); ep != "responses" || st != "rejected" || code != "stateless_gateway" {
				t.Fatalf("call log %s %s %s", ep, st, code)
			}
		}
		// Omitted store (OpenAI's default is true) is served, and nothing is stored upstream either.
		if _, err := app.Responses.New(ctx, responses.ResponseNewParams{Model: "resp", Input: responsesInput("hi")}); err != nil {
			t.Fatal(err)
		}
		if gjson.GetBytes(e.Fake.LastBody("resp-x"), "store").Type != gjson.False {
			t.Fatalf("sent upstream: %s", e.Fake.LastBody("resp-x"))
		}
	})
	t.Run("stored responses cannot be retrieved", func(t *testing.T) {
		_, err := app.Responses.Get(ctx, "resp_1", responses.ResponseGetParams{})
		var oe *openai.Error
		if !errors.As(err, &oe) || oe.StatusCode != http.StatusNotFound || oe.Code != "stateless_gateway" || !strings.Contains(oe.Message, "stateless") {
			t.Fatalf("get: %v", err)
		}
	})
	t.Run("a hosted tool needs a deployment that runs it", func(t *testing.T) {
		web := responses.ToolUnionParam{OfWebSearch: &responses.WebSearchToolParam{Type: responses.WebSearchToolTypeWebSearch}}
		resp, err := app.Responses.New(ctx, responses.ResponseNewParams{Model: "resp", Input: responsesInput("news?"), Tools: []responses.ToolUnionParam{web}})
		if err != nil || resp.Status != responses.ResponseStatusCompleted {
			t.Fatalf("native: %v", err)
		}
		if gjson.GetBytes(e.Fake.LastBody("resp-x"), "tools.0.type").Str != "web_search" {
			t.Fatalf("native body %s", e.Fake.LastBody("resp-x"))
		}
		// No other deployment declares a hosted web search: each is skipped.
		for _, m := range []string{"gpt", "claude", "gem"} {
			_, err := app.Responses.New(ctx, responses.ResponseNewParams{Model: m, Input: responsesInput("news?"), Tools: []responses.ToolUnionParam{web}})
			var oe *openai.Error
			if !errors.As(err, &oe) || oe.StatusCode != http.StatusBadRequest || oe.Code != "unsupported_parameter" || oe.Param != "tools[] (web_search)" {
				t.Fatalf("%s: %v", m, err)
			}
			id := oe.Response.Header.Get("X-Request-Id")
			if ep, st, code, trail := callLogRow(t, e, id); ep != "responses" || st != "rejected" || code != "unsupported_parameter" || gjson.Get(trail, "skips.0.reason.param").Str != "tools[] (web_search)" {
				t.Fatalf("call log %s %s %s %s", ep, st, code, trail)
			}
		}
		// A built-in tool with no counterpart anywhere but the Responses API.
		res, raw := post(t, e, keys["app"], "/v1/responses", `{"model":"gem","input":"find it","tools":[{"type":"file_search","vector_store_ids":["v"]}]}`)
		if res.StatusCode != http.StatusBadRequest || gjson.GetBytes(raw, "error.param").Str != "tools[0].type" {
			t.Fatalf("file_search on gem: %d %s", res.StatusCode, raw)
		}
	})
	t.Run("a Codex-shaped request", func(t *testing.T) {
		codex := func(model string) string {
			return `{"model":"` + model + `","instructions":"You are a coding agent.","input":[
				{"type":"message","role":"developer","content":[{"type":"input_text","text":"<permissions>"}]},
				{"type":"message","role":"user","content":[{"type":"input_text","text":"list the files"}]},
				{"type":"reasoning","id":"rs_1","summary":[],"encrypted_content":"gAAAA-opaque"},
				{"type":"function_call","name":"shell","arguments":"{\"command\":[\"ls\"]}","call_id":"call_1"},
				{"type":"function_call_output","call_id":"call_1","output":"README.md"}],
				"tools":[{"type":"function","name":"shell","strict":false,"parameters":{"type":"object"}}],
				"tool_choice":"auto","parallel_tool_calls":false,"reasoning":null,"store":false,"stream":true,"include":[],"prompt_cache_key":"conv-1"}`
		}
		for _, m := range []string{"resp", "gpt", "claude"} {
			res, raw := post(t, e, keys["app"], "/v1/responses", codex(m))
			names, _ := sseEvents(t, raw)
			if res.StatusCode != 200 || names[len(names)-1] != "response.completed" {
				t.Fatalf("%s: %d %v", m, res.StatusCode, names)
			}
		}
		// Natively the earlier reasoning goes back as it came.
		if body := e.Fake.LastBody("resp-x"); gjson.GetBytes(body, "input.2.encrypted_content").Str != "gAAAA-opaque" || gjson.GetBytes(body, "prompt_cache_key").Str != "conv-1" {
			t.Fatalf("native body %s", body)
		}
		// Gemini cannot be told to call one function at a time, but with one
		// tool the answer is the same: served, and the call says what Gemini
		// did not get.
		res, raw := post(t, e, keys["app"], "/v1/responses", codex("gem"))
		if names, _ := sseEvents(t, raw); res.StatusCode != 200 || names[len(names)-1] != "response.completed" {
			t.Fatalf("gem: %d %s", res.StatusCode, raw)
		}
		if got := droppedFields(t, e, res.Header.Get("X-Request-Id")); !slices.Equal(got, []string{"input[] (reasoning)", "parallel_tool_calls", "prompt_cache_key"}) {
			t.Fatalf("gem dropped %v", got)
		}
	})
	t.Run("a served request is one row with its front door and attempt trail", func(t *testing.T) {
		var hdr http.Header
		if _, err := readResponsesStream(sdk(e, keys["claude"]), responses.ResponseNewParams{Model: "standard", Input: responsesInput("hi")}, captureHeaders(&hdr)); err != nil {
			t.Fatal(err)
		}
		ep, st, _, trail := callLogRow(t, e, hdr.Get("X-Request-Id"))
		if ep != "responses" || st != "ok" || gjson.Get(trail, "attempts.#.outcome").Raw != `["failed","ok"]` || gjson.Get(trail, "attempts.0.model").Str != "claude-broken" {
			t.Fatalf("call log %s %s %s", ep, st, trail)
		}
	})
	t.Run("metrics carry the endpoint", func(t *testing.T) {
		res, err := http.Get(e.URL + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		if !regexp.MustCompile(`switchyard_requests_total\{[^}]*endpoint="responses"[^}]*status="ok"[^}]*\} [1-9]`).Match(b) &&
			!regexp.MustCompile(`switchyard_requests_total\{[^}]*status="ok"[^}]*endpoint="responses"[^}]*\} [1-9]`).Match(b) {
			t.Fatalf("no ok requests counted for endpoint responses:\n%s", grepLines(b, "switchyard_requests_total"))
		}
	})
	t.Run("an idempotent stream is replayed byte for byte", func(t *testing.T) {
		body := `{"model":"gem","input":"hi","stream":true}`
		first, a := post(t, e, keys["app"], "/v1/responses", body, "Idempotency-Key", "resp-idem-1")
		second, b := post(t, e, keys["app"], "/v1/responses", body, "Idempotency-Key", "resp-idem-1")
		if first.StatusCode != 200 || second.Header.Get("Idempotent-Replayed") != "true" || !bytes.Equal(a, b) || !bytes.Contains(a, []byte("response.completed")) {
			t.Fatalf("replay %q: %d bytes vs %d", second.Header.Get("Idempotent-Replayed"), len(a), len(b))
		}
	})
}

// grepLines keeps the lines of b that contain s.
func grepLines(b []byte, s string) string {
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.Contains(l, s) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// captureHeaders records the response headers of a call.
func captureHeaders(h *http.Header) option.RequestOption {
	return option.WithMiddleware(func(r *http.Request, next option.MiddlewareNext) (*http.Response, error) {
		resp, err := next(r)
		if resp != nil {
			*h = resp.Header
		}
		return resp, err
	})
}

// TestResponsesAgentToolsTranslated: Codex's namespaced and custom tools
// reach a Gemini deployment as plain functions, and the calls the model
// makes come back named as the caller declared them — a function_call in
// its namespace, a custom_tool_call with its input — whole and streamed.
func TestResponsesAgentToolsTranslated(t *testing.T) {
	t.Parallel()
	e, keys := messagesWorld(t)
	const tools = `"tools":[{"type":"namespace","name":"mcp__files","description":"files","tools":[{"type":"function","name":"read","parameters":{"type":"object","properties":{"path":{"type":"string"}}}}]},
		{"type":"custom","name":"apply_patch","description":"patch","format":{"type":"grammar","syntax":"lark","definition":"start: /.+/"}}]`
	for _, stream := range []bool{false, true} {
		body := `{"model":"fast","stream":` + strconv.FormatBool(stream) + `,"input":"please call tool mcp__files__read {\"path\":\"a.txt\"}",` + tools + `}`
		res, raw := post(t, e, keys["ge"], "/v1/responses", body)
		if res.StatusCode != http.StatusOK {
			t.Fatalf("stream %v: %d %s", stream, res.StatusCode, raw)
		}
		out := gjson.GetBytes(raw, "output")
		if stream {
			_, datas := sseEvents(t, raw)
			out = gjson.Get(datas[len(datas)-1], "response.output")
		}
		fc := out.Get(`#(type=="function_call")`)
		if fc.Get("namespace").Str != "mcp__files" || fc.Get("name").Str != "read" || gjson.Parse(fc.Get("arguments").Str).Get("path").Str != "a.txt" {
			t.Fatalf("stream %v: output %s", stream, out.Raw)
		}
		// Gemini got plain functions: the namespace flattened, the custom
		// tool taking one string.
		sent := gjson.ParseBytes(e.Fake.LastBody("ge-main-up"))
		if sent.Get(`tools.0.functionDeclarations.#(name=="mcp__files__read")`).Exists() == false ||
			sent.Get(`tools.0.functionDeclarations.#(name=="apply_patch").parameters.properties.input`).Exists() == false {
			t.Fatalf("gemini got %s", sent.Get("tools").Raw)
		}
		if got := droppedFields(t, e, res.Header.Get("X-Request-Id")); !slices.Contains(got, "tools[].format") {
			t.Fatalf("dropped %v", got)
		}
	}
	// The model calls the translated function with its one string.
	body := `{"model":"fast","input":"please call tool apply_patch {\"input\":\"*** Begin Patch\"}",` + tools + `}`
	res, raw := post(t, e, keys["ge"], "/v1/responses", body)
	cc := gjson.GetBytes(raw, `output.#(type=="custom_tool_call")`)
	if res.StatusCode != http.StatusOK || cc.Get("name").Str != "apply_patch" || !strings.Contains(cc.Get("input").Str, "Begin Patch") {
		t.Fatalf("custom call: %d %s", res.StatusCode, raw)
	}
}
