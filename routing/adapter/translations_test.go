package adapter

import (
	"bytes"
	"encoding/json"
	"testing"

	"switchyard/routing/config"
)

// The translations coding agents need, per vendor: instructions in the
// middle of a conversation, effort and adaptive thinking, top_k and the
// hosted web search.

func TestGeminiMidConversationInstructions(t *testing.T) {
	r := &ChatRequest{Messages: []Message{
		{Role: "system", Content: vtText("be brief")},
		{Role: "user", Content: vtText("hi")},
		{Role: "assistant", Content: vtText("hello")},
		{Role: "system", Content: vtText("now answer in French")},
		{Role: "user", Content: vtText("how are you?")},
		{Role: "developer", Content: vtText("stop after this")},
	}}
	body, err := geminiBuild(r, config.Capabilities{})
	if err != nil {
		t.Fatal(err)
	}
	var req geminiRequest
	if err := json.Unmarshal(body, &req); err != nil {
		t.Fatal(err)
	}
	if req.SystemInstruction == nil || len(req.SystemInstruction.Parts) != 1 || req.SystemInstruction.Parts[0].Text != "be brief" {
		t.Fatalf("leading instructions: %s", body)
	}
	want := []struct{ role, text string }{
		{"user", "hi"}, {"model", "hello"},
		{"user", geminiInstructions + "now answer in French"}, {"user", "how are you?"},
		{"user", geminiInstructions + "stop after this"},
	}
	var got []struct{ role, text string }
	for _, c := range req.Contents {
		for _, p := range c.Parts {
			got = append(got, struct{ role, text string }{c.Role, p.Text})
		}
	}
	if len(got) != len(want) {
		t.Fatalf("parts %+v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("part %d: %+v, want %+v", i, got[i], want[i])
		}
	}
	// The folded instructions share the user's turn: roles still alternate.
	if len(req.Contents) != 4 || req.Contents[2].Role != "user" || len(req.Contents[2].Parts) != 2 {
		t.Fatalf("turns: %s", body)
	}
}

func TestEffortAndAdaptiveThinking(t *testing.T) {
	user := Message{Role: "user", Content: vtText("hi")}
	thinks := config.Capabilities{Thinking: true}
	for _, tc := range []struct {
		name string
		body func() ([]byte, error)
		want string // a fragment of the compact body ("" : absent, see not)
		not  string
	}{
		{"effort → OpenAI reasoning_effort", func() ([]byte, error) {
			b, e := openaiChatBody(&ChatRequest{Body: []byte(`{"model":"m","messages":[]}`), Effort: "max", Native: &Native{}}, "up", false, thinks, nil)
			return b, errOrNil(e)
		}, `"reasoning_effort":"high"`, ""},
		{"effort without thinking: nothing for OpenAI", func() ([]byte, error) {
			b, e := openaiChatBody(&ChatRequest{Body: []byte(`{"model":"m","messages":[]}`), Effort: "low", Native: &Native{}}, "up", false, config.Capabilities{}, nil)
			return b, errOrNil(e)
		}, "", "reasoning_effort"},
		{"effort → Gemini thinking budget", func() ([]byte, error) {
			return geminiBuild(&ChatRequest{Messages: []Message{user}, Effort: "medium"}, thinks)
		}, `"thinkingConfig":{"thinkingBudget":8192,"includeThoughts":true}`, ""},
		{"adaptive → Gemini dynamic thinking", func() ([]byte, error) {
			return geminiBuild(&ChatRequest{Messages: []Message{user}, Thinking: &Thinking{Type: ThinkingAdaptive}}, thinks)
		}, `"thinkingConfig":{"thinkingBudget":-1,"includeThoughts":true}`, ""},
		{"adaptive without the thinking capability: no thinking", func() ([]byte, error) {
			return geminiBuild(&ChatRequest{Messages: []Message{user}, Thinking: &Thinking{Type: ThinkingAdaptive}}, config.Capabilities{})
		}, "", "thinkingConfig"},
		{"adaptive → Anthropic adaptive", func() ([]byte, error) {
			b, _, err := Anthropic{}.build("up", &ChatRequest{Messages: []Message{user}, Thinking: &Thinking{Type: ThinkingAdaptive}}, false, config.Capabilities{})
			return b, err
		}, `"thinking":{"type":"adaptive"}`, "budget_tokens"},
		{"effort → Anthropic output_config.effort", func() ([]byte, error) {
			b, _, err := Anthropic{}.build("up", &ChatRequest{Messages: []Message{user}, Effort: "high"}, false, config.Capabilities{})
			return b, err
		}, `"output_config":{"effort":"high"}`, ""},
		{"top_k → Anthropic", func() ([]byte, error) {
			b, _, err := Anthropic{}.build("up", &ChatRequest{Messages: []Message{user}, TopK: vtInt(7), Set: FieldSet(0).With("top_k")}, false, config.Capabilities{})
			return b, err
		}, `"top_k":7`, ""},
		{"web search → Anthropic's server tool", func() ([]byte, error) {
			b, _, err := Anthropic{}.build("up", &ChatRequest{Messages: []Message{user}, Set: FieldSet(0).With("web_search_options")}, false, config.Capabilities{WebSearch: true})
			return b, err
		}, `"tools":[{"type":"web_search_20250305","name":"web_search"}]`, ""},
		{"web search → Gemini's google search", func() ([]byte, error) {
			return geminiBuild(&ChatRequest{Messages: []Message{user}, Set: FieldSet(0).With("web_search_options")}, config.Capabilities{WebSearch: true})
		}, `"tools":[{"googleSearch":{}}]`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body, err := tc.body()
			if err != nil {
				t.Fatal(err)
			}
			if tc.want != "" && !bytes.Contains(body, []byte(tc.want)) {
				t.Errorf("body lacks %s:\n%s", tc.want, body)
			}
			if tc.not != "" && bytes.Contains(body, []byte(tc.not)) {
				t.Errorf("body has %s:\n%s", tc.not, body)
			}
		})
	}
	// Adaptive thinking asks for no reasoning: it does not route to deep.
	if (&ChatRequest{Thinking: &Thinking{Type: ThinkingAdaptive}}).WantsReasoning() {
		t.Error("adaptive thinking counts as a request for reasoning")
	}
	// Without the web search capability the router never sends it.
	if f := Refusal(config.ProtocolGemini, &ChatRequest{Set: FieldSet(0).With("web_search_options")}, config.Capabilities{}, false); f != "web_search_options" {
		t.Errorf("gemini without web search: refused %q", f)
	}
}

// errOrNil keeps a nil *Error a nil error.
func errOrNil(e *Error) error {
	if e == nil {
		return nil
	}
	return e
}
