package frontdoor

import (
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
