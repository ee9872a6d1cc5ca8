package gateway_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"switchyard/e2e/fakevendor"
	"switchyard/web/gateway/gatewaytest"
)

func sdk(e *gatewaytest.Env, key string, opts ...option.RequestOption) openai.Client {
	return openai.NewClient(append([]option.RequestOption{option.WithBaseURL(e.URL + "/v1"), option.WithAPIKey(key), option.WithMaxRetries(0)}, opts...)...)
}

func TestSDKNonStreamStreamAndMidStreamFailure(t *testing.T) {
	t.Parallel()
	e := gatewaytest.New(t)
	key := e.Simple()
	client := sdk(e, key)
	ctx := context.Background()

	var hdr http.Header
	resp, err := client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
		Model:    "standard",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hello")},
	}, func() option.RequestOption {
		return option.WithMiddleware(func(r *http.Request, next option.MiddlewareNext) (*http.Response, error) {
			res, err := next(r)
			if res != nil {
				hdr = res.Header
			}
			return res, err
		})
	}())
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Choices) != 1 || !strings.Contains(resp.Choices[0].Message.Content, "fake-small") || resp.Usage.PromptTokens == 0 {
		t.Fatalf("answer: %+v", resp)
	}
	for k, want := range map[string]string{"X-Switchyard-Tier": "standard", "X-Switchyard-Model": "small", "X-Switchyard-Provider": "fake", "X-Switchyard-Attempts": "1"} {
		if got := hdr.Get(k); got != want {
			t.Errorf("%s = %q, want %q", k, got, want)
		}
	}
	if hdr.Get("X-Request-Id") == "" {
		t.Error("no X-Request-Id")
	}
	// Upstream got our model name, and include_usage for streams is ours to add.
	var sent map[string]any
	_ = json.Unmarshal(e.Fake.LastBody("fake-small"), &sent)
	if sent["model"] != "fake-small" {
		t.Fatalf("upstream model: %v", sent["model"])
	}

	// Stream: the SDK assembles the chunks; usage is stripped unless asked.
	stream := client.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{
		Model:    "fast",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("stream please")},
	})
	acc := openai.ChatCompletionAccumulator{}
	chunks := 0
	for stream.Next() {
		ch := stream.Current()
		acc.AddChunk(ch)
		chunks++
		if len(ch.Choices) == 0 {
			t.Fatal("usage-only chunk sent to a caller that did not ask for it")
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if chunks < 3 || !strings.Contains(acc.Choices[0].Message.Content, "fake-small") {
		t.Fatalf("stream: %d chunks, %q", chunks, acc.Choices[0].Message.Content)
	}
	sent = nil
	_ = json.Unmarshal(e.Fake.LastBody("fake-small"), &sent)
	if so, _ := sent["stream_options"].(map[string]any); so["include_usage"] != true {
		t.Fatalf("include_usage not requested upstream: %v", sent["stream_options"])
	}

	// A mid-stream failure surfaces as an error in the SDK, not as a complete answer.
	e.Fake.SetRules(fakevendor.Rule{Model: "fake-small", Fault: fakevendor.Fault{ErrorAfterChunks: 2, ReplyChunks: 6}})
	stream = client.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{
		Model:    "fast",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("this will break")},
	})
	got := 0
	for stream.Next() {
		got++
	}
	if stream.Err() == nil {
		t.Fatalf("a broken stream ended cleanly after %d chunks", got)
	}
	// And a cut connection (no [DONE]) is an error too.
	e.Fake.SetRules(fakevendor.Rule{Model: "fake-small", Fault: fakevendor.Fault{CutAfterChunks: 2, ReplyChunks: 6}})
	stream = client.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{
		Model:    "fast",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("this will be cut")},
	})
	for stream.Next() {
	}
	var apiErr *openai.Error
	if err := stream.Err(); err == nil {
		t.Fatal("a cut stream ended cleanly")
	} else if errors.As(err, &apiErr) && apiErr.Code != "upstream_error" {
		t.Logf("cut stream error: %v", err)
	}
	e.Fake.ClearRules()

	// Models lists tiers and logic models.
	page, err := client.Models.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, m := range page.Data {
		ids = append(ids, m.ID)
	}
	if strings.Join(ids, ",") != "fast,standard,deep,small" {
		t.Fatalf("models: %v", ids)
	}
	_ = time.Second
}
