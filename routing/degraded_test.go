package routing

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"switchyard/routing/adapter"
)

func TestCacheableAndAnswerKey(t *testing.T) {
	zero, warm := 0.0, 0.7
	cases := []struct {
		name   string
		req    adapter.ChatRequest
		header string
		want   bool
	}{
		{"temperature 0 is deterministic", adapter.ChatRequest{Temperature: &zero, N: 1}, "", true},
		{"no temperature is not", adapter.ChatRequest{N: 1}, "", false},
		{"a warm request is not", adapter.ChatRequest{Temperature: &warm}, "", false},
		{"several choices are not", adapter.ChatRequest{Temperature: &zero, N: 3}, "", false},
		{"the caller opts in", adapter.ChatRequest{Temperature: &warm}, "Allow", true},
		{"the caller opts out", adapter.ChatRequest{Temperature: &zero}, "deny", false},
	}
	for _, c := range cases {
		h := http.Header{}
		if c.header != "" {
			h.Set(CacheHeader, c.header)
		}
		if got := Cacheable(&c.req, h); got != c.want {
			t.Errorf("%s: %v", c.name, got)
		}
	}
	a, ok1 := AnswerKey("g1", []byte(`{"model":"fast","temperature":0,"messages":[{"role":"user","content":"hi"}]}`))
	b, ok2 := AnswerKey("g1", []byte(` { "messages" : [ { "content":"hi", "role":"user" } ], "stream": true, "stream_options":{"include_usage":true}, "model":"fast", "temperature":0 }`))
	c, _ := AnswerKey("c7", []byte(`{"model":"fast","temperature":0,"messages":[{"role":"user","content":"hi"}]}`))
	d, _ := AnswerKey("g1", []byte(`{"model":"fast","temperature":0,"messages":[{"role":"user","content":"hi!"}]}`))
	if !ok1 || !ok2 || a != b {
		t.Fatal("the same request canonically has two keys")
	}
	if a == c || a == d {
		t.Fatal("another scope or another request shares the key")
	}
	if _, ok := AnswerKey("g1", []byte(`[1,2]`)); ok {
		t.Fatal("a non-object body has a key")
	}
}

func TestStaticAnswerAndItsChunks(t *testing.T) {
	res := StaticAnswer(`Back soon "really"`, "req-1", time.Unix(1700000000, 0))
	var body struct {
		ID      string `json:"id"`
		Object  string `json:"object"`
		Model   string `json:"model"`
		Choices []struct {
			Message struct {
				Role, Content string
			} `json:"message"`
			FinishReason string `json:"finish_reason"`
		} `json:"choices"`
		Usage map[string]int `json:"usage"`
	}
	if err := json.Unmarshal(res.Body, &body); err != nil {
		t.Fatal(err)
	}
	if body.ID != "chatcmpl-req-1" || body.Object != "chat.completion" || body.Model != StaticModel || body.Choices[0].Message.Content != `Back soon "really"` ||
		body.Choices[0].FinishReason != FinishStatic || body.Usage["total_tokens"] != 0 || res.FinishReason != FinishStatic {
		t.Fatalf("static answer %s", res.Body)
	}
	chunks := AnswerChunks(res.Body)
	if len(chunks) != 4 || chunks[0].Content || !chunks[1].Content || chunks[2].FinishReason != FinishStatic || !chunks[3].UsageOnly {
		t.Fatalf("chunks %+v", chunks)
	}
	var text strings.Builder
	for _, ch := range chunks {
		var c struct {
			Object  string `json:"object"`
			Model   string `json:"model"`
			Choices []struct {
				Delta struct{ Content string } `json:"delta"`
			} `json:"choices"`
		}
		if err := json.Unmarshal(ch.Data, &c); err != nil || c.Object != "chat.completion.chunk" || c.Model != StaticModel {
			t.Fatalf("chunk %s: %v", ch.Data, err)
		}
		if len(c.Choices) > 0 {
			text.WriteString(c.Choices[0].Delta.Content)
		}
	}
	if text.String() != `Back soon "really"` {
		t.Fatalf("streamed text %q", text.String())
	}
	// Tool calls keep their index in the stream.
	tool := AnswerChunks([]byte(`{"id":"x","created":1,"model":"m","choices":[{"message":{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]},"finish_reason":"tool_calls"}]}`))
	if !strings.Contains(string(tool[1].Data), `"index":0`) || !strings.Contains(string(tool[1].Data), `"name":"f"`) || tool[2].FinishReason != "tool_calls" || len(tool) != 3 {
		t.Fatalf("tool chunks %s", tool[1].Data)
	}
}
