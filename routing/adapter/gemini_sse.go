package adapter

import "io"

// geminiFramer sits between a Gemini stream body and the SSEReader. Vertex
// writes a failure in the middle of an SSE stream as a bare, pretty-printed
// JSON object (no "data:" prefix), which an SSE reader would silently skip as
// unknown fields. geminiFramer turns any JSON value that starts at the
// beginning of a line into one "data:" event, in order with the events around
// it, so the stream parser sees the error where it happened. Everything else
// passes through byte for byte.
type geminiFramer struct {
	r         io.Reader
	buf       []byte
	out       []byte // framed bytes not yet returned
	pos       int    // read position in out
	lineStart bool
	raw       bool // inside a bare JSON value
	depth     int
	inString  bool
	escaped   bool
	err       error
}

func newGeminiFramer(r io.Reader) *geminiFramer {
	return &geminiFramer{r: r, buf: make([]byte, 32<<10), lineStart: true}
}

func (f *geminiFramer) Read(p []byte) (int, error) {
	for f.pos == len(f.out) {
		if f.err != nil {
			return 0, f.err
		}
		f.out, f.pos = f.out[:0], 0
		n, err := f.r.Read(f.buf)
		f.frame(f.buf[:n])
		if err != nil {
			if f.raw {
				// An unterminated bare value: end its event anyway so the
				// parser sees (and rejects) what arrived.
				f.out = append(f.out, "\n\n"...)
				f.raw = false
			}
			f.err = err
		}
	}
	n := copy(p, f.out[f.pos:])
	f.pos += n
	return n, nil
}

func (f *geminiFramer) frame(b []byte) {
	for _, c := range b {
		if !f.raw {
			if !f.lineStart || (c != '{' && c != '[') {
				f.out = append(f.out, c)
				f.lineStart = c == '\n' || c == '\r'
				continue
			}
			f.raw, f.depth, f.inString, f.escaped = true, 0, false, false
		}
		if c == '\n' || c == '\r' {
			// One line end per line: a CR LF pair, or a blank line inside
			// the value, would otherwise end the event early.
			if !f.lineStart {
				f.out = append(f.out, '\n')
				f.lineStart = true
			}
			continue
		}
		if f.lineStart {
			f.out = append(f.out, "data: "...)
			f.lineStart = false
		}
		f.out = append(f.out, c)
		switch {
		case f.inString:
			switch {
			case f.escaped:
				f.escaped = false
			case c == '\\':
				f.escaped = true
			case c == '"':
				f.inString = false
			}
		case c == '"':
			f.inString = true
		case c == '{' || c == '[':
			f.depth++
		case c == '}' || c == ']':
			f.depth--
			if f.depth <= 0 {
				f.out = append(f.out, "\n\n"...)
				f.raw, f.lineStart = false, true
			}
		}
	}
}
