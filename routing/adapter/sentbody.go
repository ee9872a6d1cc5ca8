package adapter

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptrace"
	"sync"
)

// newUpstreamRequest builds a request to a vendor whose body lets go of its
// bytes once they are sent. net/http keeps a request, and so its body,
// until the response has been read to its end, which for a stream is its
// whole life: a thousand open streams of a coding agent's 100 KB prompt
// would otherwise hold 100 MB of request bodies nobody reads again.
//
// The body is a bytes.Reader, a type net/http knows to be in memory, so the
// request's head and body leave in one write (the head of a body of any
// other type is flushed on its own first: a second write per request, and
// often a second read for the vendor). The request's trace (httptrace's
// WroteRequest) empties that reader once net/http has written it. The body
// stays rewindable (GetBody) for net/http's own retry of a request a reused
// connection dropped, and for redirects, until sent.release is called:
// call it once the round trip has returned, when net/http no longer
// rewinds.
func newUpstreamRequest(ctx context.Context, method, url string, body []byte) (*http.Request, *sentBody, error) {
	if len(body) == 0 {
		var rd io.Reader
		if body != nil {
			rd = http.NoBody
		}
		req, err := http.NewRequestWithContext(ctx, method, url, rd)
		return req, nil, err
	}
	sent := &sentBody{whole: body}
	sent.first.Reset(body)
	sent.sending = &sent.first
	sent.trace.WroteRequest = sent.wrote
	req, err := http.NewRequestWithContext(httptrace.WithClientTrace(ctx, &sent.trace), method, url, http.NoBody)
	if err != nil {
		return nil, nil, err
	}
	req.ContentLength = int64(len(body))
	req.Body = io.NopCloser(sent.sending) // net/http looks through NopCloser for the reader's type
	req.GetBody = sent.rewind
	return req, sent, nil
}

var errBodyReleased = errors.New("the upstream request's body was already released")

// sentBody is a vendor request's body: the reader being sent, emptied once
// written, and the whole body for rewinds until released. net/http writes
// the reader on one goroutine and asks for rewinds on another.
type sentBody struct {
	mu      sync.Mutex
	whole   []byte        // the body, for rewind; nil once released
	sending *bytes.Reader // the reader net/http is writing; nil once written
	first   bytes.Reader  // the first request's reader
	trace   httptrace.ClientTrace
}

// wrote is the trace's WroteRequest: net/http is done with the reader it
// wrote (whether or not the write succeeded; a retry rewinds).
func (s *sentBody) wrote(httptrace.WroteRequestInfo) {
	s.mu.Lock()
	if s.sending != nil {
		s.sending.Reset(nil)
		s.sending = nil
	}
	s.mu.Unlock()
}

// rewind is the request's GetBody: the whole body again, to send anew.
func (s *sentBody) rewind() (io.ReadCloser, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.whole == nil {
		return nil, errBodyReleased
	}
	s.sending = bytes.NewReader(s.whole)
	return io.NopCloser(s.sending), nil
}

// do sends req with client (nil: http.DefaultClient) and then ends the
// rewinds, which net/http no longer needs once the round trip has returned.
// s may be nil (a request without a body).
func (s *sentBody) do(client *http.Client, req *http.Request) (*http.Response, error) {
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	s.release()
	return resp, err
}

// release ends the rewinds; nil (no body) is a no-op.
func (s *sentBody) release() {
	if s == nil {
		return
	}
	s.mu.Lock()
	s.whole = nil
	s.mu.Unlock()
}
