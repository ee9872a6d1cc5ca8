// Package jsontext writes JSON text for PostgreSQL's JSON reader by
// appending to a buffer: the store's set-based writes (one statement over
// a JSON array of rows) build their parameters with it, without a value
// per field.
package jsontext

import (
	"encoding/json"
	"unicode/utf8"
)

// AppendString appends s as a JSON string. Only the quote, the backslash
// and control characters are escaped, which is all PostgreSQL's JSON reader
// needs to give back exactly s; text that is not valid UTF-8 goes through
// encoding/json, which replaces what is invalid.
func AppendString(b []byte, s string) []byte {
	if !utf8.ValidString(s) {
		j, _ := json.Marshal(s) // a string always marshals
		return append(b, j...)
	}
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		b = append(b, s[start:i]...)
		switch c {
		case '"', '\\':
			b = append(b, '\\', c)
		case '\n':
			b = append(b, '\\', 'n')
		case '\r':
			b = append(b, '\\', 'r')
		case '\t':
			b = append(b, '\\', 't')
		default:
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		}
		start = i + 1
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
