package frontdoor

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"github.com/tidwall/gjson"
)

// The Responses door's tools, translated into chat-completions function
// tools: function tools as they are, the functions of a namespace
// flattened to one name each (the calls are named back on the way out),
// custom tools as functions taking their input as a string, and the hosted
// web search as the canonical web search (refused where a deployment has
// none). Tool search is dropped: a translation offers every tool directly.

// ToolName is what a function name of the translation stands for.
type ToolName struct {
	// Namespace is the namespace the function was declared in ("" for
	// none); Name its name there.
	Namespace, Name string
	// Custom: a custom tool, called with its input as a string.
	Custom bool
}

// customInput is the parameters of a custom tool's function: its input as
// one string.
const customInput = `{"type":"object","properties":{"input":{"type":"string","description":"The tool's whole input, as free text."}},"required":["input"],"additionalProperties":false}`

// flatName is the function name of a namespaced function: namespace and
// name joined by "__", kept to the 64 characters and the characters every
// vendor accepts in a function name.
func flatName(namespace, name string) string {
	s := sanitizeName(namespace) + "__" + sanitizeName(name)
	if len(s) <= 64 {
		return s
	}
	sum := sha256.Sum256([]byte(namespace + "\x00" + name))
	return s[:55] + "_" + hex.EncodeToString(sum[:4])
}

// sanitizeName keeps letters, digits, '_' and '-'.
func sanitizeName(s string) string {
	b := []byte(s)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			b[i] = '_'
		}
	}
	return string(b)
}

// tools reads the tool list.
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
		var fns []map[string]any
		fns, err = st.tool(fmt.Sprintf("tools[%d]", i), tv, "")
		out = append(out, fns...)
		i++
		return err == nil
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

// tool translates one tool (inside namespace ns, "" for none) into chat
// function tools.
func (st *responsesState) tool(p string, tv gjson.Result, ns string) ([]map[string]any, *RequestError) {
	if !tv.IsObject() {
		return nil, parseWant(p, tv, "an object")
	}
	typ := tv.Get("type")
	if typ.Type != gjson.String || typ.Str == "" {
		return nil, parseWant(p+".type", typ, `a tool type such as "function"`)
	}
	switch typ.Str {
	case "function", "custom":
		fn, err := st.function(p, tv, ns, typ.Str == "custom")
		if err != nil || fn == nil {
			return nil, err
		}
		return []map[string]any{{"type": "function", "function": fn}}, nil
	case "namespace":
		return st.namespace(p, tv)
	case "web_search", "web_search_preview":
		st.chat["web_search_options"] = map[string]any{}
		tv.ForEach(func(k, f gjson.Result) bool {
			if k.Str != "type" && f.Type != gjson.Null {
				st.drop("tools[] (web_search)." + k.Str) // filters, user location, cached-only access
			}
			return true
		})
	case "tool_search":
		st.drop("tools[] (tool_search)")
	default: // file_search, mcp, computer use, code interpreter, image generation, …
		st.nativeOnly(p + ".type")
	}
	return nil, nil
}

// namespace flattens a namespace's functions and custom tools.
func (st *responsesState) namespace(p string, tv gjson.Result) ([]map[string]any, *RequestError) {
	name := tv.Get("name")
	if name.Type != gjson.String || name.Str == "" {
		return nil, parseErrorf(p+".name", "a namespace needs a name")
	}
	inner := tv.Get("tools")
	if !inner.IsArray() {
		return nil, parseWant(p+".tools", inner, "an array of tools")
	}
	var (
		out []map[string]any
		err *RequestError
		j   int
	)
	inner.ForEach(func(_, it gjson.Result) bool {
		var fns []map[string]any
		fns, err = st.tool(fmt.Sprintf("%s.tools[%d]", p, j), it, name.Str)
		out = append(out, fns...)
		j++
		return err == nil
	})
	return out, err
}

// function reads a function or custom tool declared in namespace ns: its
// chat function declaration (nil when it cannot be translated).
func (st *responsesState) function(p string, tv gjson.Result, ns string, custom bool) (map[string]any, *RequestError) {
	fn := map[string]any{}
	var (
		name   string
		err    *RequestError
		format gjson.Result
	)
	tv.ForEach(func(k, f gjson.Result) bool {
		switch k.Str {
		case "type":
		case "name":
			name, err = parseString(p+".name", f)
		case "description":
			var s string
			if s, err = parseOptString(p+".description", f); err == nil && s != "" {
				fn["description"] = s
			}
		case "parameters":
			switch {
			case custom || f.Type == gjson.Null:
			case f.IsObject():
				fn["parameters"] = json.RawMessage(parseRaw(st.body, f))
			default:
				err = parseWant(p+".parameters", f, "a JSON Schema object")
			}
		case "strict":
			if f.Type != gjson.Null && !custom {
				var b bool
				if b, err = parseOptBool(p+".strict", f); err == nil {
					fn["strict"] = b
				}
			}
		case "format":
			if custom {
				format = f
			}
		default: // defer_loading and newer settings
			if f.Type != gjson.Null {
				st.drop("tools[]." + k.Str)
			}
		}
		return err == nil
	})
	if err != nil {
		return nil, err
	}
	if name == "" {
		return nil, parseErrorf(p+".name", "a function name is required")
	}
	if format.IsObject() && format.Get("type").Str != "text" {
		st.drop("tools[].format") // a grammar the vendor cannot enforce: told in the description
		fn["description"] = customDescription(fn["description"], format)
	}
	return st.declare(fn, ns, name, custom), nil
}

// declare names a function of the translation and records what it stands
// for.
func (st *responsesState) declare(fn map[string]any, ns, name string, custom bool) map[string]any {
	flat := name
	if ns != "" {
		flat = flatName(ns, name)
	}
	fn["name"] = flat
	if custom {
		fn["parameters"] = json.RawMessage(customInput)
	}
	if ns != "" || custom {
		if st.r.Tools == nil {
			st.r.Tools = map[string]ToolName{}
		}
		st.r.Tools[flat] = ToolName{Namespace: ns, Name: name, Custom: custom}
	}
	return fn
}

// customDescription adds a custom tool's input format to its description,
// so the model is told what it cannot be held to.
func customDescription(desc any, format gjson.Result) string {
	s, _ := desc.(string)
	if s != "" {
		s += "\n\n"
	}
	def := format.Get("definition").Str
	if len(def) > 4000 {
		def = def[:4000] + "…"
	}
	return s + "The input must follow this " + format.Get("syntax").Str + " grammar:\n" + def
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
