package frontdoor

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"unicode/utf8"
)

// FuzzParseResponsesRequest: whatever the body, the Responses parser never
// panics, never modifies its input, refuses with a *RequestError, and what
// it accepts it translates into a chat request the chat parser accepts.
func FuzzParseResponsesRequest(f *testing.F) {
	for _, name := range []string{"create-function-call.docs-example.request.json", "create-image.docs-example.request.json"} {
		if b, err := os.ReadFile(filepath.Join("testdata", "responses", name)); err == nil {
			f.Add(b)
		}
	}
	for _, s := range []string{
		`{"model":"m","input":"hi"}`,
		`{"model":"m","instructions":"x","input":[{"role":"user","content":[{"type":"input_text","text":"a"},{"type":"input_image","image_url":"u"}]},` +
			`{"type":"function_call","call_id":"c","name":"f","arguments":"{}"},{"type":"function_call_output","call_id":"c","output":[{"type":"input_text","text":"r"}]}],` +
			`"tools":[{"type":"function","name":"f","parameters":{}},{"type":"web_search"}],"tool_choice":{"type":"function","name":"f"},` +
			`"text":{"format":{"type":"json_schema","name":"s","schema":{}},"verbosity":"low"},"reasoning":{"effort":"high","summary":"auto"},"include":["x"],"stream":true}`,
		`{"model":"m","input":[{"type":"reasoning","summary":[]}]}`,
		`{"model":"m","input":[{"type":"item_reference","id":"x"}]}`,
		`{"model":"m","input":"x","store":true}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		orig := bytes.Clone(body)
		r, err := ParseResponsesRequest(body)
		if !bytes.Equal(body, orig) {
			t.Fatal("ParseResponsesRequest modified its input")
		}
		if err != nil {
			var re *RequestError
			if !errors.As(err, &re) || !errors.Is(err, ErrInvalidRequest) || re.Message == "" {
				t.Fatalf("error %T %v is not a *RequestError wrapping ErrInvalidRequest", err, err)
			}
			return
		}
		if r.Chat == nil || r.Chat.Native == nil || r.Model == "" || !utf8.Valid(body) || len(r.Chat.Conversation()) == 0 {
			t.Fatalf("accepted %s into %+v", body, r)
		}
		if _, err := ParseChatRequest(r.Chat.ChatBody()); err != nil {
			t.Fatalf("the translation %s is refused by the chat parser: %v", r.Chat.ChatBody(), err)
		}
		var top map[string]json.RawMessage
		if err := json.Unmarshal(body, &top); err != nil {
			t.Fatalf("accepted a body encoding/json refuses: %v", err)
		}
	})
}
