package frontdoor

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/tidwall/gjson"

	"switchyard/routing/wire"
)

// The Messages door's conversation, tools and tool choice, translated into
// OpenAI chat messages and tools.

// messages translates the turns into OpenAI chat messages, appended to
// the chat body one turn at a time.
func (t *messagesTranslation) messages(v gjson.Result) *RequestError {
	if !v.IsArray() {
		return parseWant("messages", v, "an array")
	}
	var (
		err *RequestError
		i   int
	)
	v.ForEach(func(_, m gjson.Result) bool {
		err = t.message(i, m)
		i++
		return err == nil
	})
	if err != nil {
		return err
	}
	if i == 0 {
		return parseErrorf("messages", "messages must not be empty")
	}
	return nil
}

// turnContent is what one turn's content blocks translate into.
type turnContent struct {
	parts   []chatPart      // user text and images
	text    strings.Builder // assistant text
	calls   []chatCall
	results []chatMessage
}

// turnPath is the path of turn i.
func turnPath(i int) string { return fmt.Sprintf("messages[%d]", i) }

func (t *messagesTranslation) message(i int, v gjson.Result) *RequestError {
	if !v.IsObject() {
		return parseWant(turnPath(i), v, "an object")
	}
	role, content := v.Get("role"), v.Get("content")
	if role.Type != gjson.String {
		return parseWant(turnPath(i)+".role", role, `"user", "assistant" or "system"`)
	}
	v.ForEach(func(k, f gjson.Result) bool {
		if k.Str != "role" && k.Str != "content" && f.Type != gjson.Null {
			t.drop(turnPath(i) + "." + k.Str) // per-turn settings (output_config, …)
		}
		return true
	})
	switch role.Str {
	case "system":
		// A mid-conversation system turn: instructions in place.
		text, err := t.systemText(turnPath(i)+".content", content)
		if err == nil && text != "" {
			t.chat.text("system", text)
		}
		return err
	case "user", "assistant":
	default:
		t.cannot(turnPath(i) + ".role")
		return nil
	}
	switch {
	case content.Type == gjson.String:
		t.chat.text(parseInternRole(role.Str), content.Str)
		return nil
	case !content.IsArray():
		return parseWant(turnPath(i)+".content", content, "a string or an array of content blocks")
	}
	return t.blocks(turnPath(i), role.Str, content)
}

// parseInternRole is a user or assistant role as a constant.
func parseInternRole(role string) string {
	if role == "user" {
		return "user"
	}
	return "assistant"
}

// blocks translates a turn's array of content blocks.
func (t *messagesTranslation) blocks(p, role string, content gjson.Result) *RequestError {
	var tc turnContent
	j := 0
	var err *RequestError
	content.ForEach(func(_, b gjson.Result) bool {
		err = t.block(fmt.Sprintf("%s.content[%d]", p, j), role, b, &tc)
		j++
		return err == nil
	})
	if err != nil {
		return err
	}
	if j == 0 {
		return parseErrorf(p+".content", "content must not be an empty array")
	}
	tc.write(&t.chat, role)
	return nil
}

// write appends one turn's translation: an assistant message, or the tool
// results and then the user's own content.
func (tc *turnContent) write(w *chatWriter, role string) {
	if role == "assistant" {
		if tc.text.Len() == 0 && len(tc.calls) == 0 {
			return // only thinking: nothing to send in translation
		}
		msg := chatMessage{role: "assistant", calls: tc.calls}
		if tc.text.Len() > 0 || len(tc.calls) == 0 {
			msg.content, msg.hasContent = tc.text.String(), true
		}
		w.add(&msg)
		return
	}
	for i := range tc.results {
		w.add(&tc.results[i])
	}
	if len(tc.parts) > 0 {
		w.add(&chatMessage{role: "user", parts: tc.parts})
	}
}

// block translates one content block of a user or assistant turn.
func (t *messagesTranslation) block(bp, role string, b gjson.Result, tc *turnContent) *RequestError {
	if !b.IsObject() {
		return parseWant(bp, b, "a content block")
	}
	typ := b.Get("type")
	if typ.Type != gjson.String {
		return parseWant(bp+".type", typ, "a block type")
	}
	switch typ.Str {
	case "text":
		s := b.Get("text")
		if s.Type != gjson.String {
			return parseWant(bp+".text", s, "a string")
		}
		t.blockKeys(bp, b, "type", "text")
		if role == "assistant" {
			tc.text.WriteString(s.Str)
		} else {
			tc.parts = append(tc.parts, chatPart{text: s.Str})
		}
	case "image":
		if role != "user" {
			return parseErrorf(bp+".type", "image blocks are only allowed in user messages")
		}
		img, ok, err := t.image(bp, b)
		if err != nil {
			return err
		}
		if ok {
			tc.parts = append(tc.parts, img)
		}
	case "tool_use":
		if role != "assistant" {
			return parseErrorf(bp+".type", "tool_use blocks are only allowed in assistant messages")
		}
		call, err := t.toolUse(bp, b)
		if err != nil {
			return err
		}
		tc.calls = append(tc.calls, call)
	case "tool_result":
		if role != "user" {
			return parseErrorf(bp+".type", "tool_result blocks are only allowed in user messages")
		}
		res, err := t.toolResult(bp, b)
		if err != nil {
			return err
		}
		tc.results = append(tc.results, res)
	case "thinking", "redacted_thinking", "server_tool_use", "web_search_tool_result":
		// Earlier turns' signed thinking and hosted search traces: other
		// vendors cannot take them back, and the answer they led to is in
		// the turn's text.
		t.drop(dropName(bp) + " (" + typ.Str + ")")
	default:
		t.cannot(bp + ".type")
	}
	return nil
}

// toolUse translates an assistant's tool_use block into an OpenAI tool call.
func (t *messagesTranslation) toolUse(bp string, b gjson.Result) (chatCall, *RequestError) {
	id, name, input := b.Get("id"), b.Get("name"), b.Get("input")
	if id.Type != gjson.String || id.Str == "" {
		return chatCall{}, parseErrorf(bp+".id", "a tool_use block needs an id")
	}
	if name.Type != gjson.String || name.Str == "" {
		return chatCall{}, parseErrorf(bp+".name", "a tool_use block needs a name")
	}
	args := "{}"
	if input.Exists() && input.Type != gjson.Null {
		if !input.IsObject() {
			return chatCall{}, parseWant(bp+".input", input, "an object")
		}
		args = input.Raw
	}
	t.blockKeys(bp, b, "type", "id", "name", "input")
	return chatCall{id: id.Str, name: name.Str, args: args}, nil
}

// image turns an image block's source into an image part (ok): its URL, or
// a data URL for base64.
func (t *messagesTranslation) image(bp string, b gjson.Result) (chatPart, bool, *RequestError) {
	src := b.Get("source")
	if !src.IsObject() {
		return chatPart{}, false, parseWant(bp+".source", src, "an image source object")
	}
	t.blockKeys(bp, b, "type", "source")
	switch src.Get("type").Str {
	case "base64":
		mt, data := src.Get("media_type"), src.Get("data")
		if mt.Type != gjson.String || data.Type != gjson.String || mt.Str == "" || data.Str == "" {
			return chatPart{}, false, parseErrorf(bp+".source", "a base64 image source needs media_type and data")
		}
		return chatPart{image: true, mediaType: mt.Str, data: data.Str}, true, nil
	case "url":
		u := src.Get("url")
		if u.Type != gjson.String || !isHTTPURL(u.Str) {
			return chatPart{}, false, parseErrorf(bp+".source.url", "an url image source needs an http(s) url")
		}
		return chatPart{image: true, url: u.Str}, true, nil
	}
	t.cannot(bp + ".source.type")
	return chatPart{}, false, nil
}

// toolResult turns a tool_result block into an OpenAI tool message.
func (t *messagesTranslation) toolResult(bp string, b gjson.Result) (chatMessage, *RequestError) {
	id := b.Get("tool_use_id")
	if id.Type != gjson.String || id.Str == "" {
		return chatMessage{}, parseErrorf(bp+".tool_use_id", "a tool_result block needs the tool_use_id it answers")
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
				t.cannot(cp + ".type")
				return true
			}
			t.blockKeys(cp, cb, "type", "text")
			text.WriteString(cb.Get("text").Str)
			return true
		})
	default:
		return chatMessage{}, parseWant(bp+".content", c, "a string or an array of blocks")
	}
	s := text.String()
	if b.Get("is_error").Bool() {
		s = "[tool error] " + s
	}
	return chatMessage{role: "tool", toolCallID: id.Str, content: s, hasContent: true}, nil
}

// serverToolDropped are Anthropic server tools a translation leaves out
// without changing what the caller receives: tool search finds deferred
// tools, and a translation offers every tool directly.
var serverToolDropped = []string{"tool_search_tool_"}

// tools translates custom tools into function tools, and the web search
// server tool into the canonical web search (the policy refuses it where
// the deployment has none).
func (t *messagesTranslation) tools(v gjson.Result) *RequestError {
	if !v.IsArray() {
		return parseWant("tools", v, "an array")
	}
	var (
		out []chatTool
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
		typ := tl.Get("type")
		switch {
		case !typ.Exists() || typ.Type == gjson.Null || typ.Str == "custom":
			var fn chatFunction
			if fn, err = t.customTool(p, tl); err != nil {
				return false
			}
			out = append(out, chatTool{Type: "function", Function: fn})
		case strings.HasPrefix(typ.Str, "web_search_"):
			t.webSearch = true
			t.blockKeys("tools[] (web_search)", tl, "type", "name")
		case hasAnyPrefix(typ.Str, serverToolDropped):
			t.drop("tools[] (tool_search)")
		default:
			t.cannot(p + ".type") // a server tool (bash, code execution, …) with no counterpart
		}
		return true
	})
	if err != nil {
		return err
	}
	t.out.Tools = out
	if t.webSearch {
		t.out.WebSearchOptions = &struct{}{}
	}
	return nil
}

func hasAnyPrefix(s string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

// customTool is a custom tool's function declaration.
func (t *messagesTranslation) customTool(p string, tl gjson.Result) (chatFunction, *RequestError) {
	name := tl.Get("name")
	if name.Type != gjson.String || name.Str == "" {
		return chatFunction{}, parseErrorf(p+".name", "a tool needs a name")
	}
	fn := chatFunction{Name: name.Str}
	if d := tl.Get("description"); d.Type == gjson.String && d.Str != "" {
		fn.Description = d.Str
	}
	schema := tl.Get("input_schema")
	if !schema.IsObject() {
		return chatFunction{}, parseWant(p+".input_schema", schema, "a JSON Schema object")
	}
	fn.Parameters = parseRaw(t.body, schema)
	if s := tl.Get("strict"); s.Type == gjson.True || s.Type == gjson.False {
		strict := s.Bool()
		fn.Strict = &strict
	}
	// defer_loading, eager_input_streaming, input_examples, …: how the
	// vendor loads or streams the tool, not what it does.
	t.blockKeys(p, tl, "type", "name", "description", "input_schema", "strict")
	return fn, nil
}

func (t *messagesTranslation) toolChoice(v gjson.Result) *RequestError {
	if !v.IsObject() {
		return parseWant("tool_choice", v, `an object {"type": "auto" | "any" | "tool" | "none"}`)
	}
	t.blockKeys("tool_choice", v, "type", "name", "disable_parallel_tool_use")
	switch v.Get("type").Str {
	case "auto":
		t.out.ToolChoice = json.RawMessage(`"auto"`)
	case "any":
		t.out.ToolChoice = json.RawMessage(`"required"`)
	case "none":
		t.out.ToolChoice = json.RawMessage(`"none"`)
	case "tool":
		name := v.Get("name")
		if name.Type != gjson.String || name.Str == "" {
			return parseErrorf("tool_choice.name", `tool_choice of type "tool" needs the tool's name`)
		}
		b := wire.AppendString([]byte(`{"type":"function","function":{"name":`), name.Str)
		t.out.ToolChoice = append(b, `}}`...)
	default:
		t.cannot("tool_choice.type")
		return nil
	}
	if v.Get("disable_parallel_tool_use").Bool() && v.Get("type").Str != "none" {
		parallel := false
		t.out.ParallelToolCalls = &parallel
	}
	return nil
}
