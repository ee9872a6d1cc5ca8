package gateway_test

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"switchyard/e2e/fakevendor"
	"switchyard/store"
	"switchyard/web/gateway/gatewaytest"
	"switchyard/web/guard"
	"switchyard/web/webtest"
)

// guarded serves the instance's handler the way cmd/switchyard does
// (guard.Limits.Server on guard.Limits.Listener) on a real socket, and
// returns its address.
func guarded(t *testing.T, e *gatewaytest.Env, l guard.Limits) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := l.Server(e.GW.Server.Echo)
	go func() { _ = srv.Serve(l.Listener(ln)) }()
	t.Cleanup(func() { _ = srv.Close() })
	return ln.Addr().String()
}

// slowSeen is what a slow client saw.
type slowSeen struct {
	Status  int
	Raw     string
	Elapsed time.Duration // until the server closed the connection
}

// RequestID is the answer's X-Request-Id.
func (s slowSeen) RequestID() string {
	res, err := http.ReadResponse(bufio.NewReader(strings.NewReader(s.Raw)), nil)
	if err != nil {
		return ""
	}
	return res.Header.Get("X-Request-Id")
}

// slowPost announces a 100 kB body and sends it one byte every 100 ms from
// the local address from, reading until the server closes the connection
// (at most 30 s).
func slowPost(t *testing.T, addr, from, path string, hdr ...string) slowSeen {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Error(err)
		return slowSeen{}
	}
	defer c.Close()
	start := time.Now()
	head := "POST " + path + " HTTP/1.1\r\nHost: gateway.test\r\nContent-Length: 100000\r\n"
	for i := 0; i+1 < len(hdr); i += 2 {
		head += hdr[i] + ": " + hdr[i+1] + "\r\n"
	}
	if _, err := io.WriteString(c, head+"\r\n"); err != nil {
		t.Error(err)
		return slowSeen{}
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tk := time.NewTicker(100 * time.Millisecond)
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
	raw, _ := io.ReadAll(c)
	close(stop)
	wg.Wait()
	s := slowSeen{Raw: string(raw), Elapsed: time.Since(start)}
	if f := strings.Fields(s.Raw); len(f) > 1 {
		s.Status, _ = strconv.Atoi(f[1])
	}
	return s
}

// Before the guard, a client sending its body a byte at a time held its
// connection for as long as it liked, on every route and before any
// authentication. Now the body must arrive within the read timeout (1 s
// here): the connection is answered and closed within it.
func TestSlowBodyCutWithinDeadline(t *testing.T) {
	e := gatewaytest.New(t)
	key := e.Simple()
	token, _, err := e.Store.CreateAdminToken(context.Background(), "ci", store.RoleAdmin, "test")
	if err != nil {
		t.Fatal(err)
	}
	addr := guarded(t, e, guard.Limits{ReadTimeout: time.Second})
	for _, tc := range []struct {
		name, path string
		hdr        []string
		status     int
	}{
		{"data plane, caller key", "/v1/chat/completions", []string{"Authorization", "Bearer " + key, "Content-Type", "application/json"}, http.StatusRequestTimeout},
		{"data plane, no key", "/v1/chat/completions", nil, http.StatusUnauthorized},
		{"console login", "/login", []string{"Content-Type", "application/x-www-form-urlencoded"}, http.StatusRequestTimeout},
		{"admin API, token", "/admin/api/providers", []string{"Authorization", "Bearer " + token, "Content-Type", "application/json"}, http.StatusRequestTimeout},
		{"admin API, no token", "/admin/api/providers", []string{"Content-Type", "application/json"}, http.StatusUnauthorized},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := slowPost(t, addr, "127.0.0.1", tc.path, tc.hdr...)
			if s.Status != tc.status {
				t.Fatalf("status %d, want %d:\n%.600s", s.Status, tc.status, s.Raw)
			}
			if s.Elapsed > 2500*time.Millisecond {
				t.Fatalf("the slow body held the connection %s against a 1 s read timeout", s.Elapsed)
			}
		})
	}
	// The caller's request is in the call log as what it was.
	s := slowPost(t, addr, "127.0.0.1", "/v1/chat/completions", "Authorization", "Bearer "+key)
	if r := waitRow(t, e.Store.DB(), s.RequestID()); r.HTTP != http.StatusRequestTimeout || r.Code.String != "request_timeout" {
		t.Fatalf("call-log row: http %d code %q, want 408 request_timeout", r.HTTP, r.Code.String)
	}
}

// A stream that lasts longer than the read timeout (about 3 s against 1 s)
// runs to its end: the deadline covers the request, not the answer.
func TestLongStreamNotCutByReadDeadline(t *testing.T) {
	e := gatewaytest.New(t)
	key := e.Simple()
	e.Fake.SetRules(fakevendor.Rule{Model: "fake-small", Fault: fakevendor.Fault{InterChunkDelay: 600 * time.Millisecond, ReplyChunks: 6}})
	addr := guarded(t, e, guard.Limits{ReadTimeout: time.Second, PendingPerIP: 4, ConnsPerIP: 8})
	req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/v1/chat/completions",
		strings.NewReader(`{"model":"standard","stream":true,"messages":[{"role":"user","content":"hi"}]}`))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	start := time.Now()
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(res.Body)
	res.Body.Close()
	took := time.Since(start)
	if err != nil || res.StatusCode != http.StatusOK || !strings.HasSuffix(string(b), "data: [DONE]\n\n") || strings.Contains(string(b), `"error"`) {
		t.Fatalf("the stream did not end cleanly after %s (status %d, err %v):\n%s", took, res.StatusCode, err, b)
	}
	if took < 2*time.Second {
		t.Fatalf("the stream took %s, not clearly longer than the 1 s read timeout: the test proves nothing", took)
	}
	if r := waitRow(t, e.Store.DB(), res.Header.Get("X-Request-Id")); r.Status.String != "ok" {
		t.Fatalf("call-log row status %q, want ok", r.Status.String)
	}
}

// One address may have only so many requests whose body is still arriving:
// the next is refused at once with 429 and Retry-After, in the data plane's
// error shape, while other addresses are served.
func TestPerIPUnauthenticatedCap(t *testing.T) {
	e := gatewaytest.New(t)
	key := e.Simple()
	addr := guarded(t, e, guard.Limits{ReadTimeout: 2 * time.Second, PendingPerIP: 2, PendingWait: 50 * time.Millisecond})
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() { defer wg.Done(); slowPost(t, addr, "127.0.0.2", "/v1/chat/completions") }()
	}
	time.Sleep(500 * time.Millisecond)
	start := time.Now()
	s := slowPost(t, addr, "127.0.0.2", "/v1/chat/completions", "Authorization", "Bearer "+key)
	if s.Status != http.StatusTooManyRequests || !strings.Contains(s.Raw, "Retry-After: 1") || !strings.Contains(s.Raw, `"type":"rate_limit_error"`) {
		t.Fatalf("a third pending request from one address: want 429 rate_limit_error with Retry-After, got:\n%.600s", s.Raw)
	}
	if time.Since(start) > 1500*time.Millisecond { // answered and closed at once, not at the read timeout
		t.Fatalf("the refusal took %s", time.Since(start))
	}
	if res, b := plainChat(t, "http://"+addr, key); res.StatusCode != http.StatusOK {
		t.Fatalf("another address got %d: %s", res.StatusCode, b)
	}
	wg.Wait()
}

func plainChat(t *testing.T, base, key string) (*http.Response, []byte) {
	t.Helper()
	res := send(t, base, key, "/v1/chat/completions", hello)
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res, b
}

// While 16 clients keep sending bodies a byte at a time (reconnecting when
// cut) on the data plane, the login form and the admin API from one
// address, normal requests from another keep being served — and every slow
// connection is cut at the read deadline. No timing figures are asserted
// for the normal requests, only that they succeed.
func TestNormalTrafficWhileSlowClientsAttack(t *testing.T) {
	e := gatewaytest.New(t)
	key := e.Simple()
	addr := guarded(t, e, guard.Limits{ReadTimeout: time.Second, PendingPerIP: 64, ConnsPerIP: 2048})
	paths := []struct {
		path string
		hdr  []string
	}{
		{"/v1/chat/completions", nil},
		{"/v1/chat/completions", []string{"Authorization", "Bearer " + key}},
		{"/login", []string{"Content-Type", "application/x-www-form-urlencoded"}},
		{"/admin/api/providers", nil},
	}
	stop := make(chan struct{})
	var (
		wg      sync.WaitGroup
		cut     atomic.Int64
		longest atomic.Int64
	)
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p := paths[i%len(paths)]
			for {
				select {
				case <-stop:
					return
				default:
				}
				s := slowPost(t, addr, "127.0.0.2", p.path, p.hdr...)
				cut.Add(1)
				for {
					old := longest.Load()
					if int64(s.Elapsed) <= old || longest.CompareAndSwap(old, int64(s.Elapsed)) {
						break
					}
				}
			}
		}()
	}
	time.Sleep(300 * time.Millisecond)
	var served int
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		res, b := plainChat(t, "http://"+addr, key)
		if res.StatusCode != http.StatusOK {
			t.Fatalf("a normal request during the attack got %d: %s", res.StatusCode, b)
		}
		served++
	}
	close(stop)
	wg.Wait()
	if served == 0 || cut.Load() < 16 {
		t.Fatalf("served %d normal requests, %d slow connections cut", served, cut.Load())
	}
	if d := time.Duration(longest.Load()); d > 2500*time.Millisecond {
		t.Fatalf("a slow connection was held %s against a 1 s read timeout", d)
	}
}

// A 5 MB model is refused with a small 400 that does not repeat it, and
// the call log's row stays small.
func TestModelStringBounded(t *testing.T) {
	e := gatewaytest.New(t)
	key := e.Simple()
	model := strings.Repeat("m", 5<<20)
	for _, tc := range []struct{ path, body string }{
		{"/v1/chat/completions", `{"model":"` + model + `","messages":[{"role":"user","content":"hi"}]}`},
		{"/v1/embeddings", `{"model":"` + model + `","input":"hi"}`},
	} {
		res, b := post(t, e, key, tc.path, tc.body)
		if res.StatusCode != http.StatusBadRequest || len(b) > 1024 {
			t.Fatalf("%s: status %d, body of %d bytes: %.300s", tc.path, res.StatusCode, len(b), b)
		}
		if code, msg := errCode(t, b); code != "model_too_long" || !strings.Contains(msg, "at most 256 bytes") || !strings.Contains(string(b), `"type":"invalid_request_error"`) {
			t.Fatalf("%s: %s", tc.path, b)
		}
		rid := res.Header.Get("X-Request-Id")
		if r := waitRow(t, e.Store.DB(), rid); r.Code.String != "model_too_long" || r.HTTP != http.StatusBadRequest {
			t.Fatalf("%s: call-log row code %q http %d", tc.path, r.Code.String, r.HTTP)
		}
		var stored int
		if err := e.Store.DB().QueryRow(`SELECT coalesce(octet_length(requested_model), 0) FROM call_logs WHERE request_id = $1`, rid).Scan(&stored); err != nil || stored > 256 {
			t.Fatalf("%s: the row's requested_model is %d bytes (err %v)", tc.path, stored, err)
		}
	}
	// A model of 256 bytes is an ordinary unknown model: its 404 names it.
	res, b := post(t, e, key, "/v1/chat/completions", `{"model":"`+strings.Repeat("m", 256)+`","messages":[{"role":"user","content":"hi"}]}`)
	if code, _ := errCode(t, b); res.StatusCode != http.StatusNotFound || code != "model_not_found" {
		t.Fatalf("256-byte model: %d %s", res.StatusCode, b)
	}
}

// Caller strings that errors or logs repeat are cut and marked: there are no
// caller metadata headers in the call log (its caller-supplied text is the
// model, bounded above), so what is left is what error answers echo.
func TestCallerStringsBoundedInErrors(t *testing.T) {
	e := gatewaytest.New(t)
	key := e.Simple()
	long := strings.Repeat("p", 100_000)
	small := func(what string, status int, res *http.Response, b []byte) {
		t.Helper()
		// Either cut and marked, or not repeated at all.
		if res.StatusCode != status || len(b) > 2048 || (strings.Contains(string(b), "pppp") && !strings.Contains(string(b), "…[truncated]")) {
			t.Fatalf("%s: status %d (want %d), body of %d bytes: %.300s", what, res.StatusCode, status, len(b), b)
		}
	}
	token, _, err := e.Store.CreateAdminToken(context.Background(), "ci", store.RoleAdmin, "test")
	if err != nil {
		t.Fatal(err)
	}
	get := func(path, bearer string) (*http.Response, []byte) {
		req, _ := http.NewRequest(http.MethodGet, e.URL+path, nil)
		req.Header.Set("Authorization", "Bearer "+bearer)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res, b
	}
	res, b := get("/v1/"+long, key)
	small("unknown /v1 endpoint", http.StatusNotFound, res, b)
	res, b = get("/admin/api/"+long, token)
	small("unknown admin API path", http.StatusNotFound, res, b)
	res, b = get("/"+long, "")
	small("unknown console page", http.StatusNotFound, res, b)
	res, b = post(t, e, key, "/v1/chat/completions", `{"model":"standard","tool_choice":"`+long+`","messages":[{"role":"user","content":"hi"}]}`)
	small("unknown tool choice", http.StatusBadRequest, res, b)
	res, b = post(t, e, key, "/v1/chat/completions", `{"model":"standard","max_tokens":`+strings.Repeat("9", 100_000)+`,"messages":[{"role":"user","content":"hi"}]}`)
	small("huge number", http.StatusBadRequest, res, b)

	// A refused login repeats the username in its form, cut.
	c := webtest.LoginAt(t, e.Store, e.URL, "ops", store.RoleAdmin)
	lres, _, page := c.PostFormRaw("/login", url.Values{"username": {strings.Repeat("u", 1<<20)}, "password": {"wrong-password"}})
	if lres.StatusCode != http.StatusUnauthorized || len(page) > 64<<10 || !strings.Contains(page, "…[truncated]") {
		t.Fatalf("refused login: status %d, page of %d bytes", lres.StatusCode, len(page))
	}
}
