package frontdoor

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"switchyard/routing/adapter"
	"switchyard/routing/wire"

	"github.com/tidwall/gjson"
)

// The Messages front door's answers: errors in Anthropic's shape, a
// chat.completion translated into a Messages response, and a stream of
// chat.completion.chunk events translated into Messages events
// (message_start, content_block_start/delta/stop, ping, message_delta with
// usage, message_stop, and an error event after a mid-stream failure).
// Wire format: https://docs.anthropic.com/en/api/messages-streaming and
// https://docs.anthropic.com/en/api/errors; testdata/messages/ holds the
// captures the tests compare with.

// MessagesErrorType is Anthropic's error type for an HTTP status: 400
// invalid_request_error, 401 authentication_error, 402 billing_error, 403
// permission_error, 404 not_found_error, 413 request_too_large, 429
// rate_limit_error, 503 and 529 overloaded_error, 504 timeout_error, other
// 5xx api_error.
func MessagesErrorType(status int) string {
	switch status {
	case http.StatusUnauthorized:
		return "authentication_error"
	case http.StatusPaymentRequired:
		return "billing_error"
	case http.StatusForbidden:
		return "permission_error"
	case http.StatusNotFound:
		return "not_found_error"
	case http.StatusRequestEntityTooLarge:
		return "request_too_large"
	case http.StatusTooManyRequests:
		return "rate_limit_error"
	case http.StatusServiceUnavailable, 529:
		return "overloaded_error"
	case http.StatusGatewayTimeout, http.StatusRequestTimeout:
		return "timeout_error"
	}
	if status >= 500 {
		return "api_error"
	}
	return "invalid_request_error"
}

type messagesErrorObject struct {
	Type    string  `json:"type"`
	Message string  `json:"message"`
	Code    string  `json:"code,omitempty"`  // Switchyard's error code (rate_limited, no_available_model, …)
	Param   *string `json:"param,omitempty"` // the field at fault, when one is
}

// MessagesError is an error answer in Anthropic's shape:
// {"type":"error","error":{"type","message"}} plus Switchyard's code (and
// the field at fault) inside the error object.
func MessagesError(status int, code, msg string, param *string) []byte {
	b, _ := json.Marshal(struct {
		Type  string              `json:"type"`
		Error messagesErrorObject `json:"error"`
	}{"error", messagesErrorObject{Type: MessagesErrorType(status), Message: msg, Code: code, Param: param}})
	return b
}

// messagesStop maps an OpenAI finish_reason onto a Messages stop_reason.
func messagesStop(finish string) string {
	switch finish {
	case "length":
		return "max_tokens"
	case "tool_calls", "function_call":
		return "tool_use"
	case "content_filter":
		return "refusal"
	}
	return "end_turn"
}

type messagesUsage struct {
	InputTokens              int64 `json:"input_tokens"`
	CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
	OutputTokens             int64 `json:"output_tokens"`
}

// messagesUsageOf renders u the Anthropic way: input_tokens excludes cache
// reads.
func messagesUsageOf(u adapter.Usage) messagesUsage {
	return messagesUsage{InputTokens: max(u.Prompt-u.Cached-u.CacheCreation, 0), CacheReadInputTokens: u.Cached,
		CacheCreationInputTokens: u.CacheCreation, OutputTokens: u.Completion}
}

// MessagesID is the message id of a translated answer for a request id.
func MessagesID(requestID string) string {
	return "msg_" + strings.ReplaceAll(requestID, "-", "")
}

type messagesBlock struct {
	Type      string          `json:"type"`
	Text      *string         `json:"text,omitempty"`
	Thinking  *string         `json:"thinking,omitempty"`
	Signature *string         `json:"signature,omitempty"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Input     json.RawMessage `json:"input,omitempty"`
}

// errNotObject: a tool call's arguments were not a JSON object.
var errNotObject = errors.New("the upstream sent tool call arguments that are not a JSON object")

// MessagesAnswer translates a chat.completion (its first choice) into a
// Messages response for model.
func MessagesAnswer(dst, chat []byte, model, id string, u adapter.Usage) ([]byte, error) {
	v := gjson.Parse(wire.View(chat))
	choice := v.Get("choices.0")
	msg := choice.Get("message")
	blocks := []messagesBlock{}
	reasoning := msg.Get("reasoning_content")
	if !reasoning.Exists() {
		reasoning = msg.Get("reasoning")
	}
	if s := reasoning.Str; reasoning.Type == gjson.String && s != "" {
		empty := ""
		blocks = append(blocks, messagesBlock{Type: "thinking", Thinking: &s, Signature: &empty})
	}
	if c := msg.Get("content"); c.Type == gjson.String && c.Str != "" {
		s := c.Str
		blocks = append(blocks, messagesBlock{Type: "text", Text: &s})
	}
	var err error
	msg.Get("tool_calls").ForEach(func(_, tc gjson.Result) bool {
		input, ierr := messagesToolInput(tc.Get("function.arguments").Str)
		if ierr != nil {
			err = ierr
			return false
		}
		blocks = append(blocks, messagesBlock{Type: "tool_use", ID: tc.Get("id").Str, Name: tc.Get("function.name").Str, Input: input})
		return true
	})
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(struct {
		ID           string          `json:"id"`
		Type         string          `json:"type"`
		Role         string          `json:"role"`
		Model        string          `json:"model"`
		Content      []messagesBlock `json:"content"`
		StopReason   string          `json:"stop_reason"`
		StopSequence *string         `json:"stop_sequence"`
		Usage        messagesUsage   `json:"usage"`
	}{id, "message", "assistant", model, blocks, messagesStop(choice.Get("finish_reason").Str), nil, messagesUsageOf(u)})
	if err != nil {
		return nil, err
	}
	return append(dst, b...), nil
}

// messagesToolInput is a tool call's arguments as a tool_use input object.
func messagesToolInput(args string) (json.RawMessage, error) {
	args = strings.TrimSpace(args)
	if args == "" {
		return json.RawMessage("{}"), nil
	}
	if !json.Valid([]byte(args)) || args[0] != '{' {
		return nil, errNotObject
	}
	return json.RawMessage(args), nil
}

// MessagesStream renders one committed stream as Messages events: the
// vendor's own events passed on (native), or chat.completion.chunk events
// translated.
type MessagesStream struct {
	native    bool
	model, id string
	started   bool
	open      int    // index of the open content block, -1 for none
	openKind  string // text | thinking | tool_use
	blocks    int    // content blocks started so far
	tools     map[int]int
	stop      string
}

// NewMessagesStream starts the rendering of a stream for model (the logic
// model), message id id.
func NewMessagesStream(model, id string, native bool) *MessagesStream {
	return &MessagesStream{native: native, model: model, id: id, open: -1}
}

// Chunk renders one chunk.
func (s *MessagesStream) Chunk(dst []byte, ch adapter.Chunk) []byte {
	if s.native {
		return s.nativeEvent(dst, ch.Data)
	}
	if ch.UsageOnly {
		return dst // the usage goes out in message_delta
	}
	dst = s.start(dst)
	delta := gjson.GetBytes(ch.Data, "choices.0.delta")
	reasoning := delta.Get("reasoning_content")
	if !reasoning.Exists() {
		reasoning = delta.Get("reasoning")
	}
	if reasoning.Type == gjson.String && reasoning.Str != "" {
		dst = s.block(dst, "thinking", `{"type":"thinking","thinking":"","signature":""}`)
		dst = s.delta(dst, s.open, "thinking_delta", "thinking", reasoning.Str)
	}
	if c := delta.Get("content"); c.Type == gjson.String && c.Str != "" {
		dst = s.block(dst, "text", `{"type":"text","text":""}`)
		dst = s.delta(dst, s.open, "text_delta", "text", c.Str)
	}
	delta.Get("tool_calls").ForEach(func(_, tc gjson.Result) bool {
		k := int(tc.Get("index").Int())
		args := tc.Get("function.arguments").Str
		if id := tc.Get("id"); id.Str != "" {
			var b []byte
			b = append(b, `{"type":"tool_use","id":`...)
			b = wire.AppendString(b, id.Str)
			b = append(b, `,"name":`...)
			b = wire.AppendString(b, tc.Get("function.name").Str)
			b = append(b, `,"input":{}}`...)
			s.openKind = "" // a new call always starts a new block
			dst = s.block(dst, "tool_use", string(b))
			if s.tools == nil {
				s.tools = map[int]int{}
			}
			s.tools[k] = s.open
		}
		if i, ok := s.tools[k]; ok && args != "" {
			dst = s.delta(dst, i, "input_json_delta", "partial_json", args)
		}
		return true
	})
	if f := gjson.GetBytes(ch.Data, "choices.0.finish_reason"); f.Type == gjson.String && f.Str != "" {
		s.stop = messagesStop(f.Str)
	}
	return dst
}

// nativeEvent passes a vendor event on, its message_start naming the
// logic model (the answer's one rule for model).
func (s *MessagesStream) nativeEvent(dst, ev []byte) []byte {
	if !s.started && bytes.HasPrefix(ev, []byte("event: message_start\n")) {
		s.started = true
		if v := gjson.GetBytes(ev[len("event: message_start\ndata: "):], "message.model"); v.Exists() && v.Index > 0 {
			at := len("event: message_start\ndata: ") + v.Index
			dst = append(dst, ev[:at]...)
			dst = wire.AppendString(dst, s.model)
			return append(dst, ev[at+len(v.Raw):]...)
		}
	}
	return append(dst, ev...)
}

// start emits message_start (and a ping) once.
func (s *MessagesStream) start(dst []byte) []byte {
	if s.started {
		return dst
	}
	s.started = true
	var b []byte
	b = append(b, `{"type":"message_start","message":{"id":`...)
	b = wire.AppendString(b, s.id)
	b = append(b, `,"type":"message","role":"assistant","model":`...)
	b = wire.AppendString(b, s.model)
	b = append(b, `,"content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":0,"output_tokens":0}}}`...)
	dst = wire.AppendEvent(dst, "message_start", b)
	return wire.AppendEvent(dst, "ping", []byte(`{"type":"ping"}`))
}

// block makes sure a block of kind is open, closing another one first.
func (s *MessagesStream) block(dst []byte, kind, start string) []byte {
	if s.open >= 0 && s.openKind == kind {
		return dst
	}
	dst = s.closeBlock(dst)
	s.open, s.openKind = s.blocks, kind
	s.blocks++
	b := []byte(`{"type":"content_block_start","index":`)
	b = strconv.AppendInt(b, int64(s.open), 10)
	b = append(b, `,"content_block":`...)
	b = append(b, start...)
	b = append(b, '}')
	return wire.AppendEvent(dst, "content_block_start", b)
}

func (s *MessagesStream) closeBlock(dst []byte) []byte {
	if s.open < 0 {
		return dst
	}
	b := []byte(`{"type":"content_block_stop","index":`)
	b = strconv.AppendInt(b, int64(s.open), 10)
	b = append(b, '}')
	s.open, s.openKind = -1, ""
	return wire.AppendEvent(dst, "content_block_stop", b)
}

func (s *MessagesStream) delta(dst []byte, index int, typ, field, text string) []byte {
	b := []byte(`{"type":"content_block_delta","index":`)
	b = strconv.AppendInt(b, int64(index), 10)
	b = append(b, `,"delta":{"type":"`...)
	b = append(b, typ...)
	b = append(b, `","`...)
	b = append(b, field...)
	b = append(b, `":`...)
	b = wire.AppendString(b, text)
	b = append(b, '}', '}')
	return wire.AppendEvent(dst, "content_block_delta", b)
}

// End renders a clean end: the vendor's message_stop already went out for
// a native stream; a translated one gets its open block closed, the
// message_delta with the stop reason and the final usage, and message_stop.
func (s *MessagesStream) End(dst []byte, u adapter.Usage) []byte {
	if s.native {
		return dst
	}
	dst = s.start(dst)
	dst = s.closeBlock(dst)
	stop := s.stop
	if stop == "" {
		stop = "end_turn"
	}
	ub, _ := json.Marshal(messagesUsageOf(u))
	b := []byte(`{"type":"message_delta","delta":{"stop_reason":"`)
	b = append(b, stop...)
	b = append(b, `","stop_sequence":null},"usage":`...)
	b = append(b, ub...)
	b = append(b, '}')
	dst = wire.AppendEvent(dst, "message_delta", b)
	return wire.AppendEvent(dst, "message_stop", []byte(`{"type":"message_stop"}`))
}

// Fail renders the error event that ends a stream after a failure.
func (s *MessagesStream) Fail(dst []byte, status int, code, msg string) []byte {
	return wire.AppendEvent(dst, "error", MessagesError(status, code, msg, nil))
}

// AnswerID is a chat.completion's id ("" when it has none).
func AnswerID(chat []byte) string {
	return gjson.GetBytes(chat, "id").Str
}
