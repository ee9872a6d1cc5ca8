package frontdoor

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"
)

func fuzzChatSeeds(f *testing.F) {
	for _, name := range []string{"chat-nonstream-default.request.curl.sh", "chat-nonstream-tool-calls.request.curl.sh"} {
		f.Add(parseCurlBody(f, name))
	}
	for _, s := range []string{
		string(parseBenchBody),
		`{"model":"standard","messages":[{"role":"system","content":"be brief"},{"role":"user","content":[{"type":"text","text":"what is this?"},{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0KGgo=","detail":"high"}}]}],"tools":[{"type":"function","function":{"name":"look","parameters":{"type":"object"}}}],"logit_bias":{"50256":-100},"x_vendor_extension":[1,{"deep":[true,null]}]}`,
		`{"model":"fast","messages":[{"role":"user","content":"hi"},{"role":"assistant","content":null,"tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c","content":"ok"}],"stream":true,"stream_options":{"include_usage":true}}`,
		`{"model":"fast","messages":[{"role":"user","content":[{"type":"text","text":"a\u00e9\ud83c\udf0a"},{"type":"image_url","image_url":{"url":"https://x/y.png"}}]}],"stop":["\n"],"thinking":{"type":"enabled","budget_tokens":1024}}`,
		`{"model":"fast","mod\u0065l":"x","messages":[]}`,
		`{"model":"fast","messages":[{"role":"user","content":"\ud800"}],"x":{"model":"inner"},"Model":"case"}`,
		`{"model":"fast","messages":[{"role":"user","content":"hi"}],"max_tokens":1e400,"temperature":-0}`,
		"{\"model\":\"fast\",\"messages\":[{\"role\":\"user\",\"content\":\"\xff\"}]}",
		`[]`, ``, `null`, `{"model":"fast","messages":[[[[[[[[]]]]]]]]}`,
	} {
		f.Add([]byte(s))
	}
}

// FuzzParseChatRequest checks the parser against encoding/json and checks
// that the body the OpenAI adapter forwards keeps every caller field.
func FuzzParseChatRequest(f *testing.F) {
	fuzzChatSeeds(f)
	f.Fuzz(func(t *testing.T, body []byte) {
		orig := bytes.Clone(body)
		r, err := ParseChatRequest(body)
		if !bytes.Equal(body, orig) {
			t.Fatal("ParseChatRequest modified its input")
		}
		if err != nil {
			var re *RequestError
			if !errors.As(err, &re) || !errors.Is(err, ErrInvalidRequest) || re.Message == "" {
				t.Fatalf("error %T %v is not a *RequestError wrapping ErrInvalidRequest", err, err)
			}
			return
		}
		if len(r.Conversation()) == 0 || strings.TrimSpace(r.Model) == "" || !utf8.Valid(body) {
			t.Fatalf("accepted a request without messages, model or valid UTF-8: %+v", r)
		}
		if r.IncludeUsage && !r.Stream {
			t.Fatal("include_usage without stream")
		}
		var top map[string]json.RawMessage
		if err := json.Unmarshal(body, &top); err != nil {
			t.Fatalf("accepted a body encoding/json refuses: %v", err)
		}
		var model string
		var msgs []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		}
		if json.Unmarshal(top["model"], &model) != nil || model != r.Model {
			t.Fatalf("model %q, encoding/json reads %q", r.Model, model)
		}
		if err := json.Unmarshal(top["messages"], &msgs); err != nil || len(msgs) != len(r.Conversation()) {
			t.Fatalf("%d messages, encoding/json reads %d (%v)", len(r.Conversation()), len(msgs), err)
		}
		for i, m := range r.Conversation() {
			if m.Role != msgs[i].Role || m.Role == "" {
				t.Fatalf("message %d role %q, encoding/json reads %q", i, m.Role, msgs[i].Role)
			}
			if _, ok := parseRole(m.Role); !ok && r.Untranslatable == "" {
				t.Fatalf("message %d has role %q, yet the request is translatable", i, m.Role)
			}
			if m.Content == nil && len(m.ToolCalls) == 0 {
				t.Fatalf("message %d has neither content nor tool calls", i)
			}
			var s string
			if json.Unmarshal(msgs[i].Content, &s) == nil && m.Text() != s {
				t.Fatalf("message %d text %q, encoding/json reads %q", i, m.Text(), s)
			}
		}

	})
}

func FuzzParseEmbeddingRequest(f *testing.F) {
	f.Add(parseCurlBody(f, "embeddings.request.curl.sh"))
	for _, s := range []string{
		`{"model":"emb","input":["a","b"],"dimensions":256,"input_type":"query"}`,
		`{"model":"emb","input":[1,2]}`, `{"model":"emb","input":""}`, `{"model":"emb","input":[["x"]]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		r, err := ParseEmbeddingRequest(body)
		if err != nil {
			if !errors.Is(err, ErrInvalidRequest) {
				t.Fatalf("%v does not wrap ErrInvalidRequest", err)
			}
			return
		}
		if len(r.Inputs) == 0 || r.Model == "" || r.Dimensions < 0 {
			t.Fatalf("accepted %+v", r)
		}
		for _, in := range r.Inputs {
			if in == "" {
				t.Fatal("accepted an empty input")
			}
		}
		var m struct {
			Input json.RawMessage `json:"input"`
		}
		if err := json.Unmarshal(body, &m); err != nil {
			t.Fatalf("accepted a body encoding/json refuses: %v", err)
		}
		var one string
		var many []string
		if json.Unmarshal(m.Input, &one) == nil {
			many = []string{one}
		} else if err := json.Unmarshal(m.Input, &many); err != nil {
			t.Fatalf("input %s is neither a string nor strings", m.Input)
		}
		if strings.Join(many, "\x00") != strings.Join(r.Inputs, "\x00") {
			t.Fatalf("inputs %q, encoding/json reads %q", r.Inputs, many)
		}
	})
}
