package fakevendor

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// POST /v1/responses: OpenAI's Responses API, with the same deterministic
// reply and faults as chat completions. The answer is a Response object
// (output: an optional reasoning item when reasoning.effort is set, then a
// message with output_text, or a function_call), or a stream of the
// documented events with sequence_number on each, ending with
// response.completed (response.incomplete when max_output_tokens cut the
// reply or the content filter stopped it). ErrorAfterChunks sends an error
// event in the shape OpenAI sends (its error nested under "error"), then
// response.failed. The request's store is echoed in the Response object,
// so tests can see what the gateway sent.

type responsesRequest struct {
	Model           string          `json:"model"`
	Input           json.RawMessage `json:"input"`
	Instructions    string          `json:"instructions"`
	Stream          bool            `json:"stream"`
	Store           *bool           `json:"store"`
	MaxOutputTokens int             `json:"max_output_tokens"`
	Tools           []responsesTool `json:"tools"`
	Reasoning       *struct {
		Effort string `json:"effort"`
	} `json:"reasoning"`
	Text *struct {
		Format *struct {
			Type   string          `json:"type"`
			Schema json.RawMessage `json:"schema"`
		} `json:"format"`
	} `json:"text"`
}

// responsesTool is a tools entry: function, custom, namespace (function and
// custom tools under a shared name) or a hosted tool (web_search,
// tool_search, …) the fake accepts and never calls.
type responsesTool struct {
	Type  string          `json:"type"`
	Name  string          `json:"name"`
	Tools []responsesTool `json:"tools"`
}

// offers is the function and custom tools offered, those in namespaces
// included, and whether a hosted web_search tool is among the tools.
func (req *responsesRequest) offers() (tools []offered, webSearch bool) {
	for _, t := range req.Tools {
		switch {
		case t.Type == "function" || t.Type == "custom":
			tools = append(tools, offered{name: t.Name, custom: t.Type == "custom"})
		case t.Type == "namespace":
			for _, in := range t.Tools {
				if in.Type == "function" || in.Type == "custom" {
					tools = append(tools, offered{name: in.Name, namespace: t.Name, custom: in.Type == "custom"})
				}
			}
		case strings.HasPrefix(t.Type, "web_search"):
			webSearch = true
		}
	}
	return tools, webSearch
}

// responsesInput reads input, a string or a list of items, into turns:
// user messages, tool outputs (function_call_output, custom_tool_call_output)
// and the model's items; system and developer messages are instructions.
// promptBytes is the prompt's size.
func responsesInput(raw json.RawMessage) (turns []turn, promptBytes int, ok bool) {
	if len(raw) == 0 {
		return nil, 0, false
	}
	if raw[0] == '"' {
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return nil, 0, false
		}
		return []turn{{text: userWords([]string{s})}}, len(s), true
	}
	var items []struct {
		Type    string          `json:"type"`
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
		Output  json.RawMessage `json:"output"`
	}
	if json.Unmarshal(raw, &items) != nil || len(items) == 0 {
		return nil, 0, false
	}
	for _, it := range items {
		switch {
		case it.Type == "function_call_output" || it.Type == "custom_tool_call_output":
			t := resultText(it.Output)
			promptBytes += len(t)
			turns = append(turns, turn{results: []string{t}})
		case it.Role != "":
			t := textOf(it.Content)
			promptBytes += len(t)
			switch it.Role {
			case "user":
				turns = append(turns, turn{text: userText(it.Content, t)})
			case "assistant":
				turns = append(turns, turn{model: true})
			}
		default: // function_call, custom_tool_call, reasoning, …
			turns = append(turns, turn{model: true})
		}
	}
	return turns, promptBytes, true
}

func (s *Server) openaiResponses(c *call) {
	var req responsesRequest
	perr := json.Unmarshal(c.body, &req)
	c.model = req.Model
	tools, webSearch := req.offers()
	c.webSearch = webSearch
	if !c.begin() {
		return
	}
	turns, promptBytes, ok := responsesInput(req.Input)
	switch {
	case perr != nil:
		c.fail(apiErr{kind: errInvalid, status: http.StatusBadRequest, msg: "We could not parse the JSON body of your request."})
		return
	case req.Model == "":
		c.fail(apiErr{kind: errInvalid, status: http.StatusBadRequest, msg: "Missing required parameter: 'model'."})
		return
	case !ok:
		c.fail(apiErr{kind: errInvalid, status: http.StatusBadRequest, msg: "Invalid value for 'input': expected a string or an array of input items."})
		return
	}
	promptBytes += len(req.Instructions)
	rp := c.plan(req.Model, promptBytes, req.MaxOutputTokens, decide(turns, tools))
	if t := req.Text; t != nil && t.Format != nil && (t.Format.Type == "json_object" || t.Format.Type == "json_schema") {
		rp.structured(t.Format.Schema)
	}
	st := &responsesFake{rp: rp, c: c, model: req.Model, id: "resp_" + c.requestID(), created: time.Now().Unix(),
		store: req.Store != nil && *req.Store, reasoning: req.Reasoning != nil && req.Reasoning.Effort != ""}
	if req.Reasoning != nil {
		st.effort = req.Reasoning.Effort
	}
	c.w.Header().Set("X-Request-Id", "req_"+c.requestID())
	if req.Stream {
		c.stream(st, rp)
		return
	}
	c.writeJSON(http.StatusOK, st.object(st.status(), st.output(rp.fullText(), rp.callInput()), !c.fault.NoUsage))
}

// responsesFake renders one response, whole or as events.
type responsesFake struct {
	rp        reply
	c         *call
	model, id string
	effort    string
	created   int64
	store     bool
	reasoning bool
	seq       int
	text      strings.Builder
}

func (f *responsesFake) msgID() string  { return "msg_" + f.c.requestID() }
func (f *responsesFake) fcID() string   { return "fc_" + f.c.requestID() }
func (f *responsesFake) rsID() string   { return "rs_" + f.c.requestID() }
func (f *responsesFake) callID() string { return "call_" + f.c.requestID() }

// status is the terminal status: incomplete when the reply was cut.
func (f *responsesFake) status() string {
	if f.rp.finish == finishLength || f.rp.finish == finishFilter {
		return "incomplete"
	}
	return "completed"
}

func (f *responsesFake) messageIndex() int {
	if f.reasoning {
		return 1
	}
	return 0
}

func (f *responsesFake) reasoningItem() map[string]any {
	return map[string]any{"id": f.rsID(), "type": "reasoning", "summary": []any{}}
}

// callItemID is the id of the call item: fc_ for a function call, ctc_ for a
// custom tool call.
func (f *responsesFake) callItemID() string {
	if f.rp.custom {
		return "ctc_" + f.c.requestID()
	}
	return f.fcID()
}

// callItem is the function_call item, or the custom_tool_call item (its
// input a string); a tool in a namespace names it.
func (f *responsesFake) callItem(status, input string) map[string]any {
	it := map[string]any{"id": f.callItemID(), "type": "function_call", "status": status, "arguments": input, "call_id": f.callID(), "name": f.rp.tool}
	if f.rp.custom {
		delete(it, "arguments")
		it["type"], it["input"] = "custom_tool_call", input
	}
	if f.rp.namespace != "" {
		it["namespace"] = f.rp.namespace
	}
	return it
}

func (f *responsesFake) messageItem(status string, content []any) map[string]any {
	return map[string]any{"id": f.msgID(), "type": "message", "status": status, "content": content, "role": "assistant"}
}

func textPart(text string) map[string]any {
	return map[string]any{"type": "output_text", "annotations": []any{}, "logprobs": []any{}, "text": text}
}

// output is the response's output items for the whole reply.
func (f *responsesFake) output(text, args string) []any {
	var out []any
	if f.reasoning {
		out = append(out, f.reasoningItem())
	}
	switch {
	case f.rp.tool != "":
		out = append(out, f.callItem("completed", args))
	case f.rp.finish == finishFilter:
	default:
		out = append(out, f.messageItem(f.status(), []any{textPart(text)}))
	}
	return out
}

// object is the Response object.
func (f *responsesFake) object(status string, output []any, withUsage bool) []byte {
	o := map[string]any{
		"id": f.id, "object": "response", "created_at": f.created, "status": status, "background": false,
		"error": nil, "incomplete_details": nil, "instructions": nil, "max_output_tokens": nil,
		"model": f.model, "output": output, "parallel_tool_calls": true, "previous_response_id": nil,
		"reasoning": map[string]any{"effort": nilIfEmpty(f.effort), "summary": nil}, "service_tier": "default",
		"store": f.store, "temperature": 1.0, "text": map[string]any{"format": map[string]any{"type": "text"}},
		"tool_choice": "auto", "tools": []any{}, "top_p": 1.0, "truncation": "disabled", "usage": nil,
		"user": nil, "metadata": map[string]any{},
	}
	if output == nil {
		o["output"] = []any{}
	}
	switch {
	case f.rp.finish == finishLength && status == "incomplete":
		o["incomplete_details"] = map[string]any{"reason": "max_output_tokens"}
	case f.rp.finish == finishFilter && status == "incomplete":
		o["incomplete_details"] = map[string]any{"reason": "content_filter"}
	}
	if withUsage && (status == "completed" || status == "incomplete") {
		u := map[string]any{
			"input_tokens": f.rp.prompt, "input_tokens_details": map[string]any{"cached_tokens": f.rp.cached},
			"output_tokens": f.rp.completion(), "output_tokens_details": map[string]any{"reasoning_tokens": 0},
			"total_tokens": f.rp.prompt + f.rp.completion(),
		}
		o["usage"] = u
	}
	b, _ := json.Marshal(o)
	return b
}

func nilIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// event appends one SSE event: "event: T" and its data with type and
// sequence_number first.
func (f *responsesFake) event(b []byte, typ string, members map[string]any) []byte {
	b = append(b, "event: "+typ+"\ndata: {\"type\":"...)
	b = appendString(b, typ)
	b = append(b, `,"sequence_number":`...)
	b = strconv.AppendInt(b, int64(f.seq), 10)
	f.seq++
	rest, _ := json.Marshal(members)
	if len(rest) > 2 {
		b = append(b, ',')
		b = append(b, rest[1:len(rest)-1]...)
	}
	return append(b, "}\n\n"...)
}

func (f *responsesFake) preamble(b []byte) []byte {
	created := json.RawMessage(f.object("in_progress", nil, false))
	b = f.event(b, "response.created", map[string]any{"response": created})
	b = f.event(b, "response.in_progress", map[string]any{"response": created})
	if f.reasoning {
		b = f.event(b, "response.output_item.added", map[string]any{"output_index": 0, "item": f.reasoningItem()})
		b = f.event(b, "response.output_item.done", map[string]any{"output_index": 0, "item": f.reasoningItem()})
	}
	oi := f.messageIndex()
	switch {
	case f.rp.tool != "":
		b = f.event(b, "response.output_item.added", map[string]any{"output_index": oi, "item": f.callItem("in_progress", "")})
	case f.rp.finish == finishFilter:
	default:
		b = f.event(b, "response.output_item.added", map[string]any{"output_index": oi, "item": f.messageItem("in_progress", []any{})})
		b = f.event(b, "response.content_part.added", map[string]any{"item_id": f.msgID(), "output_index": oi, "content_index": 0,
			"part": map[string]any{"type": "output_text", "annotations": []any{}, "logprobs": []any{}, "text": ""}})
	}
	return b
}

func (f *responsesFake) content(b []byte, _ int, text string) []byte {
	oi := f.messageIndex()
	if f.rp.tool != "" {
		in := f.rp.callInput()
		f.text.WriteString(in)
		typ := "response.function_call_arguments.delta"
		if f.rp.custom {
			typ = "response.custom_tool_call_input.delta"
		}
		return f.event(b, typ, map[string]any{"item_id": f.callItemID(), "output_index": oi, "delta": in})
	}
	f.text.WriteString(text)
	return f.event(b, "response.output_text.delta", map[string]any{"item_id": f.msgID(), "output_index": oi, "content_index": 0, "delta": text, "logprobs": []any{}})
}

func (f *responsesFake) finish(b []byte) []byte {
	oi := f.messageIndex()
	text := f.text.String()
	switch {
	case f.rp.custom:
		b = f.event(b, "response.custom_tool_call_input.done", map[string]any{"item_id": f.callItemID(), "output_index": oi, "input": text})
		b = f.event(b, "response.output_item.done", map[string]any{"output_index": oi, "item": f.callItem("completed", text)})
	case f.rp.tool != "":
		b = f.event(b, "response.function_call_arguments.done", map[string]any{"item_id": f.fcID(), "output_index": oi, "arguments": text})
		b = f.event(b, "response.output_item.done", map[string]any{"output_index": oi, "item": f.callItem("completed", text)})
	case f.rp.finish == finishFilter:
	default:
		b = f.event(b, "response.output_text.done", map[string]any{"item_id": f.msgID(), "output_index": oi, "content_index": 0, "text": text, "logprobs": []any{}})
		b = f.event(b, "response.content_part.done", map[string]any{"item_id": f.msgID(), "output_index": oi, "content_index": 0, "part": textPart(text)})
		b = f.event(b, "response.output_item.done", map[string]any{"output_index": oi, "item": f.messageItem(f.status(), []any{textPart(text)})})
	}
	status := f.status()
	typ := "response.completed"
	if status == "incomplete" {
		typ = "response.incomplete"
	}
	return f.event(b, typ, map[string]any{"response": json.RawMessage(f.object(status, f.output(text, text), !f.c.fault.NoUsage))})
}

// errorEvent is OpenAI's in-stream failure: an error event with the error
// nested under "error" (as the API sends it, unlike its reference), then
// response.failed.
func (f *responsesFake) errorEvent(b []byte, status int) []byte {
	code, msg, typ := "server_error", "The server had an error while processing your request. Sorry about that!", "server_error"
	if status == http.StatusTooManyRequests {
		code, msg, typ = "rate_limit_exceeded", "Rate limit reached. Please try again in 1s.", "tokens"
	}
	if f.c.fault.ErrorCode != "" {
		code = f.c.fault.ErrorCode
	}
	if f.c.fault.ErrorMessage != "" {
		msg = f.c.fault.ErrorMessage
	}
	b = f.event(b, "error", map[string]any{"error": map[string]any{"type": typ, "code": code, "message": msg, "param": nil}})
	var failed map[string]any
	_ = json.Unmarshal(f.object("failed", nil, false), &failed)
	failed["error"] = map[string]any{"code": code, "message": msg}
	return f.event(b, "response.failed", map[string]any{"response": failed})
}
