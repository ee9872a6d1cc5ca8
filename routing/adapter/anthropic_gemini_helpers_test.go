package adapter

// Test helpers shared by the Anthropic and Gemini adapter tests: fixtures,
// golden files, stream collection and summaries, torture variants of a
// stream body and small fake upstreams.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/iotest"
	"time"

	"github.com/google/go-cmp/cmp"
)

// -update rewrites the golden files. It is registered in init, after every
// package-level variable, so that another test file of this package may
// declare the same flag without a "flag redefined" panic.
func init() {
	if flag.Lookup("update") == nil {
		flag.Bool("update", false, "rewrite golden files under testdata/")
	}
}

func vendorUpdate() bool {
	f := flag.Lookup("update")
	return f != nil && f.Value.String() == "true"
}

// vendorNow is the clock of every translated response in these tests.
var vendorNow = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func vendorTestdata(vendor, name string) string {
	return filepath.Join("testdata", vendor, name)
}

func vendorFixture(t *testing.T, vendor, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(vendorTestdata(vendor, name))
	if err != nil {
		t.Fatalf("fixture: %v", err)
	}
	return b
}

// vendorGolden compares got (JSON) with the golden file, indented for review.
func vendorGolden(t *testing.T, vendor, name string, got []byte) {
	t.Helper()
	var buf bytes.Buffer
	if err := json.Indent(&buf, got, "", "  "); err != nil {
		t.Fatalf("golden %s: output is not JSON: %v\n%s", name, err, got)
	}
	buf.WriteByte('\n')
	path := vendorTestdata(vendor, name)
	if vendorUpdate() {
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("golden %s: %v (run with -update to create it)", name, err)
	}
	if diff := cmp.Diff(string(want), buf.String()); diff != "" {
		t.Errorf("golden %s mismatch (-want +got):\n%s", name, diff)
	}
}

// vendorJSONEqual compares two JSON documents by value.
func vendorJSONEqual(t *testing.T, want, got []byte) {
	t.Helper()
	var w, g any
	if err := json.Unmarshal(want, &w); err != nil {
		t.Fatalf("want is not JSON: %v", err)
	}
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("got is not JSON: %v\n%s", err, got)
	}
	if diff := cmp.Diff(w, g); diff != "" {
		t.Errorf("JSON mismatch (-want +got):\n%s", diff)
	}
}

func vtInt(v int) *int              { return &v }
func vtFloat(v float64) *float64    { return &v }
func vtBool(v bool) *bool           { return &v }
func vtText(s string) []ContentPart { return []ContentPart{{Type: "text", Text: s}} }

// vendorGoldenRequests are the representative caller requests whose translations
// are kept as golden files per vendor.
func vendorGoldenRequests() []struct {
	name string
	req  *ChatRequest
} {
	weather := json.RawMessage(`{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"city":{"type":"string","description":"City name"},"unit":{"type":["string","null"],"enum":["c","f"]}},"required":["city"],"additionalProperties":false}`)
	return []struct {
		name string
		req  *ChatRequest
	}{
		{"full", &ChatRequest{
			Model: "standard",
			Messages: []Message{
				{Role: "system", Content: vtText("You are terse.")},
				{Role: "developer", Content: vtText("Answer in English.")},
				{Role: "user", Content: []ContentPart{
					{Type: "text", Text: "What is in these pictures, and what is the weather in Paris?"},
					{Type: "image_url", ImageURL: "data:image/png;base64,iVBORw0KGgo="},
					{Type: "image_url", ImageURL: "https://example.com/cat.png"},
				}},
				{Role: "assistant", Content: vtText("Let me check."), ToolCalls: []ToolCall{
					{ID: "call_1", Name: "get_weather", Arguments: `{"city":"Paris"}`},
					{ID: "call_2", Name: "get_time", Arguments: ""},
				}},
				{Role: "tool", ToolCallID: "call_1", Content: vtText(`{"temp_c":18}`)},
				{Role: "tool", ToolCallID: "call_2", Content: vtText("14:05")},
				{Role: "user", Content: vtText("Thanks. Summarize.")},
			},
			Temperature: vtFloat(0.3),
			Stop:        []string{"END"},
			Tools: []Tool{
				{Name: "get_weather", Description: "Current weather", Parameters: weather},
				{Name: "get_time", Description: "Local time"},
			},
			ToolChoice: json.RawMessage(`{"type":"function","function":{"name":"get_weather"}}`),
			User:       "team-search",
		}},
		{"reasoning", &ChatRequest{
			Model:           "deep",
			Stream:          true,
			Messages:        []Message{{Role: "user", Content: vtText("Prove that there are infinitely many primes.")}},
			ReasoningEffort: "high",
			MaxTokens:       vtInt(1000),
			TopP:            vtFloat(0.97), // thinking allows 0.95–1
			Tools:           []Tool{{Name: "lookup", Description: "Look a theorem up", Parameters: json.RawMessage(`{"type":"object","properties":{"q":{"type":"string"}}}`)}},
			ToolChoice:      json.RawMessage(`"auto"`), // thinking refuses forced tools
		}},
		{"edge-cases", &ChatRequest{
			Model: "fast",
			Messages: []Message{
				{Role: "user", Content: vtText("First part.")},
				{Role: "user", Content: []ContentPart{{Type: "text", Text: ""}, {Type: "text", Text: "Second part."}}},
				{Role: "assistant", Content: nil},
				{Role: "assistant", Content: vtText("The answer is  \n")},
			},
			MaxTokens:  vtInt(256),
			TopP:       vtFloat(0.95),
			Stop:       []string{"\n\n", "STOP"},
			Thinking:   &Thinking{Type: "enabled", BudgetTokens: 500},
			Tools:      []Tool{{Name: "noop", Description: "Takes nothing"}},
			ToolChoice: json.RawMessage(`"none"`),
		}},
	}
}

// --- streams ---

type vtToolCall struct {
	Index    int    `json:"index"`
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

type vtUsage struct {
	PromptTokens        int64 `json:"prompt_tokens"`
	CompletionTokens    int64 `json:"completion_tokens"`
	TotalTokens         int64 `json:"total_tokens"`
	PromptTokensDetails *struct {
		CachedTokens int64 `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
	CompletionTokensDetails *struct {
		ReasoningTokens int64 `json:"reasoning_tokens"`
	} `json:"completion_tokens_details"`
}

type vtChunk struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	Model   string `json:"model"`
	Choices []struct {
		Index int `json:"index"`
		Delta struct {
			Role             string       `json:"role"`
			Content          *string      `json:"content"`
			ReasoningContent string       `json:"reasoning_content"`
			ToolCalls        []vtToolCall `json:"tool_calls"`
		} `json:"delta"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *vtUsage `json:"usage"`
}

type vtCompletion struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Model   string `json:"model"`
	Choices []struct {
		Index   int `json:"index"`
		Message struct {
			Role             string       `json:"role"`
			Content          *string      `json:"content"`
			ReasoningContent string       `json:"reasoning_content"`
			ToolCalls        []vtToolCall `json:"tool_calls"`
		} `json:"message"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
	Usage *vtUsage `json:"usage"`
}

func vtStr(s string) *string { return &s }

func vtUsageOf(prompt, completion int64, cached, reasoning *int64) *vtUsage {
	u := &vtUsage{PromptTokens: prompt, CompletionTokens: completion, TotalTokens: prompt + completion}
	if cached != nil {
		u.PromptTokensDetails = &struct {
			CachedTokens int64 `json:"cached_tokens"`
		}{*cached}
	}
	if reasoning != nil {
		u.CompletionTokensDetails = &struct {
			ReasoningTokens int64 `json:"reasoning_tokens"`
		}{*reasoning}
	}
	return u
}

func vtInt64(v int64) *int64 { return &v }

func vtCall(index int, id, name, args string) vtToolCall {
	tc := vtToolCall{Index: index, ID: id, Type: "function"}
	tc.Function.Name, tc.Function.Arguments = name, args
	return tc
}

// vtSummary is what a caller assembles from a translated stream.
type vtSummary struct {
	ID        string
	Model     string
	Content   string
	Reasoning string
	ToolCalls []vtToolCall
	Finish    string
	Usage     *vtUsage // from the usage-only chunk
	ErrClass  Class    // "" for a clean io.EOF
	ErrCode   string
}

// vendorCollect reads s to its end.
func vendorCollect(t *testing.T, s Stream) ([]Chunk, error) {
	t.Helper()
	var out []Chunk
	for range 100000 {
		c, err := s.Next()
		if err != nil {
			if _, err2 := s.Next(); !errors.Is(err2, err) && ClassOf(err2) != ClassOf(err) {
				t.Errorf("Next after the end = %v, want the same %v again", err2, err)
			}
			return out, err
		}
		out = append(out, c)
	}
	t.Fatal("stream never ended")
	return nil, nil
}

// vendorSummarize checks every chunk's shape and flags and assembles the answer.
func vendorSummarize(t *testing.T, chunks []Chunk, err error) vtSummary {
	t.Helper()
	var sum vtSummary
	switch {
	case errors.Is(err, io.EOF):
	case err == nil:
		t.Fatal("stream ended without error or io.EOF")
	default:
		var ue *Error
		if !errors.As(err, &ue) {
			t.Fatalf("stream error %T %v is not an *Error", err, err)
		}
		sum.ErrClass, sum.ErrCode = ue.Class, ue.Code
	}
	calls := map[int]*vtToolCall{}
	var order []int
	for i, c := range chunks {
		var tc vtChunk
		if err := json.Unmarshal(c.Data, &tc); err != nil {
			t.Fatalf("chunk %d is not JSON: %v\n%s", i, err, c.Data)
		}
		if tc.Object != "chat.completion.chunk" || tc.ID == "" || tc.Model == "" || tc.Created == 0 {
			t.Errorf("chunk %d lacks id/object/model/created: %s", i, c.Data)
		}
		sum.ID, sum.Model = tc.ID, tc.Model
		if c.UsageOnly {
			if len(tc.Choices) != 0 || tc.Usage == nil || !bytes.Contains(c.Data, []byte(`"choices":[]`)) {
				t.Errorf("usage-only chunk %d: %s", i, c.Data)
			}
			if i != len(chunks)-1 {
				t.Errorf("usage-only chunk %d is not the last", i)
			}
			sum.Usage = tc.Usage
			continue
		}
		if len(tc.Choices) != 1 {
			t.Fatalf("chunk %d has %d choices: %s", i, len(tc.Choices), c.Data)
		}
		ch := tc.Choices[0]
		d := ch.Delta
		hasContent := (d.Content != nil && *d.Content != "") || d.ReasoningContent != "" || len(d.ToolCalls) > 0
		if c.Content != hasContent {
			t.Errorf("chunk %d: Content=%v but the delta says %v: %s", i, c.Content, hasContent, c.Data)
		}
		if i == 0 {
			if d.Role != "assistant" || hasContent || c.Content {
				t.Errorf("first chunk is not role-only: %s", c.Data)
			}
		} else if d.Role != "" {
			t.Errorf("chunk %d repeats the role: %s", i, c.Data)
		}
		if d.Content != nil {
			sum.Content += *d.Content
		}
		sum.Reasoning += d.ReasoningContent
		for _, call := range d.ToolCalls {
			acc, ok := calls[call.Index]
			if !ok {
				cp := call
				calls[call.Index] = &cp
				order = append(order, call.Index)
				continue
			}
			if call.ID != "" || call.Function.Name != "" {
				t.Errorf("chunk %d repeats tool call %d's id or name", i, call.Index)
			}
			acc.Function.Arguments += call.Function.Arguments
		}
		got := ""
		if ch.FinishReason != nil {
			got = *ch.FinishReason
			if sum.Finish != "" {
				t.Errorf("chunk %d: a second finish_reason %q", i, got)
			}
			sum.Finish = got
		}
		if c.FinishReason != got {
			t.Errorf("chunk %d: FinishReason %q, JSON says %q", i, c.FinishReason, got)
		}
	}
	for _, i := range order {
		sum.ToolCalls = append(sum.ToolCalls, *calls[i])
	}
	return sum
}

// vendorTortureVariants frames one stream body in the ways real upstreams and
// networks do: one byte per read, CRLF line ends, trailing spaces after the
// data, no blank line after the last event, and all at once.
func vendorTortureVariants(raw []byte) map[string]func() io.Reader {
	crlf := func(b []byte) []byte {
		return bytes.ReplaceAll(bytes.ReplaceAll(b, []byte("\r\n"), []byte("\n")), []byte("\n"), []byte("\r\n"))
	}
	spaces := func(b []byte) []byte {
		lines := strings.Split(string(b), "\n")
		for i, l := range lines {
			if strings.HasPrefix(l, "data:") {
				lines[i] = strings.TrimRight(l, "\r") + "   \t " + l[len(strings.TrimRight(l, "\r")):]
			}
		}
		return []byte(strings.Join(lines, "\n"))
	}
	noFinal := func(b []byte) []byte { return bytes.TrimRight(b, "\r\n") }
	return map[string]func() io.Reader{
		"one-byte":        func() io.Reader { return iotest.OneByteReader(bytes.NewReader(raw)) },
		"half-reads":      func() io.Reader { return iotest.HalfReader(bytes.NewReader(raw)) },
		"crlf":            func() io.Reader { return bytes.NewReader(crlf(raw)) },
		"trailing-spaces": func() io.Reader { return bytes.NewReader(spaces(raw)) },
		"no-final-blank":  func() io.Reader { return bytes.NewReader(noFinal(raw)) },
		"all": func() io.Reader {
			return iotest.OneByteReader(bytes.NewReader(noFinal(crlf(spaces(raw)))))
		},
	}
}

// vendorCheckTorture asserts that every torture variant of raw yields exactly the
// chunks (and the end) of the plain body.
func vendorCheckTorture(t *testing.T, raw []byte, open func(io.ReadCloser) Stream) {
	t.Helper()
	want, wantErr := vendorCollect(t, open(io.NopCloser(bytes.NewReader(raw))))
	for name, rd := range vendorTortureVariants(raw) {
		got, gotErr := vendorCollect(t, open(io.NopCloser(rd())))
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s: chunks differ (-plain +%s):\n%s", name, name, diff)
		}
		if ClassOf(gotErr) != ClassOf(wantErr) || errors.Is(gotErr, io.EOF) != errors.Is(wantErr, io.EOF) {
			t.Errorf("%s: ended with %v, plain ended with %v", name, gotErr, wantErr)
		}
	}
}

// --- fake upstreams ---

// vendorRecorded is what a fake upstream received.
type vendorRecorded struct {
	Method, Path, RawQuery string
	Header                 http.Header
	Body                   []byte
}

type vendorUpstream struct {
	*httptest.Server
	mu   sync.Mutex
	reqs []vendorRecorded
}

func (f *vendorUpstream) requests() []vendorRecorded {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]vendorRecorded(nil), f.reqs...)
}

// newVendorUpstream answers every request with status, headers and body.
func newVendorUpstream(t *testing.T, status int, header http.Header, body []byte) *vendorUpstream {
	t.Helper()
	f := &vendorUpstream{}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		f.mu.Lock()
		f.reqs = append(f.reqs, vendorRecorded{Method: r.Method, Path: r.URL.Path, RawQuery: r.URL.RawQuery, Header: r.Header.Clone(), Body: b})
		f.mu.Unlock()
		for k, v := range header {
			w.Header()[k] = v
		}
		w.WriteHeader(status)
		_, _ = w.Write(body)
	}))
	t.Cleanup(f.Close)
	return f
}

// newVendorStall writes head (status 200 and, if non-empty, the start
// of a body) and then stalls until the request is cancelled. With head nil
// it stalls before answering at all.
func newVendorStall(t *testing.T, head []byte) *httptest.Server {
	t.Helper()
	done := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		if head != nil {
			w.Header().Set("Content-Type", "text/event-stream")
			w.WriteHeader(http.StatusOK)
			_, _ = w.Write(head)
			w.(http.Flusher).Flush()
		}
		select {
		case <-r.Context().Done():
		case <-done:
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(done) })
	return srv
}

// vendorClosedURL is the address of a server that is no longer listening.
func vendorClosedURL(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(http.NotFoundHandler())
	u := srv.URL
	srv.Close()
	return u
}

func vendorErrClass(err error) Class {
	var ue *Error
	if errors.As(err, &ue) {
		return ue.Class
	}
	return ""
}

// vendorTransportCase is one way of failing to get an answer at all.
type vendorTransportCase struct {
	name string
	base func(t *testing.T) string
	ctx  func(t *testing.T) context.Context
	want Class
}

func vendorTransportCases() []vendorTransportCase {
	deadline := func(t *testing.T) context.Context {
		ctx, cancel := context.WithTimeout(context.Background(), 80*time.Millisecond)
		t.Cleanup(cancel)
		return ctx
	}
	return []vendorTransportCase{
		{"deadline before headers", func(t *testing.T) string { return newVendorStall(t, nil).URL }, deadline, ClassTimeout},
		{"cancelled caller", func(t *testing.T) string { return newVendorStall(t, nil).URL }, func(t *testing.T) context.Context {
			ctx, cancel := context.WithCancel(context.Background())
			time.AfterFunc(50*time.Millisecond, cancel)
			t.Cleanup(cancel)
			return ctx
		}, ClassCancelled},
		{"connection refused", vendorClosedURL, func(*testing.T) context.Context { return context.Background() }, ClassNetwork},
	}
}
