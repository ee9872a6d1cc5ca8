package gateway_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/tidwall/gjson"

	"switchyard/e2e/fakevendor"
	"switchyard/routing/config"
	"switchyard/store"
	"switchyard/web/gateway/gatewaytest"
	"switchyard/web/webtest"
)

// bedrockModel is a cross-region inference profile id, as operators deploy them.
const bedrockModel = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"

// bedrockWorld: a Bedrock provider (us-east-1) with two AWS credentials,
// logic model "claude" on it, and in deep a candidate list of claude first
// then "backup" on an Azure provider, so failover crosses kinds. Claude
// declares thinking, so a thinking request (routed to deep) is served by it.
func bedrockWorld(t *testing.T) (*gatewaytest.Env, string) {
	e := gatewaytest.New(t)
	b := e.Build()
	b.CloudProvider(config.Provider{Name: "bedrock-use1", Protocol: config.ProtocolBedrock, Region: "us-east-1"},
		"AKIAONE0001:fake-secret-AKIAONE0001", "AKIATWO0002:fake-secret-AKIATWO0002:session-token-2")
	b.CloudProvider(config.Provider{Name: "azure-east", Protocol: config.ProtocolAzure, APIVersion: "2024-10-21"}, "azure-key-one-0001")
	caps := config.Capabilities{Tools: true}
	b.Model(config.LogicModel{Code: "claude", Kind: config.KindChat}, config.Deployment{Provider: "bedrock-use1", UpstreamModel: bedrockModel, Weight: 100, Enabled: true, Prices: cloudPrices,
		Capabilities: config.Capabilities{Tools: true, Thinking: true}})
	b.Model(config.LogicModel{Code: "backup", Kind: config.KindChat}, config.Deployment{Provider: "azure-east", UpstreamModel: "gpt4o-prod", Weight: 100, Enabled: true, Prices: cloudPrices, Capabilities: caps})
	claude := []config.Candidate{{LogicModel: "claude", Weight: 100}}
	b.Group("default", map[config.TierName][]config.Candidate{config.TierFast: claude, config.TierStandard: claude,
		config.TierDeep: {{LogicModel: "claude", Priority: 1, Weight: 100}, {LogicModel: "backup", Priority: 2, Weight: 100}}})
	_, key := b.Caller(config.Caller{Name: "app", RouteGroup: "default"})
	e.Publish("bedrock world")
	return e, key
}

func TestBedrockJourney(t *testing.T) {
	t.Parallel()
	e, key := bedrockWorld(t)
	client := sdk(e, key)
	ctx := context.Background()
	ask := func(model, text string) openai.ChatCompletionNewParams {
		return openai.ChatCompletionNewParams{Model: model, Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(text)}}
	}

	t.Run("non-stream, signed, with usage and cost", func(t *testing.T) {
		var httpResp *http.Response
		resp, err := client.Chat.Completions.New(ctx, ask("standard", "hello bedrock"), option.WithResponseInto(&httpResp))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(resp.Choices[0].Message.Content, bedrockModel) {
			t.Fatalf("answer %+v", resp)
		}
		last, _ := e.Fake.LastRequest(bedrockModel)
		if !strings.HasSuffix(last.Path, "/converse") || !strings.HasPrefix(last.Header.Get("Authorization"), "AWS4-HMAC-SHA256 Credential=AKIA") {
			t.Fatalf("upstream %s %q", last.Path, last.Header.Get("Authorization"))
		}
		cloudCostRecorded(t, e, httpResp.Header.Get("X-Request-Id"), "bedrock-use1")
	})

	t.Run("stream through the event-stream framing", func(t *testing.T) {
		stream := client.Chat.Completions.NewStreaming(ctx, ask("standard", "stream from bedrock"))
		acc := openai.ChatCompletionAccumulator{}
		for stream.Next() {
			acc.AddChunk(stream.Current())
		}
		if err := stream.Err(); err != nil || !strings.Contains(acc.Choices[0].Message.Content, bedrockModel) {
			t.Fatalf("stream %v: %+v", err, acc.Choices)
		}
	})

	t.Run("tool call", func(t *testing.T) {
		p := ask("standard", "call tool get_weather {\"city\":\"Oslo\"}")
		p.Tools = []openai.ChatCompletionToolUnionParam{openai.ChatCompletionFunctionTool(openai.FunctionDefinitionParam{Name: "get_weather", Parameters: openai.FunctionParameters{"type": "object"}})}
		resp, err := client.Chat.Completions.New(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		calls := resp.Choices[0].Message.ToolCalls
		if len(calls) != 1 || calls[0].Function.Name != "get_weather" || !strings.Contains(calls[0].Function.Arguments, "Oslo") || resp.Choices[0].FinishReason != "tool_calls" {
			t.Fatalf("tool calls %+v", resp.Choices[0])
		}
	})

	t.Run("throttled credential cooled while the next serves", func(t *testing.T) {
		e.Fake.SetRules(fakevendor.Rule{Key: "AKIAONE0001", Fault: fakevendor.Fault{Status: 429, RetryAfter: 30 * time.Second}})
		defer e.Fake.SetRules()
		before := e.Fake.CountKey("AKIAONE0001")
		for i := range 4 {
			if _, err := client.Chat.Completions.New(ctx, ask("standard", "busy")); err != nil {
				t.Fatalf("call %d: %v", i, err)
			}
		}
		if n := e.Fake.CountKey("AKIAONE0001") - before; n > 1 {
			t.Fatalf("the throttled credential was tried %d times; it should rest after the first ThrottlingException", n)
		}
	})

	t.Run("failover from Bedrock to Azure", func(t *testing.T) {
		e.Fake.SetRules(fakevendor.Rule{Model: bedrockModel, Fault: fakevendor.Fault{Status: 503}})
		defer e.Fake.SetRules()
		var httpResp *http.Response
		resp, err := client.Chat.Completions.New(ctx, ask("deep", "fail over"), option.WithResponseInto(&httpResp))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(resp.Choices[0].Message.Content, "gpt4o-prod") || httpResp.Header.Get("X-Switchyard-Provider") != "azure-east" ||
			httpResp.Header.Get("X-Switchyard-Attempts") != "2" {
			t.Fatalf("served by %q after %s attempts: %q", httpResp.Header.Get("X-Switchyard-Provider"), httpResp.Header.Get("X-Switchyard-Attempts"), resp.Choices[0].Message.Content)
		}
	})
}

// TestBedrockMessagesInvoke: the Anthropic front door to Claude on
// Bedrock goes by the invoke path, so Messages-only fields (cache_control,
// thinking) reach Bedrock as the caller sent them, streamed or not, and the
// call's usage is recorded.
func TestBedrockMessagesInvoke(t *testing.T) {
	t.Parallel()
	e, key := bedrockWorld(t)
	var cp capture
	client := anthropicSDK(e, key, cp.option())
	ctx := context.Background()
	params := anthropic.MessageNewParams{
		Model: "standard", MaxTokens: 2048,
		System:   []anthropic.TextBlockParam{{Text: "be brief", CacheControl: anthropic.NewCacheControlEphemeralParam()}},
		Thinking: anthropic.ThinkingConfigParamOfEnabled(1024),
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hello claude on bedrock"))},
	}
	arrived := func(t *testing.T, op string) {
		t.Helper()
		last, _ := e.Fake.LastRequest(bedrockModel)
		sent := gjson.ParseBytes(last.Body)
		if !strings.HasSuffix(last.Path, "/"+op) || !strings.HasPrefix(last.Header.Get("Authorization"), "AWS4-HMAC-SHA256 Credential=AKIA") {
			t.Fatalf("upstream %s %q", last.Path, last.Header.Get("Authorization"))
		}
		if sent.Get("anthropic_version").String() != "bedrock-2023-05-31" || sent.Get("model").Exists() || sent.Get("stream").Exists() {
			t.Fatalf("invoke body %s", last.Body)
		}
		for _, path := range []string{"system", "thinking"} {
			if got, want := sent.Get(path).Raw, gjson.GetBytes(cp.body, path).Raw; got != want || want == "" {
				t.Errorf("%s arrived as %s, the caller sent %s", path, got, want)
			}
		}
		if sent.Get("system.0.cache_control.type").String() != "ephemeral" || sent.Get("thinking.budget_tokens").Int() != 1024 {
			t.Errorf("Messages-only fields lost: %s", last.Body)
		}
	}

	t.Run("non-stream", func(t *testing.T) {
		msg, err := client.Messages.New(ctx, params)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(textOf(msg), bedrockModel) || msg.Usage.OutputTokens == 0 {
			t.Fatalf("answer %+v", msg)
		}
		arrived(t, "invoke")
		cloudCostRecorded(t, e, cp.header.Get("X-Request-Id"), "bedrock-use1")
	})

	t.Run("stream", func(t *testing.T) {
		msg, types, err := accumulate(t, client.Messages.NewStreaming(ctx, params))
		if err != nil || !strings.Contains(textOf(&msg), bedrockModel) || types[0] != "message_start" || types[len(types)-1] != "message_stop" {
			t.Fatalf("stream %v: %v %+v", err, types, msg)
		}
		arrived(t, "invoke-with-response-stream")
		cloudCostRecorded(t, e, cp.header.Get("X-Request-Id"), "bedrock-use1")
	})

	t.Run("Bedrock unavailable: the Messages caller fails over to Azure, translated", func(t *testing.T) {
		e.Fake.SetRules(fakevendor.Rule{Model: bedrockModel, Fault: fakevendor.Fault{Status: 503}})
		defer e.Fake.SetRules()
		p := params
		p.Model, p.Thinking = "deep", anthropic.ThinkingConfigParamUnion{}
		msg, types, err := accumulate(t, client.Messages.NewStreaming(ctx, p))
		if err != nil || !strings.Contains(textOf(&msg), "gpt4o-prod") || types[len(types)-1] != "message_stop" {
			t.Fatalf("stream %v: %v %q", err, types, textOf(&msg))
		}
		if cp.header.Get("X-Switchyard-Provider") != "azure-east" || cp.header.Get("X-Switchyard-Attempts") != "2" {
			t.Fatalf("served by %q after %s attempts", cp.header.Get("X-Switchyard-Provider"), cp.header.Get("X-Switchyard-Attempts"))
		}
	})

	t.Run("a chat caller keeps Converse", func(t *testing.T) {
		oc := sdk(e, key)
		if _, err := oc.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "standard",
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hello")}}); err != nil {
			t.Fatal(err)
		}
		if last, _ := e.Fake.LastRequest(bedrockModel); !strings.HasSuffix(last.Path, "/converse") {
			t.Fatalf("upstream %s", last.Path)
		}
	})
}

// TestBedrockAndAzureOnboardingSettings: the wizard's cloud templates ask
// for their own settings only, pre-filled from the catalogue; a review
// without the region (Bedrock) or the api-version (Azure) re-renders the
// form with 422 and creates nothing; with them, the review shows them.
func TestBedrockAndAzureOnboardingSettings(t *testing.T) {
	t.Parallel()
	env := webtest.New(t)
	c := env.Login(t, "admin", store.RoleAdmin)
	rev0, _ := env.Store.DraftRevision(t.Context())

	res, doc := c.Get("/onboarding/templates/aws-bedrock")
	onbStatus(t, res, http.StatusOK, doc)
	if v := webtest.TestID(doc, "region").AttrOr("value", ""); v != "us-east-1" || webtest.TestID(doc, "api-version").Length() != 0 {
		t.Fatalf("bedrock form: region %q, api-version field shown %v", v, webtest.TestID(doc, "api-version").Length() != 0)
	}
	bedrock := onbFormValues(doc, `[data-testid="onboarding-form"]`)
	bedrock.Set("key", "AKIAONBOARD001:fake-secret-AKIAONBOARD001")

	res, doc = c.Get("/onboarding/templates/azure-openai")
	onbStatus(t, res, http.StatusOK, doc)
	if v := webtest.TestID(doc, "api-version").AttrOr("value", ""); v != "2024-10-21" || webtest.TestID(doc, "region").Length() != 0 {
		t.Fatalf("azure form: api-version %q, region field shown %v", v, webtest.TestID(doc, "region").Length() != 0)
	}
	azure := onbFormValues(doc, `[data-testid="onboarding-form"]`)
	azure.Set("key", "azure-key-onboard-0001")

	for name, tc := range map[string]struct {
		form  url.Values
		field string
	}{"bedrock": {bedrock, "region"}, "azure": {azure, "api_version"}} {
		v := url.Values{}
		for k, vs := range tc.form {
			v[k] = vs
		}
		v.Set(tc.field, " ")
		res, doc := c.PostForm("/onboarding/review", v)
		onbStatus(t, res, http.StatusUnprocessableEntity, doc)
		if webtest.TestID(doc, "error-"+tc.field).Length() == 0 {
			t.Errorf("%s without %s: no error on the field", name, tc.field)
		}
	}
	if rev, _ := env.Store.DraftRevision(t.Context()); rev != rev0 {
		t.Fatalf("a refused review changed the draft: %d → %d", rev0, rev)
	}

	bedrock.Set("region", "eu-west-1")
	res, doc = c.PostForm("/onboarding/review", bedrock)
	onbStatus(t, res, http.StatusOK, doc)
	if got := onbText(doc, "review-region"); got != "eu-west-1" {
		t.Errorf("review shows region %q", got)
	}
	if v := doc.Find(`input[type=hidden][name=region]`).AttrOr("value", ""); v != "eu-west-1" {
		t.Errorf("the review carries region %q to the create step", v)
	}
	res, doc = c.PostForm("/onboarding/review", azure)
	onbStatus(t, res, http.StatusOK, doc)
	if got := onbText(doc, "review-api-version"); got != "2024-10-21" {
		t.Errorf("review shows api-version %q", got)
	}
}
