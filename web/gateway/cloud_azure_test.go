package gateway_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"switchyard/e2e/fakevendor"
	"switchyard/routing/config"
	"switchyard/web/gateway/gatewaytest"
)

// cloudPrices are the deployments' prices in the cloud journeys.
var cloudPrices = config.Prices{InputMicros: 2 * config.Unit, OutputMicros: 8 * config.Unit, Currency: "USD"}

// azureWorld: an Azure provider with two api-keys and one with an Entra
// credential, each deploying "gpt4o-prod"; logic model "cloud" on the first
// and "entra" on the second; group default serves cloud in standard and
// entra in deep. Entra tokens live 5 min 2 s, so the gateway (which renews
// 5 min before expiry) renews them after 2 s.
func azureWorld(t *testing.T) (*gatewaytest.Env, string) {
	e := gatewaytest.New(t, gatewaytest.Options{Fake: fakevendor.Options{EntraTokenTTL: 5*time.Minute + 2*time.Second}})
	b := e.Build()
	b.CloudProvider(config.Provider{Name: "azure-east", Protocol: config.ProtocolAzure, APIVersion: "2024-10-21"}, "azure-key-one-0001", "azure-key-two-0002")
	b.CloudProvider(config.Provider{Name: "azure-entra", Protocol: config.ProtocolAzure, APIVersion: "2024-10-21", AuthURL: e.FakeURL},
		"entra:tenant-1:client-app-1:client-secret-value-01")
	caps := config.Capabilities{Tools: true}
	b.Model(config.LogicModel{Code: "cloud", Kind: config.KindChat}, config.Deployment{Provider: "azure-east", UpstreamModel: "gpt4o-prod", Weight: 100, Enabled: true, Prices: cloudPrices, Capabilities: caps})
	b.Model(config.LogicModel{Code: "entra", Kind: config.KindChat}, config.Deployment{Provider: "azure-entra", UpstreamModel: "gpt4o-entra", Weight: 100, Enabled: true, Prices: cloudPrices, Capabilities: caps})
	b.Group("default", map[config.TierName][]config.Candidate{
		config.TierFast: {{LogicModel: "cloud", Weight: 100}}, config.TierStandard: {{LogicModel: "cloud", Weight: 100}}, config.TierDeep: {{LogicModel: "entra", Weight: 100}}})
	_, key := b.Caller(config.Caller{Name: "app", RouteGroup: "default"})
	e.Publish("azure world")
	return e, key
}

func TestAzureJourney(t *testing.T) {
	t.Parallel()
	e, key := azureWorld(t)
	client := sdk(e, key)
	ctx := context.Background()
	ask := func(model, text string) openai.ChatCompletionNewParams {
		return openai.ChatCompletionNewParams{Model: model, Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(text)}}
	}

	t.Run("non-stream with usage and cost", func(t *testing.T) {
		var httpResp *http.Response
		resp, err := client.Chat.Completions.New(ctx, ask("standard", "hello azure"), option.WithResponseInto(&httpResp))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(resp.Choices[0].Message.Content, "gpt4o-prod") || resp.Usage.PromptTokens == 0 {
			t.Fatalf("answer %+v", resp)
		}
		last, _ := e.Fake.LastRequest("gpt4o-prod")
		if last.Path != "/openai/deployments/gpt4o-prod/chat/completions" || last.RawQuery != "api-version=2024-10-21" || !strings.HasPrefix(last.Header.Get("Api-Key"), "azure-key-") {
			t.Fatalf("upstream %s?%s api-key %q", last.Path, last.RawQuery, last.Header.Get("Api-Key"))
		}
		cloudCostRecorded(t, e, httpResp.Header.Get("X-Request-Id"), "azure-east")
	})

	t.Run("stream", func(t *testing.T) {
		stream := client.Chat.Completions.NewStreaming(ctx, ask("standard", "stream from azure"))
		acc := openai.ChatCompletionAccumulator{}
		for stream.Next() {
			acc.AddChunk(stream.Current())
		}
		if err := stream.Err(); err != nil || !strings.Contains(acc.Choices[0].Message.Content, "gpt4o-prod") {
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
		if len(calls) != 1 || calls[0].Function.Name != "get_weather" || !strings.Contains(calls[0].Function.Arguments, "Oslo") {
			t.Fatalf("tool calls %+v", calls)
		}
	})

	t.Run("throttled key cooled while the next serves", func(t *testing.T) {
		e.Fake.SetRules(fakevendor.Rule{Key: "azure-key-one-0001", Fault: fakevendor.Fault{Status: 429, RetryAfter: 30 * time.Second}})
		defer e.Fake.SetRules()
		before := e.Fake.CountKey("azure-key-one-0001")
		for i := range 4 {
			if _, err := client.Chat.Completions.New(ctx, ask("standard", "busy")); err != nil {
				t.Fatalf("call %d: %v", i, err)
			}
		}
		if n := e.Fake.CountKey("azure-key-one-0001") - before; n > 1 {
			t.Fatalf("the throttled key was tried %d times; it should rest after the first 429", n)
		}
	})

	t.Run("Entra token renewed before expiry without a failed call", func(t *testing.T) {
		for i := range 2 {
			if _, err := client.Chat.Completions.New(ctx, ask("deep", "entra")); err != nil {
				t.Fatalf("call %d: %v", i, err)
			}
		}
		if n := e.Fake.EntraTokensIssued(); n != 1 {
			t.Fatalf("tokens issued %d, want 1 (cached)", n)
		}
		time.Sleep(2100 * time.Millisecond)
		if _, err := client.Chat.Completions.New(ctx, ask("deep", "entra again")); err != nil {
			t.Fatalf("after renewal: %v", err)
		}
		if n := e.Fake.EntraTokensIssued(); n != 2 {
			t.Fatalf("tokens issued %d, want a renewal", n)
		}
		if last, _ := e.Fake.LastRequest("gpt4o-entra"); last.Key != "entra:client-app-1" || last.Header.Get("Api-Key") != "" {
			t.Fatalf("upstream credential: key %q", last.Key)
		}
	})
}

// cloudCostRecorded checks the call log of requestID: served by provider,
// with its usage and the cost of that usage at cloudPrices.
func cloudCostRecorded(t *testing.T, e *gatewaytest.Env, requestID, provider string) {
	t.Helper()
	db := e.Store.DB()
	waitRow(t, db, requestID)
	var prompt, completion, cost int64
	var prov string
	if err := db.QueryRow(`SELECT prompt_tokens, completion_tokens, cost_micros, provider FROM call_logs WHERE request_id = $1`, requestID).
		Scan(&prompt, &completion, &cost, &prov); err != nil {
		t.Fatal(err)
	}
	if prov != provider || prompt == 0 || completion == 0 || cost != cloudPrices.CostMicros(prompt, completion, 0) {
		t.Fatalf("call log: provider %s, %d/%d tokens, cost %d", prov, prompt, completion, cost)
	}
}
