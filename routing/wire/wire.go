// Package wire holds the byte-level pieces both sides of the data plane
// share: the front doors (what callers speak, routing/frontdoor) and the
// adapters (what vendors speak, routing/adapter) read and write JSON and
// server-sent events with them, without a document tree.
package wire

import (
	"unicode/utf8"
	"unsafe"
)

// View returns a string sharing b's memory, so gjson results point into b
// without copying it. Callers promise not to modify b afterwards (a
// request keeps its body), which keeps those strings immutable.
func View(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(unsafe.SliceData(b), len(b))
}

const hex = "0123456789abcdef"

// AppendString appends s as a JSON string; invalid UTF-8 becomes U+FFFD.
func AppendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	dst = AppendStringContent(dst, s)
	return append(dst, '"')
}

// AppendStringContent appends s escaped as inside a JSON string, without
// the quotes: a string written in pieces.
func AppendStringContent(dst []byte, s string) []byte {
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i++
			start = i
			continue
		}
		i += size
	}
	return append(dst, s[start:]...)
}

// AppendEvent appends one server-sent event: its name, its data on one
// line, and the blank line that ends it.
func AppendEvent(dst []byte, name string, data []byte) []byte {
	dst = append(dst, "event: "...)
	dst = append(dst, name...)
	dst = append(dst, "\ndata: "...)
	dst = append(dst, data...)
	return append(dst, '\n', '\n')
}
