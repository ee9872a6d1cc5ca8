package frontdoor

import (
	"encoding/json"

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

// chatPart is a user message's text or image part; an image is a URL, or
// base64 data of a media type (written as a data URL).
type chatPart struct {
	image           bool
	text, url       string
	mediaType, data string
}

// chatCall is an assistant's tool call.
type chatCall struct {
	id, name, args string
}

// chatMessage is one chat message: string content (hasContent), parts, or
// tool calls; toolCallID for a tool result.
type chatMessage struct {
	role       string
	content    string
	hasContent bool
	parts      []chatPart
	calls      []chatCall
	toolCallID string
}

// chatWriter appends a chat body's messages.
type chatWriter struct {
	buf   []byte
	count int
}

// newChatWriter starts a chat body of about size bytes.
func newChatWriter(size int) chatWriter {
	w := chatWriter{buf: make([]byte, 0, size+64)}
	w.buf = append(w.buf, `{"messages":[`...)
	return w
}

// text appends a message with string content.
func (w *chatWriter) text(role, content string) {
	w.add(&chatMessage{role: role, content: content, hasContent: true})
}

// add appends one message.
func (w *chatWriter) add(m *chatMessage) {
	if w.count > 0 {
		w.buf = append(w.buf, ',')
	}
	w.count++
	b := append(w.buf, `{"role":`...)
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
	w.buf = append(b, '}')
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
	} else {
		b = append(b, `"data:`...)
		b = wire.AppendStringContent(b, p.mediaType)
		b = append(b, ";base64,"...)
		b = wire.AppendStringContent(b, p.data)
		b = append(b, '"')
	}
	return append(b, `}}`...)
}

// finish closes the messages and adds the settings: the whole chat body.
func (w *chatWriter) finish(s *chatSettings) ([]byte, error) {
	rest, err := json.Marshal(s)
	if err != nil {
		return nil, err
	}
	b := append(w.buf, "],"...)
	return append(b, rest[1:]...), nil // rest is an object with at least model
}
