package adapter

import (
	"encoding/json"
	"sync"

	"github.com/tidwall/gjson"
)

// ChatRequest is a caller's OpenAI chat-completions request: the body as
// received (forwarded almost untouched to OpenAI-compatible upstreams, so
// unknown fields pass through) and a typed view that the translating adapters
// and the router read. ParseChatRequest builds it; nothing mutates it after.
type ChatRequest struct {
	// Body is the chat body when the parser has it at once; a door that
	// translates may defer it instead (DeferBody), and every reader of the
	// body goes through ChatBody (an adapter copying it, chatBodyParts).
	Body []byte

	Model string
	// Messages is the conversation when it was built at once; a parser
	// may defer it instead (Defer), and every reader of the conversation
	// goes through Conversation.
	Messages        []Message
	Stream          bool
	IncludeUsage    bool // the caller's stream_options.include_usage
	MaxTokens       *int // max_completion_tokens, else max_tokens
	Temperature     *float64
	TopP            *float64
	Stop            []string // a single string is normalized to one element
	Tools           []Tool
	ToolChoice      json.RawMessage // "auto" | "none" | "required" | {"type":"function",...}
	ReasoningEffort string          // "minimal" | "low" | "medium" | "high" | "": asks for reasoning
	Thinking        *Thinking       // non-standard {"type":"enabled","budget_tokens":N}, or "adaptive"
	// Effort is how hard the model should work ("low" … "max"), a hint
	// that does not ask for reasoning (Anthropic's output_config.effort):
	// translators give it to vendors that reason, others drop it.
	Effort         string
	ResponseFormat json.RawMessage // the caller's object; nil when absent or null
	User           string

	// Fields the translating adapters read beyond the ones above.
	N                 int      // choices asked for; 1 when absent
	Seed              *int64   // nil when absent
	FrequencyPenalty  *float64 // nil when absent
	PresencePenalty   *float64 // nil when absent
	ParallelToolCalls *bool    // nil when absent
	SafetyIdentifier  string
	TopK              *int // nil when absent
	// Format is response_format's typed view (FormatText when absent).
	Format ResponseFormat

	// Set holds the OpenAI fields (ChatFields) this request sets to
	// something other than their default: what an adapter must translate or
	// refuse. Unknown lists the top-level fields the parser does not know,
	// in body order.
	Set     FieldSet
	Unknown []string

	// Untranslatable is the first part of the caller's request that only
	// the door's own protocol carries (a role, a content or tool type this
	// build cannot translate), in the door's notation; "" when a
	// translation carries everything. Drops lists what a translation leaves
	// out, in the door's notation with array positions as [] (the field
	// policy adds the canonical fields a protocol drops).
	Untranslatable string
	Drops          []string

	// Native is the original request of a front door other than chat
	// completions (nil for chat completions); see native.go.
	Native *Native

	deferred *deferredMessages
	body     *deferredBody
}

// deferredBody is a door's chat translation checked but not written: a
// request passed natively to a deployment of the door's own protocol never
// reads it, and it costs about the body's size. The door keeps the body's
// small members written (skeleton, its messages an empty array) and writes
// the messages array again from the caller's body on each use, so an
// adapter that copies the body writes the translation straight into its
// copy instead of holding the translation and the copy at once.
type deferredBody struct {
	once     sync.Once
	skeleton []byte
	size     int
	messages func(dst []byte) []byte
	body     []byte
}

// DeferBody leaves the chat body to write on use: skeleton is the body
// with "messages":[] (an empty array), appendMessages appends the
// messages array (about size bytes, "[" to "]") to dst. The door checked
// the translation whole, so writing it cannot fail.
func (r *ChatRequest) DeferBody(skeleton []byte, size int, appendMessages func(dst []byte) []byte) {
	r.Body = nil
	r.body = &deferredBody{skeleton: skeleton, size: size, messages: appendMessages}
}

// ChatBody is the OpenAI chat body, written whole on first use when the
// door deferred it (safe for concurrent use). An adapter that copies the
// body reads chatBodyParts instead.
func (r *ChatRequest) ChatBody() []byte {
	d := r.body
	if d == nil {
		return r.Body
	}
	d.once.Do(func() {
		d.body = d.whole()
	})
	return d.body
}

// whole splices the messages into the skeleton.
func (d *deferredBody) whole() []byte {
	at := gjson.GetBytes(d.skeleton, "messages")
	if at.Index <= 0 || at.Index+len(at.Raw) > len(d.skeleton) {
		return d.skeleton
	}
	b := make([]byte, 0, len(d.skeleton)+d.size)
	b = append(b, d.skeleton[:at.Index]...)
	b = d.messages(b)
	return append(b, d.skeleton[at.Index+len(at.Raw):]...)
}

// chatBodyParts is the chat body for a copy: the whole body and a nil
// appendMessages, or, when the door deferred it, the skeleton (its
// messages member an empty array) and appendMessages, which appends the
// messages array in the member's place, about size bytes. The parts never
// change, so concurrent copies read them freely.
func (r *ChatRequest) chatBodyParts() (body []byte, appendMessages func(dst []byte) []byte, size int) {
	if d := r.body; d != nil {
		return d.skeleton, d.messages, d.size
	}
	return r.Body, nil, 0
}

// deferredMessages is a conversation checked but not built: a request
// forwarded as received never needs its typed view, and the view of many
// tiny messages costs several times the body.
type deferredMessages struct {
	once          sync.Once
	build         func() []Message
	msgs          []Message
	vision, tools bool
}

// Defer leaves the conversation to build on its first use: the parser
// checked it whole and reports whether it carries an image (vision) and
// replays tool calls or results (tools).
func (r *ChatRequest) Defer(build func() []Message, vision, tools bool) {
	r.Messages = nil
	r.deferred = &deferredMessages{build: build, vision: vision, tools: tools}
}

// Conversation is the typed view of the messages, built on first use when
// the parser deferred it (safe for concurrent use).
func (r *ChatRequest) Conversation() []Message {
	d := r.deferred
	if d == nil {
		return r.Messages
	}
	d.once.Do(func() {
		d.msgs, d.build = d.build(), nil
	})
	return d.msgs
}

// Response format types.
const (
	FormatText       = "text"
	FormatJSONObject = "json_object"
	FormatJSONSchema = "json_schema"
)

// ResponseFormat is response_format: text, json_object, or json_schema with
// its schema.
type ResponseFormat struct {
	Type   string          // FormatText | FormatJSONObject | FormatJSONSchema
	Name   string          // json_schema.name
	Schema json.RawMessage // json_schema.schema; nil when absent
	Strict bool            // json_schema.strict
}

// Thinking is the reasoning switch some OpenAI-compatible vendors accept.
type Thinking struct {
	Type         string `json:"type"`
	BudgetTokens int    `json:"budget_tokens,omitempty"`
}

// Message is one chat message. String content is normalized to one text part;
// Content is nil when the message had null or absent content.
type Message struct {
	Role       string        // system | developer | user | assistant | tool
	Content    []ContentPart // in order
	Name       string
	ToolCalls  []ToolCall
	ToolCallID string
}

// Text joins the message's text parts.
func (m Message) Text() string {
	var s string
	for _, p := range m.Content {
		if p.Type == "text" {
			s += p.Text
		}
	}
	return s
}

// ContentPart is a text or an image part of a message.
type ContentPart struct {
	Type     string // "text" | "image_url"
	Text     string
	ImageURL string // an http(s) URL or a data: URL
	Detail   string
}

// ToolCall is an assistant's call of a function.
type ToolCall struct {
	ID        string
	Name      string
	Arguments string // JSON text, as OpenAI sends it
}

// Tool is a function the model may call.
type Tool struct {
	Name        string
	Description string
	Parameters  json.RawMessage // JSON Schema; nil when absent
	Strict      *bool
}

// WantsReasoning reports whether the caller asked for reasoning: a
// reasoning effort, or thinking enabled with a budget. Such a request always
// goes to the deep tier (the data-plane contract). Adaptive thinking lets
// the model decide whether to think, so it asks for nothing by itself.
func (r *ChatRequest) WantsReasoning() bool {
	if r.ReasoningEffort != "" && r.ReasoningEffort != "none" {
		return true
	}
	return r.Thinking != nil && r.Thinking.Type != "disabled" && r.Thinking.Type != ThinkingAdaptive
}

// ThinkingAdaptive is thinking at the model's discretion.
const ThinkingAdaptive = "adaptive"

// Adaptive reports thinking left to the model (Anthropic's adaptive
// thinking): a translator lets a vendor that reasons decide for itself.
func (r *ChatRequest) Adaptive() bool {
	return r.Thinking != nil && r.Thinking.Type == ThinkingAdaptive
}

// Drop appends a dropped part (door notation) unless it is already listed.
func (r *ChatRequest) Drop(param string) {
	for _, d := range r.Drops {
		if d == param {
			return
		}
	}
	r.Drops = append(r.Drops, param)
}

// CannotTranslate records the first part only the door's own protocol carries.
func (r *ChatRequest) CannotTranslate(param string) {
	if r.Untranslatable == "" {
		r.Untranslatable = param
	}
}

// NeedsVision reports whether any message carries an image.
func (r *ChatRequest) NeedsVision() bool {
	if r.deferred != nil {
		return r.deferred.vision
	}
	for _, m := range r.Messages {
		for _, p := range m.Content {
			if p.Type == "image_url" {
				return true
			}
		}
	}
	return false
}

// NeedsTools reports whether the request offers tools or replays tool calls.
func (r *ChatRequest) NeedsTools() bool {
	if len(r.Tools) > 0 {
		return true
	}
	if r.deferred != nil {
		return r.deferred.tools
	}
	for _, m := range r.Messages {
		if len(m.ToolCalls) > 0 || m.Role == "tool" {
			return true
		}
	}
	return false
}

// ThinkingBudget is the token budget to give a vendor's extended thinking:
// the caller's explicit budget, else one derived from reasoning_effort.
func (r *ChatRequest) ThinkingBudget() int {
	if r.Thinking != nil && r.Thinking.BudgetTokens > 0 {
		return r.Thinking.BudgetTokens
	}
	switch r.ReasoningEffort {
	case "minimal":
		return 1024
	case "low":
		return 2048
	case "high":
		return 16384
	}
	return 8192
}
