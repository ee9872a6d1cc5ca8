package adapter

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"switchyard/e2e/fakevendor"
	"switchyard/routing/config"
)

// A Messages caller to a Claude model on Bedrock goes by the invoke path,
// its body passing with anthropic_version in place of model and stream.

const invokeBody = `{"model":"claude","max_tokens":64,"stream":true,"system":[{"type":"text","text":"be brief","cache_control":{"type":"ephemeral"}}],` +
	`"thinking":{"type":"enabled","budget_tokens":1024},"messages":[{"role":"user","content":[{"type":"text","text":"hello claude","cache_control":{"type":"ephemeral","ttl":"1h"}}]}]}`

func invokeAsk() *ChatRequest {
	return &ChatRequest{Body: []byte(`{"model":"claude","messages":[{"role":"user","content":"hello claude"}]}`),
		Messages: []Message{{Role: "user", Content: vtText("hello claude")}},
		Native:   &Native{Door: DoorMessages, Body: []byte(invokeBody), Protocol: config.ProtocolAnthropic}}
}

func TestBedrockAnthropicModel(t *testing.T) {
	for id, want := range map[string]bool{
		"anthropic.claude-3-5-sonnet-20240620-v1:0":                                      true,
		"us.anthropic.claude-sonnet-4-5-20250929-v1:0":                                   true,
		"global.anthropic.claude-sonnet-4-5-20250929-v1:0":                               true,
		"arn:aws:bedrock:us-east-1:123456789012:inference-profile/eu.anthropic.claude-3": true,
		"meta.llama3-70b-instruct-v1:0":                                                  false,
		"us.amazon.nova-pro-v1:0":                                                        false,
		"anthropicish.claude":                                                            false,
		"":                                                                               false,
	} {
		if got := config.BedrockAnthropicModel(id); got != want {
			t.Errorf("%q: %v, want %v", id, got, want)
		}
	}
	r := invokeAsk()
	if !NativeFor(config.WireOf(config.ProtocolBedrock, bedrockModelID), r, config.Capabilities{}) ||
		NativeFor(config.WireOf(config.ProtocolBedrock, "meta.llama3-70b-instruct-v1:0"), r, config.Capabilities{}) {
		t.Error("a Messages caller passes natively to Claude on Bedrock only")
	}
	if v := Judge(config.WireOf(config.ProtocolBedrock, bedrockModelID), azureAsk(), config.Capabilities{}, false); v.Native || v.Refused != "" {
		t.Errorf("a chat caller to Claude on Bedrock goes through Converse: %+v", v)
	}
}

const bedrockModelID = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"

func TestBedrockInvoke(t *testing.T) {
	fv, url := azureFake(t, fakevendor.Options{ReplyChunks: 2, Fault: fakevendor.Fault{CachedTokens: 3}})
	tg := bedrockTarget(url, bedrockKey)
	tg.Header = http.Header{"Anthropic-Beta": {"context-1m-2025-08-07, interleaved-thinking-2025-05-14"}}
	res, err := NewBedrock().Chat(context.Background(), tg, invokeAsk())
	if err != nil {
		t.Fatal(err)
	}
	if gjson.GetBytes(res.Body, "type").String() != "message" || !strings.Contains(gjson.GetBytes(res.Body, "content.0.text").String(), "Hello from") {
		t.Errorf("answer %s", res.Body)
	}
	if !res.Usage.Known || res.Usage.Completion != 2 || res.Usage.Cached != 3 || res.FinishReason != "stop" {
		t.Errorf("usage %+v finish %q", res.Usage, res.FinishReason)
	}
	last, _ := fv.LastRequest(tg.UpstreamModel)
	if !strings.HasSuffix(last.Path, "/invoke") || !strings.Contains(last.Header.Get("Authorization"), "Credential=AKIAFAKE0001/") {
		t.Errorf("upstream %s %s", last.Path, last.Header.Get("Authorization"))
	}
	sent := gjson.ParseBytes(last.Body)
	if sent.Get("anthropic_version").String() != BedrockAnthropicVersion || sent.Get("model").Exists() || sent.Get("stream").Exists() {
		t.Errorf("sent %s", last.Body)
	}
	for _, path := range []string{"system", "thinking", "messages"} {
		if got, want := sent.Get(path).Raw, gjson.Get(invokeBody, path).Raw; got != want {
			t.Errorf("%s arrived as %s, want %s byte for byte", path, got, want)
		}
	}
	if got := sent.Get("anthropic_beta").Raw; got != `["context-1m-2025-08-07","interleaved-thinking-2025-05-14"]` {
		t.Errorf("anthropic_beta %s", got)
	}
}

func TestBedrockInvokeStream(t *testing.T) {
	fv, url := azureFake(t, fakevendor.Options{ReplyChunks: 3})
	tg := bedrockTarget(url, bedrockKey)
	s, err := NewBedrock().ChatStream(context.Background(), tg, invokeAsk())
	if err != nil {
		t.Fatal(err)
	}
	chunks, err := vendorCollect(t, s)
	if err != io.EOF || !s.Usage().Known || s.Usage().Completion != 3 {
		t.Fatalf("%d chunks, err %v, usage %+v", len(chunks), err, s.Usage())
	}
	var names []string
	var text strings.Builder
	content := false
	for _, c := range chunks {
		ev, data, ok := strings.Cut(string(c.Data), "\ndata: ")
		if !ok || !strings.HasSuffix(data, "\n\n") || !json.Valid([]byte(data)) {
			t.Fatalf("not one SSE event: %q", c.Data)
		}
		names = append(names, strings.TrimPrefix(ev, "event: "))
		text.WriteString(gjson.Get(data, "delta.text").String())
		content = content || c.Content
	}
	if names[0] != "message_start" || names[len(names)-1] != "message_stop" || !content || !strings.Contains(text.String(), "Hello from") {
		t.Errorf("events %v text %q", names, text.String())
	}
	last, _ := fv.LastRequest(tg.UpstreamModel)
	if !strings.HasSuffix(last.Path, "/invoke-with-response-stream") || gjson.GetBytes(last.Body, "stream").Exists() {
		t.Errorf("upstream %s %s", last.Path, last.Body)
	}

	t.Run("exception event mid-stream", func(t *testing.T) {
		tg := bedrockTarget(url, bedrockKey)
		tg.Header = http.Header{fakevendor.HeaderErrorAfter: {"2"}, fakevendor.HeaderErrorCode: {"throttlingException"}}
		s, err := NewBedrock().ChatStream(context.Background(), tg, invokeAsk())
		if err != nil {
			t.Fatal(err)
		}
		_, err = vendorCollect(t, s)
		if e := openaiAsError(t, err); e.Class != ClassRateLimited || e.Code != "ThrottlingException" {
			t.Fatalf("got %v", e)
		}
	})
	t.Run("refused before the stream opens", func(t *testing.T) {
		tg := bedrockTarget(url, bedrockKey)
		tg.Header = http.Header{fakevendor.HeaderStatus: {"400"}}
		_, err := NewBedrock().ChatStream(context.Background(), tg, invokeAsk())
		if e := openaiAsError(t, err); e.Class != ClassBadRequest || e.Code != "ValidationException" {
			t.Fatalf("got %v", e)
		}
	})
}

func TestBedrockInvokeBody(t *testing.T) {
	r := invokeAsk()
	r.Native.Body = []byte(`{"model":"x","anthropic_version":"2023-06-01","anthropic_beta":["a"],"max_tokens":1,"messages":[]}`)
	b, err := bedrockInvokeBody(r, "b")
	if err != nil || string(b) != `{"anthropic_version":"bedrock-2023-05-31","anthropic_beta":["a"],"max_tokens":1,"messages":[]}` {
		t.Fatalf("%s %v", b, err)
	}
	r.Native.Body = []byte(`[1]`)
	if _, err := bedrockInvokeBody(r, ""); ClassOf(err) != ClassBadRequest {
		t.Fatalf("a non-object body: %v", err)
	}
}
