package adapter

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
)

// MaxSSELine bounds one SSE line. Vendors send multi-megabyte lines (inline
// images, long tool arguments); bufio.Scanner's 64 KiB default has caused real
// outages, so the reader grows its buffer up to this limit instead.
const MaxSSELine = 32 << 20

// ErrSSELineTooLong is returned when a line exceeds MaxSSELine.
var ErrSSELineTooLong = errors.New("sse: line too long")

// SSEEvent is one server-sent event: its event name (empty for the default
// "message") and its data lines joined by "\n".
type SSEEvent struct {
	Event string
	Data  []byte
}

// SSEReader reads server-sent events. It accepts LF, CRLF and CR line ends,
// trailing spaces after the data, reads of any size (one byte at a time, or a
// multibyte character split across reads), and a stream whose last event is
// not followed by a blank line. Comment lines (": ping") are skipped.
type SSEReader struct {
	r       *bufio.Reader
	src     waitReader
	event   string
	data    []byte
	hasData bool
	line    []byte
	pendCR  bool // the previous line ended in CR; swallow a following LF
	done    bool
	started bool // past a possible leading byte-order mark
	broken  error
}

// NewSSEReader returns a reader over r. The buffer is small because long
// lines are collected separately; a thousand concurrent streams must not
// cost a thousand large buffers. An upstream response body is itself read
// through the HTTP client's buffer, so refilling this one from it costs a
// copy, not a system call.
func NewSSEReader(r io.Reader) *SSEReader {
	s := &SSEReader{src: waitReader{r: r}}
	s.r = bufio.NewReaderSize(&s.src, sseBuffer)
	return s
}

// BeforeWait makes the reader call f before each read from its source —
// the only place it can wait for the vendor — or no longer, with nil.
// While the events a read brought are in the buffer, f is not called.
func (s *SSEReader) BeforeWait(f func()) { s.src.before = f }

// waitReader calls before (when set) ahead of every read of r.
type waitReader struct {
	r      io.Reader
	before func()
}

func (w *waitReader) Read(p []byte) (int, error) {
	if w.before != nil {
		w.before()
	}
	return w.r.Read(p)
}

// sseBuffer is the SSE reader's buffer size.
const sseBuffer = 1 << 10

// Next returns the next event, or io.EOF when the stream ended cleanly.
// The returned Data is valid until the next call.
func (s *SSEReader) Next() (SSEEvent, error) {
	if s.broken != nil {
		return SSEEvent{}, s.broken
	}
	if !s.started {
		s.started = true
		// The SSE specification allows one leading UTF-8 byte-order mark.
		if b, err := s.r.Peek(3); err == nil && b[0] == 0xEF && b[1] == 0xBB && b[2] == 0xBF {
			_, _ = s.r.Discard(3)
		}
	}
	for {
		line, err := s.readLine()
		if err != nil {
			if errors.Is(err, io.EOF) {
				s.done = true
				if s.hasData || s.event != "" {
					// The last event lacked its blank line: still an event.
					return s.emit(), nil
				}
			}
			if errors.Is(err, ErrSSELineTooLong) {
				s.broken = err // the stream is unusable from here
			}
			return SSEEvent{}, err
		}
		if len(line) == 0 {
			if s.hasData || s.event != "" {
				return s.emit(), nil
			}
			continue
		}
		if line[0] == ':' {
			continue
		}
		field, value := line, []byte(nil)
		if i := bytes.IndexByte(line, ':'); i >= 0 {
			field, value = line[:i], line[i+1:]
			if len(value) > 0 && value[0] == ' ' {
				value = value[1:]
			}
		}
		switch string(field) {
		case "data":
			if s.hasData {
				s.data = append(s.data, '\n')
			}
			s.data = append(s.data, value...)
			s.hasData = true
		case "event":
			s.event = string(bytes.TrimSpace(value))
		}
		// "id" and "retry" carry nothing we use; unknown fields are ignored
		// as the SSE specification requires.
	}
}

func (s *SSEReader) emit() SSEEvent {
	ev := SSEEvent{Event: s.event, Data: bytes.TrimRight(s.data, " \t")}
	s.event, s.data, s.hasData = "", s.data[:0], false
	return ev
}

// readLine returns one line without its terminator. At the end of input it
// returns the unterminated remainder first, then io.EOF.
func (s *SSEReader) readLine() ([]byte, error) {
	if s.done {
		return nil, io.EOF
	}
	s.line = s.line[:0]
	for {
		b, err := s.r.ReadByte()
		if err != nil {
			if errors.Is(err, io.EOF) && len(s.line) > 0 {
				return s.line, nil
			}
			return nil, err
		}
		if s.pendCR {
			s.pendCR = false
			if b == '\n' {
				continue
			}
		}
		switch b {
		case '\n':
			return s.line, nil
		case '\r':
			s.pendCR = true
			return s.line, nil
		}
		if len(s.line) >= MaxSSELine {
			return nil, fmt.Errorf("%w (over %d bytes)", ErrSSELineTooLong, MaxSSELine)
		}
		// Fast path: copy the rest of the buffered line in one go.
		s.line = append(s.line, b)
		if buf, _ := s.r.Peek(s.r.Buffered()); len(buf) > 0 {
			n := bytes.IndexAny(buf, "\r\n")
			if n < 0 {
				n = len(buf)
			}
			if len(s.line)+n > MaxSSELine {
				return nil, fmt.Errorf("%w (over %d bytes)", ErrSSELineTooLong, MaxSSELine)
			}
			s.line = append(s.line, buf[:n]...)
			_, _ = s.r.Discard(n)
		}
	}
}
