package frontdoor

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/tidwall/gjson"

	"switchyard/routing/adapter"
	"switchyard/routing/config"
	"switchyard/routing/wire"
)

// The Anthropic Messages front door (POST /v1/messages): its request
// parsed into the canonical ChatRequest. The caller's body is kept whole
// for Anthropic-protocol deployments (native pass-through: nothing is
// judged, fields, roles and block types this build does not know pass);
// for the others it is translated into an OpenAI chat body (turn by turn,
// messages_chat.go, never a tree of the document) that the chat parser
// reads like any chat-completions request, so the field policy, the router
// and the adapters treat both doors alike. Parsing checks the translation
// without writing it; the messages are written again from the caller's
// body each time an adapter reads them, the OpenAI adapter's straight into
// the body it sends (ChatRequest.DeferBody), so a translated request holds
// the caller's body and the one sent, never a third copy between. What
// the translation leaves out is recorded in the request's Drops, what it
// cannot carry in Untranslatable (MessagesPolicy, messages_policy.go, is
// the table of both).
//
// The gateway reads of the body only what it needs on every path: model,
// max_tokens, stream and the messages' shape (for the token estimate and
// the capabilities it routes on). What it refuses with a 400 is what no
// version of the API accepts: malformed JSON, a missing model or messages,
// a value of the wrong JSON type.
//
// Wire format: https://docs.anthropic.com/en/api/messages (request and
// content blocks), checked against anthropic-sdk-go v2.15.0's
// MessageNewParams and the requests Claude Code 2.1.328 sends.

// messagesParams names the Messages field a canonical OpenAI field comes
// from, for unsupported_parameter answers and dropped-field records.
var messagesParams = map[string]string{
	"stop":                  "stop_sequences",
	"user":                  "metadata.user_id",
	"parallel_tool_calls":   "tool_choice.disable_parallel_tool_use",
	"max_completion_tokens": "max_tokens",
	"response_format":       "output_config.format",
	"effort":                "output_config.effort",
	"web_search_options":    "tools[] (web_search)",
}

// messagesNative is the native side of a Messages request: every
// Anthropic-protocol deployment speaks it.
func messagesNative(body []byte) *adapter.Native {
	return &adapter.Native{Door: adapter.DoorMessages, Body: body, Protocol: config.ProtocolAnthropic, Params: messagesParams}
}

// ParseMessagesRequest validates a caller's POST /v1/messages body and
// returns the canonical request (Native set). Every failure is a
// *RequestError in the Messages notation; it never panics.
func ParseMessagesRequest(body []byte) (*adapter.ChatRequest, error) {
	return parseAnthropicMessages(body, true)
}

// ParseCountTokensRequest validates a POST /v1/messages/count_tokens body:
// a Messages request without max_tokens.
func ParseCountTokensRequest(body []byte) (*adapter.ChatRequest, error) {
	return parseAnthropicMessages(body, false)
}

// messagesTranslation is one Messages body being read: the OpenAI chat body
// being written (its conversation in chat, its settings in out), and what
// the translation drops or cannot carry.
type messagesTranslation struct {
	body           []byte
	chat           chatWriter
	out            chatSettings
	drops          []string
	untranslatable string
	effort         string
	adaptive       bool
	topK           *int
	webSearch      bool
}

// indexRE matches an array position in a path.
var indexRE = regexp.MustCompile(`\[\d+\]`)

// dropName is a path in the door's notation with its array positions as
// [], so a dropped field has one name however often it occurs.
func dropName(path string) string {
	if !strings.Contains(path, "[") {
		return path
	}
	return indexRE.ReplaceAllString(path, "[]")
}

// drop records a part the translation leaves out.
func (t *messagesTranslation) drop(path string) {
	name := dropName(path)
	for _, d := range t.drops {
		if d == name {
			return
		}
	}
	t.drops = append(t.drops, name)
}

// cannot records the first part only the Messages API carries.
func (t *messagesTranslation) cannot(path string) {
	if t.untranslatable == "" {
		t.untranslatable = path
	}
}

// messagesTop is what the first pass over the top-level members found.
type messagesTop struct {
	model, messages, system, tools, toolChoice gjson.Result
	maxTokens                                  *int
	sawMax, sawModel, stream                   bool
}

func parseAnthropicMessages(body []byte, needMax bool) (*adapter.ChatRequest, error) {
	t, err := translateMessages(body, needMax, newChatChecker())
	if err != nil {
		return nil, err
	}
	return t.canonical(needMax)
}

// appendMessagesChat appends the OpenAI messages array of a checked
// Messages body to dst, the translation canonical deferred.
func appendMessagesChat(dst, body []byte, needMax bool) []byte {
	t, err := translateMessages(body, needMax, appendingChat(dst))
	if err != nil {
		return append(dst, "[]"...)
	}
	return t.chat.closeArray()
}

// translateMessages reads a Messages body, its conversation into chat
// (written, or only checked) and its settings into out.
func translateMessages(body []byte, needMax bool, chat chatWriter) (*messagesTranslation, error) {
	if err := parseCheckBody(body); err != nil {
		return nil, err
	}
	t := &messagesTranslation{body: body}
	top, err := t.topLevel()
	if err != nil {
		return nil, err
	}
	m, merr := parseModel(top.model)
	switch {
	case !top.sawModel:
		return nil, parseErrorf("model", "model is required")
	case merr != nil:
		return nil, merr
	case strings.TrimSpace(m) == "":
		return nil, parseErrorf("model", "model is required")
	case needMax && (!top.sawMax || top.maxTokens == nil):
		return nil, parseErrorf("max_tokens", "max_tokens is required")
	case !top.messages.Exists():
		return nil, parseErrorf("messages", "messages is required")
	}
	t.chat = chat
	if err := t.conversation(top); err != nil {
		return nil, err
	}
	t.out.Model, t.out.Stream, t.out.MaxTokens = m, top.stream, top.maxTokens
	if top.tools.Exists() && top.tools.Type != gjson.Null {
		if err := t.tools(top.tools); err != nil {
			return nil, err
		}
	}
	if top.toolChoice.Exists() && top.toolChoice.Type != gjson.Null {
		if err := t.toolChoice(top.toolChoice); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// topLevel reads the top-level members: the ones the translation carries
// go to out, the others are dropped or marked untranslatable.
func (t *messagesTranslation) topLevel() (messagesTop, *RequestError) {
	var (
		top  messagesTop
		err  *RequestError
		seen = map[string]bool{}
	)
	gjson.Parse(wire.View(t.body)).ForEach(func(k, v gjson.Result) bool {
		if seen[k.Str] {
			err = parseErrorf(k.Str, "duplicate field %q", parseShow(k.Str))
			return false
		}
		seen[k.Str] = true
		switch k.Str {
		case "model":
			top.model, top.sawModel = v, true
		case "messages":
			top.messages = v
		case "max_tokens":
			top.sawMax = true
			top.maxTokens, err = parseOptInt("max_tokens", v, 1)
		case "system":
			top.system = v
		case "stream":
			top.stream, err = parseOptBool("stream", v)
		case "tools":
			top.tools = v
		case "tool_choice":
			top.toolChoice = v
		default:
			err = t.setting(k.Str, v)
		}
		return err == nil
	})
	return top, err
}

// setting reads a top-level member that is not part of the conversation.
func (t *messagesTranslation) setting(name string, v gjson.Result) *RequestError {
	var err *RequestError
	switch name {
	case "stop_sequences":
		var stop []string
		if stop, err = parseStop(v); err == nil && len(stop) > 0 {
			if v.Type == gjson.String {
				return parseWant("stop_sequences", v, "an array of strings")
			}
			t.out.Stop = stop
		}
	case "temperature", "top_p":
		var f *float64
		f, err = parseOptFloat(name, v, 0, 1)
		if name == "temperature" {
			t.out.Temperature = f
		} else {
			t.out.TopP = f
		}
	case "top_k":
		t.topK, err = parseOptInt("top_k", v, 0)
	case "thinking":
		err = t.thinking(v)
	case "output_config":
		err = t.outputConfig(v)
	case "metadata":
		if v.Type != gjson.Null && !v.IsObject() {
			return parseWant("metadata", v, "an object")
		}
		v.ForEach(func(k, f gjson.Result) bool {
			if f.Type != gjson.Null {
				t.drop("metadata." + k.Str) // end-user ids for the vendor's abuse checks
			}
			return true
		})
	case "service_tier":
		var s string
		if s, err = parseOptString("service_tier", v); err == nil && s != "" && s != "auto" {
			t.drop("service_tier")
		}
	case "container", "mcp_servers":
		if v.Type != gjson.Null {
			t.cannot(name) // hosted features with no counterpart elsewhere
		}
	default: // cache_control, context_management, fields newer than this build
		if v.Type != gjson.Null {
			t.drop(name)
		}
	}
	return err
}

// conversation translates system and messages into OpenAI chat messages.
func (t *messagesTranslation) conversation(top messagesTop) *RequestError {
	if top.system.Exists() && top.system.Type != gjson.Null {
		text, err := t.systemText("system", top.system)
		if err != nil {
			return err
		}
		if text != "" {
			t.chat.text("system", text)
		}
	}
	if err := t.messages(top.messages); err != nil {
		return err
	}
	if t.chat.count == 0 {
		// Nothing translatable (only refused or dropped blocks): the
		// canonical request still needs a turn; translation is refused
		// or sends an empty one.
		t.chat.text("user", "")
	}
	return nil
}

// canonical parses the checked translation into the canonical request
// and adds what the chat body does not carry. The chat parser reads the
// settings; the messages were checked as it would read them, and their
// chat body and typed view are built on first use (a request passed
// natively never reads either): appendMessagesChat writes the translation
// again.
func (t *messagesTranslation) canonical(needMax bool) (*adapter.ChatRequest, error) {
	settings, jerr := t.chat.finish(&t.out)
	if jerr != nil {
		return nil, parseErrorf("", "cannot read the request: %v", jerr)
	}
	body, chat := t.body, t.chat
	r, perr := parseChat(settings, func(r *adapter.ChatRequest) *RequestError {
		return chat.deferChat(r, settings, func(dst []byte) []byte { return appendMessagesChat(dst, body, needMax) })
	})
	if perr != nil {
		return nil, perr
	}
	r.Native = messagesNative(t.body)
	r.Drops, r.Untranslatable = t.drops, t.untranslatable
	r.Effort = t.effort
	if t.adaptive && r.Thinking == nil {
		r.Thinking = &adapter.Thinking{Type: adapter.ThinkingAdaptive}
	}
	if t.topK != nil {
		r.TopK, r.Set = t.topK, r.Set.With("top_k")
	}
	if t.webSearch {
		r.Set = r.Set.With("web_search_options")
	}
	return r, nil
}

// thinking reads thinking: enabled with a budget asks for reasoning (and
// routes to the deep tier); adaptive leaves it to the model.
func (t *messagesTranslation) thinking(v gjson.Result) *RequestError {
	if v.Type == gjson.Null {
		return nil
	}
	if !v.IsObject() {
		return parseWant("thinking", v, "an object")
	}
	typ := v.Get("type")
	if typ.Type != gjson.String {
		return parseWant("thinking.type", typ, `"enabled", "adaptive" or "disabled"`)
	}
	var budget *int
	var err *RequestError
	v.ForEach(func(k, f gjson.Result) bool {
		switch k.Str {
		case "type":
		case "budget_tokens":
			budget, err = parseOptInt("thinking.budget_tokens", f, 1)
		default: // display (summarized | omitted) and newer settings
			if f.Type != gjson.Null {
				t.drop("thinking." + k.Str)
			}
		}
		return err == nil
	})
	if err != nil {
		return err
	}
	switch typ.Str {
	case "disabled":
	case "enabled":
		if budget == nil {
			return parseErrorf("thinking.budget_tokens", "budget_tokens is required when thinking is enabled")
		}
		t.out.Thinking = &adapter.Thinking{Type: "enabled", BudgetTokens: *budget}
	default: // adaptive, and newer modes: reasoning at the model's discretion
		t.adaptive = true
	}
	return nil
}

// outputConfig reads output_config: effort (a hint to vendors that reason)
// and format (structured output, a JSON schema); other members are
// dropped.
func (t *messagesTranslation) outputConfig(v gjson.Result) *RequestError {
	if v.Type == gjson.Null {
		return nil
	}
	if !v.IsObject() {
		return parseWant("output_config", v, "an object")
	}
	var err *RequestError
	v.ForEach(func(k, f gjson.Result) bool {
		switch k.Str {
		case "effort":
			var s string
			if s, err = parseOptString("output_config.effort", f); err == nil && s != "" {
				t.effort = parseIntern(s)
			}
		case "format":
			err = t.outputFormat(f)
		default:
			if f.Type != gjson.Null {
				t.drop("output_config." + k.Str)
			}
		}
		return err == nil
	})
	return err
}

// outputFormat reads output_config.format: a JSON schema the answer must
// follow becomes response_format json_schema; another type cannot be
// carried.
func (t *messagesTranslation) outputFormat(f gjson.Result) *RequestError {
	if f.Type == gjson.Null {
		return nil
	}
	if !f.IsObject() {
		return parseWant("output_config.format", f, "an object")
	}
	if f.Get("type").Str != "json_schema" {
		t.cannot("output_config.format.type")
		return nil
	}
	schema := f.Get("schema")
	if !schema.IsObject() {
		return parseWant("output_config.format.schema", schema, "a JSON Schema object")
	}
	t.out.ResponseFormat = &chatFormat{Type: "json_schema", JSONSchema: chatJSONSchema{
		Name: "output", Strict: true, Schema: parseRaw(t.body, schema)}}
	return nil
}

// systemText reads a system prompt or turn content: a string or an array
// of text blocks, joined.
func (t *messagesTranslation) systemText(p string, v gjson.Result) (string, *RequestError) {
	if v.Type == gjson.String {
		return v.Str, nil
	}
	if !v.IsArray() {
		return "", parseWant(p, v, "a string or an array of text blocks")
	}
	var out []string
	var err *RequestError
	i := 0
	v.ForEach(func(_, b gjson.Result) bool {
		bp := fmt.Sprintf("%s[%d]", p, i)
		i++
		if !b.IsObject() {
			err = parseWant(bp, b, "a text block")
			return false
		}
		if typ := b.Get("type"); typ.Str != "text" {
			t.cannot(bp + ".type")
			return true
		}
		text := b.Get("text")
		if text.Type != gjson.String {
			err = parseWant(bp+".text", text, "a string")
			return false
		}
		t.blockKeys(bp, b, "type", "text")
		if text.Str != "" {
			out = append(out, text.Str)
		}
		return true
	})
	return strings.Join(out, "\n\n"), err
}

// blockKeys drops, for translation, a block member other than allowed
// (cache_control is always dropped: a caching hint).
func (t *messagesTranslation) blockKeys(p string, b gjson.Result, allowed ...string) {
	b.ForEach(func(k, f gjson.Result) bool {
		for _, a := range allowed {
			if k.Str == a {
				return true
			}
		}
		switch {
		case f.Type == gjson.Null:
		case k.Str == "cache_control":
			t.drop("cache_control")
		case k.Str == "citations" && f.Raw == "[]":
		default:
			t.drop(p + "." + k.Str)
		}
		return true
	})
}

// isHTTPURL reports an http(s) URL, the only image URLs a translation sends.
func isHTTPURL(u string) bool {
	l := strings.ToLower(u)
	return strings.HasPrefix(l, "https://") || strings.HasPrefix(l, "http://")
}
