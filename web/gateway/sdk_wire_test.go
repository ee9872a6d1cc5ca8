package gateway_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lib/pq"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/shared"
	"github.com/tidwall/gjson"

	"switchyard/e2e/fakevendor"
	"switchyard/routing/config"
	"switchyard/store"
	"switchyard/web/gateway/gatewaytest"
)

// wireWorld has one logic model per upstream protocol, all on the fake
// vendor: "gpt" (OpenAI protocol, upstream gpt-x), "claude" (Anthropic,
// claude-x), "claude-native" (Anthropic with native structured output,
// claude-native-x), "gem" (Gemini, gemini-x), and "mixed", whose Anthropic
// deployment (claude-mixed) comes with an OpenAI one (gpt-mixed). Every
// model is a candidate of every tier, so each can be asked for by name.
func wireWorld(e *gatewaytest.Env) string {
	b := e.Build()
	b.Provider("oai", config.ProtocolOpenAI, "", "sk-oai-key-0001")
	b.Provider("ant", config.ProtocolAnthropic, "", "sk-ant-key-0001")
	b.Provider("goo", config.ProtocolGemini, "", "goo-key-0001")
	price := config.Prices{InputMicros: config.Unit, OutputMicros: 2 * config.Unit, Currency: "USD"}
	caps := config.Capabilities{Tools: true, Vision: true}
	dep := func(provider, upstream string, c config.Capabilities) config.Deployment {
		return config.Deployment{Provider: provider, UpstreamModel: upstream, Weight: 100, Enabled: true, Prices: price, Capabilities: c}
	}
	native := caps
	native.StructuredOutput = true
	b.Model(config.LogicModel{Code: "gpt", Kind: config.KindChat}, dep("oai", "gpt-x", caps))
	b.Model(config.LogicModel{Code: "claude", Kind: config.KindChat}, dep("ant", "claude-x", caps))
	b.Model(config.LogicModel{Code: "claude-native", Kind: config.KindChat}, dep("ant", "claude-native-x", native))
	b.Model(config.LogicModel{Code: "gem", Kind: config.KindChat}, dep("goo", "gemini-x", caps))
	ant, oai := dep("ant", "claude-mixed", caps), dep("oai", "gpt-mixed", caps)
	ant.Weight, oai.Weight = 90, 10 // the Anthropic one is nearly always first
	b.Model(config.LogicModel{Code: "mixed", Kind: config.KindChat}, ant, oai)
	var all []config.Candidate
	for _, m := range []string{"gpt", "claude", "claude-native", "gem", "mixed"} {
		all = append(all, config.Candidate{LogicModel: m, Weight: 100})
	}
	b.Group("default", map[config.TierName][]config.Candidate{config.TierFast: all, config.TierStandard: all, config.TierDeep: all})
	_, key := b.Caller(config.Caller{Name: "app", RouteGroup: "default"})
	e.Publish("wire world")
	return key
}

func userAsks(model, text string) openai.ChatCompletionNewParams {
	return openai.ChatCompletionNewParams{Model: model, Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(text)}}
}

// streamAll reads a whole stream through the SDK.
func streamAll(t *testing.T, client openai.Client, p openai.ChatCompletionNewParams, opts ...option.RequestOption) []openai.ChatCompletionChunk {
	t.Helper()
	s := client.Chat.Completions.NewStreaming(context.Background(), p, opts...)
	var out []openai.ChatCompletionChunk
	for s.Next() {
		out = append(out, s.Current())
	}
	if err := s.Err(); err != nil {
		t.Fatalf("stream of %s: %v", p.Model, err)
	}
	return out
}

// finishes checks that every choice got exactly one finish_reason, on its
// last chunk, and returns each choice's text and reason.
func finishes(t *testing.T, chunks []openai.ChatCompletionChunk) (text map[int64]string, reason map[int64]string) {
	t.Helper()
	text, reason = map[int64]string{}, map[int64]string{}
	for i, c := range chunks {
		for _, ch := range c.Choices {
			if r, done := reason[ch.Index]; done {
				t.Fatalf("chunk %d: choice %d has more after its finish_reason %q: %s", i, ch.Index, r, c.RawJSON())
			}
			text[ch.Index] += ch.Delta.Content
			if ch.FinishReason != "" {
				reason[ch.Index] = ch.FinishReason
			}
		}
	}
	return text, reason
}

// Vendors that repeat the finish reason on every chunk (Gemini, Vertex, and
// OpenAI-compatible servers behind them) reach the SDK with one finish
// reason per choice, on its last chunk, and the whole text before it.
func TestSDKOneFinishReasonAtTheEnd(t *testing.T) {
	t.Parallel()
	e := gatewaytest.New(t)
	client := sdk(e, wireWorld(e))
	e.Fake.SetRules(
		fakevendor.Rule{Model: "gemini-x", Fault: fakevendor.Fault{FinishEveryChunk: true, ReplyChunks: 4}},
		fakevendor.Rule{Model: "gpt-x", Fault: fakevendor.Fault{FinishEveryChunk: true, ReplyChunks: 4}},
	)
	for model, upstream := range map[string]string{"gem": "gemini-x", "gpt": "gpt-x"} {
		t.Run(model, func(t *testing.T) {
			chunks := streamAll(t, client, userAsks(model, "hello"))
			text, reason := finishes(t, chunks)
			want := "Hello from " + upstream + "." + strings.Repeat(" Hello from "+upstream+".", 3)
			if text[0] != want || reason[0] != "stop" || len(reason) != 1 {
				t.Fatalf("text %q, finish %v; want %q and one stop", text[0], reason, want)
			}
			// The fake really repeated it: the upstream's chunks said stop each time.
			if model == "gem" && !strings.Contains(string(e.Fake.LastBody("gemini-x")), "contents") {
				t.Fatal("the Gemini fake was not asked")
			}
		})
	}
	// n choices streamed at once, each repeating its finish: one each.
	p := userAsks("gpt", "two please")
	p.N = param.NewOpt[int64](2)
	text, reason := finishes(t, streamAll(t, client, p))
	if len(text) != 2 || reason[0] != "stop" || reason[1] != "stop" || text[0] != text[1] {
		t.Fatalf("n=2: text %v, finish %v", text, reason)
	}
}

// A stream that asks for include_usage ends with the usage chunk (choices
// [] and usage filled) also when the vendor sent no usage; the gateway then
// counts with its tokenizer and the call log and console say "estimated".
func TestSDKIncludeUsageAlwaysEndsWithUsage(t *testing.T) {
	t.Parallel()
	e := gatewaytest.New(t)
	client := sdk(e, wireWorld(e))
	for _, up := range []string{"gpt-x", "claude-x", "gemini-x"} {
		e.Fake.AddRule(fakevendor.Rule{Model: up, Fault: fakevendor.Fault{NoUsage: true, ReplyChunks: 3}})
	}
	for _, model := range []string{"gpt", "claude", "gem"} {
		t.Run(model, func(t *testing.T) {
			var hdr http.Header
			p := userAsks(model, "count me")
			p.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: param.NewOpt(true)}
			chunks := streamAll(t, client, p, option.WithMiddleware(func(r *http.Request, next option.MiddlewareNext) (*http.Response, error) {
				res, err := next(r)
				if res != nil {
					hdr = res.Header
				}
				return res, err
			}))
			last := chunks[len(chunks)-1]
			if len(last.Choices) != 0 || last.Usage.PromptTokens == 0 || last.Usage.CompletionTokens == 0 ||
				last.Usage.TotalTokens != last.Usage.PromptTokens+last.Usage.CompletionTokens {
				t.Fatalf("last chunk %s", last.RawJSON())
			}
			for _, c := range chunks[:len(chunks)-1] {
				if len(c.Choices) == 0 {
					t.Fatalf("a usage-only chunk before the end: %s", c.RawJSON())
				}
			}
			r := waitUsageRow(t, e, hdr.Get("X-Request-Id"))
			if !r.estimated || r.prompt != last.Usage.PromptTokens || r.completion != last.Usage.CompletionTokens {
				t.Fatalf("call log: %+v; stream said %d/%d", r, last.Usage.PromptTokens, last.Usage.CompletionTokens)
			}
			if model != "gpt" {
				return
			}
			// The console shows the count as estimated, in the list and the detail.
			viewer := obsLogin(t, e, "watcher-"+model, store.RoleViewer)
			id := hdr.Get("X-Request-Id")
			_, doc, _ := viewer.get("/call-logs?caller=app&range=1h")
			if testID(doc, "calllog-row-"+id).Find(`[data-testid="mark-estimated"]`).Length() != 1 {
				t.Error("the call-log list does not mark the row's usage estimated")
			}
			_, doc, _ = viewer.get("/call-logs/" + id)
			if !strings.Contains(testID(doc, "calllog-field-usage").Text(), "estimated") {
				t.Errorf("detail usage field: %q", testID(doc, "calllog-field-usage").Text())
			}
		})
	}
	// A vendor that does report usage: its numbers, not estimated.
	e.Fake.ClearRules()
	var hdr http.Header
	p := userAsks("claude", "count me")
	p.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: param.NewOpt(true)}
	chunks := streamAll(t, client, p, option.WithMiddleware(func(r *http.Request, next option.MiddlewareNext) (*http.Response, error) {
		res, err := next(r)
		if res != nil {
			hdr = res.Header
		}
		return res, err
	}))
	if last := chunks[len(chunks)-1]; len(last.Choices) != 0 || last.Usage.CompletionTokens != 5 {
		t.Fatalf("reported usage: %s", last.RawJSON())
	}
	if r := waitUsageRow(t, e, hdr.Get("X-Request-Id")); r.estimated || r.completion != 5 {
		t.Fatalf("call log of reported usage: %+v", r)
	}
}

type usageRow struct {
	prompt, completion int64
	estimated          bool
}

func waitUsageRow(t *testing.T, e *gatewaytest.Env, id string) usageRow {
	t.Helper()
	waitRow(t, e.Store.DB(), id)
	var r usageRow
	if err := e.Store.DB().QueryRow(`SELECT prompt_tokens, completion_tokens, usage_estimated FROM call_logs WHERE request_id = $1`, id).
		Scan(&r.prompt, &r.completion, &r.estimated); err != nil {
		t.Fatal(err)
	}
	return r
}

var personSchema = map[string]any{
	"type": "object",
	"properties": map[string]any{
		"name": map[string]any{"type": "string"},
		"age":  map[string]any{"type": "integer"},
	},
	"required":             []string{"name", "age"},
	"additionalProperties": false,
}

func askPerson(model string) openai.ChatCompletionNewParams {
	p := userAsks(model, "who is it?")
	p.ResponseFormat = openai.ChatCompletionNewParamsResponseFormatUnion{OfJSONSchema: &openai.ResponseFormatJSONSchemaParam{
		JSONSchema: openai.ResponseFormatJSONSchemaJSONSchemaParam{Name: "person", Schema: personSchema, Strict: param.NewOpt(true)},
	}}
	return p
}

// response_format reaches every vendor: Anthropic natively where the
// deployment declares structured_output, else through a forced tool call
// whose arguments become the content; Gemini as responseMimeType and
// responseJsonSchema. The SDK gets JSON content and finish_reason stop.
func TestSDKStructuredOutput(t *testing.T) {
	t.Parallel()
	e := gatewaytest.New(t)
	client := sdk(e, wireWorld(e))
	ctx := context.Background()
	check := func(t *testing.T, content, finish string) {
		t.Helper()
		var got struct {
			Name string `json:"name"`
			Age  int    `json:"age"`
		}
		if err := json.Unmarshal([]byte(content), &got); err != nil || got.Name == "" || got.Age != 1 || finish != "stop" {
			t.Fatalf("content %q (%v), finish %q", content, err, finish)
		}
	}
	for _, tc := range []struct{ model, upstream, sent string }{
		{"claude", "claude-x", "tool_choice"},
		{"claude-native", "claude-native-x", "output_config"},
		{"gem", "gemini-x", "generationConfig"},
		{"gpt", "gpt-x", "response_format"},
	} {
		t.Run(tc.model, func(t *testing.T) {
			resp, err := client.Chat.Completions.New(ctx, askPerson(tc.model))
			if err != nil {
				t.Fatal(err)
			}
			check(t, resp.Choices[0].Message.Content, resp.Choices[0].FinishReason)
			if len(resp.Choices[0].Message.ToolCalls) != 0 {
				t.Fatalf("the format's tool call leaked: %+v", resp.Choices[0].Message.ToolCalls)
			}
			up := gjson.ParseBytes(e.Fake.LastBody(tc.upstream))
			switch tc.sent {
			case "tool_choice":
				if up.Get("tool_choice.type").Str != "tool" || up.Get("tool_choice.name").Str != "person" ||
					up.Get("tools.0.input_schema.required.1").Str != "age" || up.Get("output_config").Exists() {
					t.Fatalf("upstream body %s", up.Raw)
				}
			case "output_config":
				if up.Get("output_config.format.type").Str != "json_schema" || up.Get("output_config.format.schema.properties.age.type").Str != "integer" ||
					up.Get("tools").Exists() {
					t.Fatalf("upstream body %s", up.Raw)
				}
			case "generationConfig":
				if up.Get("generationConfig.responseMimeType").Str != "application/json" ||
					up.Get("generationConfig.responseJsonSchema.properties.age.type").Str != "integer" {
					t.Fatalf("upstream body %s", up.Raw)
				}
			case "response_format":
				if up.Get("response_format.json_schema.name").Str != "person" {
					t.Fatalf("upstream body %s", up.Raw)
				}
			}
			// Streamed, the JSON arrives as content deltas.
			text, reason := finishes(t, streamAll(t, client, askPerson(tc.model)))
			check(t, text[0], reason[0])
		})
	}
	// json_object through the forced tool: any JSON object.
	p := userAsks("claude", "anything as JSON")
	p.ResponseFormat = openai.ChatCompletionNewParamsResponseFormatUnion{OfJSONObject: &openai.ResponseFormatJSONObjectParam{}}
	resp, err := client.Chat.Completions.New(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	if !json.Valid([]byte(resp.Choices[0].Message.Content)) || !strings.HasPrefix(resp.Choices[0].Message.Content, "{") {
		t.Fatalf("json_object content %q", resp.Choices[0].Message.Content)
	}
}

// n asks for n choices: Gemini by candidateCount, Anthropic by n concurrent
// calls; both streamed and not.
func TestSDKNChoices(t *testing.T) {
	t.Parallel()
	e := gatewaytest.New(t)
	client := sdk(e, wireWorld(e))
	ctx := context.Background()
	for _, tc := range []struct{ model, upstream string }{{"gem", "gemini-x"}, {"claude", "claude-x"}, {"gpt", "gpt-x"}} {
		t.Run(tc.model, func(t *testing.T) {
			before := e.Fake.Count(tc.upstream)
			p := userAsks(tc.model, "three ways")
			p.N = param.NewOpt[int64](3)
			resp, err := client.Chat.Completions.New(ctx, p)
			if err != nil {
				t.Fatal(err)
			}
			if len(resp.Choices) != 3 {
				t.Fatalf("%d choices: %s", len(resp.Choices), resp.RawJSON())
			}
			for i, c := range resp.Choices {
				if c.Index != int64(i) || !strings.Contains(c.Message.Content, tc.upstream) || c.FinishReason != "stop" {
					t.Fatalf("choice %d: %+v", i, c)
				}
			}
			calls := e.Fake.Count(tc.upstream) - before
			switch tc.model {
			case "claude":
				if calls != 3 {
					t.Fatalf("Anthropic fan-out made %d calls, want 3", calls)
				}
			case "gem":
				if calls != 1 || gjson.GetBytes(e.Fake.LastBody(tc.upstream), "generationConfig.candidateCount").Int() != 3 {
					t.Fatalf("%d calls, body %s", calls, e.Fake.LastBody(tc.upstream))
				}
			}
			if resp.Usage.CompletionTokens != 15 { // 5 chunks × 3 choices
				t.Errorf("usage %+v", resp.Usage)
			}
			p.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: param.NewOpt(true)}
			chunks := streamAll(t, client, p)
			text, reason := finishes(t, chunks)
			if len(text) != 3 || len(reason) != 3 || text[0] != text[2] || !strings.Contains(text[1], tc.upstream) {
				t.Fatalf("streamed n=3: %v %v", text, reason)
			}
			if u := chunks[len(chunks)-1].Usage; u.CompletionTokens != 15 {
				t.Errorf("streamed usage %+v", u)
			}
		})
	}
}

// A field a deployment's protocol cannot carry is never dropped: the
// deployment is skipped, another one serves, and when none can the caller
// gets 400 unsupported_parameter naming the field and the deployment.
func TestSDKUnsupportedParameterIsRefusedNotDropped(t *testing.T) {
	t.Parallel()
	e := gatewaytest.New(t)
	client := sdk(e, wireWorld(e))
	ctx := context.Background()
	for _, tc := range []struct {
		model, field, deployment string
		set                      func(*openai.ChatCompletionNewParams)
	}{
		{"claude", "logprobs", "ant/claude-x", func(p *openai.ChatCompletionNewParams) { p.Logprobs = param.NewOpt(true) }},
		{"claude", "logit_bias", "ant/claude-x", func(p *openai.ChatCompletionNewParams) { p.LogitBias = map[string]int64{"50256": -100} }},
		{"gem", "logprobs", "goo/gemini-x", func(p *openai.ChatCompletionNewParams) { p.Logprobs = param.NewOpt(true) }},
		{"gem", "parallel_tool_calls", "goo/gemini-x", func(p *openai.ChatCompletionNewParams) {
			// Two tools: Gemini might call both at once, which the caller forbade.
			p.Tools = []openai.ChatCompletionToolUnionParam{openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{Name: "f"}),
				openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{Name: "g"})}
			p.ParallelToolCalls = param.NewOpt(false)
		}},
	} {
		t.Run(tc.model+"/"+tc.field, func(t *testing.T) {
			before := e.Fake.Count(strings.TrimPrefix(tc.deployment, tc.deployment[:4]))
			p := userAsks(tc.model, "hi")
			tc.set(&p)
			_, err := client.Chat.Completions.New(ctx, p)
			var apiErr *openai.Error
			if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusBadRequest || apiErr.Code != "unsupported_parameter" ||
				apiErr.Param != tc.field || !strings.Contains(apiErr.Message, tc.deployment) {
				t.Fatalf("err = %v", err)
			}
			if after := e.Fake.Count(strings.TrimPrefix(tc.deployment, tc.deployment[:4])); after != before {
				t.Fatal("the vendor was called")
			}
		})
	}
	// The same field on a model with another deployment that can carry it:
	// the Anthropic deployment is skipped and the OpenAI one answers.
	p := userAsks("mixed", "hi")
	p.Logprobs = param.NewOpt(true)
	resp, err := client.Chat.Completions.New(ctx, p)
	if err != nil || !strings.Contains(resp.Choices[0].Message.Content, "gpt-mixed") {
		t.Fatalf("mixed: %v %+v", err, resp)
	}
	if e.Fake.Count("claude-mixed") != 0 {
		t.Fatal("the Anthropic deployment was called with logprobs")
	}
}

// A field that tunes how a vendor works but not the answer is dropped for
// a vendor that has no place for it, and the call records it; a deployment
// with a strict field policy refuses it instead.
func TestSDKDroppedFieldsAreRecorded(t *testing.T) {
	t.Parallel()
	e := gatewaytest.New(t)
	client := sdk(e, wireWorld(e))
	ctx := context.Background()
	for _, tc := range []struct {
		model string
		set   func(*openai.ChatCompletionNewParams)
		want  []string
	}{
		{"claude", func(p *openai.ChatCompletionNewParams) {
			p.Seed = param.NewOpt[int64](7)
			p.Metadata = map[string]string{"team": "search"}
		}, []string{"seed", "metadata"}},
		{"gem", func(p *openai.ChatCompletionNewParams) {
			p.User = param.NewOpt("u-1")
			p.Tools = []openai.ChatCompletionToolUnionParam{openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{Name: "f"})}
			p.ParallelToolCalls = param.NewOpt(false) // one tool: the answer is the same
		}, []string{"user", "parallel_tool_calls"}},
		{"gpt", func(p *openai.ChatCompletionNewParams) { p.Seed = param.NewOpt[int64](7) }, nil}, // native: nothing judged
	} {
		t.Run(tc.model, func(t *testing.T) {
			p := userAsks(tc.model, "hi")
			tc.set(&p)
			var res *http.Response
			resp, err := client.Chat.Completions.New(ctx, p, option.WithResponseInto(&res))
			if err != nil || len(resp.Choices) != 1 {
				t.Fatalf("%v %+v", err, resp)
			}
			got := droppedFields(t, e, res.Header.Get("X-Request-Id"))
			if !slices.Equal(got, tc.want) {
				t.Fatalf("dropped %v, want %v", got, tc.want)
			}
		})
	}
	// The metric counts them by front door, protocol and field.
	res, err := http.Get(e.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	page, _ := io.ReadAll(res.Body)
	for _, want := range []string{
		`switchyard_dropped_fields_total{endpoint="chat_completions",field="seed",protocol="anthropic"} 1`,
		`switchyard_dropped_fields_total{endpoint="chat_completions",field="parallel_tool_calls",protocol="gemini"} 1`,
	} {
		if !strings.Contains(string(page), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

// droppedFields waits for a request's call-log row and reads its
// dropped_fields.
func droppedFields(t *testing.T, e *gatewaytest.Env, requestID string) []string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var got pq.StringArray
		err := e.Store.DB().QueryRowContext(context.Background(), `SELECT dropped_fields FROM call_logs WHERE request_id = $1`, requestID).Scan(&got)
		if err == nil {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("no call-log row for %s: %v", requestID, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
