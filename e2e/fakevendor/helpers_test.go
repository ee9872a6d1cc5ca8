package fakevendor

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

func start(t *testing.T, opts Options) (*Server, string) {
	t.Helper()
	s := New(opts)
	ts := httptest.NewServer(s)
	t.Cleanup(ts.Close)
	return s, ts.URL
}

// wire is one protocol's request conventions, so fault tests can run over
// all three.
type wire struct {
	name   string
	path   func(model string, stream bool) string
	header func(key string) http.Header
	body   func(model string, stream bool) string
}

var (
	openaiWire = wire{
		name: "openai",
		path: func(string, bool) string { return "/v1/chat/completions" },
		header: func(key string) http.Header {
			return http.Header{"Authorization": {"Bearer " + key}, "Content-Type": {"application/json"}}
		},
		body: func(model string, stream bool) string {
			return `{"model":"` + model + `","stream":` + boolString(stream) + `,"stream_options":` + map[bool]string{true: `{"include_usage":true}`, false: "null"}[stream] + `,"messages":[{"role":"user","content":"Say hello"}]}`
		},
	}
	anthropicWire = wire{
		name: "anthropic",
		path: func(string, bool) string { return "/v1/messages" },
		header: func(key string) http.Header {
			return http.Header{"X-Api-Key": {key}, "Anthropic-Version": {"2023-06-01"}, "Content-Type": {"application/json"}}
		},
		body: func(model string, stream bool) string {
			return `{"model":"` + model + `","max_tokens":256,"stream":` + boolString(stream) + `,"messages":[{"role":"user","content":"Say hello"}]}`
		},
	}
	geminiWire = wire{
		name: "gemini",
		path: func(model string, stream bool) string {
			if stream {
				return "/v1beta/models/" + model + ":streamGenerateContent?alt=sse"
			}
			return "/v1beta/models/" + model + ":generateContent"
		},
		header: func(key string) http.Header {
			return http.Header{"X-Goog-Api-Key": {key}, "Content-Type": {"application/json"}}
		},
		body: func(string, bool) string {
			return `{"contents":[{"role":"user","parts":[{"text":"Say hello"}]}]}`
		},
	}
	wires = []wire{openaiWire, anthropicWire, geminiWire}
)

func boolString(b bool) string {
	if b {
		return "true"
	}
	return "false"
}

type result struct {
	status int
	header http.Header
	body   []byte
	err    error // error reading the body (a cut stream)
}

func send(t *testing.T, method, url string, h http.Header, body string) result {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range h {
		req.Header[k] = v
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return result{status: resp.StatusCode, header: resp.Header, body: b, err: err}
}

// call sends one generation request of protocol w with extra headers.
func (w wire) call(t *testing.T, base, model, key string, stream bool, extra ...string) result {
	t.Helper()
	h := w.header(key)
	for i := 0; i+1 < len(extra); i += 2 {
		h.Set(extra[i], extra[i+1])
	}
	return send(t, http.MethodPost, base+w.path(model, stream), h, w.body(model, stream))
}

type sseEvent struct {
	Event string
	Data  string
	Raw   string // lines that are neither event: nor data:
}

// parseSSE splits a stream body into events. It also reports whether every
// event ended with a blank line.
func parseSSE(body []byte) (events []sseEvent, terminated bool) {
	s := string(body)
	terminated = strings.HasSuffix(s, "\n\n") || s == ""
	for _, block := range strings.Split(strings.TrimRight(s, "\n"), "\n\n") {
		if block == "" {
			continue
		}
		var ev sseEvent
		for _, line := range strings.Split(block, "\n") {
			switch {
			case strings.HasPrefix(line, "event: "):
				ev.Event = line[len("event: "):]
			case strings.HasPrefix(line, "data: "):
				ev.Data = line[len("data: "):]
			default:
				ev.Raw += line + "\n"
			}
		}
		events = append(events, ev)
	}
	return events, terminated
}

func readFixture(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// fixtureEvents parses a captured stream; captures may pad data with spaces.
func fixtureEvents(t *testing.T, name string) []sseEvent {
	t.Helper()
	evs, _ := parseSSE(bytes.ReplaceAll(readFixture(t, name), []byte("\r\n"), []byte("\n")))
	return evs
}

// keyPaths lists every object key path in a JSON document, arrays written
// as [] (e.g. "choices[].delta.content").
func keyPaths(t *testing.T, docs ...[]byte) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	for _, doc := range docs {
		var v any
		if err := json.Unmarshal(doc, &v); err != nil {
			t.Fatalf("not JSON: %v: %.200s", err, doc)
		}
		walkKeys(v, "", out)
	}
	return out
}

func walkKeys(v any, prefix string, out map[string]bool) {
	switch x := v.(type) {
	case map[string]any:
		for k, c := range x {
			p := k
			if prefix != "" {
				p = prefix + "." + k
			}
			out[p] = true
			walkKeys(c, p, out)
		}
	case []any:
		for _, c := range x {
			walkKeys(c, prefix+"[]", out)
		}
	}
}

// sameShape fails unless got uses only field names the real capture uses
// (besides extra) and has every field of the capture (besides missing).
// Entries of extra and missing also cover everything below them.
func sameShape(t *testing.T, what string, got, want map[string]bool, extra, missing []string) {
	t.Helper()
	covered := func(p string, list []string) bool {
		for _, e := range list {
			if p == e || strings.HasPrefix(p, e+".") || strings.HasPrefix(p, e+"[]") {
				return true
			}
		}
		return false
	}
	var invented, lacking []string
	for p := range got {
		if !want[p] && !covered(p, extra) {
			invented = append(invented, p)
		}
	}
	for p := range want {
		if !got[p] && !covered(p, missing) {
			lacking = append(lacking, p)
		}
	}
	sort.Strings(invented)
	sort.Strings(lacking)
	if len(invented) > 0 {
		t.Errorf("%s: fields the real vendor does not send: %v", what, invented)
	}
	if len(lacking) > 0 {
		t.Errorf("%s: fields of the real capture missing: %v", what, lacking)
	}
}

func decode(t *testing.T, b []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("decode %.300s: %v", b, err)
	}
}
