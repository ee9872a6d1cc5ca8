package frontdoor

import (
	"encoding/json"

	"github.com/tidwall/gjson"

	"switchyard/routing/adapter"
	"switchyard/routing/wire"
)

// The OpenAI chat body a Messages translation writes: the conversation is
// appended to one buffer turn by turn as it is read (a turn is a few small
// typed values, never a tree of the whole document), the few settings are
// a typed struct marshalled once at the end.

// chatSettings are the chat body's members other than messages.
type chatSettings struct {
	Model             string            `json:"model"`
	Stream            bool              `json:"stream,omitempty"`
	MaxTokens         *int              `json:"max_tokens,omitempty"`
	Stop              []string          `json:"stop,omitempty"`
	Temperature       *float64          `json:"temperature,omitempty"`
	TopP              *float64          `json:"top_p,omitempty"`
	Thinking          *adapter.Thinking `json:"thinking,omitempty"`
	ResponseFormat    *chatFormat       `json:"response_format,omitempty"`
	Tools             []chatTool        `json:"tools,omitempty"`
	ToolChoice        json.RawMessage   `json:"tool_choice,omitempty"`
	ParallelToolCalls *bool             `json:"parallel_tool_calls,omitempty"`
	WebSearchOptions  *struct{}         `json:"web_search_options,omitempty"`
}

// chatFormat is a json_schema response_format.
type chatFormat struct {
	Type       string         `json:"type"`
	JSONSchema chatJSONSchema `json:"json_schema"`
}

type chatJSONSchema struct {
	Name   string          `json:"name"`
	Strict bool            `json:"strict"`
	Schema json.RawMessage `json:"schema"`
}

// chatTool is a function tool.
type chatTool struct {
	Type     string       `json:"type"`
	Function chatFunction `json:"function"`
}

type chatFunction struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters"`
	Strict      *bool           `json:"strict,omitempty"`
}

// chatPart is a user message's text or image part; an image is a URL (and
// its detail), or base64 data of a media type (written as a data URL).
type chatPart struct {
	image             bool
	text, url, detail string
	mediaType, data   string
}

// chatCall is an assistant's tool call.
type chatCall struct {
	id, name, args string
}

// chatMessage is one chat message: string content (hasContent), parts, or
// tool calls (content null when nullContent); toolCallID for a tool result.
type chatMessage struct {
	role        string
	content     string
	hasContent  bool
	nullContent bool
	parts       []chatPart
	calls       []chatCall
	toolCallID  string
}

// chatWriter appends a chat body's messages, or, checking, only checks
// each message as the chat parser would read it.
type chatWriter struct {
	buf   []byte
	count int
	// check writes each message alone into buf and reads it back
	// (parseMessage) instead of appending it: the chat body is not kept.
	// err is the first message the chat parser would refuse; vision and
	// tools what its conversation needs.
	// size is the length of the messages array the checked messages
	// make, brackets and commas included.
	check         bool
	err           *RequestError
	vision, tools bool
	size          int
	read          *chatRead
	// held is an assistant message not yet written (holding): the tool
	// calls that follow it in its turn join it, parallel calls of one turn
	// being one message.
	held    chatMessage
	holding bool
}

// newChatWriter starts a chat body of about size bytes.
func newChatWriter(size int) chatWriter {
	w := chatWriter{buf: make([]byte, 0, size+64)}
	w.buf = append(w.buf, `{"messages":`...)
	return appendingChat(w.buf)
}

// appendingChat starts a messages array at the end of dst: closeArray
// ends it and returns dst with the array.
func appendingChat(dst []byte) chatWriter {
	return chatWriter{buf: append(dst, '[')}
}

// closeArray ends the messages array of a writer (not a checker) and
// returns its buffer.
func (w *chatWriter) closeArray() []byte {
	w.flush()
	return append(w.buf, ']')
}

// chatRead is where a checker reads each message back, one for all.
type chatRead struct {
	msg  adapter.Message
	slot [1]adapter.ContentPart
	// What a translation of the translation cannot carry is not this
	// door's: canonical replaces it with the door's own.
	scratch adapter.ChatRequest
}

// newChatChecker checks a chat body's messages without writing it.
func newChatChecker() chatWriter {
	return chatWriter{check: true}
}

// text appends a message with string content.
func (w *chatWriter) text(role, content string) {
	w.add(&chatMessage{role: role, content: content, hasContent: true})
}

// hold adds an assistant message that tool calls may still join.
func (w *chatWriter) hold(m chatMessage) {
	w.flush()
	w.held, w.holding = m, true
}

// call adds a tool call to the assistant message being written (one
// without content when there is none).
func (w *chatWriter) call(c chatCall) {
	if !w.holding {
		w.held, w.holding = chatMessage{role: "assistant", nullContent: true}, true
	}
	w.held.calls = append(w.held.calls, c)
}

// empty reports that no message has been added.
func (w *chatWriter) empty() bool {
	return w.count == 0 && !w.holding
}

// flush writes the held assistant message.
func (w *chatWriter) flush() {
	if w.holding {
		m := w.held
		w.held, w.holding = chatMessage{}, false
		w.write(&m)
	}
}

// add appends one message.
func (w *chatWriter) add(m *chatMessage) {
	w.flush()
	w.write(m)
}

func (w *chatWriter) write(m *chatMessage) {
	if w.check {
		w.checkMessage(m)
		return
	}
	if w.count > 0 {
		w.buf = append(w.buf, ',')
	}
	w.count++
	w.buf = m.appendJSON(w.buf)
}

// checkMessage reads m back as the chat parser reads the message at its
// position in the chat body, keeping the first refusal.
func (w *chatWriter) checkMessage(m *chatMessage) {
	i := w.count
	w.count++
	if w.err != nil {
		return
	}
	if w.read == nil {
		w.read = new(chatRead)
	}
	w.buf = m.appendJSON(w.buf[:0])
	w.size += len(w.buf) + 1 // a comma before it, or the array's brackets
	rd := w.read
	rd.msg = adapter.Message{}
	if w.err = parseMessage(w.buf, i, gjson.Parse(wire.View(w.buf)), &rd.msg, rd.slot[:], &rd.scratch); w.err != nil {
		return
	}
	w.tools = w.tools || len(rd.msg.ToolCalls) > 0 || rd.msg.Role == "tool"
	for _, p := range rd.msg.Content {
		w.vision = w.vision || p.Type == "image_url"
	}
}

// appendJSON appends m as a chat message object.
func (m *chatMessage) appendJSON(b []byte) []byte {
	b = append(b, `{"role":`...)
	b = wire.AppendString(b, m.role)
	switch {
	case m.parts != nil:
		b = append(b, `,"content":[`...)
		for i, p := range m.parts {
			if i > 0 {
				b = append(b, ',')
			}
			b = p.appendJSON(b)
		}
		b = append(b, ']')
	case m.hasContent:
		b = append(b, `,"content":`...)
		b = wire.AppendString(b, m.content)
	case m.nullContent:
		b = append(b, `,"content":null`...)
	}
	if len(m.calls) > 0 {
		b = append(b, `,"tool_calls":[`...)
		for i, c := range m.calls {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"id":`...)
			b = wire.AppendString(b, c.id)
			b = append(b, `,"type":"function","function":{"name":`...)
			b = wire.AppendString(b, c.name)
			b = append(b, `,"arguments":`...)
			b = wire.AppendString(b, c.args)
			b = append(b, `}}`...)
		}
		b = append(b, ']')
	}
	if m.toolCallID != "" {
		b = append(b, `,"tool_call_id":`...)
		b = wire.AppendString(b, m.toolCallID)
	}
	return append(b, '}')
}

func (p *chatPart) appendJSON(b []byte) []byte {
	if !p.image {
		b = append(b, `{"type":"text","text":`...)
		b = wire.AppendString(b, p.text)
		return append(b, '}')
	}
	b = append(b, `{"type":"image_url","image_url":{"url":`...)
	if p.url != "" {
		b = wire.AppendString(b, p.url)
		if p.detail != "" {
			b = append(b, `,"detail":`...)
			b = wire.AppendString(b, p.detail)
		}
	} else {
		b = append(b, `"data:`...)
		b = wire.AppendStringContent(b, p.mediaType)
		b = append(b, ";base64,"...)
		b = wire.AppendStringContent(b, p.data)
		b = append(b, '"')
	}
	return append(b, `}}`...)
}

// finish closes the messages and adds the settings (an object with at
// least the model): the whole chat body. A checker's body has no
// messages: its settings alone.
func (w *chatWriter) finish(s any) ([]byte, error) {
	w.flush()
	rest, err := json.Marshal(s)
	if err != nil {
		return nil, err
	}
	b := w.buf
	if w.check {
		b = append(make([]byte, 0, len(rest)+16), `{"messages":[`...)
	}
	b = append(b, "],"...)
	return append(b, rest[1:]...), nil
}

// deferChat is the chat parser's check of a checker's messages: the first
// refusal, else the chat body and its typed view left to build on use.
// skeleton is the body the checker finished (its messages an empty
// array); appendMessages writes the messages array again from the
// caller's body, which an adapter copying the chat body writes straight
// into its copy.
func (w *chatWriter) deferChat(r *adapter.ChatRequest, skeleton []byte, appendMessages func(dst []byte) []byte) *RequestError {
	if w.err != nil {
		return w.err
	}
	size := w.size + 1
	r.DeferBody(skeleton, size, appendMessages)
	r.Defer(func() []adapter.Message {
		// The messages array alone, not the whole chat body: the view's
		// strings point into it, and the adapters that copy the body
		// write their own.
		b := appendMessages(make([]byte, 0, size))
		msgs, _ := parseMessages(b, gjson.Parse(wire.View(b)), &adapter.ChatRequest{})
		return msgs
	}, w.vision, w.tools)
	return nil
}
