package adapter

import (
	"testing"
)

func TestOpenAIURLJoin(t *testing.T) {
	for _, tc := range []struct{ base, want string }{
		{"https://api.openai.com/v1", "https://api.openai.com/v1/chat/completions"},
		{"https://api.openai.com/v1/", "https://api.openai.com/v1/chat/completions"},
		{"https://api.openai.com/v1//", "https://api.openai.com/v1/chat/completions"},
		{"https://ark.example/api/v3", "https://ark.example/api/v3/chat/completions"},
		{"https://x.example/openai/v1/?api-version=2024-10-21", "https://x.example/openai/v1/chat/completions?api-version=2024-10-21"},
	} {
		if got := openaiURL(tc.base, "/chat/completions"); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.base, got, tc.want)
		}
	}
}

// A delta is content when it carries something a caller can use.
func TestOpenAIChunkContentFlags(t *testing.T) {
	for delta, want := range map[string]bool{
		`{}`:                                  false,
		`{"role":"assistant"}`:                false,
		`{"content":null,"refusal":null}`:     false,
		`{"content":""}`:                      false,
		`{"tool_calls":[]}`:                   false,
		`{"content":"x"}`:                     true,
		`{"reasoning_content":"thinking..."}`: true,
		`{"reasoning":"thinking..."}`:         true,
		`{"refusal":"no"}`:                    true,
		`{"content":"","tool_calls":[{"index":0,"function":{"arguments":"{"}}]}`: true,
		`{"role":"assistant","content":"","obfuscation":"xk2"}`:                  false,
	} {
		s := &openaiStream{}
		c, e := s.chunk(SSEEvent{Data: []byte(`{"choices":[{"index":0,"delta":` + delta + `}]}`)})
		if e != nil || c.Content != want {
			t.Errorf("%s: Content %v (%v), want %v", delta, c.Content, e, want)
		}
	}
}
