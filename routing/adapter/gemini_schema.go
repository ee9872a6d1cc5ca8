package adapter

import (
	"encoding/json"
	"sort"
)

// Gemini's functionDeclarations[].parameters is an OpenAPI 3.0 Schema subset,
// not JSON Schema: it answers 400 "Unknown name" for keys such as
// additionalProperties or $schema (which every OpenAI strict-mode tool
// carries), accepts enum only on strings, only a few formats, and no
// type arrays. geminiSchema keeps what Gemini understands and rewrites the
// rest where a faithful rewrite exists.

// geminiSchemaKeys are the Schema fields Gemini accepts and we pass on as is.
var geminiSchemaKeys = map[string]bool{
	"title": true, "description": true, "nullable": true, "required": true,
	"minItems": true, "maxItems": true, "minProperties": true, "maxProperties": true,
	"minLength": true, "maxLength": true, "pattern": true, "minimum": true, "maximum": true,
	"example": true, "default": true, "propertyOrdering": true,
}

// geminiFormats are the formats Gemini accepts; others are dropped.
var geminiFormats = map[string]bool{"enum": true, "date-time": true, "float": true, "double": true, "int32": true, "int64": true}

// geminiSchema converts a tool's JSON Schema to Gemini's Schema. It returns
// nil for an object without properties, which Gemini rejects ("properties:
// should be non-empty for OBJECT type"): such a function takes no parameters.
func geminiSchema(raw json.RawMessage) (json.RawMessage, error) {
	raw = vendorToolSchema(raw)
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, vendorBadRequest("tool parameters are not valid JSON: %v", err)
	}
	m, ok := geminiSchemaNode(v).(map[string]any)
	if !ok {
		return nil, vendorBadRequest("tool parameters must be a JSON Schema object")
	}
	if props, _ := m["properties"].(map[string]any); len(props) == 0 && (m["type"] == "object" || m["type"] == nil) {
		return nil, nil
	}
	b, err := json.Marshal(m)
	if err != nil {
		return nil, vendorBadRequest("cannot encode tool parameters: %v", err)
	}
	return b, nil
}

func geminiSchemaNode(v any) any {
	m, ok := v.(map[string]any)
	if !ok {
		return v
	}
	out := make(map[string]any, len(m))
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		val := m[k]
		switch {
		case k == "type":
			switch t := val.(type) {
			case string:
				out["type"] = t
			case []any: // ["string","null"] → string + nullable
				for _, e := range t {
					if s, _ := e.(string); s == "null" {
						out["nullable"] = true
					} else if s != "" && out["type"] == nil {
						out["type"] = s
					}
				}
			}
		case k == "properties":
			if props, ok := val.(map[string]any); ok {
				np := make(map[string]any, len(props))
				for name, p := range props {
					np[name] = geminiSchemaNode(p)
				}
				out["properties"] = np
			}
		case k == "items":
			out["items"] = geminiSchemaNode(val)
		case k == "anyOf" || k == "oneOf":
			if list, ok := val.([]any); ok {
				nl := make([]any, 0, len(list))
				for _, e := range list {
					nl = append(nl, geminiSchemaNode(e))
				}
				out["anyOf"] = nl
			}
		case k == "enum":
			if strs, ok := geminiStrings(val); ok {
				out["enum"] = strs
			}
		case k == "const":
			if s, ok := val.(string); ok {
				out["enum"] = []string{s}
			}
		case k == "format":
			if s, _ := val.(string); geminiFormats[s] {
				out["format"] = s
			}
		case geminiSchemaKeys[k]:
			out[k] = val
		}
		// Everything else ($schema, additionalProperties, $ref, $defs,
		// strict, examples, …) is unknown to Gemini and dropped.
	}
	if _, ok := out["enum"]; ok && out["type"] == nil {
		out["type"] = "string"
	}
	return out
}

func geminiStrings(v any) ([]string, bool) {
	list, ok := v.([]any)
	if !ok {
		return nil, false
	}
	out := make([]string, 0, len(list))
	for _, e := range list {
		s, ok := e.(string)
		if !ok {
			return nil, false
		}
		out = append(out, s)
	}
	return out, true
}
