package adapter

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"switchyard/routing/config"
	"testing"
	"testing/iotest"
	"unicode/utf8"

	"github.com/tidwall/gjson"
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

// FuzzOpenAIChatBody checks that the body the OpenAI adapter forwards keeps
// every caller member as sent, with only model and the stream settings ours.
func FuzzOpenAIChatBody(f *testing.F) {
	for _, b := range fuzzFixtures(f, ".request.curl.sh") {
		if i := bytes.IndexByte(b, '{'); i >= 0 {
			if j := bytes.LastIndexByte(b, '}'); j > i {
				f.Add(b[i : j+1])
			}
		}
	}
	f.Add([]byte(`{"model":"m","messages":[],"stream_options":{"include_usage":false,"x":1},"x_vendor":[1,{"deep":[true,null]}]}`))
	f.Add([]byte(`{"model":"m","max_completion_tokens":5,"max_tokens":3,"messages":[{"role":"developer","content":"x"},{"role" : "developer"},{"content":"developer","role":"user"},"developer",[]]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		var top map[string]json.RawMessage
		if json.Unmarshal(body, &top) != nil {
			return
		}
		r := &ChatRequest{Body: body}
		for _, stream := range []bool{false, true} {
			out, e := openaiChatBody(r, "up/model\"x", stream, config.Capabilities{}, nil)
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
			if _, hasOpts := fwd["stream_options"]; hasOpts != stream {
				t.Fatalf("stream %v, stream_options present %v", stream, hasOpts)
			}
			for k, v := range top {
				switch k {
				case "model", "stream", "stream_options":
					continue
				}
				if !bytes.Equal(bytes.TrimSpace(fwd[k]), bytes.TrimSpace(v)) {
					t.Fatalf("field %q forwarded as %s, caller sent %s", k, fwd[k], v)
				}
			}
			// With every quirk the body is still JSON, without the newer forms.
			out, e = openaiChatBody(r, "up", stream, config.Capabilities{}, config.ProviderQuirks)
			if e != nil {
				t.Fatal(e)
			}
			clear(fwd)
			if err := json.Unmarshal(out, &fwd); err != nil {
				t.Fatalf("forwarded body with quirks is not JSON: %v\n%s", err, out)
			}
			_, hasOpts := fwd["stream_options"]
			_, hasMax := fwd["max_completion_tokens"]
			developer := false
			gjson.ParseBytes(fwd["messages"]).ForEach(func(_, m gjson.Result) bool {
				developer = developer || m.IsObject() && m.Get("role").Str == "developer"
				return true
			})
			if hasOpts || hasMax || developer {
				t.Fatalf("newer forms forwarded with the quirks: %s", out)
			}
		}
	})
}
