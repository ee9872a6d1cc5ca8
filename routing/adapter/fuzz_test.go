package adapter

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/iotest"
	"unicode/utf8"
)

// fuzzFixtures returns the testdata/openai files whose names end in suffix.
func fuzzFixtures(f *testing.F, suffix string) [][]byte {
	f.Helper()
	names, err := filepath.Glob("testdata/openai/*" + suffix)
	if err != nil || len(names) == 0 {
		f.Fatalf("no *%s fixtures: %v", suffix, err)
	}
	var out [][]byte
	for _, n := range names {
		b, err := os.ReadFile(n)
		if err != nil {
			f.Fatal(err)
		}
		out = append(out, b)
	}
	return out
}

func fuzzChatSeeds(f *testing.F) {
	for _, name := range []string{"chat-nonstream-default.request.curl.sh", "chat-nonstream-tool-calls.request.curl.sh"} {
		f.Add(parseCurlBody(f, name))
	}
	for _, s := range []string{
		string(parseBenchBody),
		openaiCallerBody,
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
		if len(r.Messages) == 0 || strings.TrimSpace(r.Model) == "" || !utf8.Valid(body) {
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
		if err := json.Unmarshal(top["messages"], &msgs); err != nil || len(msgs) != len(r.Messages) {
			t.Fatalf("%d messages, encoding/json reads %d (%v)", len(r.Messages), len(msgs), err)
		}
		for i, m := range r.Messages {
			if _, ok := parseRole(m.Role); !ok || m.Role != msgs[i].Role {
				t.Fatalf("message %d role %q, encoding/json reads %q", i, m.Role, msgs[i].Role)
			}
			if m.Content == nil && len(m.ToolCalls) == 0 {
				t.Fatalf("message %d has neither content nor tool calls", i)
			}
			var s string
			if json.Unmarshal(msgs[i].Content, &s) == nil && m.Text() != s {
				t.Fatalf("message %d text %q, encoding/json reads %q", i, m.Text(), s)
			}
		}

		for _, stream := range []bool{false, true} {
			out, e := openaiChatBody(r, "up/model\"x", stream)
			if e != nil {
				t.Fatal(e)
			}
			var fwd map[string]json.RawMessage
			if err := json.Unmarshal(out, &fwd); err != nil {
				t.Fatalf("forwarded body is not JSON: %v\n%s", err, out)
			}
			if string(fwd["model"]) != `"up/model\"x"` || string(fwd["stream"]) != map[bool]string{false: "false", true: "true"}[stream] {
				t.Fatalf("forwarded model %s stream %s", fwd["model"], fwd["stream"])
			}
			_, hasOpts := fwd["stream_options"]
			if hasOpts != stream {
				t.Fatalf("stream %v, stream_options present %v", stream, hasOpts)
			}
			if stream {
				var so map[string]json.RawMessage
				if json.Unmarshal(fwd["stream_options"], &so) != nil || string(so["include_usage"]) != "true" {
					t.Fatalf("stream_options %s", fwd["stream_options"])
				}
			}
			for k, v := range top {
				switch k {
				case "model", "stream", "stream_options":
					continue
				}
				if !bytes.Equal(fwd[k], v) {
					t.Fatalf("field %q forwarded as %s, caller sent %s", k, fwd[k], v)
				}
			}
			for k := range fwd {
				if _, ok := top[k]; !ok && k != "model" && k != "stream" && k != "stream_options" {
					t.Fatalf("forwarded an extra field %q", k)
				}
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

// sseReference is SSEReader's documented behaviour written the obvious way,
// over the whole input at once: lines end at CRLF, CR or LF; the last line
// may be unterminated; events are dispatched at a blank line or at the end.
func sseReference(in []byte) []sseEvent {
	var lines []string
	start := 0
	for i := 0; i < len(in); i++ {
		switch in[i] {
		case '\n':
			lines = append(lines, string(in[start:i]))
			start = i + 1
		case '\r':
			lines = append(lines, string(in[start:i]))
			if i+1 < len(in) && in[i+1] == '\n' {
				i++
			}
			start = i + 1
		}
	}
	if start < len(in) {
		lines = append(lines, string(in[start:]))
	}
	var (
		out         []sseEvent
		event, data string
		hasData     bool
	)
	emit := func() {
		out = append(out, sseEvent{event, strings.TrimRight(data, " \t")})
		event, data, hasData = "", "", false
	}
	for _, l := range lines {
		if l == "" {
			if hasData || event != "" {
				emit()
			}
			continue
		}
		if l[0] == ':' {
			continue
		}
		field, value := l, ""
		if i := strings.IndexByte(l, ':'); i >= 0 {
			field, value = l[:i], strings.TrimPrefix(l[i+1:], " ")
		}
		switch field {
		case "data":
			if hasData {
				data += "\n"
			}
			data += value
			hasData = true
		case "event":
			event = strings.TrimSpace(value)
		}
	}
	if hasData || event != "" {
		emit()
	}
	return out
}

// FuzzSSEReader feeds the same bytes through readers that cut them
// differently and compares every result with sseReference.
func FuzzSSEReader(f *testing.F) {
	for _, b := range fuzzFixtures(f, ".sse") {
		f.Add(b, uint16(7))
		f.Add(bytes.ReplaceAll(b, []byte("\n"), []byte("\r\n")), uint16(1))
		f.Add(bytes.ReplaceAll(b, []byte("\n"), []byte("\r")), uint16(3))
	}
	for _, s := range []string{
		"data: a\r\ndata: b\r\n\r\n", "data: a\r\rdata: b", "event: x\n\n", ": c\ndata:\n\n",
		"data: é世🌊 \t\n\n", "data:  x\r\n", "\r\n\r\ndata", "data: a\r", "id: 1\nretry: 2\ndata: [DONE]\n\n",
	} {
		f.Add([]byte(s), uint16(2))
	}
	f.Fuzz(func(t *testing.T, in []byte, cut uint16) {
		want := sseReference(in)
		c := int(cut)%max(len(in), 1) + 1
		for name, r := range map[string]io.Reader{
			"whole":     bytes.NewReader(in),
			"one byte":  iotest.OneByteReader(bytes.NewReader(in)),
			"cut":       &sseSplitReader{data: in, cuts: []int{c}},
			"every cut": &sseSplitReader{data: in, cuts: sseEvery(len(in), c)},
		} {
			got, err := sseReadAll(r)
			if err != io.EOF {
				t.Fatalf("%s: ended with %v", name, err)
			}
			if len(got) != len(want) {
				t.Fatalf("%s: %d events %q, want %d %q", name, len(got), got, len(want), want)
			}
			for i := range got {
				if got[i] != want[i] {
					t.Fatalf("%s: event %d is %q, want %q", name, i, got[i], want[i])
				}
				if strings.ContainsRune(got[i].Data, '\r') || strings.ContainsAny(got[i].Event, "\r\n") {
					t.Fatalf("%s: event %d carries a line end: %q", name, i, got[i])
				}
				if strings.HasSuffix(got[i].Data, " ") || strings.HasSuffix(got[i].Data, "\t") {
					t.Fatalf("%s: event %d keeps trailing blanks: %q", name, i, got[i].Data)
				}
			}
		}
	})
}

// FuzzOpenAIChunk checks that no upstream event can panic the stream
// parser and that its flags stay consistent.
func FuzzOpenAIChunk(f *testing.F) {
	for _, b := range fuzzFixtures(f, ".sse") {
		for _, line := range strings.Split(string(b), "\n") {
			if data, ok := strings.CutPrefix(line, "data: "); ok {
				f.Add([]byte(data))
			}
		}
	}
	f.Add([]byte(`{"error":{"message":"x","code":429}}`))
	f.Add([]byte(`{"choices":[{"delta":{"tool_calls":[ ]}}],"usage":{"prompt_tokens":-1}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		s := &openaiStream{status: 200}
		c, e := s.chunk(SSEEvent{Data: data})
		if e != nil {
			if e.Class == "" || e.Message == "" {
				t.Fatalf("unclassified error %+v", e)
			}
			return
		}
		if !bytes.Equal(c.Data, data) {
			t.Fatal("chunk data differs from the event")
		}
		if c.UsageOnly && c.Content {
			t.Fatal("a usage-only chunk flagged as content")
		}
		if u := s.Usage(); u.Prompt < 0 || u.Completion < 0 || u.Cached < 0 {
			t.Fatalf("negative usage %+v", u)
		}
	})
}

// FuzzClassifyHTTP checks that any upstream error answer gets a class, a
// bounded message and a non-negative wait.
func FuzzClassifyHTTP(f *testing.F) {
	for _, b := range fuzzFixtures(f, ".json") {
		f.Add(429, b, "1")
	}
	f.Add(502, []byte("<html>bad gateway</html>"), "Wed, 21 Oct 2015 07:28:00 GMT")
	f.Fuzz(func(t *testing.T, status int, body []byte, retryAfter string) {
		h := http.Header{}
		h.Set("Retry-After", retryAfter)
		e := ClassifyHTTP(status, h, body)
		if _, ok := policies[e.Class]; !ok {
			t.Fatalf("class %q is not in the policy table", e.Class)
		}
		if e.RetryAfter < 0 || !utf8.ValidString(e.Message) || e.Message == "" {
			t.Fatalf("%+v", e)
		}
		if !json.Valid(body) && len(e.Message) > classifyMaxMessage {
			t.Fatalf("raw message of %d bytes", len(e.Message))
		}
	})
}
