package frontdoor

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/tidwall/gjson"
)

// input reads input: a string (one user message) or a list of items.
func (st *responsesState) input(v gjson.Result) *RequestError {
	switch {
	case !v.Exists() || v.Type == gjson.Null:
		return parseErrorf("input", "input is required")
	case v.Type == gjson.String:
		if v.Str == "" {
			return parseErrorf("input", "input must not be empty")
		}
		st.msgs.text("user", v.Str)
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
	if st.msgs.empty() {
		// Only items the translation does not re-send (reasoning) or
		// native-only ones: the chat request needs something to answer.
		st.nativeOnly("input")
		st.msgs.text("user", "")
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
	case "function_call", "custom_tool_call":
		return st.call(p, v, kind == "custom_tool_call")
	case "function_call_output", "custom_tool_call_output":
		callID, out := v.Get("call_id"), v.Get("output")
		if callID.Type != gjson.String || callID.Str == "" {
			return parseErrorf(p(".call_id"), "a call output needs the call_id it answers")
		}
		text, err := st.callOutput(p(".output"), out)
		if err != nil {
			return err
		}
		st.msgs.add(&chatMessage{role: "tool", toolCallID: callID.Str, content: text, hasContent: true})
		return nil
	case "reasoning", "web_search_call", "tool_search_call", "tool_search_output":
		// The model's earlier reasoning and hosted tools' traces: a
		// Responses upstream gets them back as they came; chat completions
		// has no place for them, and the answers they led to are in the
		// conversation.
		st.drop("input[] (" + kind + ")")
		return nil
	case "item_reference":
		return statelessErr(p(".type"), "an item_reference refers to a stored item")
	}
	st.nativeOnly(p(".type"))
	return nil
}

// call translates a function call (or a custom tool's call) of an earlier
// turn into the assistant message's tool_calls.
func (st *responsesState) call(p func(string) string, v gjson.Result, custom bool) *RequestError {
	callID, name := v.Get("call_id"), v.Get("name")
	if callID.Type != gjson.String || callID.Str == "" {
		return parseErrorf(p(".call_id"), "a call needs its call_id")
	}
	if name.Type != gjson.String || name.Str == "" {
		return parseErrorf(p(".name"), "a call needs its name")
	}
	fname, args := name.Str, ""
	if ns := v.Get("namespace"); ns.Type == gjson.String && ns.Str != "" {
		fname = flatName(ns.Str, name.Str)
	}
	if custom {
		in := v.Get("input")
		if in.Type != gjson.String {
			return parseWant(p(".input"), in, "a string")
		}
		b, _ := json.Marshal(map[string]string{"input": in.Str})
		args = string(b)
	} else {
		a := v.Get("arguments")
		if a.Type != gjson.String {
			return parseWant(p(".arguments"), a, "a string of JSON")
		}
		args = a.Str
	}
	// Parallel calls of one turn belong to one assistant message.
	st.msgs.call(chatCall{id: callID.Str, name: fname, args: args})
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
		st.nativeOnly(p(".role")) // a role newer than this build
		return nil
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
		parts []chatPart
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
			parts = append(parts, chatPart{text: t.Str})
		case "refusal":
			t := part.Get("refusal")
			if t.Type != gjson.String {
				err = parseWant(pp(".refusal"), t, "a string")
				return false
			}
			text.WriteString(t.Str)
			parts = append(parts, chatPart{text: t.Str})
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
			img := chatPart{image: true, url: url.Str}
			if d := part.Get("detail"); d.Type == gjson.String {
				img.detail = d.Str
			}
			parts = append(parts, img)
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
func (st *responsesState) addMessage(role, text string, parts []chatPart) {
	m := chatMessage{role: role, parts: parts, content: text, hasContent: parts == nil}
	if role == "assistant" {
		st.msgs.hold(m)
		return
	}
	st.msgs.add(&m)
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
