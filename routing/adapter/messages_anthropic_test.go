package adapter

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/google/go-cmp/cmp"
)

// The native stream passes a real capture's events on one by one, padded
// data lines trimmed, commits at the first text delta and reads usage and
// the stop reason; read a byte at a time it is the same.
func TestAnthropicNativeStream(t *testing.T) {
	raw := vendorFixture(t, "anthropic", "recorded-stream-tool-use.1.response.sse")
	for _, oneByte := range []bool{false, true} {
		var rd io.Reader = bytes.NewReader(raw)
		if oneByte {
			rd = iotest.OneByteReader(rd)
		}
		s := &anthropicNativeStream{ctx: context.Background(), body: io.NopCloser(rd), sse: NewSSEReader(rd), r: &ChatRequest{}}
		var out bytes.Buffer
		firstContent, finish := -1, ""
		for i := 0; ; i++ {
			c, err := s.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.Content && firstContent < 0 {
				firstContent = i
				if !strings.Contains(string(c.Data), "text_delta") {
					t.Fatalf("first content: %s", c.Data)
				}
			}
			if c.FinishReason != "" {
				finish = c.FinishReason
			}
			out.Write(c.Data)
		}
		if firstContent < 2 || finish != "tool_calls" {
			t.Fatalf("first content at %d, finish %q", firstContent, finish)
		}
		if u := s.Usage(); !u.Known || u.Completion == 0 || u.Prompt == 0 {
			t.Fatalf("usage: %+v", u)
		}
		// Every event of the capture, in order, with its JSON unchanged
		// but for the padding.
		var want, got []string
		for _, r := range []io.Reader{bytes.NewReader(raw), &out} {
			sse := NewSSEReader(r)
			var list []string
			for {
				ev, err := sse.Next()
				if err != nil {
					break
				}
				list = append(list, ev.Event+" "+string(bytes.TrimSpace(ev.Data)))
			}
			if want == nil {
				want = list
			} else {
				got = list
			}
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("events (-capture +passed on):\n%s", diff)
		}
	}
}

// An in-stream error event ends a native stream with its classified error.
func TestAnthropicNativeStreamError(t *testing.T) {
	raw := vendorFixture(t, "anthropic", "stream-error-overloaded.constructed.sse")
	s := &anthropicNativeStream{ctx: context.Background(), body: io.NopCloser(bytes.NewReader(raw)), sse: NewSSEReader(bytes.NewReader(raw)), r: &ChatRequest{}}
	for {
		_, err := s.Next()
		if err == nil {
			continue
		}
		if ClassOf(err) != ClassServer || errors.Is(err, io.EOF) {
			t.Fatalf("error %v (class %s)", err, ClassOf(err))
		}
		return
	}
}
