package frontdoor

import (
	"bytes"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/tidwall/gjson"

	"switchyard/routing/adapter"
)

// The Messages and Responses doors check their chat translation without
// writing it; the chat body and the typed view are built on first use. What
// they build is what writing the translation at once and parsing it gave,
// and a body either door refuses is refused with the same error.

// eagerMessages is a Messages body's translation written at once and read
// by the chat parser (the door's parse before it deferred the writing).
func eagerMessages(body []byte) ([]byte, *adapter.ChatRequest, error) {
	t, err := translateMessages(body, true, newChatWriter(len(body)))
	if err != nil {
		return nil, nil, err
	}
	b, jerr := t.chat.finish(&t.out)
	if jerr != nil {
		return nil, nil, jerr
	}
	r, err := ParseChatRequest(b)
	return b, r, err
}

// eagerResponses is eagerMessages for a Responses body.
func eagerResponses(body []byte) ([]byte, *adapter.ChatRequest, error) {
	st, err := translateResponses(body, newChatWriter(len(body)))
	if err != nil {
		return nil, nil, err
	}
	b, jerr := st.msgs.finish(st.settings())
	if jerr != nil {
		return nil, nil, jerr
	}
	r, perr := ParseChatRequest(b)
	return b, r, perr
}

// sameTranslation checks a deferred translation against the eager one:
// the same chat body, and the same request as the chat parser read from it
// (but for what the door adds after: its native side, drops, effort,
// adaptive thinking, top_k).
func sameTranslation(t *testing.T, name string, lazy *adapter.ChatRequest, lerr error, eagerBody []byte, eager *adapter.ChatRequest, eerr error) {
	t.Helper()
	if (lerr == nil) != (eerr == nil) || (lerr != nil && lerr.Error() != eerr.Error()) {
		t.Errorf("%s: deferred err %v, eager err %v", name, lerr, eerr)
		return
	}
	if lerr != nil {
		t.Logf("%s: refused alike: %v", name, lerr)
		return
	}
	if lazy.Body != nil {
		t.Errorf("%s: the chat body was written at parse time", name)
	}
	if got := lazy.ChatBody(); !bytes.Equal(got, eagerBody) {
		t.Errorf("%s: deferred chat body\n%s\nwant\n%s", name, got, eagerBody)
	}
	if lazy.NeedsVision() != eager.NeedsVision() || lazy.NeedsTools() != eager.NeedsTools() {
		t.Errorf("%s: vision %v tools %v, eager %v %v", name, lazy.NeedsVision(), lazy.NeedsTools(), eager.NeedsVision(), eager.NeedsTools())
	}
	l, e := *lazy, *eager
	l.Body, l.Messages = l.ChatBody(), lazy.Conversation()
	e.Messages = eager.Conversation()
	door := []string{"top_k", "web_search_options"}
	for _, f := range door {
		l.Set, e.Set = l.Set.With(f), e.Set.With(f)
	}
	if l.Thinking != nil && l.Thinking.Type == adapter.ThinkingAdaptive && e.Thinking == nil {
		l.Thinking = nil
	}
	opts := cmp.Options{cmpopts.IgnoreUnexported(adapter.ChatRequest{}), cmpopts.EquateEmpty(),
		cmpopts.IgnoreFields(adapter.ChatRequest{}, "Native", "Drops", "Untranslatable", "Effort", "TopK")}
	if diff := cmp.Diff(e, l, opts); diff != "" {
		t.Errorf("%s: (-eager +deferred):\n%s", name, diff)
	}
}

func TestDeferredTranslationMatchesEager(t *testing.T) {
	messages := map[string][]byte{
		"claude-code": vendorFixture(t, "agents", "claude-code-request.json"),
		"large":       largeTurns(`{"model":"standard","max_tokens":16,`, 64<<10),
	}
	for _, name := range []string{"recorded-nonstream-tool-use.1.request.json", "recorded-nonstream-tool-use.2.request.json",
		"recorded-stream-tool-use.1.request.json", "recorded-stream-tool-use.2.request.json"} {
		messages[name] = vendorFixture(t, "anthropic", name)
	}
	for i, b := range []string{
		`{"model":"m","max_tokens":9,"system":[{"type":"text","text":"s","cache_control":{"type":"ephemeral"}}],"stream":true,"temperature":0.5,"top_k":3,` +
			`"thinking":{"type":"adaptive"},"output_config":{"effort":"high"},"tools":[{"name":"f","input_schema":{"type":"object"}}],"tool_choice":{"type":"tool","name":"f"},"messages":[` +
			`{"role":"user","content":[{"type":"text","text":"a"},{"type":"image","source":{"type":"url","url":"https://x/i.png"}}]},` +
			`{"role":"assistant","content":[{"type":"thinking","thinking":"t","signature":"s"},{"type":"tool_use","id":"c1","name":"f","input":{}},{"type":"tool_use","id":"c2","name":"f","input":{"a":1}}]},` +
			`{"role":"user","content":[{"type":"tool_result","tool_use_id":"c1","content":"r"},{"type":"tool_result","tool_use_id":"c2","content":[{"type":"text","text":"r2"}]}]}]}`,
		`{"model":"m","max_tokens":9,"messages":[{"role":"assistant","content":[{"type":"thinking","thinking":"t","signature":"s"}]},{"role":"user","content":"x"}]}`,
		`{"model":"m","max_tokens":9,"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"","content":"r"}]}]}`,
		`{"model":"m","max_tokens":9,"messages":[{"role":"user","content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBOR"}}]}]}`,
		`{"model":"m","max_tokens":9,"messages":[{"role":"user","content":[{"type":"document","source":{"type":"text","data":"d"}}]}]}`,
		`{"model":"m","max_tokens":9,"temperature":1,"messages":[{"role":"user","content":"x"}],"tools":[{"name":"","input_schema":{}}]}`,
		`{"model":"m","max_tokens":9,"messages":[{"role":"user","content":"x"},{"role":"assistant","content":[{"type":"tool_use","id":"","name":"f","input":{}}]}]}`,
		`{"model":"m","max_tokens":9,"messages":[{"role":"user","content":"x"},{"role":"assistant","content":[{"type":"tool_use","id":"c","name":"","input":{}}]}]}`,
		`{"model":"m","max_tokens":9,"messages":[{"role":"user","content":"x"},{"role":"assistant","content":[{"type":"image","source":{"type":"url","url":"https://x/i.png"}}]}]}`,
		`{"model":"m","max_tokens":9,"messages":[{"role":"user","content":[{"type":"image","source":{"type":"url","url":""}}]}]}`,
	} {
		messages[fmt.Sprintf("crafted %d", i)] = []byte(b)
	}
	for name, body := range messages {
		lazy, lerr := ParseMessagesRequest(body)
		eb, eager, eerr := eagerMessages(body)
		sameTranslation(t, "messages "+name, lazy, lerr, eb, eager, eerr)
	}

	responses := map[string][]byte{
		"codex": vendorFixture(t, "agents", "codex-request.json"),
		"large": largeInput(`{"model":"standard","max_output_tokens":16,`, 64<<10),
	}
	for _, name := range []string{"create-function-call.docs-example.request.json", "create-image.docs-example.request.json"} {
		responses[name] = vendorFixture(t, "responses", name)
	}
	for i, b := range []string{
		`{"model":"m","instructions":"be brief","stream":true,"input":[{"type":"message","role":"user","content":[{"type":"input_text","text":"a"},{"type":"input_image","image_url":"https://x/i.png"}]},` +
			`{"type":"function_call","call_id":"c1","name":"f","arguments":"{}"},{"type":"function_call_output","call_id":"c1","output":"r"}],"tools":[{"type":"function","name":"f","parameters":{"type":"object"}}]}`,
		`{"model":"m","input":[{"type":"function_call_output","call_id":"","output":"r"}]}`,
		`{"model":"m","input":[{"type":"reasoning","summary":[]}]}`,
		`{"model":"m","input":[{"type":"function_call","call_id":"","name":"f","arguments":"{}"}]}`,
		`{"model":"m","input":[{"type":"function_call","call_id":"c","name":"","arguments":"{}"}]}`,
		`{"model":"m","input":[{"role":"assistant","content":[{"type":"input_image","image_url":"https://x/i.png"}]}]}`,
	} {
		responses[fmt.Sprintf("crafted %d", i)] = []byte(b)
	}
	for name, body := range responses {
		var lazy *adapter.ChatRequest
		r, lerr := ParseResponsesRequest(body)
		if lerr == nil {
			lazy = r.Chat
		}
		eb, eager, eerr := eagerResponses(body)
		if eerr != nil {
			// The door names a chat refusal by its Responses field.
			eerr = responsesRefusal(eerr)
		}
		sameTranslation(t, "responses "+name, lazy, lerr, eb, eager, eerr)
	}
}

// A checker refuses the message the chat parser would refuse in the
// written body, at the same position, and reads the others as it does.
func TestChatCheckerRefusesAsTheChatParser(t *testing.T) {
	for i, msgs := range [][]chatMessage{
		{{role: "user", content: "x", hasContent: true}, {role: "assistant"}},
		{{role: "tool", content: "r", hasContent: true}},
		{{role: "user", content: "x", hasContent: true}, {role: "assistant", nullContent: true, calls: []chatCall{{name: "f", args: "{}"}}}},
		{{role: "assistant", parts: []chatPart{{image: true, url: "https://x/i.png"}}}},
		{{role: "user", parts: []chatPart{{image: true, url: "https://x/i.png"}}}, {role: "tool", toolCallID: "c", content: "r", hasContent: true}},
	} {
		w, c := newChatWriter(64), newChatChecker()
		for j := range msgs {
			w.add(&msgs[j])
			c.add(&msgs[j])
		}
		out := chatSettings{Model: "m"}
		body, err := w.finish(&out)
		if err != nil {
			t.Fatal(err)
		}
		settings, err := c.finish(&out)
		if err != nil {
			t.Fatal(err)
		}
		eager, eerr := ParseChatRequest(body)
		lazy, lerr := parseChat(settings, func(r *adapter.ChatRequest) *RequestError {
			return c.deferChat(r, settings, func(dst []byte) []byte {
				return append(dst, gjson.GetBytes(body, "messages").Raw...)
			})
		})
		sameTranslation(t, fmt.Sprintf("messages %d", i), lazy, lerr, body, eager, eerr)
	}
}

// The chat door builds a small body's conversation at once and defers a
// large one's: both give the same conversation and the same needs.
func TestChatDoorDeferredConversationMatchesEager(t *testing.T) {
	turns := `{"role":"system","content":"s"},` +
		`{"role":"user","content":[{"type":"text","text":"a"},{"type":"image_url","image_url":{"url":"https://x/i.png"}}]},` +
		`{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]},` +
		`{"role":"tool","tool_call_id":"c1","content":"r"}`
	for _, pad := range []int{0, eagerMessagesBytes} {
		body := []byte(`{"model":"m","messages":[` + turns + `,{"role":"user","content":"` + strings.Repeat("x", pad) + `"}]}`)
		r, err := ParseChatRequest(body)
		if err != nil {
			t.Fatalf("pad %d: %v", pad, err)
		}
		if deferred := r.Messages == nil; deferred != (len(body) > eagerMessagesBytes) {
			t.Errorf("pad %d (%d bytes): deferred %v", pad, len(body), deferred)
		}
		want, perr := parseMessages(body, gjson.GetBytes(body, "messages"), &adapter.ChatRequest{})
		if perr != nil {
			t.Fatal(perr)
		}
		if got := r.Conversation(); !reflect.DeepEqual(got, want) {
			t.Errorf("pad %d: conversation differs:\n got %+v\nwant %+v", pad, got, want)
		}
		if !r.NeedsVision() || !r.NeedsTools() {
			t.Errorf("pad %d: vision %v tools %v, want both", pad, r.NeedsVision(), r.NeedsTools())
		}
	}
}
