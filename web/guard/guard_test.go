package guard

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// serve runs h behind l on a real socket (Limits.Server on Limits.Listener)
// and returns its address.
func serve(t *testing.T, l Limits, h http.Handler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := l.Server(h)
	go func() { _ = srv.Serve(l.Listener(ln)) }()
	t.Cleanup(func() { _ = srv.Close() })
	return ln.Addr().String()
}

// slowResult is what a slow client saw.
type slowResult struct {
	Status  int
	Raw     string
	Answer  time.Duration // until the first byte of the answer
	Elapsed time.Duration // until the server closed the connection
}

// slowRequest sends head (request line and headers, announcing a body),
// then one body byte every interval, from the local address from, and
// reads until the server closes the connection (at most 30 s).
func slowRequest(t *testing.T, addr, from, head string, every time.Duration) slowResult {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	start := time.Now()
	if _, err := io.WriteString(c, head); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tk := time.NewTicker(every)
		defer tk.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tk.C:
				if _, err := c.Write([]byte("x")); err != nil {
					return
				}
			}
		}
	}()
	_ = c.SetReadDeadline(start.Add(30 * time.Second))
	var raw []byte
	var res slowResult
	buf := make([]byte, 4096)
	for {
		n, err := c.Read(buf)
		if n > 0 && len(raw) == 0 {
			res.Answer = time.Since(start)
		}
		raw = append(raw, buf[:n]...)
		if err != nil {
			break
		}
	}
	res.Raw, res.Elapsed = string(raw), time.Since(start)
	close(stop)
	wg.Wait()
	if f := strings.Fields(res.Raw); len(f) > 1 {
		res.Status, _ = strconv.Atoi(f[1])
	}
	return res
}

func slowHead(method, path string, extra ...string) string {
	return method + " " + path + " HTTP/1.1\r\nHost: test\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n" + strings.Join(extra, "") + "\r\n"
}

// reading answers 200 after reading the whole body, or 400 naming the error.
var reading = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	if _, err := io.ReadAll(r.Body); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	_, _ = io.WriteString(w, "ok")
})

func TestSlowBodyCutWithinDeadline(t *testing.T) {
	unauth := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "no key", http.StatusUnauthorized) // answers without reading
	})
	for _, tc := range []struct {
		name   string
		h      http.Handler
		path   string
		status int
	}{
		{"handler reads the body: 408 replaces its answer", reading, "/v1/chat/completions", http.StatusRequestTimeout},
		{"handler refuses without reading: its answer, then close", unauth, "/admin/api/providers", http.StatusUnauthorized},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr := serve(t, Limits{ReadTimeout: time.Second}, tc.h)
			res := slowRequest(t, addr, "127.0.0.1", slowHead("POST", tc.path), 100*time.Millisecond)
			if res.Status != tc.status {
				t.Fatalf("status %d, want %d; got:\n%s", res.Status, tc.status, res.Raw)
			}
			if res.Elapsed > 2500*time.Millisecond {
				t.Fatalf("the slow body held the connection %s; the read timeout is 1s", res.Elapsed)
			}
			if tc.status == http.StatusRequestTimeout && (!strings.Contains(res.Raw, `"code":"request_timeout"`) || !strings.Contains(res.Raw, "Connection: close")) {
				t.Fatalf("the 408 is not the API error shape with Connection: close:\n%s", res.Raw)
			}
		})
	}
}

// A request whose body arrived is not bound by the read timeout any more:
// a long answer streamed after it (here 3 s against a 1 s timeout) runs to
// its end with a live context, for POST and for bodiless GET requests.
func TestLongStreamNotCutByReadDeadline(t *testing.T) {
	cancelled := make(chan string, 4)
	stream := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := io.ReadAll(r.Body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		ctl := http.NewResponseController(w)
		for i := range 10 {
			if _, err := fmt.Fprintf(w, "data: %d\n\n", i); err != nil {
				return
			}
			_ = ctl.Flush()
			select {
			case <-r.Context().Done():
				cancelled <- r.Method + " " + context.Cause(r.Context()).Error()
				return
			case <-time.After(300 * time.Millisecond):
			}
		}
		_, _ = io.WriteString(w, "data: [DONE]\n\n")
	})
	addr := serve(t, Limits{ReadTimeout: time.Second, PendingPerIP: 4}, stream)
	for _, method := range []string{http.MethodPost, http.MethodGet} {
		var body io.Reader
		if method == http.MethodPost {
			body = strings.NewReader(`{"stream":true}`)
		}
		req, _ := http.NewRequest(method, "http://"+addr+"/v1/chat/completions", body)
		start := time.Now()
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(res.Body)
		res.Body.Close()
		if err != nil || !strings.HasSuffix(string(b), "data: [DONE]\n\n") {
			t.Fatalf("%s: the stream was cut after %s (err %v):\n%s", method, time.Since(start), err, b)
		}
		if time.Since(start) < 2*time.Second {
			t.Fatalf("%s: the stream took %s, not longer than the read timeout: the test proves nothing", method, time.Since(start))
		}
	}
	select {
	case c := <-cancelled:
		t.Fatalf("a request context was cancelled mid-stream: %s", c)
	default:
	}
}

func TestPerIPUnauthenticatedCap(t *testing.T) {
	l := Limits{ReadTimeout: 2 * time.Second, PendingPerIP: 2, PendingWait: 50 * time.Millisecond}
	addr := serve(t, l, reading)

	// Two slow clients from 127.0.0.2 hold their address's two slots.
	var wg sync.WaitGroup
	results := make([]slowResult, 2)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = slowRequest(t, addr, "127.0.0.2", slowHead("POST", "/login"), 100*time.Millisecond)
		}()
	}
	time.Sleep(400 * time.Millisecond)

	// A third request from that address is refused at once, in the
	// route's shape...
	res := slowRequest(t, addr, "127.0.0.2", slowHead("POST", "/v1/chat/completions"), 100*time.Millisecond)
	if res.Status != http.StatusTooManyRequests || !strings.Contains(res.Raw, "Retry-After: 1") || !strings.Contains(res.Raw, `"code":"too_many_pending_requests"`) {
		t.Fatalf("the third pending request from one address: want 429 with Retry-After, got:\n%s", res.Raw)
	}
	if res.Answer > time.Second || res.Elapsed > time.Second {
		t.Fatalf("the refusal took %s (connection closed after %s)", res.Answer, res.Elapsed)
	}
	// ...while another address is served.
	post, err := http.Post("http://"+addr+"/v1/chat/completions", "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	post.Body.Close()
	if post.StatusCode != http.StatusOK {
		t.Fatalf("another address got %d", post.StatusCode)
	}
	wg.Wait()
	for _, r := range results {
		if r.Status != http.StatusRequestTimeout {
			t.Fatalf("a slow client was not cut with 408:\n%s", r.Raw)
		}
	}
	// Cut clients give their slots back: the address is served again.
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.2")}}
	client := &http.Client{Transport: &http.Transport{DialContext: d.DialContext}}
	post, err = client.Post("http://"+addr+"/v1/chat/completions", "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	post.Body.Close()
	if post.StatusCode != http.StatusOK {
		t.Fatalf("after the slow clients were cut their address got %d", post.StatusCode)
	}
}

func TestPerIPConnectionCap(t *testing.T) {
	addr := serve(t, Limits{ReadTimeout: 5 * time.Second, ConnsPerIP: 2}, reading)
	dial := func(from string) net.Conn {
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}}
		c, err := d.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	get := func(c net.Conn) int {
		_ = c.SetDeadline(time.Now().Add(5 * time.Second))
		if _, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: test\r\n\r\n"); err != nil {
			return 0
		}
		res, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			return 0
		}
		res.Body.Close()
		return res.StatusCode
	}
	a, b := dial("127.0.0.2"), dial("127.0.0.2")
	if get(a) != 200 || get(b) != 200 {
		t.Fatal("the first two connections of an address were not served")
	}
	if s := get(dial("127.0.0.2")); s != http.StatusTooManyRequests {
		t.Fatalf("a third connection from one address: status %d, want 429", s)
	}
	if s := get(dial("127.0.0.3")); s != 200 {
		t.Fatalf("another address: status %d", s)
	}
	a.Close()
	deadline := time.Now().Add(3 * time.Second)
	for {
		if s := get(dial("127.0.0.2")); s == 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("a closed connection did not give its slot back")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestPerIPSlots(t *testing.T) {
	p := newPerIP(2)
	ctx := context.Background()
	r1, ok1 := p.acquire(ctx, "a", 0)
	_, ok2 := p.acquire(ctx, "a", 0)
	_, ok3 := p.acquire(ctx, "a", 0)
	_, okB := p.acquire(ctx, "b", 0)
	if !ok1 || !ok2 || ok3 || !okB {
		t.Fatalf("acquire: %v %v %v %v, want true true false true", ok1, ok2, ok3, okB)
	}
	// A waiter gets the slot released while it waits.
	go func() { time.Sleep(20 * time.Millisecond); r1(); r1() }() // twice: released once
	r4, ok4 := p.acquire(ctx, "a", 5*time.Second)
	if !ok4 || p.held("a") != 2 {
		t.Fatalf("waiter: ok %v, held %d", ok4, p.held("a"))
	}
	r4()
	if p.held("a") != 1 {
		t.Fatalf("held %d after a release, want 1", p.held("a"))
	}
	// A cancelled waiter gives up.
	r5, _ := p.acquire(ctx, "a", 0)
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, ok := p.acquire(cctx, "a", time.Hour); ok {
		t.Fatal("a cancelled waiter got a slot")
	}
	r5()
	if p.max = 0; true {
		if _, ok := p.acquire(ctx, "a", 0); !ok {
			t.Fatal("no cap refused")
		}
	}
}

func TestTimeoutErrorWrapsDeadline(t *testing.T) {
	var err error = &TimeoutError{After: time.Second, Err: &net.OpError{Op: "read", Err: errDeadline{}}}
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() || err.Error() != "the request body did not arrive within 1s" {
		t.Fatalf("TimeoutError: %v", err)
	}
}

type errDeadline struct{}

func (errDeadline) Error() string   { return "i/o timeout" }
func (errDeadline) Timeout() bool   { return true }
func (errDeadline) Temporary() bool { return true }

func TestClientIP(t *testing.T) {
	for in, want := range map[string]string{"127.0.0.1:5000": "127.0.0.1", "[::1]:80": "::1", "pipe": "pipe"} {
		if got := ClientIP(in); got != want {
			t.Errorf("ClientIP(%q) = %q, want %q", in, got, want)
		}
	}
}
