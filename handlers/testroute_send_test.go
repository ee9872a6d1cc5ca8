package handlers

import (
	"net/http"
	"strings"
	"testing"
)

// TestSendResultReadsEachAnswerShape: the test-route page shows what an
// answer says whatever its front door's shape, a tool call when there is no
// text, the raw body when the shape is unknown, and a failure's error object.
func TestSendResultReadsEachAnswerShape(t *testing.T) {
	long := strings.Repeat("x", 5000)
	for _, tc := range []struct {
		name      string
		status    int
		body      string
		embedding bool
		answer    string
		err       string
	}{
		{"chat", 200, `{"choices":[{"message":{"content":"hi there"}}]}`, false, "hi there", ""},
		{"chat tool", 200, `{"choices":[{"message":{"content":"","tool_calls":[{"id":"c1"}]}}]}`, false, `(the model called a tool: {"id":"c1"})`, ""},
		{"chat empty", 200, `{"choices":[]}`, false, `{"choices":[]}`, ""},
		{"responses", 200, `{"object":"response","output":[{"content":[{"type":"output_text","text":"a"},{"type":"output_text","text":"b"}]}]}`, false, "ab", ""},
		{"responses tool", 200, `{"object":"response","output":[{"type":"function_call","name":"f"}]}`, false, `(the model called a tool: {"type":"function_call","name":"f"})`, ""},
		{"messages", 200, `{"type":"message","content":[{"type":"text","text":"yo"}]}`, false, "yo", ""},
		{"messages tool", 200, `{"type":"message","content":[{"type":"tool_use","id":"t"}]}`, false, `(the model called a tool: {"type":"tool_use","id":"t"})`, ""},
		{"embedding", 200, `{"data":[{"embedding":[1,2,3]},{"embedding":[4,5,6]}]}`, true, "2 embedding(s) of 3 dimensions", ""},
		{"embedding unreadable", 200, `not json`, true, "not json", ""},
		{"long unknown", 200, long, false, long[:4000] + "…", ""},
		{"error object", 429, `{"error":{"code":"rate_limited"}}`, false, "", "{\n  \"code\": \"rate_limited\"\n}"},
		{"error body", 502, `bad gateway text`, false, "", "bad gateway text"},
		{"error empty", 503, ``, false, "", http.StatusText(503)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := sendResult(TestResult{Status: tc.status, Body: []byte(tc.body), RequestID: "rq"}, tc.embedding)
			if r.Answer != tc.answer || r.Error != tc.err || r.Status != tc.status || r.RequestID != "rq" {
				t.Fatalf("got answer %q error %q status %d id %q; want answer %q error %q", r.Answer, r.Error, r.Status, r.RequestID, tc.answer, tc.err)
			}
		})
	}
}
