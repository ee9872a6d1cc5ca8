package frontdoor

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"switchyard/routing/adapter"
	"switchyard/routing/wire"

	"github.com/tidwall/gjson"
)

// ResponsesEvents writes the Responses API's stream for one response: the
// documented event sequence with a sequence_number on every event, from
// either a translated chat stream (Chunk) or a native Responses upstream
// (Relay), ending with response.completed / response.incomplete (Done) or,
// when the upstream fails after the stream began, an error event and
// response.failed (Fail).
//
// A translated stream is a small state machine over output items: a
// reasoning item (reasoning_text content) while the upstream sends
// reasoning, a message item with an output_text and/or a refusal part
// while it sends text, one function_call item per tool call. An item is
// closed (its .done events) when another kind starts and at the end, so
// items never interleave.
//
// Every method appends whole SSE events ("event: T\ndata: {…}\n\n") to dst
// and returns it. Not safe for concurrent use.
type ResponsesEvents struct {
	r       *ResponsesRequest
	ids     ResponseIDs
	model   string
	created int64
	seq     int64
	started bool
	over    bool

	items  []*streamItem // every item, in output order
	open   *streamItem   // the open message or reasoning item
	call   *streamItem   // the open function call
	calls  map[int]*streamItem
	finish string

	// Native relay: the upstream's response id, kept for Fail.
	nativeID string
}

type itemKind int

const (
	itemMessage itemKind = iota
	itemReasoning
	itemCall
)

// streamItem is one output item being streamed.
type streamItem struct {
	kind  itemKind
	index int
	id    string
	done  bool

	// message: its parts in order, the open one last
	parts    []*streamPart
	partOpen bool
	// reasoning
	reasoning strings.Builder
	// function call (custom: a custom tool's call)
	callID, name string
	args         strings.Builder
	custom       bool
	r            *ResponsesRequest
}

type streamPart struct {
	refusal bool
	text    strings.Builder
}

// NewResponsesEvents starts the stream of the response to r. model is the
// logic model that serves (the response's model), created its Unix time.
func NewResponsesEvents(r *ResponsesRequest, ids ResponseIDs, model string, created int64) *ResponsesEvents {
	return &ResponsesEvents{r: r, ids: ids, model: model, created: created, calls: map[int]*streamItem{}}
}

// member is one member of an event after type and sequence_number.
type member struct {
	k string
	v any
}

// emit appends one event.
func (e *ResponsesEvents) emit(dst []byte, typ string, ms ...member) []byte {
	dst = append(dst, "event: "...)
	dst = append(dst, typ...)
	dst = append(dst, "\ndata: {\"type\":"...)
	dst = wire.AppendString(dst, typ)
	dst = append(dst, `,"sequence_number":`...)
	dst = strconv.AppendInt(dst, e.seq, 10)
	e.seq++
	for _, m := range ms {
		dst = append(dst, ',')
		dst = wire.AppendString(dst, m.k)
		dst = append(dst, ':')
		switch v := m.v.(type) {
		case string:
			dst = wire.AppendString(dst, v)
		case int:
			dst = strconv.AppendInt(dst, int64(v), 10)
		case json.RawMessage:
			dst = append(dst, v...)
		default:
			b, err := json.Marshal(v)
			if err != nil {
				b = []byte("null")
			}
			dst = append(dst, b...)
		}
	}
	return append(dst, "}\n\n"...)
}

// start sends response.created and response.in_progress once.
func (e *ResponsesEvents) start(dst []byte) []byte {
	if e.started {
		return dst
	}
	e.started = true
	o := newResponseObject(e.r, e.ids, e.model, e.created, responseInProgress)
	dst = e.emit(dst, "response.created", member{"response", o})
	return e.emit(dst, "response.in_progress", member{"response", o})
}

// Chunk appends the events for one chat.completion.chunk of a translated
// upstream (its first choice; Responses has no n). A usage-only chunk adds
// nothing (the usage comes with Done).
func (e *ResponsesEvents) Chunk(dst, chunk []byte) []byte {
	dst = e.start(dst)
	var choice gjson.Result
	gjson.GetBytes(chunk, "choices").ForEach(func(_, c gjson.Result) bool {
		if c.Get("index").Int() == 0 {
			choice = c
			return false
		}
		return true
	})
	if !choice.Exists() {
		return dst
	}
	if f := choice.Get("finish_reason"); f.Type == gjson.String && f.Str != "" {
		e.finish = f.Str
	}
	d := choice.Get("delta")
	if rt := reasoningText(d); rt != "" {
		dst = e.reasoningDelta(dst, rt)
	}
	if c := d.Get("content"); c.Type == gjson.String && c.Str != "" {
		dst = e.textDelta(dst, c.Str, false)
	}
	if rf := d.Get("refusal"); rf.Type == gjson.String && rf.Str != "" {
		dst = e.textDelta(dst, rf.Str, true)
	}
	d.Get("tool_calls").ForEach(func(_, tc gjson.Result) bool {
		dst = e.callDelta(dst, int(tc.Get("index").Int()), tc.Get("id").Str, tc.Get("function.name").Str, tc.Get("function.arguments").Str)
		return true
	})
	return dst
}

func (e *ResponsesEvents) newItem(kind itemKind, id string) *streamItem {
	it := &streamItem{kind: kind, index: len(e.items), id: id}
	e.items = append(e.items, it)
	return it
}

// closeAll closes the open message or reasoning item and the open call.
func (e *ResponsesEvents) closeAll(dst []byte) []byte {
	if e.open != nil {
		dst = e.closeItem(dst, e.open)
		e.open = nil
	}
	if e.call != nil {
		dst = e.closeItem(dst, e.call)
		e.call = nil
	}
	return dst
}

func (e *ResponsesEvents) reasoningDelta(dst []byte, text string) []byte {
	if e.open == nil || e.open.kind != itemReasoning {
		dst = e.closeAll(dst)
		e.open = e.newItem(itemReasoning, e.ids.reasoning())
		if e.open.index > 0 {
			e.open.id += "_" + itoa(e.open.index)
		}
		it := e.open
		dst = e.emit(dst, "response.output_item.added", member{"output_index", it.index},
			member{"item", reasoningItem{ID: it.id, Type: "reasoning", Summary: []any{}}})
		dst = e.emit(dst, "response.content_part.added", member{"item_id", it.id}, member{"output_index", it.index},
			member{"content_index", 0}, member{"part", reasoningPart{Type: "reasoning_text", Text: ""}})
	}
	it := e.open
	it.reasoning.WriteString(text)
	return e.emit(dst, "response.reasoning_text.delta", member{"item_id", it.id}, member{"output_index", it.index},
		member{"content_index", 0}, member{"delta", text})
}

func (e *ResponsesEvents) textDelta(dst []byte, text string, refusal bool) []byte {
	if e.open == nil || e.open.kind != itemMessage {
		dst = e.closeAll(dst)
		e.open = e.newItem(itemMessage, e.ids.message())
		if e.open.index > 0 {
			e.open.id += "_" + itoa(e.open.index)
		}
		it := e.open
		dst = e.emit(dst, "response.output_item.added", member{"output_index", it.index},
			member{"item", messageItem{ID: it.id, Type: "message", Status: responseInProgress, Role: "assistant", Content: []any{}}})
	}
	it := e.open
	if e.call != nil {
		dst = e.closeItem(dst, e.call)
		e.call = nil
	}
	var p *streamPart
	if it.partOpen {
		p = it.parts[len(it.parts)-1]
		if p.refusal != refusal {
			dst = e.closePart(dst, it)
			p = nil
		}
	}
	if p == nil {
		p = &streamPart{refusal: refusal}
		it.parts = append(it.parts, p)
		it.partOpen = true
		dst = e.emit(dst, "response.content_part.added", member{"item_id", it.id}, member{"output_index", it.index},
			member{"content_index", len(it.parts) - 1}, member{"part", p.value()})
	}
	p.text.WriteString(text)
	if refusal {
		return e.emit(dst, "response.refusal.delta", member{"item_id", it.id}, member{"output_index", it.index},
			member{"content_index", len(it.parts) - 1}, member{"delta", text})
	}
	return e.emit(dst, "response.output_text.delta", member{"item_id", it.id}, member{"output_index", it.index},
		member{"content_index", len(it.parts) - 1}, member{"delta", text}, member{"logprobs", rawEmpty})
}

func (p *streamPart) value() any {
	if p.refusal {
		return refusalPart{Type: "refusal", Refusal: p.text.String()}
	}
	return newTextPart(p.text.String())
}

func (e *ResponsesEvents) closePart(dst []byte, it *streamItem) []byte {
	if !it.partOpen {
		return dst
	}
	it.partOpen = false
	ci := len(it.parts) - 1
	p := it.parts[ci]
	if p.refusal {
		dst = e.emit(dst, "response.refusal.done", member{"item_id", it.id}, member{"output_index", it.index},
			member{"content_index", ci}, member{"refusal", p.text.String()})
	} else {
		dst = e.emit(dst, "response.output_text.done", member{"item_id", it.id}, member{"output_index", it.index},
			member{"content_index", ci}, member{"text", p.text.String()}, member{"logprobs", rawEmpty})
	}
	return e.emit(dst, "response.content_part.done", member{"item_id", it.id}, member{"output_index", it.index},
		member{"content_index", ci}, member{"part", p.value()})
}

func (e *ResponsesEvents) callDelta(dst []byte, index int, callID, name, args string) []byte {
	it := e.calls[index]
	if it == nil {
		if e.open != nil {
			dst = e.closeItem(dst, e.open)
			e.open = nil
		}
		if e.call != nil {
			dst = e.closeItem(dst, e.call)
		}
		it = e.newItem(itemCall, e.ids.call(len(e.calls)))
		it.callID, it.name, it.r = callID, name, e.r
		if it.callID == "" {
			it.callID = "call_" + e.ids.Base + "_" + itoa(len(e.calls))
		}
		e.calls[index], e.call = it, it
		it.custom = e.r.Tools[name].Custom
		dst = e.emit(dst, "response.output_item.added", member{"output_index", it.index},
			member{"item", callItem(e.r, it.id, responseInProgress, it.callID, it.name, "")})
	} else if it.name == "" && name != "" {
		it.name = name
	}
	if args == "" {
		return dst
	}
	it.args.WriteString(args)
	if it.custom {
		return dst // a custom tool's input goes out whole when the call closes
	}
	return e.emit(dst, "response.function_call_arguments.delta", member{"item_id", it.id}, member{"output_index", it.index},
		member{"delta", args})
}

// closeItem sends an item's closing events.
func (e *ResponsesEvents) closeItem(dst []byte, it *streamItem) []byte {
	if it.done {
		return dst
	}
	switch it.kind {
	case itemMessage:
		dst = e.closePart(dst, it)
	case itemReasoning:
		t := it.reasoning.String()
		dst = e.emit(dst, "response.reasoning_text.done", member{"item_id", it.id}, member{"output_index", it.index},
			member{"content_index", 0}, member{"text", t})
		dst = e.emit(dst, "response.content_part.done", member{"item_id", it.id}, member{"output_index", it.index},
			member{"content_index", 0}, member{"part", reasoningPart{Type: "reasoning_text", Text: t}})
	case itemCall:
		if it.custom {
			in := customInputOf(it.args.String())
			dst = e.emit(dst, "response.custom_tool_call_input.delta", member{"item_id", it.id}, member{"output_index", it.index},
				member{"delta", in})
			dst = e.emit(dst, "response.custom_tool_call_input.done", member{"item_id", it.id}, member{"output_index", it.index},
				member{"input", in})
			break
		}
		dst = e.emit(dst, "response.function_call_arguments.done", member{"item_id", it.id}, member{"output_index", it.index},
			member{"arguments", it.args.String()})
	}
	it.done = true
	return e.emit(dst, "response.output_item.done", member{"output_index", it.index}, member{"item", it.value(responseCompleted)})
}

// value is the item as the response's output lists it.
func (it *streamItem) value(status string) any {
	switch it.kind {
	case itemReasoning:
		return reasoningItem{ID: it.id, Type: "reasoning", Summary: []any{}, Content: []reasoningPart{{Type: "reasoning_text", Text: it.reasoning.String()}}}
	case itemCall:
		return callItem(it.r, it.id, status, it.callID, it.name, it.args.String())
	}
	parts := make([]any, len(it.parts))
	for i, p := range it.parts {
		parts[i] = p.value()
	}
	return messageItem{ID: it.id, Type: "message", Status: status, Role: "assistant", Content: parts}
}

// Done closes every item and appends the terminal event: response.completed,
// or response.incomplete when the answer was cut by max_output_tokens. u is
// the stream's usage.
func (e *ResponsesEvents) Done(dst []byte, u adapter.Usage) []byte {
	if e.over {
		return dst
	}
	dst = e.start(dst)
	if len(e.items) == 0 && e.finish != "length" {
		dst = e.textDelta(dst, "", false) // an empty answer is still a message
	}
	dst = e.closeAll(dst)
	e.over = true
	o := newResponseObject(e.r, e.ids, e.model, e.created, responseCompleted)
	for _, it := range e.items {
		o.Output = append(o.Output, it.value(responseCompleted))
	}
	o.finish(e.finish, u, e.created)
	typ := "response.completed"
	if o.Status == responseIncomplete {
		typ = "response.incomplete"
	}
	return e.emit(dst, typ, member{"response", o})
}

// Fail ends a stream the upstream broke after it began: an error event
// (code, message and param at the top level, as documented, and the same
// inside an "error" object, as OpenAI sends it and as the SDKs detect a
// stream error), then response.failed with the response's output so far.
// errType is the OpenAI error type (server_error, rate_limit_error, …).
func (e *ResponsesEvents) Fail(dst []byte, errType, code, message string) []byte {
	if e.over {
		return dst
	}
	e.over = true
	dst = e.start(dst)
	dst = e.emit(dst, "error", member{"code", code}, member{"message", message}, member{"param", rawNull},
		member{"error", map[string]any{"type": errType, "code": code, "message": message, "param": nil}})
	o := newResponseObject(e.r, e.ids, e.model, e.created, responseFailed)
	if e.nativeID != "" {
		o.ID = e.nativeID
	}
	for _, it := range e.items {
		st := responseCompleted
		if !it.done {
			st = responseIncomplete
		}
		o.Output = append(o.Output, it.value(st))
	}
	o.Error = &responseError{Code: code, Message: message}
	return e.emit(dst, "response.failed", member{"response", o})
}

// Relay appends one event of a native Responses upstream: the event as the
// vendor sent it with two changes — sequence_number is the gateway's own
// count (so the gateway's closing events continue it), and the response's
// model is the logic model that serves (the answer's one rule for model).
func (e *ResponsesEvents) Relay(dst, data []byte) []byte {
	e.started = true
	typ := gjson.GetBytes(data, "type").Str
	if id := gjson.GetBytes(data, "response.id"); id.Type == gjson.String && e.nativeID == "" {
		e.nativeID = id.Str
	}
	switch typ {
	case "response.completed", "response.incomplete", "response.failed":
		e.over = true
	}
	dst = append(dst, "event: "...)
	dst = append(dst, typ...)
	dst = append(dst, "\ndata: "...)
	dst = relayRewrite(dst, data, e.seq, e.model)
	e.seq++
	return append(dst, "\n\n"...)
}

// relayRewrite appends obj with its top-level sequence_number set to seq
// (added first when the upstream numbers nothing) and response.model, when
// present, set to model; every other byte unchanged.
func relayRewrite(dst, obj []byte, seq int64, model string) []byte {
	type edit struct {
		at, end int
		val     []byte
	}
	var edits []edit
	num := gjson.GetBytes(obj, "sequence_number")
	if num.Exists() && num.Index > 0 {
		edits = append(edits, edit{num.Index, num.Index + len(num.Raw), strconv.AppendInt(nil, seq, 10)})
	}
	if v := gjson.GetBytes(obj, "response.model"); v.Exists() && v.Index > 0 {
		edits = append(edits, edit{v.Index, v.Index + len(v.Raw), wire.AppendString(nil, model)})
	}
	if len(edits) == 2 && edits[1].at < edits[0].at {
		edits[0], edits[1] = edits[1], edits[0]
	}
	start := len(dst)
	pos := 0
	for _, ed := range edits {
		if ed.at < pos || ed.end > len(obj) {
			continue
		}
		dst = append(dst, obj[pos:ed.at]...)
		dst = append(dst, ed.val...)
		pos = ed.end
	}
	dst = append(dst, obj[pos:]...)
	if num.Exists() {
		return dst
	}
	i := bytes.IndexByte(dst[start:], '{')
	if i < 0 {
		return dst
	}
	i += start + 1
	ins := strconv.AppendInt([]byte(`"sequence_number":`), seq, 10)
	if rest := bytes.TrimLeft(dst[i:], " \t\r\n"); len(rest) > 0 && rest[0] != '}' {
		ins = append(ins, ',')
	}
	tail := append([]byte(nil), dst[i:]...)
	return append(append(dst[:i], ins...), tail...)
}
