package fakevendor

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"
)

// errorType is the protocol's error type in an error body: OpenAI
// error.type, Anthropic error.type, Gemini error.status.
func errorType(t *testing.T, w wire, body []byte) string {
	t.Helper()
	var e struct {
		Type  string `json:"type"`
		Error struct {
			Type   string `json:"type"`
			Status string `json:"status"`
			Code   any    `json:"code"`
		} `json:"error"`
	}
	decode(t, body, &e)
	switch w.name {
	case "anthropic":
		if e.Type != "error" {
			t.Errorf("anthropic error without type error: %s", body)
		}
		return e.Error.Type
	case "gemini":
		return e.Error.Status
	}
	return e.Error.Type
}

func TestStatusFault(t *testing.T) {
	_, base := start(t, Options{})
	tests := []struct {
		status int
		want   [3]string // openai, anthropic, gemini
	}{
		{400, [3]string{"invalid_request_error", "invalid_request_error", "INVALID_ARGUMENT"}},
		{404, [3]string{"invalid_request_error", "not_found_error", "NOT_FOUND"}},
		{429, [3]string{"requests", "rate_limit_error", "RESOURCE_EXHAUSTED"}},
		{500, [3]string{"server_error", "api_error", "INTERNAL"}},
		{503, [3]string{"server_error", "api_error", "UNAVAILABLE"}},
		{529, [3]string{"server_error", "overloaded_error", "INTERNAL"}},
	}
	for _, tt := range tests {
		for i, w := range wires {
			for _, stream := range []bool{false, true} {
				t.Run(w.name+"/"+strconv.Itoa(tt.status)+"/stream="+boolString(stream), func(t *testing.T) {
					res := w.call(t, base, "m-status", "key-ok", stream, HeaderStatus, strconv.Itoa(tt.status))
					if res.status != tt.status || !strings.HasPrefix(res.header.Get("Content-Type"), "application/json") {
						t.Fatalf("status %d content type %q, want %d JSON", res.status, res.header.Get("Content-Type"), tt.status)
					}
					if got := errorType(t, w, res.body); got != tt.want[i] {
						t.Errorf("error type %q, want %q: %s", got, tt.want[i], res.body)
					}
					if res.header.Get("Retry-After") != "" {
						t.Error("Retry-After without RetryAfter")
					}
				})
			}
		}
	}
}

func TestRetryAfter(t *testing.T) {
	_, base := start(t, Options{})
	for _, tt := range []struct{ in, want string }{{"1s", "1"}, {"1500ms", "2"}, {"100ms", "1"}, {"2m", "120"}} {
		for _, w := range wires {
			res := w.call(t, base, "m", "key-ok", false, HeaderStatus, "429", HeaderRetryAfter, tt.in)
			if res.status != 429 || res.header.Get("Retry-After") != tt.want {
				t.Errorf("%s %s: status %d Retry-After %q, want %s", w.name, tt.in, res.status, res.header.Get("Retry-After"), tt.want)
			}
		}
	}
}

func TestKeyConventions(t *testing.T) {
	_, base := start(t, Options{})
	tests := []struct {
		key    string
		status [3]int
		typ    [3]string
	}{
		{"bad-key-0001", [3]int{401, 401, 400}, [3]string{"invalid_request_error", "authentication_error", "INVALID_ARGUMENT"}},
		{"broke-key-01", [3]int{429, 402, 403}, [3]string{"insufficient_quota", "billing_error", "PERMISSION_DENIED"}},
		{"", [3]int{401, 401, 403}, [3]string{"invalid_request_error", "authentication_error", "PERMISSION_DENIED"}},
	}
	for _, tt := range tests {
		for i, w := range wires {
			t.Run(w.name+"/"+tt.key, func(t *testing.T) {
				res := w.call(t, base, "m", tt.key, true)
				if res.status != tt.status[i] || errorType(t, w, res.body) != tt.typ[i] {
					t.Errorf("status %d body %s, want %d %s", res.status, res.body, tt.status[i], tt.typ[i])
				}
			})
		}
	}
}

func TestFailTimes(t *testing.T) {
	for _, w := range wires {
		t.Run(w.name, func(t *testing.T) {
			s, base := start(t, Options{})
			s.SetRules(Rule{Model: "flaky", Fault: Fault{Status: 503, FailTimes: 2}})
			var got []int
			for range 4 {
				got = append(got, w.call(t, base, "flaky", "key-ok", false).status)
			}
			if want := []int{503, 503, 200, 200}; !equalInts(got, want) {
				t.Errorf("statuses %v, want %v", got, want)
			}
			if n := s.Rules()[0].Matched; n != 4 {
				t.Errorf("rule matched %d, want 4", n)
			}
			if s.CountStatus("flaky", 503) != 2 || s.CountStatus("flaky", 200) != 2 {
				t.Errorf("stats %+v", s.Stats().Models["flaky"])
			}
			s.Reset()
			if st := w.call(t, base, "flaky", "key-ok", false).status; st != 503 {
				t.Errorf("after Reset status %d, want the fault again", st)
			}
		})
	}

	t.Run("process-wide fault", func(t *testing.T) {
		_, base := start(t, Options{Fault: Fault{Status: 500, FailTimes: 1, Dimension: 4}})
		r1 := send(t, http.MethodPost, base+"/v1/embeddings", openaiWire.header("k"), `{"model":"e","input":"x"}`)
		r2 := send(t, http.MethodPost, base+"/v1/embeddings", openaiWire.header("k"), `{"model":"e","input":"x"}`)
		var emb struct {
			Data []struct{ Embedding []float32 } `json:"data"`
		}
		decode(t, r2.body, &emb)
		if r1.status != 500 || r2.status != 200 || len(emb.Data[0].Embedding) != 4 {
			t.Errorf("statuses %d %d, dimension %d: the shape fields must outlive FailTimes", r1.status, r2.status, len(emb.Data[0].Embedding))
		}
	})
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// terminal is the event that only a complete stream has.
func terminal(w wire) string {
	switch w.name {
	case "anthropic":
		return `"message_stop"`
	case "gemini":
		return `"finishReason"`
	}
	return "[DONE]"
}

func contentEvents(events []sseEvent) int {
	n := 0
	for _, e := range events {
		if strings.Contains(e.Data, "Hello from") {
			n++
		}
	}
	return n
}

func TestCutStream(t *testing.T) {
	_, base := start(t, Options{ReplyChunks: 4})
	for _, w := range wires {
		for _, tt := range []struct {
			cut     string
			content int
		}{{"2", 2}, {"-1", 0}, {"99", 4}} {
			t.Run(w.name+"/cut="+tt.cut, func(t *testing.T) {
				res := w.call(t, base, "m", "key-ok", true, HeaderCutAfter, tt.cut)
				if res.status != 200 {
					t.Fatalf("status %d", res.status)
				}
				if !errors.Is(res.err, io.ErrUnexpectedEOF) {
					t.Errorf("reading the body: %v, want an abrupt close (unexpected EOF)", res.err)
				}
				events, _ := parseSSE(res.body)
				if n := contentEvents(events); n != tt.content {
					t.Errorf("%d content events, want %d:\n%s", n, tt.content, res.body)
				}
				if strings.Contains(string(res.body), terminal(w)) || strings.Contains(string(res.body), "content_block_stop") {
					t.Errorf("cut stream has its end marker:\n%s", res.body)
				}
			})
		}
	}
}

func TestErrorAfter(t *testing.T) {
	_, base := start(t, Options{ReplyChunks: 4})
	for _, w := range wires {
		t.Run(w.name, func(t *testing.T) {
			res := w.call(t, base, "m", "key-ok", true, HeaderErrorAfter, "1")
			if res.status != 200 || res.err != nil {
				t.Fatalf("status %d err %v", res.status, res.err)
			}
			events, terminated := parseSSE(res.body)
			if !terminated {
				t.Error("error event does not end with a blank line")
			}
			if n := contentEvents(events); n != 1 {
				t.Errorf("%d content events before the error, want 1", n)
			}
			if strings.Contains(string(res.body), terminal(w)) {
				t.Errorf("stream with an error also completes:\n%s", res.body)
			}
			last := events[len(events)-1]
			switch w.name {
			case "openai":
				var e struct {
					Error openaiErrorObject `json:"error"`
				}
				decode(t, []byte(last.Data), &e)
				if last.Event != "" || e.Error.Type != "server_error" || e.Error.Message == "" {
					t.Errorf("last event %+v", last)
				}
			case "anthropic":
				var e struct {
					Type  string `json:"type"`
					Error struct{ Type, Message string }
				}
				decode(t, []byte(last.Data), &e)
				if last.Event != "error" || e.Type != "error" || e.Error.Type != "overloaded_error" {
					t.Errorf("last event %+v", last)
				}
			case "gemini":
				// Vertex style: a raw pretty-printed JSON object, no data: prefix.
				var e struct {
					Error struct {
						Code   int
						Status string
					}
				}
				decode(t, []byte(last.Raw), &e)
				if last.Data != "" || !strings.HasPrefix(last.Raw, "{\n") || e.Error.Code != 503 || e.Error.Status != "UNAVAILABLE" {
					t.Errorf("last event %+v", last)
				}
			}
		})
	}
}

// TestErrorStatusCancelled: ErrorStatus 499 makes the mid-stream error a
// vendor-side cancellation in each protocol's own words.
func TestErrorStatusCancelled(t *testing.T) {
	_, base := start(t, Options{ReplyChunks: 4})
	for _, w := range wires {
		t.Run(w.name, func(t *testing.T) {
			res := w.call(t, base, "m", "key-ok", true, HeaderErrorAfter, "2", HeaderErrorStatus, "499")
			if res.status != 200 || res.err != nil {
				t.Fatalf("status %d err %v", res.status, res.err)
			}
			events, _ := parseSSE(res.body)
			if n := contentEvents(events); n != 2 {
				t.Errorf("%d content events before the error, want 2", n)
			}
			last := events[len(events)-1]
			var e struct {
				Type  string `json:"type"`
				Error struct {
					Code   int    `json:"code"`
					Status string `json:"status"`
					Type   string `json:"type"`
				} `json:"error"`
			}
			switch w.name {
			case "openai":
				decode(t, []byte(last.Data), &e)
				if e.Error.Code != 499 || e.Error.Status != "CANCELLED" {
					t.Errorf("last event %+v", last)
				}
			case "anthropic":
				decode(t, []byte(last.Data), &e)
				if last.Event != "error" || e.Type != "error" || e.Error.Type != "api_error" {
					t.Errorf("last event %+v", last)
				}
			case "gemini":
				decode(t, []byte(last.Raw), &e)
				if e.Error.Code != 499 || e.Error.Status != "CANCELLED" {
					t.Errorf("last event %+v", last)
				}
			}
		})
	}
	if res := wires[0].call(t, base, "m", "key-ok", true, HeaderErrorAfter, "1", HeaderErrorStatus, "200"); res.status != 400 {
		t.Errorf("an error status below 400 is refused: got %d", res.status)
	}
}

func TestOversizedLine(t *testing.T) {
	_, base := start(t, Options{ReplyChunks: 3})
	const size = 3 << 20 // well past bufio.Scanner's 64 KiB default
	for _, w := range wires {
		t.Run(w.name, func(t *testing.T) {
			res := w.call(t, base, "m", "key-ok", true, HeaderOversizedLine, strconv.Itoa(size))
			if res.status != 200 || res.err != nil {
				t.Fatalf("status %d err %v", res.status, res.err)
			}
			var long []string
			for _, line := range strings.Split(string(res.body), "\n") {
				if len(line) > 4096 {
					long = append(long, line)
				}
			}
			if len(long) != 1 || len(long[0]) != size || !strings.HasPrefix(long[0], "data: {") {
				t.Fatalf("%d long lines, first %d bytes; want one data line of exactly %d", len(long), len(long[0]), size)
			}
			if !json.Valid([]byte(long[0][len("data: "):])) {
				t.Error("oversized line is not valid JSON")
			}
			events, _ := parseSSE(res.body)
			if !strings.Contains(string(res.body), terminal(w)) || contentEvents(events) != 3 {
				t.Errorf("the rest of the stream must be intact:\n%.300s", res.body)
			}
		})
	}
}

func TestShuffleEmbeddings(t *testing.T) {
	_, base := start(t, Options{Dimension: 4})
	inputs := []string{"a", "b", "c", "d", "e", "f", "g", "h"}
	body, _ := json.Marshal(map[string]any{"model": "e", "input": inputs})
	h := openaiWire.header("k")
	h.Set(HeaderShuffle, "true")
	res := send(t, http.MethodPost, base+"/v1/embeddings", h, string(body))
	var r struct {
		Data []struct {
			Index     int       `json:"index"`
			Embedding []float32 `json:"embedding"`
		} `json:"data"`
	}
	decode(t, res.body, &r)
	inOrder, seen := true, map[int]bool{}
	for pos, it := range r.Data {
		if it.Index != pos {
			inOrder = false
		}
		seen[it.Index] = true
		if !equalF32(it.Embedding, Vector(inputs[it.Index], 4)) {
			t.Errorf("item with index %d does not carry the vector of input %d", it.Index, it.Index)
		}
	}
	if inOrder || len(seen) != len(inputs) || len(r.Data) != len(inputs) {
		t.Errorf("in order %v, %d distinct indices of %d items", inOrder, len(seen), len(r.Data))
	}
}

func TestContentFilterAndNoUsage(t *testing.T) {
	_, base := start(t, Options{})
	marker := map[string]string{"openai": `"finish_reason":"content_filter"`, "anthropic": `"stop_reason":"refusal"`, "gemini": `"finishReason":"SAFETY"`}
	usage := map[string]string{"openai": `"usage":{`, "anthropic": `"usage":{`, "gemini": `"usageMetadata"`}
	for _, w := range wires {
		for _, stream := range []bool{false, true} {
			t.Run(w.name+"/stream="+boolString(stream), func(t *testing.T) {
				res := w.call(t, base, "m", "key-ok", stream, HeaderContentFilter, "true")
				body := string(res.body)
				if res.status != 200 || !strings.Contains(body, marker[w.name]) || strings.Contains(body, "Hello from") {
					t.Errorf("content filter: status %d\n%s", res.status, body)
				}
				if stream && !strings.Contains(body, terminal(w)) {
					t.Errorf("filtered stream must still end properly:\n%s", body)
				}
				res = w.call(t, base, "m", "key-ok", stream)
				if !strings.Contains(string(res.body), usage[w.name]) {
					t.Errorf("usage missing without the fault:\n%s", res.body)
				}
				res = w.call(t, base, "m", "key-ok", stream, HeaderNoUsage, "true")
				if strings.Contains(string(res.body), usage[w.name]) || !strings.Contains(string(res.body), "Hello from") {
					t.Errorf("no-usage still has usage:\n%s", res.body)
				}
			})
		}
	}
}

// startObserved is start with a channel that receives each time the handler
// returns, to prove waits end when the client goes away.
func startObserved(t *testing.T, opts Options) (*Server, string, chan struct{}) {
	t.Helper()
	s := New(opts)
	done := make(chan struct{}, 16)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.ServeHTTP(w, r)
		done <- struct{}{}
	}))
	t.Cleanup(ts.Close)
	return s, ts.URL, done
}

func TestWaitsEndWhenClientLeaves(t *testing.T) {
	tests := []struct {
		name    string
		header  string
		stream  bool
		readOne bool // cancel after the first event rather than before any byte
	}{
		{"latency", HeaderLatency, false, false},
		{"latency stream", HeaderLatency, true, false},
		{"first chunk delay", HeaderFirstChunkDelay, true, false},
		{"inter chunk delay", HeaderInterChunkDelay, true, true},
	}
	for _, w := range wires {
		for _, tt := range tests {
			t.Run(w.name+"/"+tt.name, func(t *testing.T) {
				s, base, done := startObserved(t, Options{})
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+w.path("m", tt.stream), strings.NewReader(w.body("m", tt.stream)))
				req.Header = w.header("key-ok")
				req.Header.Set(tt.header, "30s")
				go func() {
					time.Sleep(150 * time.Millisecond)
					if !tt.readOne {
						cancel()
					}
				}()
				resp, err := http.DefaultClient.Do(req)
				if err == nil {
					if tt.readOne {
						br := bufio.NewReader(resp.Body)
						if _, err := br.ReadString('\n'); err != nil {
							t.Fatal(err)
						}
					}
					cancel()
					resp.Body.Close()
				}
				select {
				case <-done:
				case <-time.After(3 * time.Second):
					t.Fatal("handler still waiting 3s after the client left")
				}
				if tt.name == "latency" && s.CountStatus("m", StatusClientGone) != 1 {
					t.Errorf("client gone during latency not recorded as %d: %+v", StatusClientGone, s.Stats().Models["m"])
				}
			})
		}
	}
}

func TestDelaysApply(t *testing.T) {
	_, base := start(t, Options{ReplyChunks: 3})
	for _, w := range wires {
		t.Run(w.name+"/latency", func(t *testing.T) {
			t0 := time.Now()
			res := w.call(t, base, "m", "key-ok", false, HeaderLatency, "200ms")
			if d := time.Since(t0); res.status != 200 || d < 200*time.Millisecond {
				t.Errorf("status %d after %v, want >= 200ms", res.status, d)
			}
		})
		t.Run(w.name+"/first chunk delay comes after the headers", func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodPost, base+w.path("m", true), strings.NewReader(w.body("m", true)))
			req.Header = w.header("key-ok")
			req.Header.Set(HeaderFirstChunkDelay, "500ms")
			req.Header.Set(HeaderInterChunkDelay, "50ms")
			t0 := time.Now()
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			headers := time.Since(t0)
			br := bufio.NewReader(resp.Body)
			var first time.Duration
			for first == 0 {
				line, err := br.ReadString('\n')
				if err != nil {
					t.Fatal(err)
				}
				if strings.Contains(line, "Hello from") {
					first = time.Since(t0)
				}
			}
			rest, _ := io.ReadAll(br)
			total := time.Since(t0)
			if first-headers < 300*time.Millisecond {
				t.Errorf("headers at %v, first content at %v: the delay must fall between them", headers, first)
			}
			// 500ms, then 50ms before each of 2 more chunks and before the finish.
			if total < 650*time.Millisecond || !strings.Contains(string(rest), terminal(w)) {
				t.Errorf("stream took %v, want >= 650ms and complete", total)
			}
		})
	}
}

func TestBadFaultHeader(t *testing.T) {
	_, base := start(t, Options{})
	for _, w := range wires {
		for _, h := range [][2]string{{HeaderLatency, "soon"}, {HeaderStatus, "abc"}, {HeaderStatus, "1000"}, {"X-Fake-Typo", "1"}, {HeaderDimension, "-3"}} {
			res := w.call(t, base, "m", "key-ok", false, h[0], h[1])
			if res.status != 400 || !strings.Contains(string(res.body), "fakeupstream") {
				t.Errorf("%s %s=%s: status %d %s", w.name, h[0], h[1], res.status, res.body)
			}
		}
	}
}

// TestEachEventIsFlushedAlone reads the raw HTTP/1.1 chunked framing: every
// flush is one chunk, so each chunk must hold exactly one event.
func TestEachEventIsFlushedAlone(t *testing.T) {
	_, base := start(t, Options{ReplyChunks: 3})
	for _, w := range wires {
		t.Run(w.name, func(t *testing.T) {
			conn, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			body := w.body("m", true)
			var req strings.Builder
			req.WriteString("POST " + w.path("m", true) + " HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n")
			for k, v := range w.header("key-ok") {
				req.WriteString(k + ": " + v[0] + "\r\n")
			}
			req.WriteString("\r\n" + body)
			if _, err := io.WriteString(conn, req.String()); err != nil {
				t.Fatal(err)
			}
			br := bufio.NewReader(conn)
			for {
				line, err := br.ReadString('\n')
				if err != nil {
					t.Fatal(err)
				}
				if line == "\r\n" {
					break
				}
			}
			var chunks []string
			for {
				sizeLine, err := br.ReadString('\n')
				if err != nil {
					t.Fatal(err)
				}
				size, err := strconv.ParseInt(strings.TrimSpace(sizeLine), 16, 64)
				if err != nil {
					t.Fatalf("not chunked: %q", sizeLine)
				}
				if size == 0 {
					break
				}
				data := make([]byte, size+2)
				if _, err := io.ReadFull(br, data); err != nil {
					t.Fatal(err)
				}
				chunks = append(chunks, string(data[:size]))
			}
			events, _ := parseSSE([]byte(strings.Join(chunks, "")))
			if len(chunks) != len(events) {
				t.Errorf("%d chunks for %d events", len(chunks), len(events))
			}
			for _, c := range chunks {
				if strings.Count(c, "\n\n") != 1 || !strings.HasSuffix(c, "\n\n") {
					t.Errorf("chunk is not exactly one event: %q", c)
				}
			}
		})
	}
}

func TestErrorMessageAndCodeFault(t *testing.T) {
	s, base := start(t, Options{ReplyChunks: 4})
	const msg = "This model's maximum context length is 8192 tokens (key sk-proj-abcdefghijklmnop1234XYZW)."
	s.SetRules(Rule{Model: "m-long", Fault: Fault{Status: 400, ErrorMessage: msg, ErrorCode: "context_length_exceeded"}})
	res := openaiWire.call(t, base, "m-long", "key-ok", false)
	var e struct {
		Error openaiErrorObject `json:"error"`
	}
	decode(t, res.body, &e)
	if res.status != 400 || e.Error.Message != msg || e.Error.Code == nil || *e.Error.Code != "context_length_exceeded" {
		t.Fatalf("openai: %d %s", res.status, res.body)
	}
	for _, w := range []wire{anthropicWire, geminiWire} {
		if res := w.call(t, base, "m-long", "key-ok", false); res.status != 400 || !strings.Contains(string(res.body), "maximum context length is 8192") {
			t.Errorf("%s: %d %s", w.name, res.status, res.body)
		}
	}
	// Without the fields the usual message stays.
	res = openaiWire.call(t, base, "m", "key-ok", false, HeaderStatus, "400")
	if res.status != 400 || strings.Contains(string(res.body), "context_length") {
		t.Errorf("plain 400: %s", res.body)
	}
	// In a stream, the error event carries them too (headers work as rules do).
	res = openaiWire.call(t, base, "m", "key-ok", true, HeaderErrorAfter, "1", HeaderErrorMessage, "blocked by policy", HeaderErrorCode, "content_filter")
	events, _ := parseSSE(res.body)
	last := events[len(events)-1]
	decode(t, []byte(last.Data), &e)
	if e.Error.Message != "blocked by policy" || e.Error.Code == nil || *e.Error.Code != "content_filter" {
		t.Errorf("stream error event: %+v", last)
	}
}
