package gateway_test

import (
	"context"
	"crypto/rsa"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/tidwall/gjson"

	"switchyard/e2e/fakevendor"
	"switchyard/routing/adapter"
	"switchyard/routing/config"
	"switchyard/store"
	"switchyard/web/gateway/gatewaytest"
	"switchyard/web/webtest"
)

// Vertex AI's publisher models in the journey: a Gemini model and a
// Claude model with its Vertex version suffix.
const (
	vertexGemini = "gemini-2.5-flash"
	vertexClaude = "claude-sonnet-4-5@20250929"
	vertexSAOne  = "gateway-one@proj-one.iam.gserviceaccount.com"
	vertexSATwo  = "gateway-two@proj-one.iam.gserviceaccount.com"
)

// vertexWorld: a Vertex AI provider (proj-one, us-central1, the fake's
// token endpoint) with two service accounts, logic models "gem" (Gemini)
// and "claude" (Claude) on it, and "backup" on an Azure provider; group
// default serves claude in fast, gem in standard and gem then backup in
// deep, so failover crosses kinds. Tokens live 5 min 2 s, so the gateway
// (which renews 5 min before expiry) renews them after 2 s.
func vertexWorld(t *testing.T) (*gatewaytest.Env, string) {
	accounts := map[string]*rsa.PublicKey{}
	var files []string
	for _, email := range []string{vertexSAOne, vertexSATwo} {
		file, pub, err := fakevendor.ServiceAccount(email, "proj-one")
		if err != nil {
			t.Fatal(err)
		}
		accounts[email] = pub
		files = append(files, file)
	}
	e := gatewaytest.New(t, gatewaytest.Options{Fake: fakevendor.Options{VertexAccounts: accounts, VertexTokenTTL: 5*time.Minute + 2*time.Second}})
	b := e.Build()
	b.CloudProvider(config.Provider{Name: "vertex-usc1", Protocol: config.ProtocolVertex, Project: "proj-one", Region: "us-central1", AuthURL: e.FakeURL + "/token"}, files...)
	b.CloudProvider(config.Provider{Name: "azure-east", Protocol: config.ProtocolAzure, APIVersion: "2024-10-21"}, "azure-key-one-0001")
	caps := config.Capabilities{Tools: true}
	b.Model(config.LogicModel{Code: "gem", Kind: config.KindChat}, config.Deployment{Provider: "vertex-usc1", UpstreamModel: vertexGemini, Weight: 100, Enabled: true, Prices: cloudPrices, Capabilities: caps})
	b.Model(config.LogicModel{Code: "claude", Kind: config.KindChat}, config.Deployment{Provider: "vertex-usc1", UpstreamModel: vertexClaude, Weight: 100, Enabled: true, Prices: cloudPrices, Capabilities: caps})
	b.Model(config.LogicModel{Code: "backup", Kind: config.KindChat}, config.Deployment{Provider: "azure-east", UpstreamModel: "gpt4o-prod", Weight: 100, Enabled: true, Prices: cloudPrices, Capabilities: caps})
	b.Group("default", map[config.TierName][]config.Candidate{
		config.TierFast:     {{LogicModel: "claude", Weight: 100}},
		config.TierStandard: {{LogicModel: "gem", Weight: 100}},
		config.TierDeep:     {{LogicModel: "gem", Priority: 1, Weight: 100}, {LogicModel: "backup", Priority: 2, Weight: 100}}})
	_, key := b.Caller(config.Caller{Name: "app", RouteGroup: "default"})
	e.Publish("vertex world")
	return e, key
}

const vertexPath = "/v1/projects/proj-one/locations/us-central1/publishers/"

func TestVertexJourney(t *testing.T) {
	t.Parallel()
	e, key := vertexWorld(t)
	client := sdk(e, key)
	ctx := context.Background()
	ask := func(model, text string) openai.ChatCompletionNewParams {
		return openai.ChatCompletionNewParams{Model: model, Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(text)}}
	}
	bearer := func(r fakevendor.Request) bool {
		return strings.HasPrefix(r.Header.Get("Authorization"), "Bearer ya29.fake-vertex-")
	}

	t.Run("Gemini non-stream with usage and cost", func(t *testing.T) {
		var httpResp *http.Response
		resp, err := client.Chat.Completions.New(ctx, ask("standard", "hello vertex"), option.WithResponseInto(&httpResp))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(resp.Choices[0].Message.Content, vertexGemini) || resp.Usage.PromptTokens == 0 {
			t.Fatalf("answer %+v", resp)
		}
		last, _ := e.Fake.LastRequest(vertexGemini)
		if last.Path != vertexPath+"google/models/"+vertexGemini+":generateContent" || !bearer(last) || last.Header.Get("X-Goog-Api-Key") != "" {
			t.Fatalf("upstream %s, authorization %q", last.Path, last.Header.Get("Authorization"))
		}
		cloudCostRecorded(t, e, httpResp.Header.Get("X-Request-Id"), "vertex-usc1")
	})

	t.Run("Gemini stream", func(t *testing.T) {
		stream := client.Chat.Completions.NewStreaming(ctx, ask("standard", "stream from vertex"))
		acc := openai.ChatCompletionAccumulator{}
		for stream.Next() {
			acc.AddChunk(stream.Current())
		}
		if err := stream.Err(); err != nil || !strings.Contains(acc.Choices[0].Message.Content, vertexGemini) {
			t.Fatalf("stream %v: %+v", err, acc.Choices)
		}
		if last, _ := e.Fake.LastRequest(vertexGemini); !strings.HasSuffix(last.Path, ":streamGenerateContent") || last.RawQuery != "alt=sse" {
			t.Fatalf("upstream %s?%s", last.Path, last.RawQuery)
		}
	})

	t.Run("Claude on rawPredict, non-stream and stream, with cost", func(t *testing.T) {
		var httpResp *http.Response
		resp, err := client.Chat.Completions.New(ctx, ask("fast", "hello claude on vertex"), option.WithResponseInto(&httpResp))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(resp.Choices[0].Message.Content, vertexClaude) {
			t.Fatalf("answer %+v", resp)
		}
		last, _ := e.Fake.LastRequest(vertexClaude)
		body := gjson.ParseBytes(last.Body)
		if last.Path != vertexPath+"anthropic/models/"+vertexClaude+":rawPredict" || !bearer(last) || last.Header.Get("X-Api-Key") != "" ||
			body.Get("anthropic_version").Str != "vertex-2023-10-16" || body.Get("model").Exists() {
			t.Fatalf("upstream %s, body %s", last.Path, last.Body)
		}
		cloudCostRecorded(t, e, httpResp.Header.Get("X-Request-Id"), "vertex-usc1")

		stream := client.Chat.Completions.NewStreaming(ctx, ask("fast", "stream claude on vertex"))
		acc := openai.ChatCompletionAccumulator{}
		for stream.Next() {
			acc.AddChunk(stream.Current())
		}
		if err := stream.Err(); err != nil || !strings.Contains(acc.Choices[0].Message.Content, vertexClaude) {
			t.Fatalf("stream %v: %+v", err, acc.Choices)
		}
		if last, _ := e.Fake.LastRequest(vertexClaude); !strings.HasSuffix(last.Path, ":streamRawPredict") {
			t.Fatalf("upstream %s", last.Path)
		}
	})

	t.Run("Anthropic front door passes Messages fields to Claude on Vertex", func(t *testing.T) {
		native := `{"model":"fast","max_tokens":300,"top_k":5,
		  "system":[{"type":"text","text":"sys","cache_control":{"type":"ephemeral"}}],
		  "messages":[{"role":"user","content":[{"type":"text","text":"q","cache_control":{"type":"ephemeral","ttl":"1h"}}]}]}`
		status, _, ans := postMessages(t, e, "/v1/messages", native, "x-api-key", key)
		if status != http.StatusOK || ans.Get("type").Str != "message" {
			t.Fatalf("native: %d %s", status, ans.Raw)
		}
		sent := gjson.ParseBytes(e.Fake.LastBody(vertexClaude))
		gjson.Parse(native).ForEach(func(k, v gjson.Result) bool {
			if k.Str != "model" && sent.Get(k.Str).Raw != v.Raw {
				t.Errorf("%s changed on the way: %s → %s", k.Str, v.Raw, sent.Get(k.Str).Raw)
			}
			return true
		})
		if sent.Get("model").Exists() || sent.Get("anthropic_version").Str != "vertex-2023-10-16" {
			t.Fatalf("Vertex body %s", sent.Raw)
		}
	})

	t.Run("tool call", func(t *testing.T) {
		for _, tier := range []string{"standard", "fast"} {
			p := ask(tier, "call tool get_weather {\"city\":\"Oslo\"}")
			p.Tools = []openai.ChatCompletionToolUnionParam{openai.ChatCompletionFunctionTool(openai.FunctionDefinitionParam{Name: "get_weather", Parameters: openai.FunctionParameters{"type": "object"}})}
			resp, err := client.Chat.Completions.New(ctx, p)
			if err != nil {
				t.Fatal(err)
			}
			calls := resp.Choices[0].Message.ToolCalls
			if len(calls) != 1 || calls[0].Function.Name != "get_weather" || !strings.Contains(calls[0].Function.Arguments, "Oslo") || resp.Choices[0].FinishReason != "tool_calls" {
				t.Fatalf("%s: tool calls %+v", tier, resp.Choices[0])
			}
		}
	})

	t.Run("RESOURCE_EXHAUSTED cools the credential while the next serves", func(t *testing.T) {
		e.Fake.SetRules(fakevendor.Rule{Key: vertexSAOne, Fault: fakevendor.Fault{Status: 429, RetryAfter: 30 * time.Second}})
		defer e.Fake.SetRules()
		before := e.Fake.CountKey(vertexSAOne)
		for i := range 4 {
			if _, err := client.Chat.Completions.New(ctx, ask("standard", "busy")); err != nil {
				t.Fatalf("call %d: %v", i, err)
			}
		}
		if n := e.Fake.CountKey(vertexSAOne) - before; n > 1 {
			t.Fatalf("the throttled credential was tried %d times; it should rest after the first RESOURCE_EXHAUSTED", n)
		}
		if last, _ := e.Fake.LastRequest(vertexGemini); last.Key != vertexSATwo {
			t.Fatalf("served with %q, want the second service account", last.Key)
		}
	})

	t.Run("failover from Vertex to Azure", func(t *testing.T) {
		e.Fake.SetRules(fakevendor.Rule{Model: vertexGemini, Fault: fakevendor.Fault{Status: 503}})
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
		// The call log's attempt trail names the Vertex attempt and its class.
		trail := gjson.Get(waitRow(t, e.Store.DB(), httpResp.Header.Get("X-Request-Id")).Attempts.String, "attempts")
		if len(trail.Array()) != 2 || trail.Get("0.provider").Str != "vertex-usc1" || trail.Get("0.class").Str != "server" || trail.Get("0.status").Int() != 503 ||
			!strings.HasPrefix(trail.Get("0.key").Str, config.SecretSet) || trail.Get("1.provider").Str != "azure-east" {
			t.Fatalf("attempt trail %s", trail.Raw)
		}
	})

	t.Run("token renewed before expiry without a failed call", func(t *testing.T) {
		issued := e.Fake.VertexTokensIssued()
		if issued == 0 || issued > 2 {
			t.Fatalf("tokens issued %d, want one per service account used (cached)", issued)
		}
		time.Sleep(2100 * time.Millisecond)
		for i := range 2 {
			if _, err := client.Chat.Completions.New(ctx, ask("fast", "after renewal")); err != nil {
				t.Fatalf("call %d after renewal: %v", i, err)
			}
		}
		if n := e.Fake.VertexTokensIssued(); n <= issued {
			t.Fatalf("tokens issued %d, want a renewal after %d", n, issued)
		}
		if n := e.Fake.VertexTokensRefused(); n != 0 {
			t.Fatalf("Vertex refused %d calls for their token", n)
		}
	})

	t.Run("a token Vertex refuses is fetched anew once", func(t *testing.T) {
		e.Fake.SetRules(fakevendor.Rule{Model: vertexGemini, Fault: fakevendor.Fault{Status: 401, FailTimes: 1}})
		defer e.Fake.SetRules()
		issued := e.Fake.VertexTokensIssued()
		var httpResp *http.Response
		if _, err := client.Chat.Completions.New(ctx, ask("standard", "refused token"), option.WithResponseInto(&httpResp)); err != nil {
			t.Fatal(err)
		}
		if n := e.Fake.VertexTokensIssued(); n != issued+1 || httpResp.Header.Get("X-Switchyard-Attempts") != "1" {
			t.Fatalf("tokens issued %d (was %d), attempts %s", n, issued, httpResp.Header.Get("X-Switchyard-Attempts"))
		}
	})
}

// TestVertexConsole: an operator adds a Vertex AI provider in the console
// with only its own fields (project, location, token endpoint, no base
// URL); a bad token endpoint is refused at its own field; a service
// account's key file (line breaks and all) joins the key pool and is shown
// only as set — never its private key, in the form, the list or the
// export; the dry-run refuses a Vertex provider without a project.
func TestVertexConsole(t *testing.T) {
	t.Parallel()
	e := gatewaytest.New(t)
	ctx := context.Background()
	ops := webtest.LoginAt(t, e.Store, e.URL, "ops", store.RoleAdmin)
	form := url.Values{"name": {"vx"}, "protocol": {"vertex"}, "base_url": {""}, "enabled": {"on"}, "timeout_ms": {"60000"},
		"project": {"proj-one"}, "location": {"europe-west4"}, "token_url": {"ftp://token"}, "region": {"us-east-1"}, "api_version": {"2024-10-21"}}
	res, doc, _ := ops.PostFormRaw("/providers", form)
	if res.StatusCode != http.StatusUnprocessableEntity || doc.Find(".has-error #f-token_url").Length() != 1 || doc.Find(".has-error #f-auth_url").Length() != 0 {
		t.Fatalf("a bad token endpoint: %d, errors %q", res.StatusCode, doc.Find(".has-error").Text())
	}
	form.Set("token_url", e.FakeURL+"/token")
	if res, _ := ops.PostForm("/providers", form); res.StatusCode != http.StatusOK {
		t.Fatalf("save: %d", res.StatusCode)
	}
	snap, _, err := e.Store.Draft(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var p config.Provider
	for _, x := range snap.Providers {
		if x.Name == "vx" {
			p = x
		}
	}
	if p.Protocol != config.ProtocolVertex || p.Project != "proj-one" || p.Region != "europe-west4" || p.AuthURL != e.FakeURL+"/token" || p.BaseURL != "" || p.APIVersion != "" {
		t.Fatalf("stored %+v", p)
	}

	file, _, err := fakevendor.ServiceAccount("svc@proj-one.iam.gserviceaccount.com", "proj-one")
	if err != nil {
		t.Fatal(err)
	}
	if res, _ := ops.PostForm("/providers/"+itoa(p.ID)+"/keys", url.Values{"label": {"svc"}, "secret": {file}}); res.StatusCode != http.StatusOK {
		t.Fatalf("add key: %d", res.StatusCode)
	}
	for _, page := range []string{"/providers/" + itoa(p.ID) + "/edit", "/providers", "/config/export"} {
		_, _, raw := ops.GetRaw(page)
		if strings.Contains(raw, "PRIVATE KEY") || strings.Contains(raw, "MII") {
			t.Fatalf("%s shows the service account's key", page)
		}
		if page == "/providers" && !strings.Contains(raw, config.SecretSet) {
			t.Fatalf("%s does not show the key file as set", page)
		}
	}

	form.Set("project", "")
	if res, _ := ops.PostForm("/providers/"+itoa(p.ID), form); res.StatusCode != http.StatusOK {
		t.Fatalf("save without project: %d", res.StatusCode)
	}
	snap, _, err = e.Store.Draft(ctx)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, f := range config.DryRun(snap, adapter.Support()).Findings {
		if f.Check == config.CheckCloudSettings && f.Object.Name == "vx" && f.Object.Field == "project" {
			found = true
		}
	}
	if !found {
		t.Fatal("the dry-run does not name the missing project")
	}
}
