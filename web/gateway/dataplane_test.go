package gateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"

	"switchyard/e2e/fakevendor"
	"switchyard/routing/config"
	"switchyard/web/gateway/gatewaytest"
)

// post sends a raw data-plane request.
func post(t *testing.T, e *gatewaytest.Env, key, path, body string, hdr ...string) (*http.Response, []byte) {
	t.Helper()
	res := send(t, e.URL, key, path, body, hdr...)
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res, b
}

// send POSTs a JSON body to base+path as the caller with key (none when
// empty), with the header pairs in hdr, and returns the answer unread.
func send(t *testing.T, base, key, path, body string, hdr ...string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, base+path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func errCode(t *testing.T, b []byte) (code, msg string) {
	t.Helper()
	var v struct {
		Error struct {
			Code    string `json:"code"`
			Message string `json:"message"`
			Type    string `json:"type"`
		} `json:"error"`
	}
	if err := json.Unmarshal(b, &v); err != nil || v.Error.Type == "" {
		t.Fatalf("not an OpenAI error object: %s", b)
	}
	return v.Error.Code, v.Error.Message
}

const hello = `{"model":"standard","messages":[{"role":"user","content":"hi"}]}`

// chainWorld: tier standard = primary (provider p1 with two keys) then
// backup (provider p2), both on the fake vendor.
func chainWorld(t *testing.T, e *gatewaytest.Env, tierTimeouts ...map[config.TierName][2]int) string {
	b := e.Build()
	b.Provider("p1", config.ProtocolOpenAI, "", "sk-p1-key-aaaa-0001", "sk-p1-key-bbbb-0002")
	b.Provider("p2", config.ProtocolOpenAI, "", "sk-p2-key-cccc-0003")
	b.Model(config.LogicModel{Code: "primary", Kind: config.KindChat}, config.Deployment{Provider: "p1", UpstreamModel: "up-primary", Weight: 100, Enabled: true})
	b.Model(config.LogicModel{Code: "backup", Kind: config.KindChat}, config.Deployment{Provider: "p2", UpstreamModel: "up-backup", Weight: 100, Enabled: true})
	chain := []config.Candidate{{LogicModel: "primary", Priority: 1, Weight: 100}, {LogicModel: "backup", Priority: 2, Weight: 100}}
	b.Group("default", map[config.TierName][]config.Candidate{config.TierFast: chain, config.TierStandard: chain, config.TierDeep: chain}, tierTimeouts...)
	_, key := b.Caller(config.Caller{Name: "app", RouteGroup: "default"})
	e.Publish("chain")
	return key
}

func TestFailoverMatrixThroughTheFakeVendor(t *testing.T) {
	t.Parallel()
	e := gatewaytest.New(t)
	key := chainWorld(t, e, map[config.TierName][2]int{config.TierStandard: {800, 500}})
	cases := []struct {
		name          string
		fault         fakevendor.Fault
		secondKey     bool // p1's second key was tried
		backup        bool // the backup candidate was tried
		breakerCounts bool
		status        int
		code          string
	}{
		{"rate_limited 429", fakevendor.Fault{Status: 429, RetryAfter: time.Second}, true, true, false, 200, ""},
		{"auth 401", fakevendor.Fault{Status: 401}, true, true, false, 200, ""},
		{"billing 402", fakevendor.Fault{Status: 402}, true, true, false, 200, ""},
		{"server 500", fakevendor.Fault{Status: 500}, false, true, true, 200, ""},
		{"timeout", fakevendor.Fault{Latency: 3 * time.Second}, false, true, true, 200, ""},
		{"content_filter", fakevendor.Fault{ContentFilter: true}, false, false, false, 400, "content_filtered"},
		{"bad_request 400", fakevendor.Fault{Status: 400}, false, false, false, 400, "invalid_request"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e.Fake.Reset()
			e.Fake.SetRules(fakevendor.Rule{Model: "up-primary", Fault: tc.fault})
			// Clear key states left by the previous case (an operator's re-enable).
			for _, id := range []int64{1, 2, 3} {
				_ = e.GW.Keys.Reenable(context.Background(), id)
			}
			before := e.GW.Breakers.Snapshot()[1]
			res, body := post(t, e, key, "/v1/chat/completions", hello)
			if res.StatusCode != tc.status {
				t.Fatalf("status %d, want %d: %s", res.StatusCode, tc.status, body)
			}
			if tc.code != "" {
				if code, _ := errCode(t, body); code != tc.code {
					t.Fatalf("code %s, want %s", code, tc.code)
				}
			}
			// Either key may go first (LRU rotation); "second key" means both were tried.
			second := e.Fake.CountKey("sk-p1-key-aaaa-0001") > 0 && e.Fake.CountKey("sk-p1-key-bbbb-0002") > 0
			if second != tc.secondKey || (e.Fake.Count("up-backup") > 0) != tc.backup {
				t.Fatalf("second key tried %v (want %v), backup tried %v (want %v)", second, tc.secondKey, e.Fake.Count("up-backup") > 0, tc.backup)
			}
			after := e.GW.Breakers.Snapshot()[1]
			if counted := after.Failures > before.Failures; counted != tc.breakerCounts {
				t.Fatalf("breaker counted %v, want %v (%+v → %+v)", counted, tc.breakerCounts, before, after)
			}
		})
	}
	// Network: a provider whose port refuses connections.
	t.Run("network", func(t *testing.T) {
		e2 := gatewaytest.New(t)
		b := e2.Build()
		b.Provider("dead", config.ProtocolOpenAI, "http://127.0.0.1:1/v1", "sk-dead-key-0000-0001")
		b.Provider("live", config.ProtocolOpenAI, "", "sk-live-key-0000-0002")
		b.Model(config.LogicModel{Code: "primary", Kind: config.KindChat}, config.Deployment{Provider: "dead", UpstreamModel: "x", Weight: 100, Enabled: true})
		b.Model(config.LogicModel{Code: "backup", Kind: config.KindChat}, config.Deployment{Provider: "live", UpstreamModel: "up-backup", Weight: 100, Enabled: true})
		chain := []config.Candidate{{LogicModel: "primary", Priority: 1, Weight: 100}, {LogicModel: "backup", Priority: 2, Weight: 100}}
		b.Group("g", map[config.TierName][]config.Candidate{config.TierFast: chain, config.TierStandard: chain, config.TierDeep: chain})
		_, k := b.Caller(config.Caller{Name: "c", RouteGroup: "g"})
		e2.Publish("net")
		res, body := post(t, e2, k, "/v1/chat/completions", hello)
		if res.StatusCode != 200 || res.Header.Get("X-Switchyard-Model") != "backup" || res.Header.Get("X-Switchyard-Attempts") != "2" {
			t.Fatalf("network failover: %d %v %s", res.StatusCode, res.Header, body)
		}
	})
}

func TestExplicitModelDownNamesSkipReasonsAndNeverSubstitutes(t *testing.T) {
	t.Parallel()
	e := gatewaytest.New(t)
	key := chainWorld(t, e)
	e.Fake.SetRules(fakevendor.Rule{Model: "up-primary", Fault: fakevendor.Fault{Status: 503}})
	res, body := post(t, e, key, "/v1/chat/completions", `{"model":"primary","messages":[{"role":"user","content":"hi"}]}`)
	if res.StatusCode != http.StatusBadGateway {
		t.Fatalf("status %d: %s", res.StatusCode, body)
	}
	_, msg := errCode(t, body)
	if !strings.Contains(msg, "primary on p1/up-primary: server (HTTP 503)") {
		t.Fatalf("message does not name the failed deployment: %s", msg)
	}
	if n := e.Fake.Count("up-backup"); n != 0 {
		t.Fatalf("an explicit request was substituted: backup called %d times", n)
	}
	// Disable the only deployment: 503 no_available_model naming the skip reason.
	snap, _, _ := e.Store.Draft(context.Background())
	for _, m := range snap.LogicModels {
		if m.Code == "primary" {
			d := m.Deployments[0]
			d.Enabled = false
			if err := e.Store.UpdateDeployment(context.Background(), d.ID, d); err != nil {
				t.Fatal(err)
			}
		}
	}
	// The dry-run would refuse an unusable candidate; park the candidate's
	// tiers on backup only so the version publishes, then ask for primary.
	for _, g := range snap.RouteGroups {
		for _, tr := range g.Tiers {
			for _, c := range tr.Candidates {
				if c.LogicModel == "primary" {
					_ = e.Store.RemoveCandidate(context.Background(), c.ID)
				}
			}
		}
	}
	e.Publish("primary disabled")
	res, body = post(t, e, key, "/v1/chat/completions", `{"model":"primary","messages":[{"role":"user","content":"hi"}]}`)
	code, msg := errCode(t, body)
	if res.StatusCode != http.StatusNotFound || code != "model_not_found" {
		// primary is no longer reachable from the caller's group.
		t.Fatalf("unreachable explicit model: %d %s %s", res.StatusCode, code, msg)
	}
}

func TestTierTimeoutsCutAttempts(t *testing.T) {
	e := gatewaytest.New(t)
	key := chainWorld(t, e, map[config.TierName][2]int{config.TierStandard: {300, 200}})
	e.Fake.SetRules(fakevendor.Rule{Model: "up-primary", Fault: fakevendor.Fault{Latency: 2 * time.Second, FirstChunkDelay: 2 * time.Second}})
	start := time.Now()
	res, body := post(t, e, key, "/v1/chat/completions", hello)
	el := time.Since(start)
	if res.StatusCode != 200 || res.Header.Get("X-Switchyard-Model") != "backup" {
		t.Fatalf("%d %s", res.StatusCode, body)
	}
	if el < 300*time.Millisecond || el > 1200*time.Millisecond {
		t.Fatalf("a 300 ms tier took %v to fail over", el)
	}
	// Streams: the 200 ms first-chunk timeout.
	start = time.Now()
	res, body = post(t, e, key, "/v1/chat/completions", `{"model":"standard","stream":true,"messages":[{"role":"user","content":"hi"}]}`)
	el = time.Since(start)
	if res.StatusCode != 200 || res.Header.Get("X-Switchyard-Model") != "backup" || !bytes.HasSuffix(bytes.TrimSpace(body), []byte("data: [DONE]")) {
		t.Fatalf("stream: %d %s", res.StatusCode, body)
	}
	if el < 200*time.Millisecond || el > 1100*time.Millisecond {
		t.Fatalf("first-chunk timeout 200 ms took %v", el)
	}
}

func TestBadInputGetsA4xxErrorObject(t *testing.T) {
	t.Parallel()
	e := gatewaytest.New(t)
	key := e.Simple()
	huge := `{"model":"fast","messages":[{"role":"user","content":"` + strings.Repeat("a", 11<<20) + `"}]}`
	cases := []struct {
		name, key, body string
		status          int
		code            string
	}{
		{"malformed JSON", key, `{"model":`, 400, "invalid_request"},
		{"wrong type", key, `{"model":5,"messages":[]}`, 400, "invalid_request"},
		{"messages not array", key, `{"model":"fast","messages":"hi"}`, 400, "invalid_request"},
		{"empty messages", key, `{"model":"fast","messages":[]}`, 400, "invalid_request"},
		{"role not a string", key, `{"model":"fast","messages":[{"role":7,"content":"x"}]}`, 400, "invalid_request"},
		{"invalid UTF-8", key, "{\"model\":\"fast\",\"messages\":[{\"role\":\"user\",\"content\":\"\xff\xfe\"}]}", 400, "invalid_request"},
		{"over the body limit", key, huge, 413, "invalid_request"},
		{"no key", "", hello, 401, "invalid_api_key"},
		{"invalid key", "sy-not-a-real-key", hello, 401, "invalid_api_key"},
		{"unknown model", key, `{"model":"gpt-9","messages":[{"role":"user","content":"x"}]}`, 404, "model_not_found"},
		{"empty body", key, ``, 400, "invalid_request"},
		{"bad timeout header", key, hello, 400, "invalid_request"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var hdr []string
			if tc.name == "bad timeout header" {
				hdr = []string{"X-Request-Timeout", "soon"}
			}
			res, body := post(t, e, tc.key, "/v1/chat/completions", tc.body, hdr...)
			if res.StatusCode != tc.status {
				t.Fatalf("status %d, want %d: %.300s", res.StatusCode, tc.status, body)
			}
			if code, _ := errCode(t, body); code != tc.code {
				t.Fatalf("code %q, want %q", code, tc.code)
			}
		})
	}
	// Embeddings too.
	res, body := post(t, e, key, "/v1/embeddings", `{"model":"fast","input":[1,2,`)
	if res.StatusCode != 400 {
		t.Fatalf("embeddings malformed: %d %s", res.StatusCode, body)
	}
	if res, _ := post(t, e, key, "/v1/nope", `{}`); res.StatusCode != 404 {
		t.Fatalf("unknown endpoint: %d", res.StatusCode)
	}
}

func TestRevokedKeyIsRefusedWithinTheReloadBound(t *testing.T) {
	e := gatewaytest.New(t)
	key := e.Simple()
	if res, _ := post(t, e, key, "/v1/chat/completions", hello); res.StatusCode != 200 {
		t.Fatal("key should work first")
	}
	keys, _ := e.Store.CallerKeys(context.Background(), "app")
	if err := e.Store.RevokeCallerKey(context.Background(), keys[0].ID, "test"); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	for {
		res, _ := post(t, e, key, "/v1/chat/completions", hello)
		if res.StatusCode == http.StatusUnauthorized {
			break
		}
		if time.Since(start) > 2*time.Second {
			t.Fatalf("revoked key still accepted after %v", time.Since(start))
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("revocation effective after %v", time.Since(start).Round(time.Millisecond))
	// A new key works without a publish.
	k2, _, err := e.Store.CreateCallerKey(context.Background(), "app", "second", "test")
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(2 * time.Second)
	for {
		res, _ := post(t, e, k2, "/v1/chat/completions", hello)
		if res.StatusCode == 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("a new key is not accepted within 2 s")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// crossProtocol builds one tier per vendor protocol on the fake vendor.
func crossProtocol(t *testing.T, e *gatewaytest.Env) string {
	b := e.Build()
	b.Provider("oai", config.ProtocolOpenAI, "", "sk-oai-key-0000-0001")
	b.Provider("ant", config.ProtocolAnthropic, "", "sk-ant-key-0000-0002")
	b.Provider("gem", config.ProtocolGemini, "", "AIza-gem-key-0000-0003")
	caps := config.Capabilities{Tools: true, Vision: true, Thinking: true}
	b.Model(config.LogicModel{Code: "m-oai", Kind: config.KindChat}, config.Deployment{Provider: "oai", UpstreamModel: "gpt-x", Weight: 100, Enabled: true, Capabilities: caps})
	b.Model(config.LogicModel{Code: "m-ant", Kind: config.KindChat}, config.Deployment{Provider: "ant", UpstreamModel: "claude-x", Weight: 100, Enabled: true, Capabilities: caps})
	b.Model(config.LogicModel{Code: "m-gem", Kind: config.KindChat}, config.Deployment{Provider: "gem", UpstreamModel: "gemini-x", Weight: 100, Enabled: true, Capabilities: caps})
	b.Group("g", map[config.TierName][]config.Candidate{
		config.TierFast:     {{LogicModel: "m-oai", Weight: 100}, {LogicModel: "m-ant", Priority: 2, Weight: 100}},
		config.TierStandard: {{LogicModel: "m-ant", Weight: 100}, {LogicModel: "m-gem", Priority: 2, Weight: 100}},
		config.TierDeep:     {{LogicModel: "m-gem", Weight: 100}},
	})
	_, key := b.Caller(config.Caller{Name: "c", RouteGroup: "g"})
	e.Publish("cross")
	return key
}

func TestSDKShapesAreIdenticalAcrossProtocols(t *testing.T) {
	t.Parallel()
	e := gatewaytest.New(t)
	key := crossProtocol(t, e)
	client := sdk(e, key)
	ctx := context.Background()
	tool := openai.ChatCompletionFunctionTool(openai.FunctionDefinitionParam{Name: "lookup", Parameters: openai.FunctionParameters{"type": "object", "properties": map[string]any{}}})
	for _, model := range []string{"m-oai", "m-ant", "m-gem"} {
		t.Run(model, func(t *testing.T) {
			resp, err := client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: model, Messages: []openai.ChatCompletionMessageParamUnion{openai.SystemMessage("be brief"), openai.UserMessage("hello")}})
			if err != nil {
				t.Fatal(err)
			}
			if resp.Object != "chat.completion" || resp.Choices[0].Message.Role != "assistant" || resp.Choices[0].Message.Content == "" ||
				resp.Choices[0].FinishReason != "stop" || resp.Usage.PromptTokens == 0 || resp.Usage.CompletionTokens == 0 {
				t.Fatalf("non-stream shape: %+v", resp)
			}
			st := client.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{Model: model, Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hello")},
				StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}})
			acc := openai.ChatCompletionAccumulator{}
			for st.Next() {
				acc.AddChunk(st.Current())
			}
			if err := st.Err(); err != nil {
				t.Fatal(err)
			}
			if acc.Choices[0].Message.Content == "" || acc.Choices[0].FinishReason != "stop" || acc.Usage.CompletionTokens == 0 {
				t.Fatalf("stream shape: %+v usage %+v", acc.Choices, acc.Usage)
			}
			resp, err = client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: model, Tools: []openai.ChatCompletionToolUnionParam{tool},
				Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("please call tool")}})
			if err != nil {
				t.Fatal(err)
			}
			tc := resp.Choices[0].Message.ToolCalls
			if resp.Choices[0].FinishReason != "tool_calls" || len(tc) != 1 || tc[0].Function.Name != "lookup" || tc[0].ID == "" {
				t.Fatalf("tool call shape: %+v", resp.Choices[0])
			}
		})
	}
}

func TestFailoverAcrossProtocols(t *testing.T) {
	t.Parallel()
	e := gatewaytest.New(t)
	key := crossProtocol(t, e)
	// Anthropic 529 on the first candidate of standard → Gemini serves.
	e.Fake.SetRules(fakevendor.Rule{Model: "claude-x", Fault: fakevendor.Fault{Status: 529}})
	res, body := post(t, e, key, "/v1/chat/completions", hello)
	if res.StatusCode != 200 || res.Header.Get("X-Switchyard-Model") != "m-gem" || e.Fake.Count("claude-x") != 1 {
		t.Fatalf("529 failover: %d %v %s", res.StatusCode, res.Header, body)
	}
	// A Gemini SAFETY block is content_filtered and tries nothing else.
	e.Fake.Reset()
	e.Fake.SetRules(fakevendor.Rule{Model: "gemini-x", Fault: fakevendor.Fault{ContentFilter: true}})
	res, body = post(t, e, key, "/v1/chat/completions", `{"model":"deep","messages":[{"role":"user","content":"hi"}]}`)
	if code, _ := errCode(t, body); res.StatusCode != 400 || code != "content_filtered" || res.Header.Get("x-should-retry") != "false" {
		t.Fatalf("safety: %d %s", res.StatusCode, body)
	}
	if total := e.Fake.Stats().Requests; total != 1 {
		t.Fatalf("a content filter must not fail over; vendor saw %d requests", total)
	}
}

func TestEmbeddingsBatchedShuffledAndDimensionChecked(t *testing.T) {
	t.Parallel()
	e := gatewaytest.New(t)
	b := e.Build()
	b.Provider("oai", config.ProtocolOpenAI, "", "sk-oai-key-0000-0001")
	b.Provider("gem", config.ProtocolGemini, "", "AIza-gem-key-0000-0003")
	b.Model(config.LogicModel{Code: "emb", Kind: config.KindEmbedding, EmbeddingDimension: 8, QueryPrefix: "query: "},
		config.Deployment{Provider: "oai", UpstreamModel: "embed-x", Weight: 100, Enabled: true, EmbeddingBatchLimit: 64})
	b.Model(config.LogicModel{Code: "emb-gem", Kind: config.KindEmbedding, EmbeddingDimension: 8},
		config.Deployment{Provider: "gem", UpstreamModel: "gem-embed", Weight: 100, Enabled: true, EmbeddingBatchLimit: 50})
	chat := []config.Candidate{{LogicModel: "emb", Weight: 100}}
	b.Group("g", map[config.TierName][]config.Candidate{config.TierFast: chat, config.TierStandard: {{LogicModel: "emb-gem", Weight: 100}}, config.TierDeep: chat})
	_, key := b.Caller(config.Caller{Name: "c", RouteGroup: "g"})
	e.Publish("emb")
	e.Fake.SetRules(fakevendor.Rule{Model: "embed-x", Fault: fakevendor.Fault{ShuffleEmbeddings: true, Dimension: 8}},
		fakevendor.Rule{Model: "gem-embed", Fault: fakevendor.Fault{Dimension: 8}})
	inputs := make([]string, 1000)
	for i := range inputs {
		inputs[i] = "text number " + strings.Repeat("x", i%7) + string(rune('a'+i%26)) + strings.Repeat("y", i%13)
	}
	for _, model := range []string{"fast", "standard"} {
		body, _ := json.Marshal(map[string]any{"model": model, "input": inputs, "input_type": "query"})
		res, out := post(t, e, key, "/v1/embeddings", string(body))
		if res.StatusCode != 200 {
			t.Fatalf("%s: %d %.300s", model, res.StatusCode, out)
		}
		var v struct {
			Data []struct {
				Index     int       `json:"index"`
				Embedding []float32 `json:"embedding"`
			} `json:"data"`
		}
		if err := json.Unmarshal(out, &v); err != nil || len(v.Data) != 1000 {
			t.Fatalf("%s: %d vectors, %v", model, len(v.Data), err)
		}
		for i, d := range v.Data {
			text := inputs[i]
			if model == "fast" {
				text = "query: " + text
			}
			want := fakevendor.Vector(text, 8)
			if d.Index != i || d.Embedding[0] != want[0] || d.Embedding[7] != want[7] {
				t.Fatalf("%s: vector %d does not belong to input %d", model, d.Index, i)
			}
		}
	}
	if n := e.Fake.Count("embed-x"); n != 16 { // 1000 / 64 → 16 batches
		t.Fatalf("batches: %d", n)
	}
	// A dimension mismatch names the deployment.
	e.Fake.SetRules(fakevendor.Rule{Model: "embed-x", Fault: fakevendor.Fault{Dimension: 4}})
	res, out := post(t, e, key, "/v1/embeddings", `{"model":"emb","input":"x"}`)
	if _, msg := errCode(t, out); res.StatusCode != 502 || !strings.Contains(msg, "emb on oai (embed-x)") || !strings.Contains(msg, "expects 8") {
		t.Fatalf("dimension mismatch: %d %s", res.StatusCode, out)
	}
}
