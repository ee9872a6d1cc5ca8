package adapter

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"switchyard/e2e/fakevendor"
)

// The Bedrock adapter against the fake vendor, which verifies every SigV4
// signature with the AWS SDK's signer and streams in the AWS event-stream
// encoding.

func bedrockTarget(url, key string) Target {
	return Target{BaseURL: url, APIKey: key, UpstreamModel: "us.anthropic.claude-sonnet-4-5-20250929-v1:0", Region: "us-east-1"}
}

const bedrockKey = "AKIAFAKE0001:fake-secret-AKIAFAKE0001"

func TestBedrockConverse(t *testing.T) {
	fv, url := azureFake(t, fakevendor.Options{ReplyChunks: 2, Fault: fakevendor.Fault{CachedTokens: 3}})
	tg := bedrockTarget(url, bedrockKey)
	res, err := NewBedrock().Chat(context.Background(), tg, azureAsk())
	if err != nil {
		t.Fatal(err)
	}
	var c vtCompletion
	if err := json.Unmarshal(res.Body, &c); err != nil {
		t.Fatal(err)
	}
	want := "Hello from " + tg.UpstreamModel + ". Hello from " + tg.UpstreamModel + "."
	if got := *c.Choices[0].Message.Content; got != want || res.FinishReason != "stop" {
		t.Errorf("answer %q %q", got, res.FinishReason)
	}
	if !res.Usage.Known || res.Usage.Completion != 2 || res.Usage.Cached != 3 {
		t.Errorf("usage %+v", res.Usage)
	}
	last, _ := fv.LastRequest(tg.UpstreamModel)
	if !strings.HasSuffix(last.Path, "/converse") || !strings.Contains(last.Header.Get("Authorization"), "Credential=AKIAFAKE0001/") {
		t.Errorf("upstream %s %s", last.Path, last.Header.Get("Authorization"))
	}
}

func TestBedrockConverseStream(t *testing.T) {
	_, url := azureFake(t, fakevendor.Options{ReplyChunks: 3})
	s, err := NewBedrock().ChatStream(context.Background(), bedrockTarget(url, bedrockKey+":session-token-1"), azureAsk())
	if err != nil {
		t.Fatal(err)
	}
	chunks, err := vendorCollect(t, s)
	if err != io.EOF || !s.Usage().Known || s.Usage().Completion != 3 {
		t.Fatalf("%d chunks, err %v, usage %+v", len(chunks), err, s.Usage())
	}
	var text strings.Builder
	for _, c := range chunks {
		var v struct {
			Choices []struct{ Delta struct{ Content string } } `json:"choices"`
		}
		_ = json.Unmarshal(c.Data, &v)
		if len(v.Choices) > 0 {
			text.WriteString(v.Choices[0].Delta.Content)
		}
	}
	if !strings.Contains(text.String(), "Hello from") {
		t.Errorf("streamed text %q", text.String())
	}
}

func TestBedrockToolCall(t *testing.T) {
	_, url := azureFake(t, fakevendor.Options{})
	r := &ChatRequest{Body: []byte(`{}`), Messages: []Message{{Role: "user", Content: vtText(`call tool get_weather {"city":"Oslo"}`)}},
		Tools: []Tool{{Name: "get_weather", Parameters: json.RawMessage(`{"type":"object"}`)}}}
	res, err := NewBedrock().Chat(context.Background(), bedrockTarget(url, bedrockKey), r)
	if err != nil {
		t.Fatal(err)
	}
	if res.FinishReason != "tool_calls" || !strings.Contains(string(res.Body), `get_weather`) || !strings.Contains(string(res.Body), `Oslo`) {
		t.Fatalf("%s %s", res.FinishReason, res.Body)
	}
}

func TestBedrockFailuresAreClassified(t *testing.T) {
	cases := []struct {
		name  string
		key   string
		hdr   http.Header
		class Class
		code  string
	}{
		{"wrong secret fails the signature", "AKIAFAKE0001:not-the-secret", nil, ClassAuth, "InvalidSignatureException"},
		{"expired session token", bedrockKey + ":expired-token", nil, ClassAuth, "ExpiredTokenException"},
		{"throttling cools the credential", bedrockKey, http.Header{fakevendor.HeaderStatus: {"429"}, fakevendor.HeaderRetryAfter: {"7s"}}, ClassRateLimited, "ThrottlingException"},
		{"model not ready", bedrockKey, http.Header{fakevendor.HeaderStatus: {"429"}, fakevendor.HeaderErrorCode: {"ModelNotReadyException"}}, ClassServer, "ModelNotReadyException"},
		{"service unavailable", bedrockKey, http.Header{fakevendor.HeaderStatus: {"503"}}, ClassServer, "ServiceUnavailableException"},
		{"validation", bedrockKey, http.Header{fakevendor.HeaderStatus: {"400"}}, ClassBadRequest, "ValidationException"},
		{"access denied", bedrockKey, http.Header{fakevendor.HeaderStatus: {"403"}}, ClassAuth, "AccessDeniedException"},
		{"guardrail", bedrockKey, http.Header{fakevendor.HeaderContentFilter: {"true"}}, ClassContentFilter, "guardrail_intervened"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, url := azureFake(t, fakevendor.Options{})
			tg := bedrockTarget(url, tc.key)
			tg.Header = tc.hdr
			_, err := NewBedrock().Chat(context.Background(), tg, azureAsk())
			e := openaiAsError(t, err)
			if e.Class != tc.class || e.Code != tc.code || strings.Contains(e.Error(), "fake-secret") {
				t.Fatalf("got %v (code %q)", e, e.Code)
			}
			if tc.class == ClassRateLimited && e.RetryAfter.Seconds() != 7 {
				t.Errorf("retry after %v", e.RetryAfter)
			}
		})
	}
	t.Run("exception event mid-stream", func(t *testing.T) {
		_, url := azureFake(t, fakevendor.Options{ReplyChunks: 4})
		tg := bedrockTarget(url, bedrockKey)
		tg.Header = http.Header{fakevendor.HeaderErrorAfter: {"2"}, fakevendor.HeaderErrorCode: {"throttlingException"}}
		s, err := NewBedrock().ChatStream(context.Background(), tg, azureAsk())
		if err != nil {
			t.Fatal(err)
		}
		_, err = vendorCollect(t, s)
		if e := openaiAsError(t, err); e.Class != ClassRateLimited {
			t.Fatalf("got %v", e)
		}
	})
	t.Run("no region", func(t *testing.T) {
		tg := bedrockTarget("http://127.0.0.1:1", bedrockKey)
		tg.Region = ""
		_, err := NewBedrock().Chat(context.Background(), tg, azureAsk())
		if e := openaiAsError(t, err); e.Code != "no_region" {
			t.Fatalf("got %v", e)
		}
	})
}
