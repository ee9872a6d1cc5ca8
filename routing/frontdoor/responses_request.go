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
	// that do not speak the Responses API; its Drops and Untranslatable say
	// what the translation leaves out and what it cannot carry.
	Chat *adapter.ChatRequest
	// Unknown lists the top-level fields the parser does not know, in body
	// order: a Responses upstream gets them, a translation drops them.
	Unknown []string
	// Tools maps the function names of the translation back to the tools
	// the caller declared: a function inside a namespace (flattened to
	// one name), or a custom tool (a function taking its input as a
	// string).
	Tools map[string]ToolName
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
// written, and what the translation drops or cannot carry.
type responsesState struct {
	body           []byte
	r              *ResponsesRequest
	chat           map[string]any // the chat request's few settings
	msgs           chatWriter     // its conversation, written item by item
	hasModel       bool
	inputV         gjson.Result // input, read once every member is
	instr          string       // instructions
	drops          []string
	untranslatable string
}

// nativeOnly records the first part only a Responses upstream can carry.
func (st *responsesState) nativeOnly(param string) {
	if st.untranslatable == "" {
		st.untranslatable = param
	}
}

// drop records a part the translation leaves out (array positions as []).
func (st *responsesState) drop(path string) {
	name := dropName(path)
	for _, d := range st.drops {
		if d == name {
			return
		}
	}
	st.drops = append(st.drops, name)
}

// ParseResponsesRequest validates a caller's /v1/responses body, builds its
// typed view and translates it into the canonical chat request. Every
// failure is a *RequestError wrapping ErrInvalidRequest; it never panics,
// whatever the input. The returned request keeps body as its Body: the
// caller must not modify body afterwards.
func ParseResponsesRequest(body []byte) (*ResponsesRequest, error) {
	st, err := translateResponses(body, newChatChecker())
	if err != nil {
		return nil, err
	}
	if err := st.buildChat(); err != nil {
		return nil, err
	}
	return st.r, nil
}

// appendResponsesChat appends the chat messages array of a checked
// Responses body to dst, the translation buildChat deferred.
func appendResponsesChat(dst, body []byte) []byte {
	st, err := translateResponses(body, appendingChat(dst))
	if err != nil {
		return append(dst, "[]"...)
	}
	return st.msgs.closeArray()
}

// translateResponses reads a Responses body, its conversation into msgs
// (written, or only checked) and its other chat members into chat.
func translateResponses(body []byte, msgs chatWriter) (*responsesState, *RequestError) {
	if err := parseCheckBody(body); err != nil {
		return nil, err
	}
	r := &ResponsesRequest{Body: body}
	st := &responsesState{body: body, r: r, chat: map[string]any{}, msgs: msgs}
	var (
		seen = map[string]bool{}
		err  *RequestError
	)
	gjson.Parse(wire.View(body)).ForEach(func(k, v gjson.Result) bool {
		name := k.Str
		if !responsesKnown[name] {
			r.Unknown = append(r.Unknown, strings.Clone(name))
			if v.Type != gjson.Null {
				st.drop(name) // client_metadata, fields newer than this build
			}
			return true
		}
		if seen[name] {
			err = parseErrorf(name, "duplicate field %q", name)
			return false
		}
		seen[name] = true
		err = st.field(name, v)
		return err == nil
	})
	if err != nil {
		return nil, err
	}
	if !st.hasModel || strings.TrimSpace(r.Model) == "" {
		return nil, parseErrorf("model", "model is required")
	}
	if st.instr != "" {
		st.msgs.text("system", st.instr)
	}
	if err = st.input(st.inputV); err != nil {
		return nil, err
	}
	return st, nil
}

// field reads one known top-level member: the conversation, the stream,
// the tools and the output's shape here, the others in option.
func (st *responsesState) field(name string, v gjson.Result) (err *RequestError) {
	r := st.r
	null := v.Type == gjson.Null
	switch name {
	case "model":
		var s string
		if s, err = parseModel(v); err == nil {
			r.Model, st.hasModel = strings.Clone(s), true
		}
	case "input":
		st.inputV = v
	case "instructions":
		if st.instr, err = parseOptString("instructions", v); err == nil && st.instr != "" {
			r.Echo.Instructions = parseRaw(st.body, v)
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
			r.Echo.ParallelToolCalls = parseRaw(st.body, v)
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
			r.Echo.MaxOutputTokens = parseRaw(st.body, v)
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
				r.Echo.Temperature = parseRaw(st.body, v)
			} else {
				r.Echo.TopP = parseRaw(st.body, v)
			}
		}
	default:
		return st.option(name, v)
	}
	return err
}

// option reads a top-level member the translation mostly refuses, drops
// or only echoes: stored state, metadata, limits and identity.
func (st *responsesState) option(name string, v gjson.Result) (err *RequestError) {
	r := st.r
	null := v.Type == gjson.Null
	switch name {
	case "metadata":
		if !null && !v.IsObject() {
			err = parseWant(name, v, "an object")
		} else if !null && len(strings.TrimSpace(v.Raw)) > 2 {
			// The gateway echoes metadata in the response object (all it
			// does on a stateless request); it is not sent upstream.
			r.Echo.Metadata = parseRaw(st.body, v)
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
			r.Echo.TopLogprobs = parseRaw(st.body, v)
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
			st.chat[name] = s // the chat field's own decision per protocol
			raw := json.RawMessage(parseRaw(st.body, v))
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
	return err
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

// settings are the chat body's members other than messages.
func (st *responsesState) settings() map[string]any {
	st.chat["model"] = st.r.Model
	if st.r.Stream {
		st.chat["stream"] = true
	}
	return st.chat
}

// buildChat parses the checked translation into the canonical request, so
// every adapter reads it as it reads a chat caller's. The chat parser
// reads the settings; the messages were checked as it would read them, and
// their chat body and typed view are built on first use (a request passed
// natively never reads either): appendResponsesChat writes the translation
// again.
func (st *responsesState) buildChat() *RequestError {
	r := st.r
	b, err := st.msgs.finish(st.settings())
	if err != nil {
		return parseErrorf("", "could not translate the request: %v", err)
	}
	body, msgs := st.body, st.msgs
	chat, perr := parseChat(b, func(c *adapter.ChatRequest) *RequestError {
		return msgs.deferChat(c, b, func(dst []byte) []byte { return appendResponsesChat(dst, body) })
	})
	if perr != nil {
		// The translation is built from checked parts; a refusal here is a
		// request the chat side cannot take (e.g. an assistant message
		// without content), told in chat terms.
		return responsesRefusal(perr)
	}
	chat.Native = &adapter.Native{Door: adapter.DoorResponses, Body: r.Body, Protocol: config.ProtocolOpenAI, PassesIf: responsesNative,
		Params: responsesParams, View: r}
	chat.Drops, chat.Untranslatable = st.drops, st.untranslatable
	r.Chat = chat
	return nil
}

// responsesRefusal is the chat parser's refusal of the translation named
// by the Responses field it came from.
func responsesRefusal(err error) *RequestError {
	var re *RequestError
	if errors.As(err, &re) {
		return &RequestError{Param: responsesParam(re.Param), Message: re.Message, Code: re.Code}
	}
	return parseErrorf("", "%v", err)
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
		if s.Str == "reasoning.encrypted_content" {
			st.drop("include (reasoning.encrypted_content)") // a translated upstream has no encrypted reasoning to give
		} else {
			st.nativeOnly(fmt.Sprintf("include[%d]", i))
		}
		i++
		return true
	})
	return err
}
