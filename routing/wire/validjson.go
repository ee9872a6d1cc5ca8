package wire

import (
	"bytes"

	"github.com/tidwall/gjson"
)

// maxJSONDepth is encoding/json's nesting limit: deeper input is not valid
// to it, and so not to ValidJSON.
const maxJSONDepth = 10000

// ValidJSON reports whether b is one valid JSON value, with the answer of
// encoding/json's Valid (FuzzValidJSON holds them equal) in about a third
// of its time: it runs on every request body and on every answer and
// stream event a vendor sends. gjson's validator recurses once per nesting
// level, so input nested deeper than encoding/json allows is refused
// before it is called: an untrusted body cannot grow the stack.
func ValidJSON(b []byte) bool {
	return !tooDeep(b) && gjson.ValidBytes(b)
}

// tooDeep reports whether b nests deeper than maxJSONDepth. Only input with
// more opening brackets than that can: most input is shorter, and counting
// them (a vectorised scan) costs far less than following strings, which a
// body with that many needs.
func tooDeep(b []byte) bool {
	if len(b) <= maxJSONDepth || bytes.Count(b, openBrace)+bytes.Count(b, openBracket) <= maxJSONDepth {
		return false
	}
	return nestedDeeper(b, maxJSONDepth)
}

var openBrace, openBracket = []byte{'{'}, []byte{'['}

// nestedDeeper reports whether arrays and objects in b (outside strings)
// nest more than max levels deep.
func nestedDeeper(b []byte, max int) bool {
	depth, inString := 0, false
	for i := 0; i < len(b); i++ {
		c := b[i]
		if inString {
			switch c {
			case '\\':
				i++ // the escaped byte cannot end the string
			case '"':
				inString = false
			}
			continue
		}
		switch c {
		case '"':
			inString = true
		case '[', '{':
			if depth++; depth > max {
				return true
			}
		case ']', '}':
			depth--
		}
	}
	return false
}
