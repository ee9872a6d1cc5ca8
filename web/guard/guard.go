// Package guard bounds what a client can hold on the server before it has
// sent a whole request: a read deadline on request headers and bodies, a cap
// on the requests per client address that are still arriving, and a cap on
// the open connections per client address.
//
// The read deadline is the http.Server's own ReadTimeout: headers and body
// together must arrive within it, counted from the request's first byte.
// It does not bound the answer: when the body has been read to its end (at
// once for a request without one) net/http starts its background read,
// which watches for the client going away, and clears the connection's read
// deadline first (net/http/server.go, connReader.startBackgroundRead), so a
// long stream is never cut and its context never cancelled by it. The
// hazard is the other way round, and this package avoids it: a handler
// that sets a read deadline itself (http.ResponseController.SetReadDeadline)
// after the background read started arms it, and the request's context is
// cancelled when it fires (golang/go#70834). TestLongStreamNotCutByReadDeadline
// checks this on every toolchain.
//
// Handler adds what ReadTimeout alone does not give: a body that missed the
// deadline is answered 408 (not whatever the handler made of a read error),
// an unread body is drained under the deadline before the answer, and the
// per-address cap on requests whose body is still arriving.
//
// Everything here works on the TCP peer's address: behind a reverse proxy
// or a load balancer every request comes from the proxy's address, and the
// per-address caps must then be raised or switched off (0).
package guard

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Limits are the slow-client settings of one server. The zero value limits
// nothing (and keeps a 10 s header timeout).
type Limits struct {
	// ReadTimeout is how long a request's headers and body together may
	// take to arrive, from its first byte. 0: no deadline on bodies.
	ReadTimeout time.Duration
	// ConnsPerIP caps the open connections from one client address; one
	// more is answered 429 and closed. 0: unlimited.
	ConnsPerIP int
	// PendingPerIP caps the requests from one client address whose body
	// is still arriving (from the end of the headers until the body has
	// been read, or until the handler answered without reading it and the
	// rest was drained). This is the unauthenticated phase of every route:
	// callers, admin tokens and console sessions are only checked once the
	// headers are in, and the body (login form, JSON) arrives before or
	// right after that check. A request over the cap waits PendingWait for
	// a slot, then is answered 429 with Retry-After. 0: unlimited.
	PendingPerIP int
	// PendingWait is how long a request over PendingPerIP waits for a slot
	// before it is refused (default 250 ms): a burst of fast requests frees
	// its slots within milliseconds, a slow client holds one for up to
	// ReadTimeout.
	PendingWait time.Duration
	// IdleTimeout closes keep-alive connections idle this long (default
	// DefaultIdleTimeout).
	IdleTimeout time.Duration
	// MaxConns caps the open connections of the instance (Serve, Conns);
	// 0: no instance-wide cap. MaxIdleConns caps how many of them may be
	// idle (0: three quarters of MaxConns; the rest is headroom for
	// connections carrying requests), IdlePerIP how many idle ones one
	// client address may hold (0: unlimited). The oldest idle connection
	// is closed first.
	MaxConns, MaxIdleConns, IdlePerIP int
}

// DefaultIdleTimeout closes idle keep-alive connections well before the
// 120 s net/http would keep them: an idle connection costs a file
// descriptor and buffers and gives nothing.
const DefaultIdleTimeout = 30 * time.Second

// DefaultHeaderTimeout bounds request headers when ReadTimeout is 0.
const DefaultHeaderTimeout = 10 * time.Second

// drainLimit is how much of an unread body is read before the answer so the
// connection can be reused; net/http uses the same 256 KB.
const drainLimit = 256 << 10

// Server returns an http.Server serving h behind Handler, with the header
// and read timeouts set. Serve it on Listener(ln) for the connection cap.
func (l Limits) Server(h http.Handler) *http.Server {
	header := l.ReadTimeout
	if header <= 0 {
		header = DefaultHeaderTimeout
	}
	idle := l.IdleTimeout
	if idle <= 0 {
		idle = DefaultIdleTimeout
	}
	return &http.Server{
		Handler:           l.Handler(h),
		ReadHeaderTimeout: header,
		ReadTimeout:       max(l.ReadTimeout, 0),
		IdleTimeout:       idle,
	}
}

// Handler wraps next: it holds a per-address slot while a request's body
// arrives, drains a body next did not read before the answer goes out, and
// answers 408 (closing the connection) when the body did not arrive in
// time, whatever next would have answered. It never sets a read deadline
// itself (see the package comment).
func (l Limits) Handler(next http.Handler) http.Handler {
	wait := l.PendingWait
	if wait <= 0 {
		wait = 250 * time.Millisecond
	}
	return &guard{next: next, timeout: l.ReadTimeout, wait: wait, pending: newPerIP(l.PendingPerIP)}
}

type guard struct {
	next    http.Handler
	timeout time.Duration
	wait    time.Duration
	pending *perIP
}

func (g *guard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Body == nil || r.Body == http.NoBody {
		g.next.ServeHTTP(w, r) // nothing more arrives
		return
	}
	release, ok := g.pending.acquire(r.Context(), ClientIP(r.RemoteAddr), g.wait)
	if !ok {
		Refuse(w, r.URL.Path, http.StatusTooManyRequests, "too_many_pending_requests",
			"too many requests from your address are still sending their body; retry shortly")
		// The connection closes after the answer; without this net/http
		// would first read what is left of the body, for up to the read
		// timeout. (No background read runs yet: the body is unread.)
		_ = http.NewResponseController(w).SetReadDeadline(time.Now())
		return
	}
	b := &body{src: r.Body, release: release, timeout: g.timeout, size: r.ContentLength,
		expect: strings.EqualFold(r.Header.Get("Expect"), "100-continue")}
	gw := &writer{ResponseWriter: w, b: b, path: r.URL.Path}
	// The handler gets a shallow copy: net/http's own request keeps its
	// body type, which its end-of-request bookkeeping relies on.
	r2 := r.WithContext(r.Context())
	r2.Body = b
	defer func() {
		b.settle()
		b.release()
		if r2.MultipartForm != nil && r2.MultipartForm != r.MultipartForm {
			_ = r2.MultipartForm.RemoveAll()
		}
	}()
	g.next.ServeHTTP(gw, r2)
}

// TimeoutError is the error a request body's Read returns when the body did
// not arrive within the read timeout. It wraps os.ErrDeadlineExceeded.
type TimeoutError struct {
	After time.Duration
	Err   error
}

func (e *TimeoutError) Error() string {
	return "the request body did not arrive within " + e.After.String()
}

// Unwrap returns the network error.
func (e *TimeoutError) Unwrap() error { return e.Err }

// Timeout reports true (net.Error).
func (e *TimeoutError) Timeout() bool { return true }

// body watches a request body: its end frees the pending slot; a deadline
// hit is remembered so the answer becomes 408.
type body struct {
	src      io.ReadCloser
	release  func()
	timeout  time.Duration
	size     int64 // Content-Length, -1 when unknown
	expect   bool  // Expect: 100-continue
	n        atomic.Int64
	readOnce atomic.Bool
	ended    atomic.Bool // EOF seen
	failed   atomic.Bool // a read error other than EOF
	timedOut atomic.Bool
}

func (b *body) Read(p []byte) (int, error) {
	b.readOnce.Store(true)
	return b.read(p, true)
}

// read reads from the body; a deadline hit while the handler reads turns
// the answer into a 408, one while the guard drains keeps the handler's.
func (b *body) read(p []byte, handler bool) (int, error) {
	n, err := b.src.Read(p)
	b.n.Add(int64(n))
	switch {
	case err == nil:
	case err == io.EOF:
		b.end()
	case errors.Is(err, os.ErrDeadlineExceeded):
		b.failed.Store(true)
		if handler {
			b.timedOut.Store(true)
		}
		b.release()
		err = &TimeoutError{After: b.timeout, Err: err}
	default:
		b.failed.Store(true) // the client left, or sent a broken body
		b.release()
	}
	return n, err
}

// drain reads the body for the guard itself.
type drain struct{ b *body }

func (d drain) Read(p []byte) (int, error) { return d.b.read(p, false) }

func (b *body) Close() error { return b.src.Close() }

// end runs once the body has been read to its end.
func (b *body) end() {
	if !b.ended.Swap(true) {
		b.release()
	}
}

// settle finishes a body the handler did not read to its end, before the
// answer goes out, the way net/http would right after: up to 256 KB are
// read (under the deadline, in the pending slot); a larger or endless rest
// is left, and net/http closes the connection after the answer. A client
// that asked for 100-continue and was never told to send is not read.
func (b *body) settle() {
	if b.ended.Load() || b.failed.Load() {
		return
	}
	if b.expect && !b.readOnce.Load() {
		return
	}
	if b.size >= 0 && b.size-b.n.Load() > drainLimit {
		return
	}
	_, _ = io.CopyN(io.Discard, drain{b}, drainLimit+1)
}

// writer replaces the handler's answer with a 408 when the request body
// did not arrive in time, and settles the body before the answer starts.
type writer struct {
	http.ResponseWriter
	b       *body
	path    string
	wrote   bool
	swallow bool
}

func (w *writer) WriteHeader(code int) {
	if w.swallow {
		return
	}
	if !w.wrote && code >= 200 {
		w.wrote = true
		w.b.settle()
		if w.b.timedOut.Load() {
			w.swallow = true
			Refuse(w.ResponseWriter, w.path, http.StatusRequestTimeout, "request_timeout",
				"the request body did not arrive within "+w.b.timeout.String()+"; send requests faster")
			return
		}
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *writer) Write(p []byte) (int, error) {
	if !w.wrote {
		w.WriteHeader(http.StatusOK)
	}
	if w.swallow {
		return len(p), nil
	}
	return w.ResponseWriter.Write(p)
}

// FlushError flushes through http.ResponseController.
func (w *writer) FlushError() error {
	if !w.wrote {
		w.WriteHeader(http.StatusOK)
	}
	if w.swallow {
		return nil
	}
	return http.NewResponseController(w.ResponseWriter).Flush()
}

// Flush implements http.Flusher.
func (w *writer) Flush() { _ = w.FlushError() }

// Unwrap lets http.ResponseController reach the connection.
func (w *writer) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// Refuse answers a request the guard turned away, in the error shape of
// the path's audience (JSON for /v1 and /admin/api, text otherwise), and
// closes the connection after the answer. X-Request-Id is kept.
func Refuse(w http.ResponseWriter, path string, status int, code, msg string) {
	h := w.Header()
	rid := h.Get("X-Request-Id")
	clear(h)
	if rid != "" {
		h.Set("X-Request-Id", rid)
	}
	h.Set("Connection", "close")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "no-store")
	if status == http.StatusTooManyRequests || status == http.StatusServiceUnavailable {
		h.Set("Retry-After", "1")
	}
	var b []byte
	if isAPI(path) {
		typ := "invalid_request_error"
		if status == http.StatusTooManyRequests {
			typ = "rate_limit_error"
		}
		type apiError struct {
			Message string  `json:"message"`
			Type    string  `json:"type"`
			Code    string  `json:"code"`
			Param   *string `json:"param"`
		}
		b, _ = json.Marshal(map[string]apiError{"error": {Message: msg, Type: typ, Code: code}})
		h.Set("Content-Type", "application/json")
	} else {
		b = []byte(msg + "\n")
		h.Set("Content-Type", "text/plain; charset=utf-8")
	}
	h.Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

func isAPI(path string) bool {
	return path == "/v1" || strings.HasPrefix(path, "/v1/") || path == "/admin/api" || strings.HasPrefix(path, "/admin/api/")
}

// ClientIP is the address part of a RemoteAddr ("ip:port").
func ClientIP(remoteAddr string) string {
	host, _, err := net.SplitHostPort(remoteAddr)
	if err != nil {
		return remoteAddr
	}
	return host
}

// perIP is a counting semaphore per client address.
type perIP struct {
	max int
	mu  sync.Mutex
	m   map[string]*ipSlots
}

type ipSlots struct {
	sem   chan struct{}
	users int // holders and waiters; the entry goes when it drops to 0
}

func newPerIP(limit int) *perIP {
	return &perIP{max: limit, m: map[string]*ipSlots{}}
}

// acquire takes a slot for ip, waiting up to wait (and while ctx lives)
// when all are taken. The release function is safe to call more than once.
func (p *perIP) acquire(ctx context.Context, ip string, wait time.Duration) (func(), bool) {
	if p.max <= 0 {
		return func() {}, true
	}
	p.mu.Lock()
	s := p.m[ip]
	if s == nil {
		s = &ipSlots{sem: make(chan struct{}, p.max)}
		p.m[ip] = s
	}
	s.users++
	p.mu.Unlock()
	ok := false
	select {
	case s.sem <- struct{}{}:
		ok = true
	default:
		if wait > 0 {
			t := time.NewTimer(wait)
			select {
			case s.sem <- struct{}{}:
				ok = true
			case <-t.C:
			case <-ctx.Done():
			}
			t.Stop()
		}
	}
	if !ok {
		p.leave(ip, s)
		return nil, false
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			<-s.sem
			p.leave(ip, s)
		})
	}, true
}

func (p *perIP) leave(ip string, s *ipSlots) {
	p.mu.Lock()
	s.users--
	if s.users == 0 {
		delete(p.m, ip)
	}
	p.mu.Unlock()
}

// held reports the slots ip holds (tests).
func (p *perIP) held(ip string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if s := p.m[ip]; s != nil {
		return len(s.sem)
	}
	return 0
}
