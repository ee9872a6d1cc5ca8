package adapter

import (
	"bytes"
	"errors"
	"net/http"
	"testing"
)

// openaiSSE replays an event stream, flushing after every event.
func openaiSSE(stream []byte) func(http.ResponseWriter, *http.Request) {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for _, ev := range bytes.SplitAfter(stream, []byte("\n\n")) {
			w.Write(ev)
			w.(http.Flusher).Flush()
		}
	}
}

func openaiAsError(t testing.TB, err error) *Error {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("%v (%T) is not an *Error", err, err)
	}
	return e
}
