package adapter

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// sseEvent is an SSEEvent with its data owned (SSEReader reuses its buffer).
type sseEvent struct {
	Event, Data string
}

// sseReadAll reads every event until an error; it returns the events and
// the error that ended them (io.EOF for a clean end).
func sseReadAll(r io.Reader) ([]sseEvent, error) {
	sr := NewSSEReader(r)
	var out []sseEvent
	for {
		ev, err := sr.Next()
		if err != nil {
			return out, err
		}
		out = append(out, sseEvent{ev.Event, string(ev.Data)})
		if len(out) > 1<<20 {
			return out, errors.New("runaway reader")
		}
	}
}

// sseSplitReader returns its input in pieces cut at the given offsets, so a
// test can place a cut inside a CRLF or a multibyte character.
type sseSplitReader struct {
	data []byte
	cuts []int
	pos  int
}

func (r *sseSplitReader) Read(p []byte) (int, error) {
	if r.pos >= len(r.data) {
		return 0, io.EOF
	}
	end := len(r.data)
	for _, c := range r.cuts {
		if c > r.pos {
			end = min(end, c)
			break
		}
	}
	n := copy(p, r.data[r.pos:end])
	r.pos += n
	return n, nil
}

// sseReaders yields the same input through readers that cut it differently.
func sseReaders(s string) map[string]func() io.Reader {
	return map[string]func() io.Reader{
		"whole":    func() io.Reader { return strings.NewReader(s) },
		"one byte": func() io.Reader { return iotest.OneByteReader(strings.NewReader(s)) },
		"half":     func() io.Reader { return iotest.HalfReader(strings.NewReader(s)) },
		"data+EOF": func() io.Reader { return iotest.DataErrReader(strings.NewReader(s)) },
		"odd cuts": func() io.Reader {
			return &sseSplitReader{data: []byte(s), cuts: []int{1, 2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37}}
		},
		"every 2nd": func() io.Reader { return &sseSplitReader{data: []byte(s), cuts: sseEvery(len(s), 2)} },
	}
}

func sseEvery(n, step int) []int {
	var c []int
	for i := step; i < n; i += step {
		c = append(c, i)
	}
	return c
}

func TestSSEReaderTorture(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   string
		want []sseEvent
	}{
		{"LF", "data: a\n\ndata: b\n\n", []sseEvent{{"", "a"}, {"", "b"}}},
		{"CRLF", "data: a\r\n\r\ndata: b\r\n\r\n", []sseEvent{{"", "a"}, {"", "b"}}},
		{"lone CR", "data: a\r\rdata: b\r\r", []sseEvent{{"", "a"}, {"", "b"}}},
		{"mixed line ends", "data: a\r\n\ndata: b\r\r\ndata: c\n\r\n", []sseEvent{{"", "a"}, {"", "b"}, {"", "c"}}},
		{"CRLF inside a multi-line event", "data: a\r\ndata: b\r\n\r\n", []sseEvent{{"", "a\nb"}}},
		{"multi-line data", "data: {\ndata:  \"x\": 1\ndata: }\n\n", []sseEvent{{"", "{\n \"x\": 1\n}"}}},
		{"trailing spaces after the JSON (Anthropic)", "data: {\"type\":\"ping\"}      \n\n", []sseEvent{{"", `{"type":"ping"}`}}},
		{"trailing tab", "data: [DONE]\t\n\n", []sseEvent{{"", "[DONE]"}}},
		{"no space after the colon", "data:x\n\n", []sseEvent{{"", "x"}}},
		{"only the first space is eaten", "data:  x\n\n", []sseEvent{{"", " x"}}},
		{"missing final blank line", "data: a\n\ndata: b", []sseEvent{{"", "a"}, {"", "b"}}},
		{"missing final blank line after LF", "data: a\n\ndata: b\n", []sseEvent{{"", "a"}, {"", "b"}}},
		{"missing final blank line after CR", "data: a\r", []sseEvent{{"", "a"}}},
		{"comments", ": ping\n\n:\ndata: a\n: inside\ndata: b\n\n: keep-alive\n\n", []sseEvent{{"", "a\nb"}}},
		{"event names", "event: message_start\ndata: {}\n\nevent:  error \ndata: {\"e\":1}\n\n", []sseEvent{{"message_start", "{}"}, {"error", `{"e":1}`}}},
		{"id and retry ignored", "id: 7\nretry: 100\ndata: a\nfoo: bar\n\n", []sseEvent{{"", "a"}}},
		{"colon in the value", "data: {\"url\":\"https://x\"}\n\n", []sseEvent{{"", `{"url":"https://x"}`}}},
		{"extra blank lines", "\n\n\r\n\rdata: a\n\n\n\n", []sseEvent{{"", "a"}}},
		{"multibyte UTF-8", "data: héllo 世界 🌊\n\ndata: ñ\n\n", []sseEvent{{"", "héllo 世界 🌊"}, {"", "ñ"}}},
		{"empty input", "", nil},
	} {
		for rname, rd := range sseReaders(tc.in) {
			t.Run(tc.name+"/"+rname, func(t *testing.T) {
				got, err := sseReadAll(rd())
				if err != io.EOF {
					t.Fatalf("ended with %v, want io.EOF", err)
				}
				if len(got) != len(tc.want) {
					t.Fatalf("got %q, want %q", got, tc.want)
				}
				for i := range got {
					if got[i] != tc.want[i] {
						t.Errorf("event %d: %q, want %q", i, got[i], tc.want[i])
					}
				}
			})
		}
	}
}

// Every cut position of a CRLF-framed stream with multibyte text gives the
// same events: no cut turns CR|LF into two line ends or splits a character.
func TestSSEReaderEveryCut(t *testing.T) {
	in := "data: {\"t\":\"日本語 ü\"}\r\n\r\ndata: a\r\ndata: é\r\n\r\n: c\r\n\r\ndata: [DONE]\r\n\r\n"
	want := []sseEvent{{"", `{"t":"日本語 ü"}`}, {"", "a\né"}, {"", "[DONE]"}}
	for cut := 1; cut < len(in); cut++ {
		for _, cuts := range [][]int{{cut}, {cut, cut + 1}, sseEvery(len(in), cut)} {
			got, err := sseReadAll(&sseSplitReader{data: []byte(in), cuts: cuts})
			if err != io.EOF || len(got) != len(want) {
				t.Fatalf("cuts %v: %q, %v", cuts, got, err)
			}
			for i := range want {
				if got[i] != want[i] {
					t.Fatalf("cuts %v: event %d is %q, want %q", cuts, i, got[i], want[i])
				}
			}
		}
	}
}

func TestSSEReaderFixturesOneByte(t *testing.T) {
	for _, name := range []string{"chat-stream-text-include-usage.sse", "chat-stream-tool-call-include-usage.sse", "chat-stream-refusal.sse", "chat-stream-finish-length.sse"} {
		t.Run(name, func(t *testing.T) {
			raw := classifyFixture(t, name)
			whole, err1 := sseReadAll(bytes.NewReader(raw))
			slow, err2 := sseReadAll(iotest.OneByteReader(bytes.NewReader(raw)))
			if err1 != io.EOF || err2 != io.EOF {
				t.Fatal(err1, err2)
			}
			wantEvents := bytes.Count(raw, []byte("\n\ndata: ")) + 1
			if len(whole) != wantEvents || len(slow) != wantEvents {
				t.Fatalf("%d and %d events, want %d", len(whole), len(slow), wantEvents)
			}
			for i := range whole {
				if whole[i] != slow[i] {
					t.Fatalf("event %d differs between whole and one-byte reads", i)
				}
			}
			if whole[len(whole)-1].Data != "[DONE]" {
				t.Errorf("last event %q", whole[len(whole)-1].Data)
			}
		})
	}
}

// sseByteReader is an endless run of one byte.
type sseByteReader byte

func (b sseByteReader) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(b)
	}
	return len(p), nil
}

func TestSSEReaderLongLines(t *testing.T) {
	t.Run("16 MB line", func(t *testing.T) {
		const n = 16 << 20
		r := io.MultiReader(strings.NewReader("data: "), io.LimitReader(sseByteReader('a'), n), strings.NewReader("\n\ndata: after\n\n"))
		got, err := sseReadAll(r)
		if err != io.EOF || len(got) != 2 {
			t.Fatalf("%d events, %v", len(got), err)
		}
		if len(got[0].Data) != n || strings.Trim(got[0].Data, "a") != "" || got[1].Data != "after" {
			t.Errorf("first event of %d bytes, second %q", len(got[0].Data), got[1].Data)
		}
	})
	t.Run("over the limit", func(t *testing.T) {
		r := io.MultiReader(strings.NewReader("data: "), io.LimitReader(sseByteReader('a'), MaxSSELine), strings.NewReader("\n\n"))
		_, err := sseReadAll(r)
		if !errors.Is(err, ErrSSELineTooLong) {
			t.Fatalf("got %v, want ErrSSELineTooLong", err)
		}
	})
}

func TestSSEReaderPassesReadErrors(t *testing.T) {
	boom := errors.New("connection reset")
	got, err := sseReadAll(io.MultiReader(strings.NewReader("data: a\n\ndata: partial"), iotest.ErrReader(boom)))
	if !errors.Is(err, boom) {
		t.Fatalf("got %v, want the read error", err)
	}
	if len(got) != 1 || got[0].Data != "a" {
		t.Errorf("events before the error: %q", got)
	}
	// A timeout on the second read is an error, not a clean end.
	_, err = sseReadAll(iotest.TimeoutReader(strings.NewReader("data: a\n\n")))
	if !errors.Is(err, iotest.ErrTimeout) {
		t.Errorf("got %v, want iotest.ErrTimeout", err)
	}
}

// chunkedSource returns one of its parts per Read, as a vendor's body does
// with what arrived together.
type chunkedSource struct{ parts []string }

func (c *chunkedSource) Read(p []byte) (int, error) {
	if len(c.parts) == 0 {
		return 0, io.EOF
	}
	n := copy(p, c.parts[0])
	if c.parts[0] = c.parts[0][n:]; c.parts[0] == "" {
		c.parts = c.parts[1:]
	}
	return n, nil
}

// The wait hook runs before each read of the source and not while events
// a read brought are still in the buffer: a relay flushing in it sends
// events that came together at once, and never holds one back while the
// reader waits for the vendor.
func TestSSEReaderCallsBeforeWaitOnlyAheadOfReads(t *testing.T) {
	src := &chunkedSource{parts: []string{"data: a\n\ndata: b\n\ndata: c\n\n", "data: d\n\n"}}
	r := NewSSEReader(src)
	waits := 0
	r.BeforeWait(func() { waits++ })
	var got []string
	var at []int // waits before each event was returned
	for {
		ev, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, string(ev.Data))
		at = append(at, waits)
	}
	if strings.Join(got, ",") != "a,b,c,d" {
		t.Fatalf("events %q", got)
	}
	// a, b and c came in one read: one wait before a, none before b or c;
	// d needed a second read.
	if fmt.Sprint(at) != "[1 1 1 2]" {
		t.Fatalf("waits before each event %v, want [1 1 1 2]", at)
	}
	if waits != 3 { // and one more read found the end
		t.Fatalf("%d waits in all, want 3", waits)
	}
	r2 := NewSSEReader(&chunkedSource{parts: []string{"data: x\n\n"}})
	r2.BeforeWait(func() { t.Fatal("a hook taken back with nil still ran") })
	r2.BeforeWait(nil)
	if ev, err := r2.Next(); err != nil || string(ev.Data) != "x" {
		t.Fatalf("%q %v", ev.Data, err)
	}
}
