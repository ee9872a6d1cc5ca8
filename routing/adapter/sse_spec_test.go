// SSE specification corner cases that sse.go once got wrong.
package adapter

import (
	"io"
	"strings"
	"testing"
)

// The WHATWG event-stream grammar allows one leading U+FEFF, which a parser
// must strip; otherwise "\uFEFFdata" reads as an unknown field and the first
// event is dropped.
func TestSSEReaderBugLeadingBOM(t *testing.T) {
	got, err := sseReadAll(strings.NewReader("\uFEFFdata: a\n\ndata: b\n\n"))
	if err != io.EOF || len(got) != 2 || got[0].Data != "a" {
		t.Fatalf("got %q, %v; want events a and b", got, err)
	}
}
