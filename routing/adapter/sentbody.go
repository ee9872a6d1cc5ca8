package adapter

import (
	"context"
	"errors"
	"io"
	"net/http"
	"sync"
)

// newUpstreamRequest builds a request to a vendor whose body lets go of its
// bytes once they are sent. net/http keeps a request, and so its body,
// until the response has been read to its end, which for a stream is its
// whole life: with bytes.Reader a thousand open streams of a coding agent's
// 100 KB prompt would hold 100 MB of request bodies nobody reads again.
// The body stays rewindable (GetBody) for net/http's own retry of a
// request a reused connection dropped, until sent.release is called: call
// it once the round trip has returned, when net/http no longer rewinds.
func newUpstreamRequest(ctx context.Context, method, url string, body []byte) (*http.Request, *sentBody, error) {
	if len(body) == 0 {
		var rd io.Reader
		if body != nil {
			rd = http.NoBody
		}
		req, err := http.NewRequestWithContext(ctx, method, url, rd)
		return req, nil, err
	}
	req, err := http.NewRequestWithContext(ctx, method, url, http.NoBody)
	if err != nil {
		return nil, nil, err
	}
	sent := &sentBody{b: body, whole: body}
	req.ContentLength = int64(len(body))
	req.Body = sent
	req.GetBody = sent.rewind
	return req, sent, nil
}

var errBodyReleased = errors.New("the upstream request's body was already released")

// sentBody reads its bytes once and drops them as the last is read, or
// when closed; the first one of a request also keeps the whole body for
// rewinds until released. net/http reads it on one goroutine and may
// close it on another.
type sentBody struct {
	mu    sync.Mutex
	b     []byte // what is left to read
	whole []byte // the body, for rewind; nil once released
}

func (s *sentBody) Read(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.b) == 0 {
		s.b = nil
		return 0, io.EOF
	}
	n := copy(p, s.b)
	s.b = s.b[n:]
	if len(s.b) == 0 {
		s.b = nil
	}
	return n, nil
}

func (s *sentBody) Close() error {
	s.mu.Lock()
	s.b = nil
	s.mu.Unlock()
	return nil
}

// rewind is the request's GetBody: the whole body again, to send anew.
func (s *sentBody) rewind() (io.ReadCloser, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.whole == nil {
		return nil, errBodyReleased
	}
	return &sentBody{b: s.whole}, nil
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
