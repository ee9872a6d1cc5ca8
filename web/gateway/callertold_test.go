package gateway_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httputil"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/ssestream"

	"switchyard/e2e/fakevendor"
	"switchyard/routing"
	"switchyard/routing/config"
	"switchyard/store"
	"switchyard/web/gateway/gatewaytest"
)

// Keys of toldWorld. The fake vendor's 401 masks a key as OpenAI does:
// "sk-*****XYZW"; our fingerprint of it is "sk-…XYZW".
const (
	toldKeyFast = "sk-test-acme-one-XYZW"
	toldKeySlow = "sk-test-acme-two-QRST"
	toldKeyMid  = "sk-test-acme-three-MIDK"
)

// toldWorld: logic models gpt-fast, gpt-slow and gpt-mid, each on its own
// provider with one key, so a quarantined key of one does not touch the
// others. Returns the caller key.
func toldWorld(e *gatewaytest.Env) string {
	b := e.Build()
	prices := config.Prices{InputMicros: config.Unit, OutputMicros: config.Unit, Currency: "USD"}
	for _, m := range []struct{ provider, key, model, upstream string }{
		{"acme", toldKeyFast, "gpt-fast", "up-fast"},
		{"acme2", toldKeySlow, "gpt-slow", "up-slow"},
		{"acme3", toldKeyMid, "gpt-mid", "up-mid"},
	} {
		b.Provider(m.provider, config.ProtocolOpenAI, "", m.key)
		b.Model(config.LogicModel{Code: m.model, Kind: config.KindChat},
			config.Deployment{Provider: m.provider, UpstreamModel: m.upstream, Weight: 100, Enabled: true, Prices: prices})
	}
	b.Group("default", map[config.TierName][]config.Candidate{
		config.TierFast:     {{LogicModel: "gpt-fast", Weight: 100}},
		config.TierStandard: {{LogicModel: "gpt-slow", Weight: 100}},
		config.TierDeep:     {{LogicModel: "gpt-mid", Weight: 100}},
	})
	_, key := b.Caller(config.Caller{Name: "app", RouteGroup: "default"})
	e.Publish("what a caller is told")
	return key
}

// trailOf reads the attempt trail of a request's call-log row.
func trailOf(t *testing.T, e *gatewaytest.Env, requestID string) routing.Trail {
	t.Helper()
	rec := callLog(t, e, requestID)
	var tr routing.Trail
	if err := json.Unmarshal(rec.Attempts, &tr); err != nil {
		t.Fatalf("call log attempts %s: %v", rec.Attempts, err)
	}
	return tr
}

// failedReason is the Reason and key of the trail's failed attempt.
func failedReason(t *testing.T, tr routing.Trail) (reason, key string) {
	t.Helper()
	for _, a := range tr.Attempts {
		if a.Outcome == "failed" {
			return a.Reason, a.Key
		}
	}
	t.Fatalf("no failed attempt in %+v", tr)
	return "", ""
}

func noneOf(t *testing.T, what, s string, bad ...string) {
	t.Helper()
	for _, b := range bad {
		if strings.Contains(s, b) {
			t.Errorf("%s contains %q: %s", what, b, s)
		}
	}
}

func TestCallerToldUpstreamAuthInOurWords(t *testing.T) {
	t.Parallel()
	e := gatewaytest.New(t)
	key := toldWorld(e)
	e.Fake.SetRules(fakevendor.Rule{Fault: fakevendor.Fault{Status: 401}})
	client := sdk(e, key)
	ctx := context.Background()
	vendorBits := []string{"Incorrect API key", "platform.openai.com", "XYZW", "QRST", "sk-", "…", "*****"}

	// Non-streamed, through the official SDK.
	_, err := client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
		Model:    "gpt-fast",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hello")},
	})
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) {
		t.Fatalf("want an API error, got %v", err)
	}
	rid := apiErr.Response.Header.Get("X-Request-Id")
	if apiErr.StatusCode != http.StatusServiceUnavailable || apiErr.Code != "no_available_model" || apiErr.Type != "api_error" || rid == "" {
		t.Fatalf("status %d code %q type %q request id %q", apiErr.StatusCode, apiErr.Code, apiErr.Type, rid)
	}
	want := "the upstream for logic model gpt-fast failed: upstream_auth (request id " + rid + ")"
	if !strings.HasPrefix(apiErr.Message, want) {
		t.Fatalf("message %q\nwant prefix %q", apiErr.Message, want)
	}
	dump := string(apiErr.DumpResponse(true))
	noneOf(t, "the caller's answer", dump, vendorBits...)

	// The call log keeps the vendor's whole text and our fingerprint.
	reason, fp := failedReason(t, trailOf(t, e, rid))
	if !strings.Contains(reason, "Incorrect API key provided: sk-*****XYZW") || fp != "sk-…XYZW" {
		t.Fatalf("call log attempt: reason %q key %q", reason, fp)
	}
	// And the console's call detail shows it to an operator, never the key.
	admin := obsLogin(t, e, "ops", store.RoleAdmin)
	res, doc, body := admin.get("/call-logs/" + rid)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("call detail: %d", res.StatusCode)
	}
	step := doc.Find(`[data-testid="trail-step"][data-class="auth"]`)
	if step.Length() != 1 || !strings.Contains(step.Text(), "Incorrect API key provided: sk-*****XYZW") || !strings.Contains(step.Text(), "sk-…XYZW") {
		t.Fatalf("console trail step: %q", step.Text())
	}
	noneOf(t, "the console", body, toldKeyFast, toldKeySlow)

	// A stream that fails before its first content is answered like a
	// non-streamed request.
	stream := client.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{
		Model:    "gpt-slow",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("stream please")},
	})
	for stream.Next() {
		t.Fatal("a chunk from a stream that never started")
	}
	if !errors.As(stream.Err(), &apiErr) {
		t.Fatalf("stream: want an API error, got %v", stream.Err())
	}
	rid = apiErr.Response.Header.Get("X-Request-Id")
	want = "the upstream for logic model gpt-slow failed: upstream_auth (request id " + rid + ")"
	if apiErr.StatusCode != http.StatusServiceUnavailable || apiErr.Code != "no_available_model" || !strings.HasPrefix(apiErr.Message, want) {
		t.Fatalf("stream: %d %q %q, want prefix %q", apiErr.StatusCode, apiErr.Code, apiErr.Message, want)
	}
	noneOf(t, "the caller's stream answer", string(apiErr.DumpResponse(true)), vendorBits...)
	if reason, fp := failedReason(t, trailOf(t, e, rid)); !strings.Contains(reason, "sk-*****QRST") || fp != "sk-…QRST" {
		t.Fatalf("stream call log attempt: reason %q key %q", reason, fp)
	}
}

// toldSecretText is a context-length overflow whose message quotes
// key-like things a vendor might echo back.
const toldSecretText = "This model's maximum context length is 8192 tokens. However, your messages resulted in 9001 tokens. " +
	"(debug: key sk-proj-abcdefghijklmnop1234XYZW, Authorization: Bearer tok_0123456789abcdef)"

func TestCallerToldBadRequestScrubbed(t *testing.T) {
	t.Parallel()
	e := gatewaytest.New(t)
	key := toldWorld(e)
	e.Fake.SetRules(fakevendor.Rule{Model: "up-fast", Fault: fakevendor.Fault{Status: 400, ErrorCode: "context_length_exceeded", ErrorMessage: toldSecretText}})
	scrubbed := "the vendor refused the request: This model's maximum context length is 8192 tokens. However, your messages resulted in 9001 tokens. " +
		"(debug: key [redacted], Authorization: Bearer [redacted])"

	for _, stream := range []bool{false, true} {
		body := `{"model":"gpt-fast","messages":[{"role":"user","content":"a very long prompt"}]` + map[bool]string{false: "}", true: `,"stream":true}`}[stream]
		res, b := post(t, e, key, "/v1/chat/completions", body)
		rid := res.Header.Get("X-Request-Id")
		code, msg := errCode(t, b)
		if res.StatusCode != http.StatusBadRequest || code != "invalid_request" || res.Header.Get("x-should-retry") != "false" {
			t.Fatalf("stream=%v: %d %s %s", stream, res.StatusCode, code, b)
		}
		if want := scrubbed + " (request id " + rid + ")"; msg != want {
			t.Fatalf("stream=%v: message\n got %q\nwant %q", stream, msg, want)
		}
		dump, _ := httputil.DumpResponse(res, false)
		noneOf(t, "the caller's answer", string(dump)+string(b), "sk-proj", "abcdefghijklmnop", "XYZW", "tok_0123456789abcdef", "sk-…")

		// The call log keeps the vendor's text as it came.
		reason, fp := failedReason(t, trailOf(t, e, rid))
		if reason != toldSecretText || fp != "sk-…XYZW" {
			t.Fatalf("stream=%v: call log attempt: reason %q key %q", stream, reason, fp)
		}
	}
}

func TestCallerToldMidStreamInOurWords(t *testing.T) {
	t.Parallel()
	e := gatewaytest.New(t)
	key := toldWorld(e)
	client := sdk(e, key)
	ctx := context.Background()
	broken := func(model string) (data, rid string) {
		t.Helper()
		var hdr http.Header
		stream := client.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{
			Model:    model,
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("this will break")},
		}, withHeaders(&hdr))
		got := 0
		for stream.Next() {
			got++
		}
		var se *ssestream.StreamError
		if got == 0 || !errors.As(stream.Err(), &se) {
			t.Fatalf("%s: %d chunks, then %v; want content, then an error event", model, got, stream.Err())
		}
		return string(se.Event.Data), hdr.Get("X-Request-Id")
	}

	// A server failure after content started: our words.
	e.Fake.SetRules(
		fakevendor.Rule{Model: "up-mid", Fault: fakevendor.Fault{ErrorAfterChunks: 2, ReplyChunks: 6, ErrorMessage: "worker crashed holding key sk-*****MIDK"}},
		fakevendor.Rule{Model: "up-fast", Fault: fakevendor.Fault{ErrorAfterChunks: 2, ReplyChunks: 6, ErrorCode: "content_filter",
			ErrorMessage: "Output blocked by the safety system (ref AIzaSyA1b2C3d4E5f6G7h8I9j0KlMnOpQrStUvW)"}},
	)
	data, rid := broken("gpt-mid")
	code, msg := errCode(t, []byte(data))
	if want := "the upstream for logic model gpt-mid failed after the answer started: upstream_server (request id " + rid + ")"; code != "upstream_error" || msg != want {
		t.Fatalf("mid-stream server error: %s %q, want %q", code, msg, want)
	}
	noneOf(t, "the error event", data, "crashed", "MIDK", "sk-")
	if reason, _ := failedReason(t, trailOf(t, e, rid)); !strings.Contains(reason, "worker crashed holding key sk-*****MIDK") {
		t.Fatalf("call log attempt: %q", reason)
	}

	// A content filter after content started: the vendor's words, scrubbed.
	data, rid = broken("gpt-fast")
	code, msg = errCode(t, []byte(data))
	if want := "the vendor's content filter stopped the answer: Output blocked by the safety system (ref [redacted]) (request id " + rid + ")"; code != "content_filtered" || msg != want {
		t.Fatalf("mid-stream content filter: %s %q, want %q", code, msg, want)
	}
	noneOf(t, "the error event", data, "AIza")
}

// withHeaders keeps the response headers of an SDK call.
func withHeaders(h *http.Header) option.RequestOption {
	return option.WithMiddleware(func(r *http.Request, next option.MiddlewareNext) (*http.Response, error) {
		res, err := next(r)
		if res != nil {
			*h = res.Header
		}
		return res, err
	})
}
