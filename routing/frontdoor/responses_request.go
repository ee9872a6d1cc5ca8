package frontdoor

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/tidwall/gjson"

	"switchyard/routing/adapter"
	"switchyard/routing/config"
	"switchyard/routing/wire"
)

// The OpenAI Responses API front door (POST /v1/responses): its request,
// parsed into a typed view and translated into the canonical chat request
// every adapter serves. The gateway is stateless: nothing is stored, so
// store: true, previous_response_id, conversation, background and item
// references are refused with a 400 that says so, and an omitted store
// (OpenAI's default is true) is served as not stored.

// ResponsesRequest is a caller's Responses API request: the body as
// received (passed almost untouched to upstreams that speak the Responses
// API) and, for every other upstream, its translation into the canonical
// chat-completions request (Chat, whose Body is the chat JSON the
// translation wrote). ParseResponsesRequest builds it; nothing mutates it
// after.
type ResponsesRequest struct {
	Body   []byte
	Model  string
	Stream bool
	// Chat is the request translated into chat completions, for upstreams
	// that do not speak the Responses API. Its Set and Unknown are those of
	// the translation; NativeOnly names what it could not carry.
	Chat *adapter.ChatRequest
	// NativeOnly is the first field (a path such as "tools[1].type") that
	// only a Responses upstream can carry: a built-in tool, an input item
	// or part the chat translation has no place for, include of something
	// the gateway cannot produce, or a field it does not know. "" when the
	// translation carries the whole request.
	NativeOnly string
	// Unknown lists the top-level fields the parser does not know, in body
	// order.
	Unknown []string
	// Echo is what a Responses object repeats of the request.
	Echo ResponsesEcho
}

// ResponsesEcho is the request's settings that a Responses object repeats,
// as raw JSON (nil when the request did not set them).
type ResponsesEcho struct {
	Instructions      json.RawMessage
	MaxOutputTokens   json.RawMessage
	Metadata          json.RawMessage
	ParallelToolCalls json.RawMessage
	ReasoningEffort   string
	ReasoningSummary  json.RawMessage
	Temperature       json.RawMessage
	TopP              json.RawMessage
	ToolChoice        json.RawMessage
	Tools             json.RawMessage
	TextFormat        json.RawMessage
	Verbosity         string
	User              json.RawMessage
	SafetyIdentifier  json.RawMessage
	PromptCacheKey    json.RawMessage
	ServiceTier       json.RawMessage
	TopLogprobs       json.RawMessage
}

// CodeStateless is the RequestError code of a request that needs stored
// state (store: true, previous_response_id, conversation, background, an
// item reference): the gateway stores nothing.
const CodeStateless = "stateless_gateway"

// msgStateless ends every stateless refusal: what to do instead.
const msgStateless = "this gateway is stateless and stores no responses; send the whole conversation in input (with store false or omitted)"

func statelessErr(param, what string) *RequestError {
	return &RequestError{Param: param, Code: CodeStateless, Message: what + ": " + msgStateless}
}

// responsesState is one parse in progress: the request, the chat body being
// written and the first native-only field.
type responsesState struct {
	body []byte
	r    *ResponsesRequest
	chat map[string]any // the chat request's top-level members
	msgs []map[string]any
}

// nativeOnly records a field only a Responses upstream can carry.
func (st *responsesState) nativeOnly(param string) {
	if st.r.NativeOnly == "" {
		st.r.NativeOnly = param
	}
}

// ParseResponsesRequest validates a caller's /v1/responses body, builds its
// typed view and translates it into the canonical chat request. Every
// failure is a *RequestError wrapping ErrInvalidRequest; it never panics,
// whatever the input. The returned request keeps body as its Body: the
// caller must not modify body afterwards.
func ParseResponsesRequest(body []byte) (*ResponsesRequest, error) {
	if err := parseCheckBody(body); err != nil {
		return nil, err
	}
	r := &ResponsesRequest{Body: body}
	st := &responsesState{body: body, r: r, chat: map[string]any{}}
	var (
		seen     = map[string]bool{}
		err      *RequestError
		hasModel bool
		input    gjson.Result
		instr    string
	)
	gjson.Parse(wire.View(body)).ForEach(func(k, v gjson.Result) bool {
		name := k.Str
		if !responsesKnown[name] {
			r.Unknown = append(r.Unknown, strings.Clone(name))
			st.nativeOnly(name) // forwarded to Responses upstreams, never translated
			return true
		}
		if seen[name] {
			err = parseErrorf(name, "duplicate field %q", name)
			return false
		}
		seen[name] = true
		null := v.Type == gjson.Null
		switch name {
		case "model":
			var s string
			if s, err = parseModel(v); err == nil {
				r.Model, hasModel = strings.Clone(s), true
			}
		case "input":
			input = v
		case "instructions":
			if instr, err = parseOptString("instructions", v); err == nil && instr != "" {
				r.Echo.Instructions = parseRaw(body, v)
			}
		case "stream":
			r.Stream, err = parseOptBool("stream", v)
		case "stream_options":
			err = st.streamOptions(v)
		case "tools":
			err = st.tools(v)
		case "tool_choice":
			err = st.toolChoice(v)
		case "parallel_tool_calls":
			var b bool
			if b, err = parseOptBool(name, v); err == nil && !null {
				r.Echo.ParallelToolCalls = parseRaw(body, v)
				if !b {
					st.chat["parallel_tool_calls"] = false
				}
			}
		case "text":
			err = st.text(v)
		case "reasoning":
			err = st.reasoning(v)
		case "max_output_tokens":
			var n *int
			if n, err = parseOptInt(name, v, 1); err == nil && n != nil {
				r.Echo.MaxOutputTokens = parseRaw(body, v)
				st.chat["max_completion_tokens"] = *n
			}
		case "temperature", "top_p":
			hi := 2.0
			if name == "top_p" {
				hi = 1
			}
			var f *float64
			if f, err = parseOptFloat(name, v, 0, hi); err == nil && f != nil {
				st.chat[name] = *f
				if name == "temperature" {
					r.Echo.Temperature = parseRaw(body, v)
				} else {
					r.Echo.TopP = parseRaw(body, v)
				}
			}
		case "metadata":
			if !null && !v.IsObject() {
				err = parseWant(name, v, "an object")
			} else if !null && len(strings.TrimSpace(v.Raw)) > 2 {
				// The gateway echoes metadata in the response object (all it
				// does on a stateless request); it is not sent upstream.
				r.Echo.Metadata = parseRaw(body, v)
			}
		case "store":
			var b bool
			if b, err = parseOptBool(name, v); err == nil && b {
				err = statelessErr("store", "store: true asks OpenAI to keep the response for later retrieval")
			}
		case "previous_response_id":
			var s string
			if s, err = parseOptString(name, v); err == nil && s != "" {
				err = statelessErr(name, "previous_response_id refers to a stored response")
			}
		case "conversation":
			if !null {
				err = statelessErr(name, "conversation refers to a stored conversation")
			}
		case "background":
			var b bool
			if b, err = parseOptBool(name, v); err == nil && b {
				err = statelessErr(name, "background: true runs the response asynchronously and stores it for polling")
			}
		case "include":
			err = st.include(v)
		case "truncation":
			var s string
			if s, err = parseOptString(name, v); err == nil && s != "" && s != "disabled" {
				st.nativeOnly(name)
			}
		case "top_logprobs":
			var n *int
			if n, err = parseOptInt(name, v, 0); err == nil && n != nil && *n > 0 {
				r.Echo.TopLogprobs = parseRaw(body, v)
				st.nativeOnly(name) // log probabilities are not translated back
			}
		case "max_tool_calls":
			var n *int
			if n, err = parseOptInt(name, v, 1); err == nil && n != nil {
				st.nativeOnly(name) // a limit on built-in tool calls
			}
		case "prompt":
			if !null {
				st.nativeOnly(name) // a prompt template stored at OpenAI
			}
		case "user", "safety_identifier", "prompt_cache_key", "prompt_cache_retention", "service_tier":
			var s string
			if s, err = parseOptString(name, v); err == nil && s != "" {
				if name == "service_tier" && (s == "auto" || s == "default") {
					break
				}
				if name != "prompt_cache_key" && name != "prompt_cache_retention" {
					// The prompt cache hints steer OpenAI's cache only and
					// change no answer: a translation does not send them
					// (Codex-style clients always set prompt_cache_key).
					st.chat[name] = s
				}
				raw := json.RawMessage(parseRaw(body, v))
				switch name {
				case "user":
					r.Echo.User = raw
				case "safety_identifier":
					r.Echo.SafetyIdentifier = raw
				case "prompt_cache_key":
					r.Echo.PromptCacheKey = raw
				case "service_tier":
					r.Echo.ServiceTier = raw
				}
			}
		}
		return err == nil
	})
	if err != nil {
		return nil, err
	}
	if !hasModel || strings.TrimSpace(r.Model) == "" {
		return nil, parseErrorf("model", "model is required")
	}
	if instr != "" {
		st.msgs = append(st.msgs, map[string]any{"role": "system", "content": instr})
	}
	if err = st.input(input); err != nil {
		return nil, err
	}
	if err = st.buildChat(); err != nil {
		return nil, err
	}
	return r, nil
}

// responsesKnown are the top-level fields of the Responses API create
// request this parser reads.
var responsesKnown = map[string]bool{
	"model": true, "input": true, "instructions": true, "stream": true, "stream_options": true,
	"tools": true, "tool_choice": true, "parallel_tool_calls": true, "text": true, "reasoning": true,
	"max_output_tokens": true, "max_tool_calls": true, "temperature": true, "top_p": true,
	"top_logprobs": true, "metadata": true, "store": true, "previous_response_id": true,
	"conversation": true, "background": true, "include": true, "truncation": true, "user": true,
	"safety_identifier": true, "prompt_cache_key": true, "prompt_cache_retention": true,
	"service_tier": true, "prompt": true,
}

// buildChat writes the chat-completions body of the translation and parses
// it into the canonical request, so every adapter reads it as it reads a
// chat caller's.
func (st *responsesState) buildChat() *RequestError {
	r := st.r
	st.chat["model"] = r.Model
	st.chat["messages"] = st.msgs
	if r.Stream {
		st.chat["stream"] = true
	}
	b, err := json.Marshal(st.chat)
	if err != nil {
		return parseErrorf("", "could not translate the request: %v", err)
	}
	chat, perr := ParseChatRequest(b)
	if perr != nil {
		// The translation is built from checked parts; a refusal here is a
		// request the chat side cannot take (e.g. an assistant message
		// without content), told in chat terms.
		var re *RequestError
		if errors.As(perr, &re) {
			return &RequestError{Param: responsesParam(re.Param), Message: re.Message, Code: re.Code}
		}
		return parseErrorf("", "%v", perr)
	}
	chat.Native = &adapter.Native{Door: adapter.DoorResponses, Body: r.Body, Protocol: config.ProtocolOpenAI, PassesIf: responsesNative,
		Refuse: r.NativeOnly, Params: responsesParams, View: r}
	r.Chat = chat
	return nil
}

// responsesParam names a chat field of the translation by the Responses
// field it came from.
func responsesParam(chatParam string) string {
	head, rest, _ := strings.Cut(chatParam, ".")
	name := head
	if i := strings.IndexByte(head, '['); i >= 0 {
		name = head[:i]
	}
	if f, ok := responsesParams[name]; ok {
		return f
	}
	if rest != "" {
		return head + "." + rest
	}
	return head
}

func (st *responsesState) streamOptions(v gjson.Result) *RequestError {
	if v.Type == gjson.Null {
		return nil
	}
	if !v.IsObject() {
		return parseWant("stream_options", v, "an object")
	}
	var err *RequestError
	v.ForEach(func(k, f gjson.Result) bool {
		if k.Str == "include_obfuscation" {
			_, err = parseOptBool("stream_options.include_obfuscation", f)
		}
		return err == nil
	})
	return err
}

// tools reads the tool list: function tools translate into chat tools;
// every other type (web_search, file_search, mcp, custom, …) is a built-in
// tool only a Responses upstream runs.
func (st *responsesState) tools(v gjson.Result) *RequestError {
	if v.Type == gjson.Null {
		return nil
	}
	if !v.IsArray() {
		return parseWant("tools", v, "an array")
	}
	var (
		out []map[string]any
		err *RequestError
		i   int
	)
	v.ForEach(func(_, tv gjson.Result) bool {
		p := func(f string) string { return fmt.Sprintf("tools[%d]%s", i, f) }
		defer func() { i++ }()
		if !tv.IsObject() {
			err = parseWant(p(""), tv, "an object")
			return false
		}
		typ := tv.Get("type")
		if typ.Type != gjson.String || typ.Str == "" {
			err = parseWant(p(".type"), typ, `a tool type such as "function"`)
			return false
		}
		if typ.Str != "function" {
			st.nativeOnly(p(".type"))
			return true
		}
		fn := map[string]any{}
		var name string
		tv.ForEach(func(k, f gjson.Result) bool {
			switch k.Str {
			case "name":
				name, err = parseString(p(".name"), f)
				fn["name"] = name
			case "description":
				var s string
				if s, err = parseOptString(p(".description"), f); err == nil && s != "" {
					fn["description"] = s
				}
			case "parameters":
				switch {
				case f.Type == gjson.Null:
				case f.IsObject():
					fn["parameters"] = json.RawMessage(parseRaw(st.body, f))
				default:
					err = parseWant(p(".parameters"), f, "a JSON Schema object")
				}
			case "strict":
				if f.Type != gjson.Null {
					var b bool
					if b, err = parseOptBool(p(".strict"), f); err == nil {
						fn["strict"] = b
					}
				}
			}
			return err == nil
		})
		if err != nil {
			return false
		}
		if name == "" {
			err = parseErrorf(p(".name"), "a function name is required")
			return false
		}
		out = append(out, map[string]any{"type": "function", "function": fn})
		return true
	})
	if err != nil {
		return err
	}
	if i > 0 {
		st.r.Echo.Tools = parseRaw(st.body, v)
	}
	if len(out) > 0 {
		st.chat["tools"] = out
	}
	return nil
}

// toolChoice reads tool_choice: "auto" | "none" | "required" and a named
// function translate; a built-in tool, allowed_tools, mcp or custom choice
// is native-only.
func (st *responsesState) toolChoice(v gjson.Result) *RequestError {
	switch {
	case v.Type == gjson.Null:
		return nil
	case v.Type == gjson.String:
		switch v.Str {
		case "auto", "none", "required":
			st.r.Echo.ToolChoice = parseRaw(st.body, v)
			if v.Str != "auto" {
				st.chat["tool_choice"] = v.Str
			}
			return nil
		}
		return parseErrorf("tool_choice", `must be "auto", "none", "required" or an object, got %q`, parseShow(v.Str))
	case !v.IsObject():
		return parseWant("tool_choice", v, `"auto", "none", "required" or an object`)
	}
	st.r.Echo.ToolChoice = parseRaw(st.body, v)
	typ := v.Get("type")
	if typ.Type != gjson.String {
		return parseWant("tool_choice.type", typ, "a string")
	}
	if typ.Str != "function" {
		st.nativeOnly("tool_choice")
		return nil
	}
	name := v.Get("name")
	if name.Type != gjson.String || name.Str == "" {
		return parseErrorf("tool_choice.name", "a function name is required")
	}
	st.chat["tool_choice"] = map[string]any{"type": "function", "function": map[string]any{"name": name.Str}}
	return nil
}

// text reads text.format (text, json_object, json_schema → response_format)
// and text.verbosity.
func (st *responsesState) text(v gjson.Result) *RequestError {
	if v.Type == gjson.Null {
		return nil
	}
	if !v.IsObject() {
		return parseWant("text", v, "an object")
	}
	var err *RequestError
	v.ForEach(func(k, f gjson.Result) bool {
		switch k.Str {
		case "format":
			err = st.textFormat(f)
		case "verbosity":
			var s string
			if s, err = parseOptString("text.verbosity", f); err == nil && s != "" {
				st.r.Echo.Verbosity = parseIntern(s)
				if s != "medium" {
					st.chat["verbosity"] = s
				}
			}
		}
		return err == nil
	})
	return err
}

func (st *responsesState) textFormat(f gjson.Result) *RequestError {
	if f.Type == gjson.Null {
		return nil
	}
	if !f.IsObject() {
		return parseWant("text.format", f, "an object")
	}
	typ := f.Get("type")
	if typ.Type != gjson.String {
		return parseWant("text.format.type", typ, `"text", "json_object" or "json_schema"`)
	}
	st.r.Echo.TextFormat = parseRaw(st.body, f)
	switch typ.Str {
	case adapter.FormatText:
		return nil
	case adapter.FormatJSONObject:
		st.chat["response_format"] = map[string]any{"type": adapter.FormatJSONObject}
	case adapter.FormatJSONSchema:
		schema := f.Get("schema")
		if !schema.IsObject() {
			return parseWant("text.format.schema", schema, "a JSON Schema object")
		}
		name := f.Get("name")
		if name.Type != gjson.String || name.Str == "" {
			return parseErrorf("text.format.name", "a schema name is required")
		}
		js := map[string]any{"name": name.Str, "schema": json.RawMessage(parseRaw(st.body, schema))}
		if d := f.Get("description"); d.Type == gjson.String {
			js["description"] = d.Str
		}
		if s := f.Get("strict"); s.Type == gjson.True || s.Type == gjson.False {
			js["strict"] = s.Type == gjson.True
		}
		st.chat["response_format"] = map[string]any{"type": adapter.FormatJSONSchema, "json_schema": js}
	default:
		return parseErrorf("text.format.type", `must be "text", "json_object" or "json_schema", got %q`, parseShow(typ.Str))
	}
	return nil
}

// reasoning reads reasoning.effort (→ reasoning_effort, which routes to the
// deep tier) and reasoning.summary.
func (st *responsesState) reasoning(v gjson.Result) *RequestError {
	if v.Type == gjson.Null {
		return nil
	}
	if !v.IsObject() {
		return parseWant("reasoning", v, "an object")
	}
	var err *RequestError
	v.ForEach(func(k, f gjson.Result) bool {
		switch k.Str {
		case "effort":
			var s string
			if s, err = parseOptString("reasoning.effort", f); err == nil && s != "" {
				st.r.Echo.ReasoningEffort = parseIntern(s)
				st.chat["reasoning_effort"] = s
			}
		case "summary", "generate_summary":
			var s string
			if s, err = parseOptString("reasoning."+k.Str, f); err == nil && s != "" {
				st.r.Echo.ReasoningSummary = parseRaw(st.body, f)
			}
		}
		return err == nil
	})
	return err
}

// include reads include: reasoning.encrypted_content is accepted (a
// translated upstream has no encrypted reasoning to give); everything else
// asks for output only a Responses upstream produces.
func (st *responsesState) include(v gjson.Result) *RequestError {
	if v.Type == gjson.Null {
		return nil
	}
	if !v.IsArray() {
		return parseWant("include", v, "an array of strings")
	}
	var (
		err *RequestError
		i   int
	)
	v.ForEach(func(_, s gjson.Result) bool {
		if s.Type != gjson.String {
			err = parseWant(fmt.Sprintf("include[%d]", i), s, "a string")
			return false
		}
		if s.Str != "reasoning.encrypted_content" {
			st.nativeOnly(fmt.Sprintf("include[%d]", i))
		}
		i++
		return true
	})
	return err
}

// input reads input: a string (one user message) or a list of items.
func (st *responsesState) input(v gjson.Result) *RequestError {
	switch {
	case !v.Exists() || v.Type == gjson.Null:
		return parseErrorf("input", "input is required")
	case v.Type == gjson.String:
		if v.Str == "" {
			return parseErrorf("input", "input must not be empty")
		}
		st.msgs = append(st.msgs, map[string]any{"role": "user", "content": v.Str})
		return nil
	case !v.IsArray():
		return parseWant("input", v, "a string or an array of input items")
	}
	var (
		err   *RequestError
		i     int
		items int
	)
	v.ForEach(func(_, item gjson.Result) bool {
		err = st.item(i, item)
		i++
		items++
		return err == nil
	})
	if err != nil {
		return err
	}
	if items == 0 {
		return parseErrorf("input", "input must not be an empty array")
	}
	if len(st.msgs) == 0 {
		// Only items the translation does not re-send (reasoning) or
		// native-only ones: the chat request needs something to answer.
		st.nativeOnly("input")
		st.msgs = append(st.msgs, map[string]any{"role": "user", "content": ""})
	}
	return nil
}

// item translates one input item into chat messages.
func (st *responsesState) item(i int, v gjson.Result) *RequestError {
	p := func(f string) string { return fmt.Sprintf("input[%d]%s", i, f) }
	if !v.IsObject() {
		return parseWant(p(""), v, "an input item object")
	}
	typ, role := v.Get("type"), v.Get("role")
	kind := "message"
	if typ.Exists() && typ.Type != gjson.Null {
		if typ.Type != gjson.String {
			return parseWant(p(".type"), typ, "a string")
		}
		kind = typ.Str
	} else if !role.Exists() {
		return parseErrorf(p(".type"), "an input item needs a type or a role")
	}
	switch kind {
	case "message":
		return st.message(i, v)
	case "function_call":
		callID, name, args := v.Get("call_id"), v.Get("name"), v.Get("arguments")
		if callID.Type != gjson.String || callID.Str == "" {
			return parseErrorf(p(".call_id"), "a function call needs its call_id")
		}
		if name.Type != gjson.String || name.Str == "" {
			return parseErrorf(p(".name"), "a function call needs its name")
		}
		if args.Type != gjson.String {
			return parseWant(p(".arguments"), args, "a string of JSON")
		}
		call := map[string]any{"id": callID.Str, "type": "function", "function": map[string]any{"name": name.Str, "arguments": args.Str}}
		// Parallel calls of one turn belong to one assistant message.
		if n := len(st.msgs); n > 0 && st.msgs[n-1]["role"] == "assistant" {
			last := st.msgs[n-1]
			calls, _ := last["tool_calls"].([]map[string]any)
			last["tool_calls"] = append(calls, call)
			return nil
		}
		st.msgs = append(st.msgs, map[string]any{"role": "assistant", "content": nil, "tool_calls": []map[string]any{call}})
		return nil
	case "function_call_output":
		callID, out := v.Get("call_id"), v.Get("output")
		if callID.Type != gjson.String || callID.Str == "" {
			return parseErrorf(p(".call_id"), "a function call output needs the call_id it answers")
		}
		text, err := st.callOutput(p(".output"), out)
		if err != nil {
			return err
		}
		st.msgs = append(st.msgs, map[string]any{"role": "tool", "tool_call_id": callID.Str, "content": text})
		return nil
	case "reasoning":
		// The model's earlier reasoning: sent back to a Responses upstream
		// as it came; chat completions has no place for it, so a translated
		// upstream does not see it (README: translation table).
		return nil
	case "item_reference":
		return statelessErr(p(".type"), "an item_reference refers to a stored item")
	}
	st.nativeOnly(p(".type"))
	return nil
}

// message translates a message item (easy or full form).
func (st *responsesState) message(i int, v gjson.Result) *RequestError {
	p := func(f string) string { return fmt.Sprintf("input[%d]%s", i, f) }
	role := v.Get("role")
	if role.Type != gjson.String {
		return parseWant(p(".role"), role, `"user", "assistant", "system" or "developer"`)
	}
	r, ok := parseRole(role.Str)
	if !ok || r == "tool" {
		return parseErrorf(p(".role"), `unknown role %q (want user, assistant, system or developer)`, parseShow(role.Str))
	}
	content := v.Get("content")
	switch {
	case content.Type == gjson.String:
		st.addMessage(r, content.Str, nil)
		return nil
	case !content.IsArray():
		return parseWant(p(".content"), content, "a string or an array of content parts")
	}
	var (
		text  strings.Builder
		parts []map[string]any
		err   *RequestError
		j     int
		image bool
	)
	content.ForEach(func(_, part gjson.Result) bool {
		pp := func(f string) string { return fmt.Sprintf("input[%d].content[%d]%s", i, j, f) }
		defer func() { j++ }()
		if !part.IsObject() {
			err = parseWant(pp(""), part, "a content part object")
			return false
		}
		typ := part.Get("type")
		if typ.Type != gjson.String {
			err = parseWant(pp(".type"), typ, `a content part type such as "input_text"`)
			return false
		}
		switch typ.Str {
		case "input_text", "output_text", "text":
			t := part.Get("text")
			if t.Type != gjson.String {
				err = parseWant(pp(".text"), t, "a string")
				return false
			}
			text.WriteString(t.Str)
			parts = append(parts, map[string]any{"type": "text", "text": t.Str})
		case "refusal":
			t := part.Get("refusal")
			if t.Type != gjson.String {
				err = parseWant(pp(".refusal"), t, "a string")
				return false
			}
			text.WriteString(t.Str)
			parts = append(parts, map[string]any{"type": "text", "text": t.Str})
		case "input_image":
			if r != "user" {
				err = parseErrorf(pp(".type"), "input_image parts are only allowed in user messages")
				return false
			}
			url := part.Get("image_url")
			if url.Type != gjson.String || url.Str == "" {
				// An uploaded file (file_id) lives at OpenAI.
				st.nativeOnly(pp(".file_id"))
				return true
			}
			img := map[string]any{"url": url.Str}
			if d := part.Get("detail"); d.Type == gjson.String && d.Str != "" {
				img["detail"] = d.Str
			}
			parts = append(parts, map[string]any{"type": "image_url", "image_url": img})
			image = true
		default: // input_file, input_audio, …
			st.nativeOnly(pp(".type"))
		}
		return true
	})
	if err != nil {
		return err
	}
	if image {
		st.addMessage(r, "", parts)
		return nil
	}
	st.addMessage(r, text.String(), nil)
	return nil
}

// addMessage appends a chat message with text content, or with parts when
// it carries an image.
func (st *responsesState) addMessage(role, text string, parts []map[string]any) {
	m := map[string]any{"role": role}
	if parts != nil {
		m["content"] = parts
	} else {
		m["content"] = text
	}
	st.msgs = append(st.msgs, m)
}

// callOutput reads a function call's output: a string, or a list of parts
// whose text is joined (an image in a tool result is native-only).
func (st *responsesState) callOutput(param string, v gjson.Result) (string, *RequestError) {
	switch {
	case v.Type == gjson.String:
		return v.Str, nil
	case !v.IsArray():
		return "", parseWant(param, v, "a string or an array of content parts")
	}
	var (
		text strings.Builder
		err  *RequestError
		j    int
	)
	v.ForEach(func(_, part gjson.Result) bool {
		pp := fmt.Sprintf("%s[%d]", param, j)
		j++
		typ := part.Get("type")
		switch {
		case !part.IsObject():
			err = parseWant(pp, part, "a content part object")
		case typ.Str == "input_text" || typ.Str == "output_text":
			t := part.Get("text")
			if t.Type != gjson.String {
				err = parseWant(pp+".text", t, "a string")
			} else {
				text.WriteString(t.Str)
			}
		default:
			st.nativeOnly(pp + ".type")
		}
		return err == nil
	})
	return text.String(), err
}
