package adapter_test

import (
	"context"
	"fmt"
	"io"
	"strings"
	"switchyard/routing/adapter"
	"switchyard/routing/config"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/tidwall/gjson"
)

// Each quirk rewrites its one field into the older form and leaves the rest
// of the body as the caller sent it; without the quirk the body is as before.
func TestOpenAIQuirkRewrites(t *testing.T) {
	const body = `{"model":"fast","messages":[{"role":"developer","content":"be brief"},{"role":"user","content":"developer?"},{"content":"x","role":"developer","name":"d"}],` +
		`"max_completion_tokens":64,"max_tokens":10,"stream":%s,"stream_options":{"include_usage":true,"include_obfuscation":false},"temperature":0.2}`
	type seen struct {
		Roles          []string
		UserText       string
		Name           string
		MaxTokens      int64
		MaxCompletion  bool
		StreamOptions  bool
		OtherStreamOpt bool
		Temperature    float64
	}
	read := func(b []byte) seen {
		v := gjson.ParseBytes(b)
		var roles []string
		for _, m := range v.Get("messages").Array() {
			roles = append(roles, m.Get("role").Str)
		}
		return seen{Roles: roles, UserText: v.Get("messages.1.content").Str, Name: v.Get("messages.2.name").Str,
			MaxTokens: v.Get("max_tokens").Int(), MaxCompletion: v.Get("max_completion_tokens").Exists(),
			StreamOptions: v.Get("stream_options").Exists(), OtherStreamOpt: v.Get("stream_options.include_obfuscation").Exists(),
			Temperature: v.Get("temperature").Float()}
	}
	for _, tc := range []struct {
		name   string
		quirks config.Quirks
		stream bool
		want   seen
	}{
		{"no quirks", nil, true, seen{Roles: []string{"developer", "user", "developer"}, UserText: "developer?", Name: "d", MaxTokens: 10, MaxCompletion: true, StreamOptions: true, OtherStreamOpt: true, Temperature: 0.2}},
		{"no_stream_options", config.Quirks{config.QuirkNoStreamOptions}, true, seen{Roles: []string{"developer", "user", "developer"}, UserText: "developer?", Name: "d", MaxTokens: 10, MaxCompletion: true, Temperature: 0.2}},
		{"max_tokens, not streamed", config.Quirks{config.QuirkMaxTokens}, false, seen{Roles: []string{"developer", "user", "developer"}, UserText: "developer?", Name: "d", MaxTokens: 64, Temperature: 0.2}},
		{"max_tokens", config.Quirks{config.QuirkMaxTokens}, true, seen{Roles: []string{"developer", "user", "developer"}, UserText: "developer?", Name: "d", MaxTokens: 64, StreamOptions: true, OtherStreamOpt: true, Temperature: 0.2}},
		{"no_developer_role", config.Quirks{config.QuirkNoDeveloperRole}, true, seen{Roles: []string{"system", "user", "system"}, UserText: "developer?", Name: "d", MaxTokens: 10, MaxCompletion: true, StreamOptions: true, OtherStreamOpt: true, Temperature: 0.2}},
		{"all three", config.ProviderQuirks, true, seen{Roles: []string{"system", "user", "system"}, UserText: "developer?", Name: "d", MaxTokens: 64, Temperature: 0.2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			streamed := "false"
			if tc.stream {
				streamed = "true"
			}
			srv, got := openaiUpstream(t, openaiJSON(200, []byte(`{"choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":1}}`)))
			if tc.stream {
				srv, got = openaiUpstream(t, adapter.OpenAISSE([]byte(`data: {"choices":[{"index":0,"delta":{"content":"ok"},"finish_reason":"stop"}]}`+"\n\ndata: [DONE]\n\n")))
			}
			tg := openaiTarget(srv)
			tg.Quirks = tc.quirks
			b := fmt.Sprintf(body, streamed)
			if !tc.stream {
				b = strings.Replace(b, `,"stream_options":{"include_usage":true,"include_obfuscation":false}`, "", 1)
			}
			r := openaiParse(t, b)
			if tc.stream {
				s, err := adapter.OpenAI{}.ChatStream(context.Background(), tg, r)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := openaiDrain(s); err != io.EOF {
					t.Fatal(err)
				}
				s.Close()
			} else if _, err := (adapter.OpenAI{}).Chat(context.Background(), tg, r); err != nil {
				t.Fatal(err)
			}
			got.mu.Lock()
			sent := got.body
			got.mu.Unlock()
			if d := cmp.Diff(tc.want, read(sent)); d != "" {
				t.Errorf("forwarded (-want +got):\n%s\n%s", d, sent)
			}
		})
	}
}

// A stream sent without stream_options to a vendor that then reports no
// usage is still counted: the gateway's estimate, marked so.
func TestOpenAIQuirkNoStreamOptionsUsageEstimated(t *testing.T) {
	srv, _ := openaiUpstream(t, adapter.OpenAISSE([]byte(
		`data: {"choices":[{"index":0,"delta":{"reasoning_content":"Let me think."},"finish_reason":null}]}`+"\n\n"+
			`data: {"choices":[{"index":0,"delta":{"content":"Hello"},"finish_reason":null}]}`+"\n\n"+
			`data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`+"\n\n"+"data: [DONE]\n\n")))
	tg := openaiTarget(srv)
	tg.Quirks = config.Quirks{config.QuirkNoStreamOptions}
	s, err := adapter.OpenAI{}.ChatStream(context.Background(), tg, openaiParse(t, `{"model":"fast","messages":[{"role":"user","content":"hi"}],"stream":true}`))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	chunks, err := openaiDrain(s)
	if err != io.EOF {
		t.Fatal(err)
	}
	if !chunks[0].Content {
		t.Errorf("a reasoning_content delta is something the caller can use: %s", chunks[0].Data)
	}
	if u := s.Usage(); !u.Known || !u.Estimated || u.Prompt == 0 || u.Completion == 0 {
		t.Errorf("usage %+v, want an estimate", u)
	}
}

// The answer's reasoning_content stays where the vendor put it: the chat
// door passes it on, the Messages and Responses doors read it as reasoning.
func TestOpenAIReasoningContentKept(t *testing.T) {
	srv, _ := openaiUpstream(t, openaiJSON(200, []byte(`{"choices":[{"index":0,"message":{"role":"assistant","reasoning_content":"Think first.","content":"Answer."},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":4}}`)))
	res, err := adapter.OpenAI{}.Chat(context.Background(), openaiTarget(srv), openaiParse(t, `{"model":"fast","messages":[{"role":"user","content":"hi"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if m := gjson.GetBytes(res.Body, "choices.0.message"); m.Get("reasoning_content").Str != "Think first." || m.Get("content").Str != "Answer." {
		t.Errorf("message %s", m.Raw)
	}
}
