package fakevendor

import (
	"encoding/json"
	"sort"
	"strings"
)

// Structured output and several choices, as the vendors offer them:
//
//	OpenAI     response_format json_object / json_schema; n choices
//	Anthropic  output_config.format json_schema; a forced tool call
//	           (tool_choice {"type":"tool"}) answers with that tool's input
//	Gemini     generationConfig.responseMimeType application/json with
//	           responseJsonSchema (or responseSchema); candidateCount
//
// The JSON answer is made from the schema: every property, strings
// "Hello from MODEL." (or the first enum value), integers 1, numbers 1.5,
// booleans true, arrays of one item; an object without properties is
// {"answer":"Hello from MODEL."}. A stream sends it in ReplyChunks pieces.

// schemaJSON is a JSON value matching schema (nil: any object).
func schemaJSON(schema json.RawMessage, greeting string) string {
	var v any
	if len(schema) > 0 {
		_ = json.Unmarshal(schema, &v)
	}
	b, _ := json.Marshal(schemaValue(v, greeting, 0))
	return string(b)
}

func schemaValue(v any, greeting string, depth int) any {
	m, _ := v.(map[string]any)
	if depth > 8 {
		return nil
	}
	if enum, ok := m["enum"].([]any); ok && len(enum) > 0 {
		return enum[0]
	}
	typ, _ := m["type"].(string)
	if list, ok := m["type"].([]any); ok && len(list) > 0 {
		typ, _ = list[0].(string)
	}
	if typ == "" {
		if _, ok := m["properties"]; ok || m == nil {
			typ = "object"
		}
	}
	switch strings.ToLower(typ) {
	case "string":
		return greeting
	case "integer":
		return 1
	case "number":
		return 1.5
	case "boolean":
		return true
	case "array":
		return []any{schemaValue(m["items"], greeting, depth+1)}
	case "object":
		props, _ := m["properties"].(map[string]any)
		if len(props) == 0 {
			return map[string]any{"answer": greeting}
		}
		names := make([]string, 0, len(props))
		for k := range props {
			names = append(names, k)
		}
		sort.Strings(names)
		out := make(map[string]any, len(props))
		for _, k := range names {
			out[k] = schemaValue(props[k], greeting, depth+1)
		}
		return out
	}
	return nil
}

// pieces splits s into at most n parts of about equal size, on rune
// boundaries.
func pieces(s string, n int) []string {
	n = max(1, min(n, len(s)))
	out := make([]string, 0, n)
	size := (len(s) + n - 1) / n
	for len(s) > 0 {
		k := min(size, len(s))
		for k < len(s) && !utfStart(s[k]) {
			k++
		}
		out = append(out, s[:k])
		s = s[k:]
	}
	return out
}

func utfStart(b byte) bool { return b&0xC0 != 0x80 }

// structured turns rp into a JSON answer for schema.
func (rp *reply) structured(schema json.RawMessage) {
	if rp.finish == finishFilter || rp.tool != "" || rp.parts != nil {
		return
	}
	rp.parts = pieces(schemaJSON(schema, rp.first), rp.chunks)
	rp.chunks, rp.finish = len(rp.parts), finishStop
}

// forcedTool turns rp into a call of tool with arguments matching schema.
func (rp *reply) forcedTool(tool string, schema json.RawMessage) {
	if rp.finish == finishFilter {
		return
	}
	rp.tool, rp.args = tool, schemaJSON(schema, rp.first)
	rp.chunks, rp.finish = 1, finishTool
}
