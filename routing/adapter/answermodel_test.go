package adapter

import (
	"os"
	"path/filepath"
	"testing"
)

func TestAppendAnswerModel(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{"id":"c1","object":"chat.completion","model":"gpt-4o-2024-08-06","choices":[{"index":0,"message":{"role":"assistant","content":"hi","model":"nested"}}]}`,
			`{"id":"c1","object":"chat.completion","model":"small","choices":[{"index":0,"message":{"role":"assistant","content":"hi","model":"nested"}}]}`},
		{`{"model": null, "choices":[]}`, `{"model": "small", "choices":[]}`},
		{`{"choices":[]}`, `{"model":"small","choices":[]}`},
		{`{}`, `{"model":"small"}`},
		{` { "object":"x" }`, ` {"model":"small", "object":"x" }`},
		{`[DONE]`, `[DONE]`},
	} {
		if got := string(AppendAnswerModel([]byte("data: "), []byte(tc.in), "small")); got != "data: "+tc.want {
			t.Errorf("AppendAnswerModel(%s) = %s, want data: %s", tc.in, got, tc.want)
		}
	}
}

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
		res, e := openaiChatResult(200, []byte(body))
		if e != nil {
			t.Fatalf("%s: %v", body, e)
		}
		want := string(AppendAnswerModel(nil, []byte(body), "small"))
		if got := string(AppendAnswerModelAt(nil, res, "small")); got != want {
			t.Errorf("AppendAnswerModelAt = %s, want %s", got, want)
		}
		if got := string(AppendAnswerModelAt([]byte("x"), res, "small")); got != "x"+want {
			t.Errorf("AppendAnswerModelAt onto dst = %s", got)
		}
	}
}
