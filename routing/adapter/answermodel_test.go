package adapter_test

import (
	"os"
	"path/filepath"
	"switchyard/routing/adapter"
	"switchyard/routing/frontdoor"
	"testing"
)

// The answer whose model the adapter located while reading it comes out
// exactly as the searching path makes it: real captures and the edge
// cases above.
func TestAppendAnswerModelAtAgrees(t *testing.T) {
	bodies := []string{
		`{"id":"c1","object":"chat.completion","model":"gpt-4o-2024-08-06","choices":[{"index":0,"message":{"role":"assistant","content":"hi","model":"nested"}}]}`,
		`{"model": null, "choices":[{"index":0,"message":{"role":"assistant","content":"x"},"finish_reason":"stop"}]}`,
		`{"choices":[{"index":0,"message":{"role":"assistant","content":"x"},"finish_reason":"stop"}]}`,
		` {"choices":[{"index":0,"finish_reason":"stop"}], "model" : "m\"q" }`,
	}
	for _, f := range []string{"chat-nonstream-default.response.json", "chat-nonstream-tool-calls.response.json"} {
		b, err := os.ReadFile(filepath.Join("testdata", "openai", f))
		if err != nil {
			t.Fatal(err)
		}
		bodies = append(bodies, string(b))
	}
	for _, body := range bodies {
		res, e := adapter.OpenAIChatResult(200, []byte(body))
		if e != nil {
			t.Fatalf("%s: %v", body, e)
		}
		want := string(frontdoor.AppendAnswerModel(nil, []byte(body), "small"))
		if got := string(frontdoor.AppendAnswerModelAt(nil, res, "small")); got != want {
			t.Errorf("AppendAnswerModelAt = %s, want %s", got, want)
		}
		if got := string(frontdoor.AppendAnswerModelAt([]byte("x"), res, "small")); got != "x"+want {
			t.Errorf("AppendAnswerModelAt onto dst = %s", got)
		}
	}
}
