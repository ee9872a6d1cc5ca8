package frontdoor

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"switchyard/routing/adapter"
	"switchyard/routing/wire"
	"unicode/utf8"

	"github.com/tidwall/gjson"
)

// ErrInvalidRequest is wrapped by every error ParseChatRequest and
// ParseEmbeddingRequest return: the caller sent something we refuse before
// any routing, rate limiting or vendor call happens.
var ErrInvalidRequest = errors.New("invalid request")

// RequestError is a refused caller request. Param is the JSON path of the
// offending field in OpenAI's notation ("messages[2].content", "tools[0].function.name"),
// empty when the body as a whole is at fault.
type RequestError struct {
	Param   string
	Message string
	// Code is the error's machine code when it has its own (CodeModelTooLong);
	// empty means the generic invalid_request.
	Code string
}

func (e *RequestError) Error() string {
	if e.Param == "" {
		return "invalid request: " + e.Message
	}
	return "invalid request: " + e.Param + ": " + e.Message
}

func (e *RequestError) Unwrap() error { return ErrInvalidRequest }

func parseErrorf(param, format string, args ...any) *RequestError {
	return &RequestError{Param: param, Message: fmt.Sprintf(format, args...)}
}

// MaxModelLen bounds the model field in bytes: it is echoed in errors and
// stored in the call log, and no tier or logic model code is longer.
const MaxModelLen = 256

// CodeModelTooLong is the RequestError code of a model over MaxModelLen.
const CodeModelTooLong = "model_too_long"

// parseModel reads the model field, refusing one over MaxModelLen without
// echoing it.
func parseModel(v gjson.Result) (string, *RequestError) {
	s, err := parseString("model", v)
	if err == nil && len(s) > MaxModelLen {
		err = &RequestError{Param: "model", Code: CodeModelTooLong, Message: fmt.Sprintf("model must be at most %d bytes, got %d", MaxModelLen, len(s))}
	}
	return s, err
}

// shownLen bounds a caller's value quoted in an error message.
const shownLen = 64

// parseShow returns s for an error message: at most shownLen bytes (cut at
// a character boundary), marked when cut.
func parseShow(s string) string {
	if len(s) <= shownLen {
		return s
	}
	cut := shownLen
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…[truncated]"
}

// EmbeddingRequest is a caller's OpenAI embeddings request: the body as
// received and a typed view of it.
type EmbeddingRequest struct {
	Body           []byte
	Model          string
	Inputs         []string // a single string input is normalized to one element
	Dimensions     int      // 0 when not asked for
	EncodingFormat string   // "float" | "base64" | ""
	InputType      string   // our extension: "query" | "document" | "", selects the logic model's prefix
	User           string
}

// parseCheckBody refuses what no JSON parser should see: an empty body,
// invalid UTF-8 and malformed or non-object JSON.
func parseCheckBody(body []byte) *RequestError {
	if len(strings.TrimSpace(wire.View(body))) == 0 {
		return parseErrorf("", "request body is empty")
	}
	if !utf8.Valid(body) {
		off := 0
		for off < len(body) {
			r, n := utf8.DecodeRune(body[off:])
			if r == utf8.RuneError && n <= 1 {
				break
			}
			off += n
		}
		return parseErrorf("", "request body is not valid UTF-8 (at byte %d)", off)
	}
	// The body is untrusted: validJSON bounds its nesting before gjson's
	// recursive validator sees it.
	if !wire.ValidJSON(body) {
		var v json.RawMessage
		var se *json.SyntaxError
		if err := json.Unmarshal(body, &v); errors.As(err, &se) {
			return parseErrorf("", "malformed JSON at byte %d: %s", se.Offset, se.Error())
		}
		return parseErrorf("", "malformed JSON")
	}
	if strings.TrimLeft(wire.View(body), " \t\r\n")[0] != '{' {
		return parseErrorf("", "request body must be a JSON object")
	}
	return nil
}

// parseTypeName names a JSON value's type for error messages.
func parseTypeName(v gjson.Result) string {
	switch v.Type {
	case gjson.Null:
		return "null"
	case gjson.True, gjson.False:
		return "a boolean"
	case gjson.Number:
		return "a number"
	case gjson.String:
		return "a string"
	}
	if v.IsArray() {
		return "an array"
	}
	return "an object"
}

func parseWant(param string, v gjson.Result, want string) *RequestError {
	return parseErrorf(param, "must be %s, got %s", want, parseTypeName(v))
}

// parseRaw returns v's raw JSON as a slice of body when it lies inside it,
// else a copy.
func parseRaw(body []byte, v gjson.Result) []byte {
	if v.Index > 0 && v.Index+len(v.Raw) <= len(body) {
		b := body[v.Index : v.Index+len(v.Raw) : v.Index+len(v.Raw)]
		if string(b) == v.Raw {
			return b
		}
	}
	return []byte(v.Raw)
}

func parseString(param string, v gjson.Result) (string, *RequestError) {
	if v.Type != gjson.String {
		return "", parseWant(param, v, "a string")
	}
	return v.Str, nil
}

// parseOptString accepts a string or null (as absent).
func parseOptString(param string, v gjson.Result) (string, *RequestError) {
	if v.Type == gjson.Null {
		return "", nil
	}
	return parseString(param, v)
}

func parseOptBool(param string, v gjson.Result) (bool, *RequestError) {
	switch v.Type {
	case gjson.Null, gjson.False:
		return false, nil
	case gjson.True:
		return true, nil
	}
	return false, parseWant(param, v, "a boolean")
}

// parseInt accepts an integral JSON number within [lo, math.MaxInt32].
func parseInt(param string, v gjson.Result, lo int) (int, *RequestError) {
	if v.Type != gjson.Number {
		return 0, parseWant(param, v, "an integer")
	}
	f := v.Num
	if f != math.Trunc(f) || math.IsInf(f, 0) || math.IsNaN(f) {
		return 0, parseErrorf(param, "must be an integer, got %s", parseShow(v.Raw))
	}
	if f < float64(lo) || f > math.MaxInt32 {
		return 0, parseErrorf(param, "must be between %d and %d, got %s", lo, math.MaxInt32, parseShow(v.Raw))
	}
	return int(f), nil
}

// parseOptInt is parseInt that treats null as absent.
func parseOptInt(param string, v gjson.Result, lo int) (*int, *RequestError) {
	if v.Type == gjson.Null {
		return nil, nil
	}
	n, err := parseInt(param, v, lo)
	if err != nil {
		return nil, err
	}
	return &n, nil
}

func parseOptFloat(param string, v gjson.Result, lo, hi float64) (*float64, *RequestError) {
	switch v.Type {
	case gjson.Null:
		return nil, nil
	case gjson.Number:
	default:
		return nil, parseWant(param, v, "a number")
	}
	f := v.Num
	if math.IsNaN(f) || f < lo || f > hi {
		return nil, parseErrorf(param, "must be between %g and %g, got %s", lo, hi, parseShow(v.Raw))
	}
	return &f, nil
}

// parseRole interns the role so the typed view does not keep body alive
// through it.
func parseRole(s string) (string, bool) {
	switch s {
	case "system":
		return "system", true
	case "developer":
		return "developer", true
	case "user":
		return "user", true
	case "assistant":
		return "assistant", true
	case "tool":
		return "tool", true
	}
	return "", false
}

// ParseChatRequest validates a caller's /v1/chat/completions body and builds
// its typed view; the messages are checked whole but their view is built
// on first use (adapter.ChatRequest.Conversation), so a body forwarded as
// sent costs nothing per message. Every failure is a *RequestError
// wrapping ErrInvalidRequest; it never panics, whatever the input.
//
// Every top-level field of ChatFields is type-checked and, when it asks for
// something other than OpenAI's default, recorded in Set; other fields are
// listed in Unknown. A duplicate of a known field is refused: we and the
// upstream could otherwise read different values, and the model we route on
// must be the model we replace.
//
// The returned request keeps body as its Body and its strings may share
// body's memory: the caller must not modify body afterwards.
func ParseChatRequest(body []byte) (*adapter.ChatRequest, error) {
	return parseChat(body, nil)
}

// parseChat is ParseChatRequest; a door that checked its translation's
// messages itself passes a body whose messages are empty and messages, the
// check of the messages it read (in the place checkMessages has).
func parseChat(body []byte, messages func(*adapter.ChatRequest) *RequestError) (*adapter.ChatRequest, error) {
	if err := parseCheckBody(body); err != nil {
		return nil, err
	}
	r := &adapter.ChatRequest{Body: body, N: 1, Format: adapter.ResponseFormat{Type: adapter.FormatText}}
	var (
		c    chatTop
		seen adapter.FieldSet
		err  *RequestError
	)
	gjson.Parse(wire.View(body)).ForEach(func(k, v gjson.Result) bool {
		i := adapter.FieldIndex(k.Str)
		if i < 0 {
			r.Unknown = append(r.Unknown, strings.Clone(k.Str))
			return true // unknown fields pass through to OpenAI upstreams untouched
		}
		bit := adapter.FieldSet(1) << i
		if seen&bit != 0 {
			err = parseErrorf(k.Str, "duplicate field %q", k.Str)
			return false
		}
		seen |= bit
		var set bool
		if set, err = c.field(body, r, k.Str, v); err == nil && set {
			r.Set |= bit
		}
		return err == nil
	})
	if err != nil {
		return nil, err
	}
	if err = c.finish(body, r, messages); err != nil {
		return nil, err
	}
	return r, nil
}

// chatTop is what the pass over a chat request's top-level members keeps
// for the checks that need all of them.
type chatTop struct {
	messages                 gjson.Result
	hasModel, streamOptions  bool
	maxTokens, maxCompletion *int
}

// finish checks what needs every member read: the model, the stream
// options, the token bound and the messages.
func (c *chatTop) finish(body []byte, r *adapter.ChatRequest, messages func(*adapter.ChatRequest) *RequestError) *RequestError {
	if !c.hasModel || strings.TrimSpace(r.Model) == "" {
		return parseErrorf("model", "model is required")
	}
	if c.streamOptions && !r.Stream {
		return parseErrorf("stream_options", "stream_options is only allowed when stream is true")
	}
	r.MaxTokens = c.maxTokens
	if c.maxCompletion != nil {
		r.MaxTokens = c.maxCompletion
	}
	if !c.messages.Exists() {
		return parseErrorf("messages", "messages is required")
	}
	if messages != nil {
		return messages(r)
	}
	return checkMessages(body, c.messages, r)
}

// field reads one known top-level member into r; set reports that it asks
// for something other than OpenAI's default.
func (c *chatTop) field(body []byte, r *adapter.ChatRequest, name string, v gjson.Result) (set bool, err *RequestError) {
	set = v.Type != gjson.Null // asks for something; refined below
	switch name {
	case "model":
		var s string
		if s, err = parseModel(v); err == nil {
			r.Model, c.hasModel = strings.Clone(s), true
		}
	case "messages":
		c.messages = v
	case "stream":
		r.Stream, err = parseOptBool("stream", v)
		set = r.Stream
	case "stream_options":
		c.streamOptions, err = parseStreamOptions(r, v)
	case "max_tokens":
		c.maxTokens, err = parseOptInt("max_tokens", v, 1)
	case "max_completion_tokens":
		c.maxCompletion, err = parseOptInt("max_completion_tokens", v, 1)
	case "temperature":
		r.Temperature, err = parseOptFloat("temperature", v, 0, 2)
	case "top_p":
		r.TopP, err = parseOptFloat("top_p", v, 0, 1)
	case "stop":
		r.Stop, err = parseStop(v)
		set = len(r.Stop) > 0
	case "tools":
		r.Tools, err = parseTools(body, v, r)
		set = len(r.Tools) > 0
	case "tool_choice":
		r.ToolChoice, err = parseToolChoice(body, v)
	case "reasoning_effort":
		var s string
		if s, err = parseOptString("reasoning_effort", v); err == nil {
			r.ReasoningEffort = parseIntern(s)
		}
		set = r.ReasoningEffort != ""
	case "thinking":
		r.Thinking, err = parseThinking(v)
	case "response_format":
		if set {
			if !v.IsObject() {
				err = parseWant("response_format", v, "an object")
			} else {
				r.ResponseFormat = parseRaw(body, v)
				r.Format, err = parseResponseFormat(body, v)
				set = r.Format.Type != adapter.FormatText
				switch r.Format.Type {
				case adapter.FormatText, adapter.FormatJSONObject, adapter.FormatJSONSchema:
				default:
					r.CannotTranslate("response_format.type")
				}
			}
		}
	case "user":
		var s string
		if s, err = parseOptString("user", v); err == nil {
			r.User = strings.Clone(s)
		}
		set = r.User != ""
	case "safety_identifier":
		var s string
		if s, err = parseOptString("safety_identifier", v); err == nil {
			r.SafetyIdentifier = strings.Clone(s)
		}
		set = r.SafetyIdentifier != ""
	default:
		return chatOption(r, name, v)
	}
	return set, err
}

// chatOption reads a top-level member other than the conversation, the
// stream, the output's shape and the caller's identity: choices, seed,
// penalties, log probabilities, modalities and vendor switches.
func chatOption(r *adapter.ChatRequest, name string, v gjson.Result) (set bool, err *RequestError) {
	set = v.Type != gjson.Null
	switch name {
	case "n":
		var n *int
		if n, err = parseOptInt("n", v, 1); err == nil && n != nil {
			if *n > 128 {
				err = parseErrorf("n", "must be between 1 and 128, got %d", *n)
			}
			r.N = *n
		}
		set = r.N > 1
	case "seed":
		r.Seed, err = parseSeed(v)
	case "frequency_penalty":
		r.FrequencyPenalty, err = parseOptFloat("frequency_penalty", v, -2, 2)
		set = r.FrequencyPenalty != nil && *r.FrequencyPenalty != 0
	case "presence_penalty":
		r.PresencePenalty, err = parseOptFloat("presence_penalty", v, -2, 2)
		set = r.PresencePenalty != nil && *r.PresencePenalty != 0
	case "parallel_tool_calls":
		if set {
			var b bool
			if b, err = parseOptBool("parallel_tool_calls", v); err == nil {
				r.ParallelToolCalls = &b
			}
			set = !b // true is the default
		}
	case "logprobs", "store":
		var b bool
		b, err = parseOptBool(name, v)
		set = b
	case "top_logprobs":
		var n *int
		n, err = parseOptInt("top_logprobs", v, 0)
		set = n != nil && *n > 0
	case "logit_bias", "metadata":
		if set && !v.IsObject() {
			err = parseWant(name, v, "an object")
		}
		set = set && len(strings.TrimSpace(v.Raw)) > 2 // {} asks for nothing
	case "audio", "prediction", "web_search_options":
		if set && !v.IsObject() {
			err = parseWant(name, v, "an object")
		}
	case "modalities":
		set, err = parseModalities(v)
	case "functions":
		if set && !v.IsArray() {
			err = parseWant("functions", v, "an array")
		}
		set = set && len(v.Array()) > 0
	case "function_call":
		if set && v.Type != gjson.String && !v.IsObject() {
			err = parseWant("function_call", v, `"none", "auto" or an object`)
		}
	case "top_k":
		r.TopK, err = parseOptInt("top_k", v, 0)
		set = r.TopK != nil
	case "service_tier", "verbosity", "prompt_cache_key", "prompt_cache_retention":
		var s string
		s, err = parseOptString(name, v)
		switch {
		case name == "service_tier":
			set = s != "" && s != "auto" && s != "default"
		case name == "verbosity":
			set = s != "" && s != "medium"
		default:
			set = s != ""
		}
	}
	return set, err
}

// parseSeed accepts an integral number that a float64 holds exactly.
func parseSeed(v gjson.Result) (*int64, *RequestError) {
	if v.Type == gjson.Null {
		return nil, nil
	}
	if v.Type != gjson.Number {
		return nil, parseWant("seed", v, "an integer")
	}
	if f := v.Num; f != math.Trunc(f) || math.Abs(f) > 1<<53 {
		return nil, parseErrorf("seed", "must be an integer between -2^53 and 2^53, got %s", parseShow(v.Raw))
	}
	n := int64(v.Num)
	return &n, nil
}

// parseModalities reads modalities; only ["text"] (or nothing) is the
// default.
func parseModalities(v gjson.Result) (bool, *RequestError) {
	if v.Type == gjson.Null {
		return false, nil
	}
	if !v.IsArray() {
		return false, parseWant("modalities", v, "an array of strings")
	}
	set := false
	var err *RequestError
	i := 0
	v.ForEach(func(_, m gjson.Result) bool {
		if m.Type != gjson.String {
			err = parseWant(fmt.Sprintf("modalities[%d]", i), m, "a string")
			return false
		}
		if m.Str != "text" {
			set = true
		}
		i++
		return true
	})
	return set, err
}

// parseResponseFormat reads response_format's type and, for json_schema,
// its name, schema and strict flag.
func parseResponseFormat(body []byte, v gjson.Result) (adapter.ResponseFormat, *RequestError) {
	var (
		f       adapter.ResponseFormat
		typ, js gjson.Result
		err     *RequestError
	)
	v.ForEach(func(k, x gjson.Result) bool {
		switch k.Str {
		case "type":
			typ = x
		case "json_schema":
			js = x
		}
		return true
	})
	if typ.Type != gjson.String {
		return f, parseWant("response_format.type", typ, `"text", "json_object" or "json_schema"`)
	}
	switch typ.Str {
	case adapter.FormatText:
		f.Type = adapter.FormatText
		return f, nil
	case adapter.FormatJSONObject:
		f.Type = adapter.FormatJSONObject
		return f, nil
	case adapter.FormatJSONSchema:
		f.Type = adapter.FormatJSONSchema
	default:
		// A format newer than this build: OpenAI-protocol vendors get it
		// as sent; a translation has no way to hold the answer to it.
		f.Type = strings.Clone(typ.Str)
		return f, nil
	}
	if !js.IsObject() {
		return f, parseWant("response_format.json_schema", js, "an object")
	}
	js.ForEach(func(k, x gjson.Result) bool {
		switch k.Str {
		case "name":
			var s string
			if s, err = parseString("response_format.json_schema.name", x); err == nil {
				f.Name = strings.Clone(s)
			}
		case "schema":
			switch {
			case x.Type == gjson.Null:
			case x.IsObject():
				f.Schema = parseRaw(body, x)
			default:
				err = parseWant("response_format.json_schema.schema", x, "a JSON Schema object")
			}
		case "strict":
			f.Strict, err = parseOptBool("response_format.json_schema.strict", x)
		}
		return err == nil
	})
	if err == nil && f.Name == "" {
		err = parseErrorf("response_format.json_schema.name", "a schema name is required")
	}
	return f, err
}

// parseIntern returns a constant for the usual small enum values, else a
// copy, so the typed view does not pin body through them.
func parseIntern(s string) string {
	switch s {
	case "":
		return ""
	case "none":
		return "none"
	case "minimal":
		return "minimal"
	case "low":
		return "low"
	case "medium":
		return "medium"
	case "high":
		return "high"
	case "enabled":
		return "enabled"
	case "disabled":
		return "disabled"
	case "auto":
		return "auto"
	}
	return strings.Clone(s)
}

// parseStreamOptions reads stream_options; it reports whether one was given
// (not null).
func parseStreamOptions(r *adapter.ChatRequest, v gjson.Result) (bool, *RequestError) {
	if v.Type == gjson.Null {
		return false, nil
	}
	if !v.IsObject() {
		return false, parseWant("stream_options", v, "an object")
	}
	var err *RequestError
	v.ForEach(func(k, f gjson.Result) bool {
		if k.Str == "include_usage" {
			r.IncludeUsage, err = parseOptBool("stream_options.include_usage", f)
		}
		return err == nil
	})
	return true, err
}

func parseStop(v gjson.Result) ([]string, *RequestError) {
	switch {
	case v.Type == gjson.Null:
		return nil, nil
	case v.Type == gjson.String:
		return []string{v.Str}, nil
	case !v.IsArray():
		return nil, parseWant("stop", v, "a string or an array of strings")
	}
	var (
		stop []string
		err  *RequestError
		i    int
	)
	v.ForEach(func(_, s gjson.Result) bool {
		if s.Type != gjson.String {
			err = parseWant(fmt.Sprintf("stop[%d]", i), s, "a string")
			return false
		}
		stop = append(stop, s.Str)
		i++
		return true
	})
	return stop, err
}

func parseToolChoice(body []byte, v gjson.Result) (json.RawMessage, *RequestError) {
	switch {
	case v.Type == gjson.Null:
		return nil, nil
	case v.Type == gjson.String:
		switch v.Str {
		case "auto", "none", "required":
			return parseRaw(body, v), nil
		}
		return nil, parseErrorf("tool_choice", `must be "auto", "none", "required" or an object, got %q`, parseShow(v.Str))
	case v.IsObject():
		return parseRaw(body, v), nil
	}
	return nil, parseWant("tool_choice", v, `"auto", "none", "required" or an object`)
}

func parseThinking(v gjson.Result) (*adapter.Thinking, *RequestError) {
	if v.Type == gjson.Null {
		return nil, nil
	}
	if !v.IsObject() {
		return nil, parseWant("thinking", v, "an object")
	}
	th := &adapter.Thinking{}
	var err *RequestError
	v.ForEach(func(k, f gjson.Result) bool {
		switch k.Str {
		case "type":
			var s string
			if s, err = parseOptString("thinking.type", f); err == nil {
				th.Type = parseIntern(s)
			}
		case "budget_tokens":
			var n *int
			if n, err = parseOptInt("thinking.budget_tokens", f, 0); err == nil && n != nil {
				th.BudgetTokens = *n
			}
		}
		return err == nil
	})
	if err != nil {
		return nil, err
	}
	return th, nil
}

func parseTools(body []byte, v gjson.Result, r *adapter.ChatRequest) ([]adapter.Tool, *RequestError) {
	if v.Type == gjson.Null {
		return nil, nil
	}
	if !v.IsArray() {
		return nil, parseWant("tools", v, "an array")
	}
	var (
		tools []adapter.Tool
		err   *RequestError
		i     int
	)
	v.ForEach(func(_, tv gjson.Result) bool {
		var t adapter.Tool
		var ok bool
		t, ok, err = parseTool(body, i, tv, r)
		if ok {
			tools = append(tools, t)
		}
		i++
		return err == nil
	})
	if err != nil {
		return nil, err
	}
	return tools, nil
}

// parseTool reads a function tool (ok); a tool of another type (custom,
// or one newer than this build) passes to OpenAI-protocol vendors as sent
// and cannot be translated for the others.
func parseTool(body []byte, i int, v gjson.Result, r *adapter.ChatRequest) (t adapter.Tool, ok bool, err *RequestError) {
	p := func(f string) string { return fmt.Sprintf("tools[%d]%s", i, f) }
	if !v.IsObject() {
		return t, false, parseWant(p(""), v, "an object")
	}
	var typ, fn gjson.Result
	v.ForEach(func(k, f gjson.Result) bool {
		switch k.Str {
		case "type":
			typ = f
		case "function":
			fn = f
		}
		return true
	})
	if typ.Type != gjson.String {
		return t, false, parseWant(p(".type"), typ, `"function"`)
	}
	if typ.Str != "function" {
		r.CannotTranslate(p(".type"))
		return t, false, nil
	}
	if !fn.IsObject() {
		return t, false, parseWant(p(".function"), fn, "an object")
	}
	hasName := false
	fn.ForEach(func(k, f gjson.Result) bool {
		switch k.Str {
		case "name":
			t.Name, err = parseString(p(".function.name"), f)
			hasName = err == nil && f.Str != ""
		case "description":
			t.Description, err = parseOptString(p(".function.description"), f)
		case "parameters":
			switch {
			case f.Type == gjson.Null:
			case f.IsObject():
				t.Parameters = parseRaw(body, f)
			default:
				err = parseWant(p(".function.parameters"), f, "a JSON Schema object")
			}
		case "strict":
			if f.Type != gjson.Null {
				var b bool
				if b, err = parseOptBool(p(".function.strict"), f); err == nil {
					t.Strict = &b
				}
			}
		}
		return err == nil
	})
	if err != nil {
		return t, false, err
	}
	if !hasName {
		return t, false, parseErrorf(p(".function.name"), "a function name is required")
	}
	return t, true, nil
}

// eagerMessagesBytes is the body size up to which the typed view is built
// at once: for the common small request the view costs less than the
// bookkeeping of deferring it.
const eagerMessagesBytes = 64 << 10

// checkMessages checks every message and, in a body over
// eagerMessagesBytes, defers the typed view
// (adapter.ChatRequest.Defer): a request forwarded as sent never builds it.
// What a translation cannot carry is recorded now; the deferred build
// reads the same checked messages again.
func checkMessages(body []byte, v gjson.Result, r *adapter.ChatRequest) *RequestError {
	if !v.IsArray() {
		return parseWant("messages", v, "an array")
	}
	if len(body) <= eagerMessagesBytes {
		msgs, err := parseMessages(body, v, r)
		r.Messages = msgs
		return err
	}
	var (
		m             adapter.Message
		slot          [1]adapter.ContentPart
		err           *RequestError
		i             int
		vision, tools bool
	)
	v.ForEach(func(_, mv gjson.Result) bool {
		m = adapter.Message{}
		if err = parseMessage(body, i, mv, &m, slot[:], r); err != nil {
			return false
		}
		i++
		tools = tools || len(m.ToolCalls) > 0 || m.Role == "tool"
		for _, p := range m.Content {
			vision = vision || p.Type == "image_url"
		}
		return true
	})
	if err != nil {
		return err
	}
	if i == 0 {
		return parseErrorf("messages", "messages must not be empty")
	}
	r.Defer(func() []adapter.Message {
		msgs, _ := parseMessages(body, v, &adapter.ChatRequest{})
		return msgs
	}, vision, tools)
	return nil
}

// parseMessages builds the typed view of checked messages.
func parseMessages(body []byte, v gjson.Result, r *adapter.ChatRequest) ([]adapter.Message, *RequestError) {
	if !v.IsArray() {
		return nil, parseWant("messages", v, "an array")
	}
	n := 0
	v.ForEach(func(_, _ gjson.Result) bool { n++; return true })
	if n == 0 {
		return nil, parseErrorf("messages", "messages must not be empty")
	}
	msgs := make([]adapter.Message, n)
	// String content, the common case, becomes one text part; give every
	// message its slot in one backing array instead of one allocation each.
	slots := make([]adapter.ContentPart, n)
	var err *RequestError
	i := 0
	v.ForEach(func(_, mv gjson.Result) bool {
		err = parseMessage(body, i, mv, &msgs[i], slots[i:i+1:i+1], r)
		i++
		return err == nil
	})
	if err != nil {
		return nil, err
	}
	return msgs, nil
}

func parseMessage(body []byte, i int, v gjson.Result, m *adapter.Message, slot []adapter.ContentPart, r *adapter.ChatRequest) *RequestError {
	p := func(f string) string { return fmt.Sprintf("messages[%d]%s", i, f) }
	if !v.IsObject() {
		return parseWant(p(""), v, "an object")
	}
	var (
		role, content, toolCalls gjson.Result
		err                      *RequestError
	)
	v.ForEach(func(k, f gjson.Result) bool {
		switch k.Str {
		case "role":
			role = f
		case "content":
			content = f
		case "tool_calls":
			toolCalls = f
		case "name":
			m.Name, err = parseOptString(p(".name"), f)
		case "tool_call_id":
			m.ToolCallID, err = parseOptString(p(".tool_call_id"), f)
		}
		return err == nil
	})
	if err != nil {
		return err
	}
	if !role.Exists() {
		return parseErrorf(p(".role"), "role is required")
	}
	if role.Type != gjson.String {
		return parseWant(p(".role"), role, "a string")
	}
	if role.Str == "" {
		return parseErrorf(p(".role"), "role must not be empty")
	}
	var ok bool
	if m.Role, ok = parseRole(role.Str); !ok {
		// A role newer than this build: OpenAI-protocol vendors get it as
		// sent; a translation has no place for it.
		m.Role = strings.Clone(role.Str)
		r.CannotTranslate(p(".role"))
	}
	switch {
	case !content.Exists() || content.Type == gjson.Null:
	case content.Type == gjson.String:
		slot[0] = adapter.ContentPart{Type: "text", Text: content.Str}
		m.Content = slot
	case content.IsArray():
		if m.Content, err = parseParts(i, m.Role, content, r); err != nil {
			return err
		}
	default:
		return parseWant(p(".content"), content, "a string, an array of content parts or null")
	}
	if toolCalls.Exists() && toolCalls.Type != gjson.Null {
		if m.Role != "assistant" {
			return parseErrorf(p(".tool_calls"), "tool_calls are only allowed on assistant messages")
		}
		if m.ToolCalls, err = parseToolCalls(i, toolCalls, r); err != nil {
			return err
		}
	}
	if m.Content == nil && len(m.ToolCalls) == 0 {
		if m.Role == "assistant" {
			return parseErrorf(p(".content"), "an assistant message needs content or tool_calls")
		}
		return parseErrorf(p(".content"), "content is required")
	}
	if m.Role == "tool" && m.ToolCallID == "" {
		return parseErrorf(p(".tool_call_id"), "a tool message needs the tool_call_id it answers")
	}
	return nil
}

func parseParts(i int, role string, v gjson.Result, r *adapter.ChatRequest) ([]adapter.ContentPart, *RequestError) {
	var (
		parts []adapter.ContentPart
		err   *RequestError
		j     int
	)
	v.ForEach(func(_, pv gjson.Result) bool {
		var cp adapter.ContentPart
		cp, err = parsePart(i, j, role, pv, r)
		parts = append(parts, cp)
		j++
		return err == nil
	})
	if err != nil {
		return nil, err
	}
	if len(parts) == 0 {
		return nil, parseErrorf(fmt.Sprintf("messages[%d].content", i), "content must not be an empty array")
	}
	return parts, nil
}

func parsePart(i, j int, role string, v gjson.Result, r *adapter.ChatRequest) (adapter.ContentPart, *RequestError) {
	var cp adapter.ContentPart
	p := func(f string) string { return fmt.Sprintf("messages[%d].content[%d]%s", i, j, f) }
	if !v.IsObject() {
		return cp, parseWant(p(""), v, "a content part object")
	}
	var typ, text, image gjson.Result
	v.ForEach(func(k, f gjson.Result) bool {
		switch k.Str {
		case "type":
			typ = f
		case "text":
			text = f
		case "image_url":
			image = f
		}
		return true
	})
	if typ.Type != gjson.String {
		return cp, parseWant(p(".type"), typ, `"text" or "image_url"`)
	}
	switch typ.Str {
	case "text":
		if text.Type != gjson.String {
			return cp, parseWant(p(".text"), text, "a string")
		}
		return adapter.ContentPart{Type: "text", Text: text.Str}, nil
	case "image_url":
		if role != "user" {
			return cp, parseErrorf(p(".type"), "image_url parts are only allowed in user messages")
		}
		if !image.IsObject() {
			return cp, parseWant(p(".image_url"), image, `an object {"url": ...}`)
		}
		cp.Type = "image_url"
		var err *RequestError
		image.ForEach(func(k, f gjson.Result) bool {
			switch k.Str {
			case "url":
				cp.ImageURL, err = parseString(p(".image_url.url"), f)
			case "detail":
				var s string
				if s, err = parseOptString(p(".image_url.detail"), f); err == nil {
					cp.Detail = parseIntern(s)
				}
			}
			return err == nil
		})
		if err != nil {
			return cp, err
		}
		if cp.ImageURL == "" {
			return cp, parseErrorf(p(".image_url.url"), "an image URL is required")
		}
		return cp, nil
	}
	// A part newer than this build (audio, files, …): OpenAI-protocol
	// vendors get it as sent; a translation has no place for it.
	r.CannotTranslate(p(".type"))
	return adapter.ContentPart{Type: strings.Clone(typ.Str)}, nil
}

func parseToolCalls(i int, v gjson.Result, r *adapter.ChatRequest) ([]adapter.ToolCall, *RequestError) {
	if !v.IsArray() {
		return nil, parseWant(fmt.Sprintf("messages[%d].tool_calls", i), v, "an array")
	}
	var (
		calls []adapter.ToolCall
		err   *RequestError
		j     int
	)
	v.ForEach(func(_, cv gjson.Result) bool {
		var tc adapter.ToolCall
		tc, err = parseToolCall(i, j, cv, r)
		calls = append(calls, tc)
		j++
		return err == nil
	})
	if err != nil {
		return nil, err
	}
	return calls, nil
}

func parseToolCall(i, j int, v gjson.Result, r *adapter.ChatRequest) (adapter.ToolCall, *RequestError) {
	var tc adapter.ToolCall
	p := func(f string) string { return fmt.Sprintf("messages[%d].tool_calls[%d]%s", i, j, f) }
	if !v.IsObject() {
		return tc, parseWant(p(""), v, "an object")
	}
	var (
		fn    gjson.Result
		err   *RequestError
		other bool
	)
	v.ForEach(func(k, f gjson.Result) bool {
		switch k.Str {
		case "id":
			tc.ID, err = parseString(p(".id"), f)
		case "type":
			var s string
			if s, err = parseString(p(".type"), f); err == nil && s != "function" {
				other = true
				r.CannotTranslate(p(".type")) // a custom tool's call: OpenAI's own
			}
		case "function":
			fn = f
		}
		return err == nil
	})
	if err != nil {
		return tc, err
	}
	if tc.ID == "" {
		return tc, parseErrorf(p(".id"), "a tool call id is required")
	}
	if other {
		return tc, nil
	}
	if !fn.IsObject() {
		return tc, parseWant(p(".function"), fn, "an object")
	}
	fn.ForEach(func(k, f gjson.Result) bool {
		switch k.Str {
		case "name":
			tc.Name, err = parseString(p(".function.name"), f)
		case "arguments":
			tc.Arguments, err = parseString(p(".function.arguments"), f)
		}
		return err == nil
	})
	if err != nil {
		return tc, err
	}
	if tc.Name == "" {
		return tc, parseErrorf(p(".function.name"), "a function name is required")
	}
	return tc, nil
}

// ParseEmbeddingRequest validates a caller's /v1/embeddings body. input may
// be a string or an array of strings; token arrays are refused. Every failure
// is a *RequestError wrapping ErrInvalidRequest.
//
// The returned request keeps body as its Body and its Inputs may share
// body's memory: the caller must not modify body afterwards.
func ParseEmbeddingRequest(body []byte) (*EmbeddingRequest, error) {
	if err := parseCheckBody(body); err != nil {
		return nil, err
	}
	r := &EmbeddingRequest{Body: body}
	var (
		seen     = map[string]bool{}
		err      *RequestError
		hasModel bool
		input    gjson.Result
	)
	gjson.Parse(wire.View(body)).ForEach(func(k, v gjson.Result) bool {
		switch k.Str {
		case "model", "input", "dimensions", "encoding_format", "input_type", "user":
			if seen[k.Str] {
				err = parseErrorf(k.Str, "duplicate field %q", k.Str)
				return false
			}
			seen[k.Str] = true
		}
		switch k.Str {
		case "model":
			var s string
			if s, err = parseModel(v); err == nil {
				r.Model, hasModel = strings.Clone(s), true
			}
		case "input":
			input = v
		case "dimensions":
			var n *int
			if n, err = parseOptInt("dimensions", v, 1); err == nil && n != nil {
				r.Dimensions = *n
			}
		case "encoding_format":
			var s string
			if s, err = parseOptString("encoding_format", v); err == nil {
				switch s {
				case "", "float", "base64":
					r.EncodingFormat = parseInternFormat(s)
				default:
					err = parseErrorf("encoding_format", `must be "float" or "base64", got %q`, parseShow(s))
				}
			}
		case "input_type":
			var s string
			if s, err = parseOptString("input_type", v); err == nil {
				switch s {
				case "":
				case "query":
					r.InputType = "query"
				case "document":
					r.InputType = "document"
				default:
					err = parseErrorf("input_type", `must be "query" or "document", got %q`, parseShow(s))
				}
			}
		case "user":
			var s string
			if s, err = parseOptString("user", v); err == nil {
				r.User = strings.Clone(s)
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
	if r.Inputs, err = parseInputs(input); err != nil {
		return nil, err
	}
	return r, nil
}

func parseInternFormat(s string) string {
	switch s {
	case "float":
		return "float"
	case "base64":
		return "base64"
	}
	return ""
}

const parseTokenInput = "token-array input is not supported; send the text as a string"

func parseInputs(v gjson.Result) ([]string, *RequestError) {
	switch {
	case !v.Exists():
		return nil, parseErrorf("input", "input is required")
	case v.Type == gjson.String:
		if v.Str == "" {
			return nil, parseErrorf("input", "input must not be empty")
		}
		return []string{v.Str}, nil
	case !v.IsArray():
		return nil, parseWant("input", v, "a string or an array of strings")
	}
	var (
		in  []string
		err *RequestError
		i   int
	)
	v.ForEach(func(_, s gjson.Result) bool {
		switch {
		case s.Type == gjson.String:
			if s.Str == "" {
				err = parseErrorf(fmt.Sprintf("input[%d]", i), "input must not be empty")
			}
			in = append(in, s.Str)
		case s.Type == gjson.Number || s.IsArray():
			err = parseErrorf(fmt.Sprintf("input[%d]", i), parseTokenInput)
		default:
			err = parseWant(fmt.Sprintf("input[%d]", i), s, "a string")
		}
		i++
		return err == nil
	})
	if err != nil {
		return nil, err
	}
	if len(in) == 0 {
		return nil, parseErrorf("input", "input must not be an empty array")
	}
	return in, nil
}
