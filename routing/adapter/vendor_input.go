package adapter

// Reading the caller's OpenAI request for the translating adapters
// (Anthropic and Gemini): data URLs, tool_choice and tool-call arguments.

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
)

// vendorBadRequest is a caller mistake found while translating the request.
func vendorBadRequest(format string, args ...any) *Error {
	return &Error{Class: ClassBadRequest, Code: "invalid_request", Message: fmt.Sprintf(format, args...)}
}

// vendorDataURL splits a base64 data URL ("data:image/png;base64,AAAA") into
// its media type and base64 payload.
func vendorDataURL(u string) (mediaType, data string, err error) {
	rest, ok := strings.CutPrefix(u, "data:")
	if !ok {
		return "", "", vendorBadRequest("image URL is not a data URL")
	}
	meta, payload, ok := strings.Cut(rest, ",")
	if !ok {
		return "", "", vendorBadRequest("malformed data URL: no comma")
	}
	params := strings.Split(meta, ";")
	mediaType = strings.TrimSpace(params[0])
	isBase64 := false
	for _, p := range params[1:] {
		if strings.EqualFold(strings.TrimSpace(p), "base64") {
			isBase64 = true
		}
	}
	if !isBase64 {
		return "", "", vendorBadRequest("data URL images must be base64-encoded")
	}
	if mediaType == "" {
		return "", "", vendorBadRequest("data URL has no media type")
	}
	if _, err := base64.StdEncoding.DecodeString(payload); err != nil {
		if _, err2 := base64.RawStdEncoding.DecodeString(payload); err2 != nil {
			return "", "", vendorBadRequest("data URL payload is not valid base64")
		}
	}
	return mediaType, payload, nil
}

// vendorIsHTTPURL reports whether u is an http or https URL.
func vendorIsHTTPURL(u string) bool {
	l := strings.ToLower(u)
	return strings.HasPrefix(l, "https://") || strings.HasPrefix(l, "http://")
}

// vendorToolChoice is the caller's tool_choice: Mode is "", "auto", "none",
// "required" or "function" (then Name is the forced function).
type vendorToolChoice struct {
	Mode string
	Name string
}

func parseVendorToolChoice(raw json.RawMessage) (vendorToolChoice, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return vendorToolChoice{}, nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		switch s {
		case "auto", "none", "required":
			return vendorToolChoice{Mode: s}, nil
		}
		return vendorToolChoice{}, vendorBadRequest("tool_choice %q is not one of auto, none, required", s)
	}
	var obj struct {
		Type     string `json:"type"`
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	}
	if err := json.Unmarshal(raw, &obj); err != nil {
		return vendorToolChoice{}, vendorBadRequest("tool_choice is neither a string nor an object")
	}
	switch {
	case obj.Function.Name != "":
		return vendorToolChoice{Mode: "function", Name: obj.Function.Name}, nil
	case obj.Type == "auto" || obj.Type == "none" || obj.Type == "required":
		return vendorToolChoice{Mode: obj.Type}, nil
	}
	return vendorToolChoice{}, vendorBadRequest("tool_choice object names no function")
}

// vendorToolArguments parses an assistant tool call's JSON arguments into the
// object vendors expect; empty arguments are an empty object.
func vendorToolArguments(tc ToolCall) (json.RawMessage, error) {
	args := bytes.TrimSpace([]byte(tc.Arguments))
	if len(args) == 0 {
		return json.RawMessage("{}"), nil
	}
	if !json.Valid(args) || args[0] != '{' {
		return nil, vendorBadRequest("tool call %q (%s): arguments are not a JSON object", tc.ID, tc.Name)
	}
	return json.RawMessage(args), nil
}

// vendorToolSchema returns a tool's parameter schema, or the empty object schema
// when the caller declared none.
func vendorToolSchema(p json.RawMessage) json.RawMessage {
	p = bytes.TrimSpace(p)
	if len(p) == 0 || bytes.Equal(p, []byte("null")) {
		return json.RawMessage(`{"type":"object","properties":{}}`)
	}
	return p
}

func vendorIntPtr(v int) *int { return &v }
