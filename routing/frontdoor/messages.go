package frontdoor

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/tidwall/gjson"

	"switchyard/routing/adapter"
	"switchyard/routing/config"
	"switchyard/routing/wire"
)

// The Anthropic Messages front door (POST /v1/messages): its request
// parsed into the canonical ChatRequest. The caller's body is kept whole
// for Anthropic-protocol deployments (native pass-through); for the others
// it is translated into an OpenAI chat body, which ParseChatRequest then
// reads like any chat-completions request, so the field tables, the router
// and the adapters treat both doors alike. What the translation cannot
// carry is named in Native.Refuse; MessagesFieldRules is the table of it
// (the README's "Messages → OpenAI and Gemini" table).
//
// Wire format: https://docs.anthropic.com/en/api/messages (request and
// content blocks), checked against anthropic-sdk-go v2.15.0's MessageNewParams.

// MessagesRule is how one Messages field reaches a deployment of another
// protocol than Anthropic's.
type MessagesRule struct {
	Field string
	// Decision: Translate (carried), Drop (a hint left out, see How) or
	// Refuse (the deployment is skipped with unsupported_parameter).
	Decision adapter.Decision
	How      string
}

// Drop is a Messages field that translation leaves out on purpose: a hint
// that changes cost or caching but not the answer.
const Drop adapter.Decision = "drop"

// MessagesFieldRules lists every Messages field the door knows and what a
// translation to OpenAI- or Gemini-protocol deployments does with it; an
// Anthropic-protocol deployment gets all of them as sent.
var MessagesFieldRules = []MessagesRule{
	{"model", adapter.Translate, "replaced by the deployment's upstream model"},
	{"max_tokens", adapter.Translate, "max_tokens (OpenAI) / maxOutputTokens (Gemini)"},
	{"messages", adapter.Translate, "user and assistant turns; text → text, image (base64 or url source) → image_url, tool_use → tool_calls, tool_result → a tool message (is_error: its text prefixed with \"[tool error] \")"},
	{"messages[].content[] thinking, redacted_thinking", Drop, "earlier turns' thinking is not sent: other vendors cannot take Anthropic's signed thinking back"},
	{"messages[].content[] other block types (document, search_result, server tool blocks, …)", adapter.Refuse, "no counterpart in OpenAI's or Gemini's chat request"},
	{"system", adapter.Translate, "a system message (text blocks joined)"},
	{"cache_control (top level or on any block)", Drop, "a caching hint; the other vendors cache by their own rules"},
	{"stop_sequences", adapter.Translate, "stop"},
	{"stream", adapter.Translate, "stream (the answer comes back as Messages events)"},
	{"temperature", adapter.Translate, "temperature"},
	{"top_p", adapter.Translate, "top_p"},
	{"top_k", adapter.Refuse, "OpenAI's chat API has no top_k, and the Gemini adapter does not send it"},
	{"tools", adapter.Translate, "custom tools → function tools (input_schema → parameters); server tools (web search, bash, …) are refused"},
	{"tool_choice", adapter.Translate, "auto → auto, any → required, tool → the named function, none → none; disable_parallel_tool_use → parallel_tool_calls false"},
	{"thinking", adapter.Translate, "thinking (enabled with budget_tokens, or adaptive); routes to the deep tier; the answer's reasoning comes back as thinking blocks without a signature"},
	{"metadata", adapter.Translate, "metadata.user_id → user; other keys refused"},
	{"service_tier", adapter.Refuse, "Anthropic's service tiers do not exist elsewhere (auto, the default, is accepted)"},
	{"any other field (output_config, container, mcp_servers, context_management, …)", adapter.Refuse, "not translated; only Anthropic-protocol deployments take it"},
}

// messagesParams names the Messages field a canonical OpenAI field comes
// from, for unsupported_parameter answers.
var messagesParams = map[string]string{
	"stop":                  "stop_sequences",
	"user":                  "metadata.user_id",
	"parallel_tool_calls":   "tool_choice.disable_parallel_tool_use",
	"max_completion_tokens": "max_tokens",
}

// messagesNative is the native side of a Messages request: every
// Anthropic-protocol deployment speaks it.
func messagesNative(body []byte, refuse string) *adapter.Native {
	return &adapter.Native{Door: adapter.DoorMessages, Body: body, Protocol: config.ProtocolAnthropic, Refuse: refuse, Params: messagesParams}
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

// messagesTranslation collects the OpenAI chat body being built and the
// first field it cannot carry.
type messagesTranslation struct {
	body   []byte
	refuse string
	out    map[string]any
}

func (t *messagesTranslation) refuseField(param string) {
	if t.refuse == "" {
		t.refuse = param
	}
}

func parseAnthropicMessages(body []byte, needMax bool) (*adapter.ChatRequest, error) {
	if err := parseCheckBody(body); err != nil {
		return nil, err
	}
	t := &messagesTranslation{body: body, out: map[string]any{}}
	var (
		err              *RequestError
		model, messages  gjson.Result
		system, tools    gjson.Result
		toolChoice       gjson.Result
		maxTokens        *int
		seen             = map[string]bool{}
		sawMax, sawModel bool
		systemText       []string
		stream           bool
	)
	gjson.Parse(wire.View(body)).ForEach(func(k, v gjson.Result) bool {
		if seen[k.Str] {
			err = parseErrorf(k.Str, "duplicate field %q", parseShow(k.Str))
			return false
		}
		seen[k.Str] = true
		switch k.Str {
		case "model":
			model, sawModel = v, true
		case "messages":
			messages = v
		case "max_tokens":
			sawMax = true
			maxTokens, err = parseOptInt("max_tokens", v, 1)
		case "system":
			system = v
		case "stream":
			stream, err = parseOptBool("stream", v)
		case "stop_sequences":
			var stop []string
			if stop, err = parseStop(v); err == nil && len(stop) > 0 {
				if v.Type == gjson.String {
					err = parseWant("stop_sequences", v, "an array of strings")
				}
				t.out["stop"] = stop
			}
		case "temperature":
			var f *float64
			if f, err = parseOptFloat("temperature", v, 0, 1); err == nil && f != nil {
				t.out["temperature"] = *f
			}
		case "top_p":
			var f *float64
			if f, err = parseOptFloat("top_p", v, 0, 1); err == nil && f != nil {
				t.out["top_p"] = *f
			}
		case "top_k":
			if _, err = parseOptInt("top_k", v, 0); err == nil && v.Type != gjson.Null {
				t.refuseField("top_k")
			}
		case "tools":
			tools = v
		case "tool_choice":
			toolChoice = v
		case "thinking":
			err = t.thinking(v)
		case "metadata":
			err = t.metadata(v)
		case "cache_control":
			// A caching hint: dropped in translation (MessagesFieldRules).
		case "service_tier":
			var s string
			if s, err = parseOptString("service_tier", v); err == nil && s != "" && s != "auto" {
				t.refuseField("service_tier")
			}
		default:
			if v.Type != gjson.Null {
				t.refuseField(k.Str)
			}
		}
		return err == nil
	})
	if err != nil {
		return nil, err
	}
	if !sawModel {
		return nil, parseErrorf("model", "model is required")
	}
	m, merr := parseModel(model)
	if merr != nil {
		return nil, merr
	}
	if strings.TrimSpace(m) == "" {
		return nil, parseErrorf("model", "model is required")
	}
	if needMax && (!sawMax || maxTokens == nil) {
		return nil, parseErrorf("max_tokens", "max_tokens is required")
	}
	var msgs []map[string]any
	if system.Exists() && system.Type != gjson.Null {
		if systemText, err = t.system(system); err != nil {
			return nil, err
		}
		if len(systemText) > 0 {
			msgs = append(msgs, map[string]any{"role": "system", "content": strings.Join(systemText, "\n\n")})
		}
	}
	if !messages.Exists() {
		return nil, parseErrorf("messages", "messages is required")
	}
	turns, rerr := t.messages(messages)
	if rerr != nil {
		return nil, rerr
	}
	msgs = append(msgs, turns...)
	if len(msgs) == 0 {
		// Nothing translatable (only refused or dropped blocks): the
		// canonical request still needs a turn; translation is refused
		// or sends an empty one.
		msgs = append(msgs, map[string]any{"role": "user", "content": ""})
	}
	t.out["model"] = m
	t.out["messages"] = msgs
	if stream {
		t.out["stream"] = true
	}
	if maxTokens != nil {
		t.out["max_tokens"] = *maxTokens
	}
	if tools.Exists() && tools.Type != gjson.Null {
		if err := t.tools(tools); err != nil {
			return nil, err
		}
	}
	if toolChoice.Exists() && toolChoice.Type != gjson.Null {
		if err := t.toolChoice(toolChoice); err != nil {
			return nil, err
		}
	}
	chatBody, jerr := json.Marshal(t.out)
	if jerr != nil {
		return nil, parseErrorf("", "cannot read the request: %v", jerr)
	}
	r, perr := ParseChatRequest(chatBody)
	if perr != nil {
		return nil, perr
	}
	r.Native = messagesNative(body, t.refuse)
	return r, nil
}

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
		case "display":
			// summarized | omitted: how Anthropic shows thinking; the
			// translation returns whatever reasoning the vendor gives.
		default:
			t.refuseField("thinking." + k.Str)
		}
		return err == nil
	})
	if err != nil {
		return err
	}
	switch typ.Str {
	case "disabled":
		return nil
	case "enabled":
		if budget == nil {
			return parseErrorf("thinking.budget_tokens", "budget_tokens is required when thinking is enabled")
		}
		t.out["thinking"] = map[string]any{"type": "enabled", "budget_tokens": *budget}
	default: // adaptive and newer modes: reasoning at the vendor's discretion
		t.out["thinking"] = map[string]any{"type": "enabled"}
	}
	return nil
}

func (t *messagesTranslation) metadata(v gjson.Result) *RequestError {
	if v.Type == gjson.Null {
		return nil
	}
	if !v.IsObject() {
		return parseWant("metadata", v, "an object")
	}
	var err *RequestError
	v.ForEach(func(k, f gjson.Result) bool {
		switch k.Str {
		case "user_id":
			var s string
			if s, err = parseOptString("metadata.user_id", f); err == nil && s != "" {
				t.out["user"] = s
			}
		default:
			t.refuseField("metadata." + k.Str)
		}
		return err == nil
	})
	if err != nil {
		return err
	}
	return nil
}

// system reads system: a string or an array of text blocks.
func (t *messagesTranslation) system(v gjson.Result) ([]string, *RequestError) {
	if v.Type == gjson.String {
		if v.Str == "" {
			return nil, nil
		}
		return []string{v.Str}, nil
	}
	if !v.IsArray() {
		return nil, parseWant("system", v, "a string or an array of text blocks")
	}
	var out []string
	var err *RequestError
	i := 0
	v.ForEach(func(_, b gjson.Result) bool {
		p := fmt.Sprintf("system[%d]", i)
		i++
		if !b.IsObject() {
			err = parseWant(p, b, "a text block")
			return false
		}
		if typ := b.Get("type"); typ.Str != "text" {
			err = parseErrorf(p+".type", `system blocks must be of type "text"`)
			return false
		}
		text := b.Get("text")
		if text.Type != gjson.String {
			err = parseWant(p+".text", text, "a string")
			return false
		}
		t.blockKeys(p, b, "type", "text", "citations")
		if text.Str != "" {
			out = append(out, text.Str)
		}
		return true
	})
	return out, err
}

// blockKeys refuses, for translation, a block member other than allowed
// (cache_control is always allowed: a hint).
func (t *messagesTranslation) blockKeys(p string, b gjson.Result, allowed ...string) {
	b.ForEach(func(k, f gjson.Result) bool {
		if k.Str == "cache_control" {
			return true
		}
		for _, a := range allowed {
			if k.Str == a {
				if a == "citations" && f.Type != gjson.Null && f.Raw != "[]" {
					t.refuseField(p + ".citations")
				}
				return true
			}
		}
		if f.Type != gjson.Null {
			t.refuseField(p + "." + k.Str)
		}
		return true
	})
}

// messages translates the turns into OpenAI chat messages.
func (t *messagesTranslation) messages(v gjson.Result) ([]map[string]any, *RequestError) {
	if !v.IsArray() {
		return nil, parseWant("messages", v, "an array")
	}
	var (
		out []map[string]any
		err *RequestError
		i   int
	)
	v.ForEach(func(_, m gjson.Result) bool {
		var turn []map[string]any
		turn, err = t.message(i, m)
		out = append(out, turn...)
		i++
		return err == nil
	})
	if err != nil {
		return nil, err
	}
	if i == 0 {
		return nil, parseErrorf("messages", "messages must not be empty")
	}
	return out, nil
}

func (t *messagesTranslation) message(i int, v gjson.Result) ([]map[string]any, *RequestError) {
	p := fmt.Sprintf("messages[%d]", i)
	if !v.IsObject() {
		return nil, parseWant(p, v, "an object")
	}
	role, content := v.Get("role"), v.Get("content")
	if role.Type != gjson.String || (role.Str != "user" && role.Str != "assistant") {
		return nil, parseErrorf(p+".role", `role must be "user" or "assistant"`)
	}
	v.ForEach(func(k, f gjson.Result) bool {
		if k.Str != "role" && k.Str != "content" && f.Type != gjson.Null {
			t.refuseField(p + "." + k.Str)
		}
		return true
	})
	switch {
	case content.Type == gjson.String:
		return []map[string]any{{"role": role.Str, "content": content.Str}}, nil
	case !content.IsArray():
		return nil, parseWant(p+".content", content, "a string or an array of content blocks")
	}
	var (
		parts     []map[string]any // user text and images
		text      strings.Builder  // assistant text
		calls     []map[string]any
		results   []map[string]any
		err       *RequestError
		j         int
		hasBlocks bool
	)
	content.ForEach(func(_, b gjson.Result) bool {
		bp := fmt.Sprintf("%s.content[%d]", p, j)
		j++
		hasBlocks = true
		if !b.IsObject() {
			err = parseWant(bp, b, "a content block")
			return false
		}
		typ := b.Get("type")
		if typ.Type != gjson.String {
			err = parseWant(bp+".type", typ, "a block type")
			return false
		}
		switch typ.Str {
		case "text":
			s := b.Get("text")
			if s.Type != gjson.String {
				err = parseWant(bp+".text", s, "a string")
				return false
			}
			t.blockKeys(bp, b, "type", "text", "citations")
			if role.Str == "assistant" {
				text.WriteString(s.Str)
			} else {
				parts = append(parts, map[string]any{"type": "text", "text": s.Str})
			}
		case "image":
			if role.Str != "user" {
				err = parseErrorf(bp+".type", "image blocks are only allowed in user messages")
				return false
			}
			url, ierr := t.image(bp, b)
			if ierr != nil {
				err = ierr
				return false
			}
			if url != "" {
				parts = append(parts, map[string]any{"type": "image_url", "image_url": map[string]any{"url": url}})
			}
		case "tool_use":
			if role.Str != "assistant" {
				err = parseErrorf(bp+".type", "tool_use blocks are only allowed in assistant messages")
				return false
			}
			id, name, input := b.Get("id"), b.Get("name"), b.Get("input")
			if id.Type != gjson.String || id.Str == "" {
				err = parseErrorf(bp+".id", "a tool_use block needs an id")
				return false
			}
			if name.Type != gjson.String || name.Str == "" {
				err = parseErrorf(bp+".name", "a tool_use block needs a name")
				return false
			}
			args := "{}"
			if input.Exists() && input.Type != gjson.Null {
				if !input.IsObject() {
					err = parseWant(bp+".input", input, "an object")
					return false
				}
				args = input.Raw
			}
			t.blockKeys(bp, b, "type", "id", "name", "input")
			if c := b.Get("caller"); c.Exists() && c.Get("type").Str != "direct" && c.Type != gjson.Null {
				t.refuseField(bp + ".caller")
			}
			calls = append(calls, map[string]any{"id": id.Str, "type": "function",
				"function": map[string]any{"name": name.Str, "arguments": args}})
		case "tool_result":
			if role.Str != "user" {
				err = parseErrorf(bp+".type", "tool_result blocks are only allowed in user messages")
				return false
			}
			res, rerr := t.toolResult(bp, b)
			if rerr != nil {
				err = rerr
				return false
			}
			results = append(results, res)
		case "thinking", "redacted_thinking":
			if role.Str != "assistant" {
				err = parseErrorf(bp+".type", "thinking blocks are only allowed in assistant messages")
				return false
			}
			// Dropped in translation (MessagesFieldRules).
		default:
			t.refuseField(bp + ".type")
		}
		return true
	})
	if err != nil {
		return nil, err
	}
	if !hasBlocks {
		return nil, parseErrorf(p+".content", "content must not be an empty array")
	}
	if role.Str == "assistant" {
		if text.Len() == 0 && len(calls) == 0 {
			return nil, nil // only thinking: nothing to send in translation
		}
		msg := map[string]any{"role": "assistant"}
		if text.Len() > 0 || len(calls) == 0 {
			msg["content"] = text.String()
		}
		if len(calls) > 0 {
			msg["tool_calls"] = calls
		}
		return []map[string]any{msg}, nil
	}
	out := results
	if len(parts) > 0 {
		out = append(out, map[string]any{"role": "user", "content": parts})
	}
	return out, nil
}

// image turns an image block's source into an URL: a data URL for base64.
func (t *messagesTranslation) image(bp string, b gjson.Result) (string, *RequestError) {
	src := b.Get("source")
	if !src.IsObject() {
		return "", parseWant(bp+".source", src, "an image source object")
	}
	t.blockKeys(bp, b, "type", "source")
	switch src.Get("type").Str {
	case "base64":
		mt, data := src.Get("media_type"), src.Get("data")
		if mt.Type != gjson.String || data.Type != gjson.String || mt.Str == "" || data.Str == "" {
			return "", parseErrorf(bp+".source", "a base64 image source needs media_type and data")
		}
		return "data:" + mt.Str + ";base64," + data.Str, nil
	case "url":
		u := src.Get("url")
		if u.Type != gjson.String || !isHTTPURL(u.Str) {
			return "", parseErrorf(bp+".source.url", "an url image source needs an http(s) url")
		}
		return u.Str, nil
	}
	t.refuseField(bp + ".source.type")
	return "", nil
}

// toolResult turns a tool_result block into an OpenAI tool message.
func (t *messagesTranslation) toolResult(bp string, b gjson.Result) (map[string]any, *RequestError) {
	id := b.Get("tool_use_id")
	if id.Type != gjson.String || id.Str == "" {
		return nil, parseErrorf(bp+".tool_use_id", "a tool_result block needs the tool_use_id it answers")
	}
	t.blockKeys(bp, b, "type", "tool_use_id", "content", "is_error")
	var text strings.Builder
	c := b.Get("content")
	switch {
	case !c.Exists() || c.Type == gjson.Null:
	case c.Type == gjson.String:
		text.WriteString(c.Str)
	case c.IsArray():
		k := 0
		c.ForEach(func(_, cb gjson.Result) bool {
			cp := fmt.Sprintf("%s.content[%d]", bp, k)
			k++
			if cb.Get("type").Str != "text" {
				t.refuseField(cp + ".type")
				return true
			}
			t.blockKeys(cp, cb, "type", "text", "citations")
			text.WriteString(cb.Get("text").Str)
			return true
		})
	default:
		return nil, parseWant(bp+".content", c, "a string or an array of blocks")
	}
	s := text.String()
	if b.Get("is_error").Bool() {
		s = "[tool error] " + s
	}
	return map[string]any{"role": "tool", "tool_call_id": id.Str, "content": s}, nil
}

// tools translates custom tools into function tools.
func (t *messagesTranslation) tools(v gjson.Result) *RequestError {
	if !v.IsArray() {
		return parseWant("tools", v, "an array")
	}
	var (
		out []map[string]any
		err *RequestError
		i   int
	)
	v.ForEach(func(_, tl gjson.Result) bool {
		p := fmt.Sprintf("tools[%d]", i)
		i++
		if !tl.IsObject() {
			err = parseWant(p, tl, "a tool object")
			return false
		}
		if typ := tl.Get("type"); typ.Exists() && typ.Type != gjson.Null && typ.Str != "custom" {
			t.refuseField(p + ".type") // a server tool (web_search_…, bash_…, …)
			return true
		}
		name := tl.Get("name")
		if name.Type != gjson.String || name.Str == "" {
			err = parseErrorf(p+".name", "a tool needs a name")
			return false
		}
		fn := map[string]any{"name": name.Str}
		if d := tl.Get("description"); d.Type == gjson.String && d.Str != "" {
			fn["description"] = d.Str
		}
		schema := tl.Get("input_schema")
		if !schema.IsObject() {
			err = parseWant(p+".input_schema", schema, "a JSON Schema object")
			return false
		}
		fn["parameters"] = json.RawMessage(schema.Raw)
		if s := tl.Get("strict"); s.Type == gjson.True || s.Type == gjson.False {
			fn["strict"] = s.Bool()
		}
		t.blockKeys(p, tl, "type", "name", "description", "input_schema", "strict")
		out = append(out, map[string]any{"type": "function", "function": fn})
		return true
	})
	if err != nil {
		return err
	}
	if len(out) > 0 {
		t.out["tools"] = out
	}
	return nil
}

func (t *messagesTranslation) toolChoice(v gjson.Result) *RequestError {
	if !v.IsObject() {
		return parseWant("tool_choice", v, `an object {"type": "auto" | "any" | "tool" | "none"}`)
	}
	t.blockKeys("tool_choice", v, "type", "name", "disable_parallel_tool_use")
	switch v.Get("type").Str {
	case "auto":
		t.out["tool_choice"] = "auto"
	case "any":
		t.out["tool_choice"] = "required"
	case "none":
		t.out["tool_choice"] = "none"
	case "tool":
		name := v.Get("name")
		if name.Type != gjson.String || name.Str == "" {
			return parseErrorf("tool_choice.name", `tool_choice of type "tool" needs the tool's name`)
		}
		t.out["tool_choice"] = map[string]any{"type": "function", "function": map[string]any{"name": name.Str}}
	default:
		return parseErrorf("tool_choice.type", `must be "auto", "any", "tool" or "none"`)
	}
	if v.Get("disable_parallel_tool_use").Bool() && v.Get("type").Str != "none" {
		t.out["parallel_tool_calls"] = false
	}
	return nil
}

// MessagesFieldsMarkdown renders MessagesFieldRules as the README shows them.
func MessagesFieldsMarkdown() string {
	var b strings.Builder
	b.WriteString("| Messages field | to OpenAI / Gemini deployments | how |\n| --- | --- | --- |\n")
	for _, r := range MessagesFieldRules {
		fmt.Fprintf(&b, "| `%s` | %s | %s |\n", r.Field, r.Decision, strings.ReplaceAll(r.How, "|", `\|`))
	}
	return b.String()
}

// isHTTPURL reports an http(s) URL, the only image URLs a translation sends.
func isHTTPURL(u string) bool {
	l := strings.ToLower(u)
	return strings.HasPrefix(l, "https://") || strings.HasPrefix(l, "http://")
}
