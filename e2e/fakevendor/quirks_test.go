package fakevendor

import (
	"net/http"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

// A strict older vendor refuses stream_options, max_completion_tokens and
// the developer role with OpenAI's 400; the older forms it serves.
func TestOpenAIStrictVendorRefusals(t *testing.T) {
	_, base := start(t, Options{Models: []string{"strict"}})
	h := func(name string) http.Header {
		return http.Header{"Authorization": {"Bearer sk-strict"}, "Content-Type": {"application/json"}, name: {"true"}}
	}
	for _, tc := range []struct {
		name, header, body, param, code string
	}{
		{"stream_options", HeaderRejectStreamOpt, `{"model":"strict","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hi"}]}`, "stream_options", "unknown_parameter"},
		{"max_completion_tokens", HeaderRejectMaxCompl, `{"model":"strict","max_completion_tokens":50,"messages":[{"role":"user","content":"hi"}]}`, "max_completion_tokens", "unknown_parameter"},
		{"developer", HeaderRejectDeveloper, `{"model":"strict","messages":[{"role":"user","content":"hi"},{"role":"developer","content":"be brief"}]}`, "messages[1].role", "invalid_value"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := send(t, http.MethodPost, base+"/v1/chat/completions", h(tc.header), tc.body)
			e := gjson.GetBytes(res.body, "error")
			if res.status != 400 || e.Get("type").Str != "invalid_request_error" || e.Get("param").Str != tc.param || e.Get("code").Str != tc.code {
				t.Errorf("%d %s", res.status, res.body)
			}
			// Without the fault the same request is served.
			if res := send(t, http.MethodPost, base+"/v1/chat/completions", http.Header{"Authorization": {"Bearer sk-strict"}}, tc.body); res.status != 200 {
				t.Errorf("healthy vendor: %d %s", res.status, res.body)
			}
		})
	}
	older := `{"model":"strict","stream":true,"max_tokens":50,"messages":[{"role":"system","content":"be brief"},{"role":"user","content":"hi"}]}`
	res := send(t, http.MethodPost, base+"/v1/chat/completions", http.Header{"Authorization": {"Bearer sk-strict"},
		HeaderRejectStreamOpt: {"1"}, HeaderRejectMaxCompl: {"1"}, HeaderRejectDeveloper: {"1"}}, older)
	if res.status != 200 || !strings.Contains(string(res.body), "data: [DONE]") || strings.Contains(string(res.body), `"usage":{`) {
		t.Errorf("the older forms: %d %s", res.status, res.body)
	}
}

// A reasoning_content vendor gives its reasoning beside the content, never
// inside it, streamed and not.
func TestOpenAIReasoningContent(t *testing.T) {
	_, base := start(t, Options{Models: []string{"r1"}})
	res := openaiWire.call(t, base, "r1", "sk-r", false, HeaderReasoning, "true")
	msg := gjson.GetBytes(res.body, "choices.0.message")
	if res.status != 200 || msg.Get("reasoning_content").Str != ReasoningText || strings.Contains(msg.Get("content").Str, ReasoningText) || msg.Get("content").Str == "" {
		t.Fatalf("%d %s", res.status, res.body)
	}
	res = openaiWire.call(t, base, "r1", "sk-r", true, HeaderReasoning, "true")
	events, done := parseSSE(res.body)
	var reasoning, content strings.Builder
	reasoningFirst := true
	for _, ev := range events {
		d := gjson.Get(ev.Data, "choices.0.delta")
		reasoning.WriteString(d.Get("reasoning_content").Str)
		content.WriteString(d.Get("content").Str)
		if d.Get("reasoning_content").Str != "" && content.Len() > 0 {
			reasoningFirst = false
		}
	}
	if !done || reasoning.String() != ReasoningText || !reasoningFirst || content.Len() == 0 || strings.Contains(content.String(), ReasoningText) {
		t.Errorf("reasoning %q content %q (first %v)\n%s", reasoning.String(), content.String(), reasoningFirst, res.body)
	}
	// Without the fault no reasoning is sent.
	if res := openaiWire.call(t, base, "r1", "sk-r", false); gjson.GetBytes(res.body, "choices.0.message.reasoning_content").Exists() {
		t.Errorf("reasoning without the fault: %s", res.body)
	}
}
