package adapter

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"switchyard/routing/config"
	"testing"

	"github.com/tidwall/gjson"
)

func TestOpenAIResponsesBody(t *testing.T) {
	r := []byte(`{"model":"standard", "input":[{"role":"user","content":"hi"}], "store":false,"tools":[{"type":"web_search"}],"stream_options":{"include_obfuscation":false},"x_vendor":{"k":1}}`)
	b, e := openaiResponsesBody(r, "gpt-5", false)
	if e != nil {
		t.Fatal(e)
	}
	want := `{"model":"gpt-5","stream":false,"store":false,"input":[{"role":"user","content":"hi"}],"tools":[{"type":"web_search"}],"x_vendor":{"k":1}}`
	if string(b) != want {
		t.Fatalf("\n%s\nwant\n%s", b, want)
	}
	b, _ = openaiResponsesBody(r, "gpt-5", true)
	if !gjson.GetBytes(b, "stream").Bool() || gjson.GetBytes(b, "stream_options.include_obfuscation").Type != gjson.False {
		t.Fatalf("%s", b)
	}
}

func TestOpenAIResponsesStreamRecorded(t *testing.T) {
	replay := func(t *testing.T, name string) Stream {
		srv := httptest.NewServer(http.HandlerFunc(openaiSSE(vendorFixture(t, "responses", name))))
		t.Cleanup(srv.Close)
		s, err := OpenAI{}.ResponsesStream(context.Background(), responsesTarget(srv.URL), []byte(`{"model":"m","input":"x"}`))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	// An empty reasoning item is not content; the function call is.
	s := replay(t, "stream-reasoning-function-call.sse")
	first := -1
	for i := 0; ; i++ {
		c, err := s.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if c.Content && first < 0 {
			first = i
		}
	}
	if u := s.Usage(); first != 4 || !u.Known || u.Prompt != 78 || u.Completion != 719 || u.Reasoning != 704 || !u.ReasoningKnown {
		t.Fatalf("first content at event %d, usage %+v", first, u)
	}
	// A recorded failure: the error event ends the stream, classified.
	s = replay(t, "stream-error-then-failed.sse")
	for {
		_, err := s.Next()
		if err != nil {
			ue := openaiAsError(t, err)
			if ue.Class != ClassServer || ue.Code != "unknown-error" || ue.Message != "Foobar" {
				t.Fatalf("%+v", ue)
			}
			break
		}
	}
	// A whole stream, every event relayed.
	s = replay(t, "stream-two-function-calls.sse")
	n := 0
	for {
		_, err := s.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n != 29 || s.Usage().Prompt != 92 {
		t.Fatalf("%d events, usage %+v", n, s.Usage())
	}
}

func TestResponsesResultStatuses(t *testing.T) {
	for body, want := range map[string]Class{
		`{"object":"response","status":"failed","error":{"code":"server_error","message":"boom"}}`:                                                  ClassServer,
		`{"object":"response","status":"failed","error":{"code":"rate_limit_exceeded","message":"slow down"}}`:                                      ClassRateLimited,
		`{"object":"response","status":"incomplete","incomplete_details":{"reason":"content_filter"},"usage":{"input_tokens":1,"output_tokens":0}}`: ClassContentFilter,
		`{"error":{"message":"bad","type":"invalid_request_error"}}`:                                                                                ClassBadRequest,
		`{"object":"response","status":"queued"}`:                                                                                                   ClassServer,
	} {
		_, e := responsesResult(200, []byte(body))
		if e == nil || e.Class != want {
			t.Errorf("%s: %v, want %s", body, e, want)
		}
	}
	res, e := responsesResult(200, vendorFixture(t, "responses", "create-function-call.docs-example.json"))
	if e != nil || res.FinishReason != "tool_calls" || res.Usage.Prompt != 291 || res.Usage.Completion != 23 || res.Usage.CachedKnown {
		t.Fatalf("%+v %v", res, e)
	}
}

// responsesTarget is a native Responses deployment on url.
func responsesTarget(url string) Target {
	return Target{BaseURL: url + "/v1", APIKey: "sk-test-0123456789abcdef", UpstreamModel: "gpt-5", Capabilities: config.Capabilities{ResponsesAPI: true}, Client: http.DefaultClient}
}
