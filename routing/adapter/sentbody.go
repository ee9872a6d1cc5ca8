package adapter

import (
	"context"
	"errors"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
)

// newUpstreamRequest builds a request to a vendor whose body lets go of its
// bytes once they are sent. net/http keeps a request, and so its body,
// until the response has been read to its end, which for a stream is its
// whole life: with bytes.Reader a thousand open streams of a coding agent's
// 100 KB prompt would hold 100 MB of request bodies nobody reads again.
// The body stays rewindable (GetBody) for net/http's own retry of a
// request a reused connection dropped, until release is called: call it
// once the round trip has returned, when net/http no longer rewinds.
func newUpstreamRequest(ctx context.Context, method, url string, body []byte) (req *http.Request, release func(), err error) {
	if body == nil {
		req, err = http.NewRequestWithContext(ctx, method, url, nil)
		return req, func() {}, err
	}
	req, err = http.NewRequestWithContext(ctx, method, url, http.NoBody)
	if err != nil || len(body) == 0 {
		return req, func() {}, err
	}
	var kept atomic.Pointer[[]byte]
	kept.Store(&body)
	req.ContentLength = int64(len(body))
	req.Body = &sentBody{b: body}
	req.GetBody = func() (io.ReadCloser, error) {
		b := kept.Load()
		if b == nil {
			return nil, errBodyReleased
		}
		return &sentBody{b: *b}, nil
	}
	return req, func() { kept.Store(nil) }, nil
}

var errBodyReleased = errors.New("the upstream request's body was already released")

// sentBody reads its bytes once and drops them as the last is read, or
// when closed. net/http reads it on one goroutine and may close it on
// another.
type sentBody struct {
	mu sync.Mutex
	b  []byte
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
