package gateway_test

// Wire conformance as an SDK user meets it: the official openai-go client
// against the whole gateway and the fake vendor.

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/ssestream"
	"github.com/openai/openai-go/v3/shared"

	"switchyard/e2e/fakevendor"
	"switchyard/routing/config"
	"switchyard/web/gateway/gatewaytest"
)

// recorder sees every HTTP attempt the SDK makes (retries included).
type recorder struct {
	mu       sync.Mutex
	statuses []int
	headers  []http.Header
}

func (r *recorder) option() option.RequestOption {
	return option.WithMiddleware(func(req *http.Request, next option.MiddlewareNext) (*http.Response, error) {
		res, err := next(req)
		if res != nil {
			r.mu.Lock()
			r.statuses = append(r.statuses, res.StatusCode)
			r.headers = append(r.headers, res.Header.Clone())
			r.mu.Unlock()
		}
		return res, err
	})
}

func (r *recorder) last() http.Header {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.headers) == 0 {
		return http.Header{}
	}
	return r.headers[len(r.headers)-1]
}

func (r *recorder) attempts() []int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]int(nil), r.statuses...)
}

func userSays(model, text string) openai.ChatCompletionNewParams {
	return openai.ChatCompletionNewParams{Model: model, Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(text)}}
}

// drain reads a stream to its end and returns the text and the error.
func drain(s *ssestream.Stream[openai.ChatCompletionChunk]) (string, []string, error) {
	var b strings.Builder
	var models []string
	for s.Next() {
		ch := s.Current()
		models = append(models, ch.Model)
		for _, c := range ch.Choices {
			b.WriteString(c.Delta.Content)
		}
	}
	return b.String(), models, s.Err()
}

// TestSDKIdempotencyStoresOnlyWhatARetryCannotChange: under one
// Idempotency-Key, a stream that failed after it started (an error event
// after content, a cut connection, a vendor's mid-stream CANCELLED) and an
// upstream failure release the key — the retry reaches the vendor and gets
// the real answer, which is then what the key replays; a vendor's refusal of
// the request itself (400) is stored and replayed without calling it again.
func TestSDKIdempotencyStoresOnlyWhatARetryCannotChange(t *testing.T) {
	t.Parallel()
	e := gatewaytest.New(t)
	key := e.Simple()
	ctx := context.Background()

	for _, tc := range []struct {
		name  string
		fault fakevendor.Fault
	}{
		{"error event after content", fakevendor.Fault{ErrorAfterChunks: 2, ReplyChunks: 6, FailTimes: 1}},
		{"connection cut after content", fakevendor.Fault{CutAfterChunks: 2, ReplyChunks: 6, FailTimes: 1}},
		{"vendor CANCELLED after content", fakevendor.Fault{ErrorAfterChunks: 2, ErrorStatus: 499, ReplyChunks: 6, FailTimes: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e.Fake.SetRules(fakevendor.Rule{Model: "fake-small", Fault: tc.fault})
			defer e.Fake.ClearRules()
			before := e.Fake.Count("fake-small")
			idem := option.WithHeader("Idempotency-Key", "stream-"+strings.ReplaceAll(tc.name, " ", "-"))
			client := sdk(e, key)
			params := userSays("fast", "tell me a story")

			text, _, err := drain(client.Chat.Completions.NewStreaming(ctx, params, idem))
			if err == nil {
				t.Fatalf("the broken stream ended cleanly with %q", text)
			}
			if text == "" {
				t.Fatal("the stream failed before any content; the case needs content first")
			}
			// The retry runs: the vendor is called again and answers in full.
			var rec recorder
			retried, _, err := drain(client.Chat.Completions.NewStreaming(ctx, params, idem, rec.option()))
			if err != nil {
				t.Fatalf("the retry under the same key failed: %v (was the failed stream replayed?)", err)
			}
			if n := e.Fake.Count("fake-small") - before; n != 2 {
				t.Fatalf("vendor calls %d, want 2: the failed stream was stored and replayed", n)
			}
			if rec.last().Get("Idempotent-Replayed") != "" {
				t.Fatal("the retry was a replay")
			}
			// Now the complete answer is stored: a third request replays it.
			rec = recorder{}
			replayed, _, err := drain(client.Chat.Completions.NewStreaming(ctx, params, idem, rec.option()))
			if err != nil || replayed != retried || rec.last().Get("Idempotent-Replayed") != "true" {
				t.Fatalf("replay: %q (%v) headers %v, want %q", replayed, err, rec.last(), retried)
			}
			if n := e.Fake.Count("fake-small") - before; n != 2 {
				t.Fatalf("the replay called the vendor (%d calls)", n)
			}
		})
	}

	t.Run("upstream failure is not stored", func(t *testing.T) {
		e.Fake.SetRules(fakevendor.Rule{Model: "fake-small", Fault: fakevendor.Fault{Status: 500, FailTimes: 1}})
		defer e.Fake.ClearRules()
		client := sdk(e, key)
		idem := option.WithHeader("Idempotency-Key", "upstream-500")
		var apiErr *openai.Error
		if _, err := client.Chat.Completions.New(ctx, userSays("fast", "hi"), idem); !errors.As(err, &apiErr) || apiErr.StatusCode != 502 {
			t.Fatalf("first: %v", err)
		}
		resp, err := client.Chat.Completions.New(ctx, userSays("fast", "hi"), idem)
		if err != nil || len(resp.Choices) != 1 {
			t.Fatalf("the retry after an upstream failure: %v", err)
		}
	})

	t.Run("the vendor's refusal of the request is replayed", func(t *testing.T) {
		e.Fake.SetRules(fakevendor.Rule{Model: "fake-small", Fault: fakevendor.Fault{Status: 400, FailTimes: 1}})
		defer e.Fake.ClearRules()
		before := e.Fake.Count("fake-small")
		client := sdk(e, key)
		idem := option.WithHeader("Idempotency-Key", "refused-400")
		var apiErr *openai.Error
		if _, err := client.Chat.Completions.New(ctx, userSays("fast", "hi"), idem); !errors.As(err, &apiErr) || apiErr.StatusCode != 400 {
			t.Fatalf("first: %v", err)
		}
		// The vendor would answer now (FailTimes 1), but the key holds the
		// refusal: a retry cannot change a deterministic client error.
		var rec recorder
		if _, err := client.Chat.Completions.New(ctx, userSays("fast", "hi"), idem, rec.option()); !errors.As(err, &apiErr) || apiErr.StatusCode != 400 {
			t.Fatalf("second: %v", err)
		}
		if rec.last().Get("Idempotent-Replayed") != "true" || e.Fake.Count("fake-small")-before != 1 {
			t.Fatalf("the refusal was not replayed: %v, %d vendor calls", rec.last(), e.Fake.Count("fake-small")-before)
		}
	})
}

// plainWorld: provider "fake" (two keys) and one chat model "plain" without
// any capability in every tier of the default group.
func plainWorld(e *gatewaytest.Env) string {
	b := e.Build()
	b.Provider("fake", config.ProtocolOpenAI, "", "sk-fake-key-one-0001", "sk-fake-key-two-0002")
	b.Model(config.LogicModel{Code: "plain", Kind: config.KindChat}, config.Deployment{Provider: "fake", UpstreamModel: "fake-plain", Weight: 100, Enabled: true})
	all := []config.Candidate{{LogicModel: "plain", Weight: 100}}
	b.Group("default", map[config.TierName][]config.Candidate{config.TierFast: all, config.TierStandard: all, config.TierDeep: all})
	_, key := b.Caller(config.Caller{Name: "app", RouteGroup: "default"})
	e.Publish("plain world")
	return key
}

// TestSDKRetryHintsMatchTheCause: a 503 no_available_model caused only by a
// permanent skip tells the SDK not to retry (it makes one attempt, at once);
// one caused by keys cooling carries Retry-After = when the first key is
// usable again, and the SDK's own retry after that wait succeeds.
func TestSDKRetryHintsMatchTheCause(t *testing.T) {
	t.Parallel()
	e := gatewaytest.New(t)
	callerKey := plainWorld(e)
	ctx := context.Background()

	t.Run("permanent: lacks a capability", func(t *testing.T) {
		var rec recorder
		client := sdk(e, callerKey, option.WithMaxRetries(3), rec.option())
		params := userSays("fast", "what is the weather?")
		params.Tools = []openai.ChatCompletionToolUnionParam{openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{Name: "get_weather"})}
		start := time.Now()
		_, err := client.Chat.Completions.New(ctx, params)
		var apiErr *openai.Error
		if !errors.As(err, &apiErr) || apiErr.StatusCode != 503 || apiErr.Code != "no_available_model" || !strings.Contains(apiErr.Message, "lacks tools") {
			t.Fatalf("error: %v", err)
		}
		h := rec.last()
		if got := rec.attempts(); len(got) != 1 {
			t.Fatalf("the SDK made %d attempts (%v) for a refusal no retry can change", len(got), got)
		}
		if h.Get("x-should-retry") != "false" || h.Get("Retry-After") != "" || h.Get("Retry-After-Ms") != "" {
			t.Fatalf("headers: x-should-retry %q Retry-After %q Retry-After-Ms %q", h.Get("x-should-retry"), h.Get("Retry-After"), h.Get("Retry-After-Ms"))
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Fatalf("the permanent refusal took %v (the SDK waited to retry)", d)
		}
	})

	t.Run("temporary: keys cooling", func(t *testing.T) {
		const cool = 2 * time.Second
		e.Fake.SetRules(fakevendor.Rule{Model: "fake-plain", Fault: fakevendor.Fault{Status: 429, RetryAfter: cool, FailTimes: 2}})
		defer e.Fake.ClearRules()
		client := sdk(e, callerKey)
		var apiErr *openai.Error
		// Both keys answer 429 and cool for 2 s.
		if _, err := client.Chat.Completions.New(ctx, userSays("fast", "hi")); !errors.As(err, &apiErr) || apiErr.StatusCode != 429 {
			t.Fatalf("first: %v", err)
		}
		cooledAt := time.Now()
		// Now nothing is tried: 503 with the wait until the first key is back.
		var rec recorder
		_, err := client.Chat.Completions.New(ctx, userSays("fast", "hi"), rec.option())
		if !errors.As(err, &apiErr) || apiErr.StatusCode != 503 || apiErr.Code != "no_available_model" || !strings.Contains(apiErr.Message, "all keys cooling") {
			t.Fatalf("second: %v", err)
		}
		h := rec.last()
		ms, _ := strconv.Atoi(h.Get("Retry-After-Ms"))
		secs, _ := strconv.Atoi(h.Get("Retry-After"))
		left := cool - time.Since(cooledAt)
		if h.Get("x-should-retry") == "false" || ms <= 0 || time.Duration(ms)*time.Millisecond > cool || time.Duration(ms)*time.Millisecond < left-time.Second ||
			secs != int((time.Duration(ms)*time.Millisecond+time.Second-1)/time.Second) {
			t.Fatalf("hints: x-should-retry %q Retry-After %q Retry-After-Ms %q (cooling ends in %v)", h.Get("x-should-retry"), h.Get("Retry-After"), h.Get("Retry-After-Ms"), left)
		}
		// The SDK honours the wait and its retry finds a key again.
		rec = recorder{}
		resp, err := client.Chat.Completions.New(ctx, userSays("fast", "hi"), option.WithMaxRetries(2), rec.option())
		if err != nil {
			t.Fatalf("the SDK's retry after Retry-After: %v (attempts %v)", err, rec.attempts())
		}
		if got := rec.attempts(); got[len(got)-1] != 200 || resp.Model != "plain" {
			t.Fatalf("attempts %v, model %q", got, resp.Model)
		}
		if time.Since(cooledAt) < cool-100*time.Millisecond {
			t.Fatalf("served %v after cooling began: the keys were not cooling", time.Since(cooledAt))
		}
	})
}

// TestRateLimitResetsAgreeWithRetryAfter: on a 429 the x-ratelimit-reset-*
// headers never promise a later time than Retry-After, and the window that
// refused resets exactly then.
func TestRateLimitResetsAgreeWithRetryAfter(t *testing.T) {
	t.Parallel()
	e := gatewaytest.New(t)
	keys := limitedWorld(t, e, map[string]config.TierLimit{"app": {RPM: 2, TPM: 100000}, "roomy": {RPM: 50, TPM: 100000}}, 0)
	ctx := context.Background()
	resetOf := func(h http.Header, kind string) time.Duration {
		d, err := time.ParseDuration(h.Get("x-ratelimit-reset-" + kind))
		if err != nil {
			t.Fatalf("x-ratelimit-reset-%s %q: %v", kind, h.Get("x-ratelimit-reset-"+kind), err)
		}
		return d
	}
	var apiErr *openai.Error
	app, roomy := sdk(e, keys["app"]), sdk(e, keys["roomy"])

	// Our own RPM limit refuses: the requests window resets at Retry-After.
	refused := false
	for range 3 {
		var rec recorder
		_, err := app.Chat.Completions.New(ctx, userSays("fast", "hi"), rec.option())
		if err == nil {
			continue
		}
		if !errors.As(err, &apiErr) || apiErr.StatusCode != 429 || apiErr.Code != "rate_limited" {
			t.Fatalf("limit: %v", err)
		}
		h := rec.last()
		ms, err := strconv.Atoi(h.Get("Retry-After-Ms"))
		if err != nil || ms <= 0 {
			t.Fatalf("Retry-After-Ms %q", h.Get("Retry-After-Ms"))
		}
		wait := time.Duration(ms) * time.Millisecond
		if r := resetOf(h, "requests"); r != wait {
			t.Fatalf("refused by RPM: x-ratelimit-reset-requests %v, Retry-After-Ms %v", r, wait)
		}
		if r := resetOf(h, "tokens"); r > wait {
			t.Fatalf("refused by RPM: x-ratelimit-reset-tokens %v is later than Retry-After-Ms %v", r, wait)
		}
		refused = true
		break
	}
	if !refused {
		t.Fatal("RPM 2 never refused")
	}

	// The vendor limits an admitted request: its Retry-After caps the
	// caller's window resets.
	e.Fake.SetRules(fakevendor.Rule{Model: "fake-small", Fault: fakevendor.Fault{Status: 429, RetryAfter: time.Second, FailTimes: 1}})
	var rec recorder
	if _, err := roomy.Chat.Completions.New(ctx, userSays("fast", "hi"), rec.option()); !errors.As(err, &apiErr) || apiErr.StatusCode != 429 {
		t.Fatalf("vendor 429: %v", err)
	}
	h := rec.last()
	if h.Get("Retry-After") != "1" || h.Get("Retry-After-Ms") != "1000" {
		t.Fatalf("vendor 429 hints: %v", h)
	}
	for _, kind := range []string{"requests", "tokens"} {
		if r := resetOf(h, kind); r > time.Second {
			t.Errorf("vendor 429: x-ratelimit-reset-%s %v is later than Retry-After 1s", kind, r)
		}
	}
}

// surfaceWorld: chat model "small" and embedding model "vec" on provider
// "fake"; small in every tier, vec in fast.
func surfaceWorld(e *gatewaytest.Env) string {
	b := e.Build()
	b.Provider("fake", config.ProtocolOpenAI, "", "sk-fake-key-one-0001")
	b.Model(config.LogicModel{Code: "small", Kind: config.KindChat}, config.Deployment{Provider: "fake", UpstreamModel: "fake-small", Weight: 100, Enabled: true})
	b.Model(config.LogicModel{Code: "vec", Kind: config.KindEmbedding, EmbeddingDimension: 1536}, config.Deployment{Provider: "fake", UpstreamModel: "fake-embed", Weight: 100, Enabled: true})
	chat := []config.Candidate{{LogicModel: "small", Weight: 100}}
	b.Group("default", map[config.TierName][]config.Candidate{config.TierFast: append(chat, config.Candidate{LogicModel: "vec", Weight: 100}), config.TierStandard: chat, config.TierDeep: chat})
	_, key := b.Caller(config.Caller{Name: "app", RouteGroup: "default"})
	e.Publish("surface world")
	return key
}

// TestSDKSurface: models.retrieve; X-Request-Id on every answer including
// 404s and unknown endpoints; a vendor's CANCELLED / 499 is an upstream
// failure; the answer's model is the logic model that served, for chat
// (whole and streamed) and embeddings alike; an explicit logic model is
// reported as tier "explicit".
func TestSDKSurface(t *testing.T) {
	t.Parallel()
	e := gatewaytest.New(t)
	key := surfaceWorld(e)
	ctx := context.Background()
	client := sdk(e, key)

	t.Run("models.retrieve", func(t *testing.T) {
		for _, id := range []string{"small", "vec", "standard"} {
			m, err := client.Models.Get(ctx, id)
			if err != nil || m.ID != id || m.Object != "model" || m.OwnedBy != "switchyard" {
				t.Fatalf("retrieve %s: %+v %v", id, m, err)
			}
		}
		var rec recorder
		_, err := client.Models.Get(ctx, "gpt-nope", rec.option())
		var apiErr *openai.Error
		if !errors.As(err, &apiErr) || apiErr.StatusCode != 404 || apiErr.Code != "model_not_found" || !strings.Contains(apiErr.Message, "small") {
			t.Fatalf("unknown model: %v", err)
		}
		if rec.last().Get("X-Request-Id") == "" {
			t.Fatal("no X-Request-Id on the 404")
		}
	})

	t.Run("X-Request-Id everywhere", func(t *testing.T) {
		for _, r := range []struct{ method, path string }{
			{http.MethodGet, "/v1/nothing-here"}, {http.MethodPost, "/v1/responses"}, {http.MethodDelete, "/v1/models"},
			{http.MethodGet, "/v1/chat/completions"}, {http.MethodGet, "/v1/models"}, {http.MethodGet, "/v1/models/small"},
		} {
			req, _ := http.NewRequest(r.method, e.URL+r.path, nil)
			req.Header.Set("Authorization", "Bearer "+key)
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			if id := res.Header.Get("X-Request-Id"); len(id) != 36 {
				t.Errorf("%s %s: %d with X-Request-Id %q", r.method, r.path, res.StatusCode, id)
			}
		}
		// Unauthenticated too.
		res, _ := post(t, e, "", "/v1/chat/completions", fastHello)
		if res.StatusCode != 401 || res.Header.Get("X-Request-Id") == "" {
			t.Errorf("401: X-Request-Id %q", res.Header.Get("X-Request-Id"))
		}
	})

	t.Run("vendor CANCELLED is an upstream failure", func(t *testing.T) {
		e.Fake.SetRules(fakevendor.Rule{Model: "fake-small", Fault: fakevendor.Fault{ErrorAfterChunks: 2, ErrorStatus: 499, ReplyChunks: 5}})
		defer e.Fake.ClearRules()
		_, _, err := drain(client.Chat.Completions.NewStreaming(ctx, userSays("fast", "hi")))
		var se *ssestream.StreamError
		if !errors.As(err, &se) || !strings.Contains(string(se.Event.Data), `"code":"upstream_error"`) || strings.Contains(string(se.Event.Data), "invalid_request") {
			t.Fatalf("mid-stream CANCELLED: %v", err)
		}
		// A 499 answer before any content: the vendor failed, not the request.
		e.Fake.SetRules(fakevendor.Rule{Model: "fake-small", Fault: fakevendor.Fault{Status: 499}})
		_, err = client.Chat.Completions.New(ctx, userSays("fast", "hi"))
		var apiErr *openai.Error
		if !errors.As(err, &apiErr) || apiErr.StatusCode != 502 || apiErr.Code != "upstream_error" {
			t.Fatalf("HTTP 499: %v", err)
		}
	})

	t.Run("model field and tier header", func(t *testing.T) {
		for _, tc := range []struct{ asked, tier string }{{"fast", "fast"}, {"small", "explicit"}} {
			var rec recorder
			resp, err := client.Chat.Completions.New(ctx, userSays(tc.asked, "hi"), rec.option())
			if err != nil || resp.Model != "small" {
				t.Fatalf("chat %s: model %q, %v", tc.asked, resp.Model, err)
			}
			if got := rec.last().Get("X-Switchyard-Tier"); got != tc.tier {
				t.Errorf("chat %s: X-Switchyard-Tier %q, want %q", tc.asked, got, tc.tier)
			}
			rec = recorder{}
			_, models, err := drain(client.Chat.Completions.NewStreaming(ctx, userSays(tc.asked, "hi"), rec.option()))
			if err != nil || len(models) == 0 {
				t.Fatalf("stream %s: %v", tc.asked, err)
			}
			for _, m := range models {
				if m != "small" {
					t.Fatalf("stream %s: a chunk's model is %q", tc.asked, m)
				}
			}
			if got := rec.last().Get("X-Switchyard-Tier"); got != tc.tier {
				t.Errorf("stream %s: X-Switchyard-Tier %q, want %q", tc.asked, got, tc.tier)
			}
		}
		var rec recorder
		emb, err := client.Embeddings.New(ctx, openai.EmbeddingNewParams{Model: "vec", Input: openai.EmbeddingNewParamsInputUnion{OfString: openai.String("hello")}}, rec.option())
		if err != nil || emb.Model != "vec" || len(emb.Data) != 1 {
			t.Fatalf("embeddings: %+v %v", emb, err)
		}
		if got := rec.last().Get("X-Switchyard-Tier"); got != "explicit" {
			t.Errorf("embeddings: X-Switchyard-Tier %q", got)
		}
	})
}
