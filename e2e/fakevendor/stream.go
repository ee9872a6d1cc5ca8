package fakevendor

import (
	"bytes"
	"net/http"
	"strings"
	"unicode/utf8"
)

// streamer renders one protocol's stream events. Each method appends whole
// events (each ending in a blank line) to b; every event is flushed on its
// own.
type streamer interface {
	// preamble is sent with the headers, before any content.
	preamble(b []byte) []byte
	// content is content chunk i carrying text.
	content(b []byte, i int, text string) []byte
	// finish ends a complete stream (finish reason, usage, terminator).
	finish(b []byte) []byte
	// errorEvent is the protocol's in-stream error reporting status (0: the
	// protocol's usual server-side error).
	errorEvent(b []byte, status int) []byte
}

// stream sends rp through st, applying the stream faults: FirstChunkDelay
// before the first event after the preamble, InterChunkDelay before every
// later one, OversizedLine on the first content chunk, and ErrorAfterChunks /
// CutAfterChunks at their positions.
func (c *call) stream(st streamer, rp reply) {
	h := c.w.Header()
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	c.writeHeader(http.StatusOK)
	fl, _ := c.w.(http.Flusher)
	// emit writes the events in b, flushing after each one.
	emit := func(b []byte) bool {
		for len(b) > 0 {
			n := bytes.Index(b, []byte("\n\n")) + 2
			if n < 2 {
				n = len(b)
			}
			if _, err := c.w.Write(b[:n]); err != nil {
				return false
			}
			if fl != nil {
				fl.Flush()
			}
			b = b[n:]
		}
		return true
	}
	if fl != nil {
		fl.Flush() // the headers go out now, even with an empty preamble
	}
	buf := make([]byte, 0, 1024)
	if !emit(st.preamble(buf[:0])) {
		return
	}
	ctx := c.r.Context()
	n := rp.chunks
	errAt, cutAt := position(c.fault.ErrorAfterChunks, n), position(c.fault.CutAfterChunks, n)
	for i := 0; i <= n; i++ {
		delay := c.fault.InterChunkDelay
		if i == 0 {
			delay = c.fault.FirstChunkDelay
		}
		if !sleep(ctx, delay) {
			return
		}
		switch i {
		case errAt:
			emit(st.errorEvent(buf[:0], c.fault.ErrorStatus))
			return
		case cutAt:
			c.abort()
			return
		case n:
			emit(st.finish(buf[:0]))
			return
		}
		text := rp.text(i)
		buf = st.content(buf[:0], i, text)
		if i == 0 && c.fault.OversizedLine > 0 && rp.tool == "" {
			if pad := c.fault.OversizedLine - dataLineLen(buf); pad > 0 {
				buf = st.content(buf[:0], i, text+strings.Repeat("x", pad))
			}
		}
		if !emit(buf) {
			return
		}
	}
}

// position is where a "after N chunks" fault fires among n content chunks:
// -1 when off, 0 for negative N, at most n (after the last chunk, before the
// finish events).
func position(v, n int) int {
	switch {
	case v == 0:
		return -1
	case v < 0:
		return 0
	default:
		return min(v, n)
	}
}

// abort drops the connection without ending the response: no final chunk
// for HTTP/1.1, a stream reset for HTTP/2.
func (c *call) abort() {
	if conn, _, err := http.NewResponseController(c.w).Hijack(); err == nil {
		_ = conn.Close()
		return
	}
	panic(http.ErrAbortHandler)
}

// dataLineLen is the length of the first "data:" line in ev, without its
// line feed.
func dataLineLen(ev []byte) int {
	i := bytes.Index(ev, []byte("data: "))
	if i < 0 {
		return 0
	}
	j := bytes.IndexByte(ev[i:], '\n')
	if j < 0 {
		return len(ev) - i
	}
	return j
}

// appendString appends s as a JSON string.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' && c < utf8.RuneSelf {
			i++
			continue
		}
		if c >= utf8.RuneSelf {
			r, size := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && size == 1 {
				b = append(b, s[start:i]...)
				b = append(b, `\ufffd`...)
				i++
				start = i
				continue
			}
			if r == '\u2028' || r == '\u2029' {
				b = append(b, s[start:i]...)
				b = append(b, `\u202`...)
				b = append(b, "89"[r-'\u2028'])
				i += size
				start = i
				continue
			}
			i += size
			continue
		}
		b = append(b, s[start:i]...)
		switch c {
		case '"':
			b = append(b, `\"`...)
		case '\\':
			b = append(b, `\\`...)
		case '\n':
			b = append(b, `\n`...)
		case '\r':
			b = append(b, `\r`...)
		case '\t':
			b = append(b, `\t`...)
		default:
			const hex = "0123456789abcdef"
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		}
		i++
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// jsonEscape is s as the inside of a JSON string.
func jsonEscape(s string) string {
	b := appendString(nil, s)
	return string(b[1 : len(b)-1])
}
