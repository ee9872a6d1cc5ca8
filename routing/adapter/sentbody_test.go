package adapter

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
	"time"
)

// A stream's upstream request body is garbage once sent, while the
// vendor's answer is still being read: net/http holds the request until
// the response body ends, and a thousand open streams of large prompts
// would otherwise each hold a copy nobody reads again. Every vendor's
// sender (openaiDo, vendorSend, bedrockSend) builds its request the same
// way; openaiDo stands for them here.
func TestStreamingRequestLetsGoOfItsBodyOnceSent(t *testing.T) {
	got := make(chan [32]byte, 1)
	finish := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- sha256.Sum256(b)
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, "data: {}\n\n")
		w.(http.Flusher).Flush()
		<-finish // the stream stays open
	}))
	defer srv.Close()
	defer close(finish)

	var collected atomic.Bool
	resp, want := sendCollectable(t, srv, &collected)
	defer resp.Body.Close()
	if sum := <-got; sum != want {
		t.Fatal("the vendor did not receive the body that was sent")
	}
	if _, err := resp.Body.Read(make([]byte, 64)); err != nil {
		t.Fatalf("reading the open stream: %v", err)
	}
	for deadline := time.Now().Add(5 * time.Second); !collected.Load(); {
		if time.Now().After(deadline) {
			t.Fatal("the sent body is still reachable while the stream is open")
		}
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
}

// sendCollectable sends a 256 KB body through openaiDo and returns the
// open response and the body's checksum; collected turns true once the
// body's memory is unreachable. It keeps no reference to the body itself.
func sendCollectable(t *testing.T, srv *httptest.Server, collected *atomic.Bool) (*http.Response, [32]byte) {
	body := bytes.Repeat([]byte(`{"role":"user","content":"0123456789abcdef"},`), 256<<10/44)
	runtime.AddCleanup(&body[0], func(b *atomic.Bool) { b.Store(true) }, collected)
	resp, e := openaiDo(context.Background(), Target{Client: srv.Client()}, http.MethodPost, srv.URL, body, "text/event-stream")
	if e != nil {
		t.Fatal(e)
	}
	return resp, sha256.Sum256(body)
}

// Until the round trip returns, the body rewinds for net/http's retries
// and redirects (a 307 sends it again, whole); after, it rewinds no more.
func TestUpstreamRequestRewindsUntilReleased(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/first" {
			http.Redirect(w, r, "/second", http.StatusTemporaryRedirect)
			return
		}
		b, _ := io.ReadAll(r.Body)
		_, _ = io.WriteString(w, strconv.Itoa(len(b)))
	}))
	defer srv.Close()
	body := bytes.Repeat([]byte("x"), 100<<10)
	req, sent, err := newUpstreamRequest(context.Background(), http.MethodPost, srv.URL+"/first", body)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := sent.do(srv.Client(), req)
	if err != nil {
		t.Fatal(err)
	}
	n, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(n) != strconv.Itoa(len(body)) || resp.Request.URL.Path != "/second" {
		t.Fatalf("after the redirect the vendor read %s bytes at %s, want %d", n, resp.Request.URL.Path, len(body))
	}
	if _, err := req.GetBody(); !errors.Is(err, errBodyReleased) {
		t.Fatalf("GetBody after release: %v, want errBodyReleased", err)
	}
}

// A request's head and a body that fits net/http's write buffer leave in
// one write: a body of a type net/http does not know to be in memory has
// its head flushed on its own first, a second write per request (and
// often a second read for the vendor). An empty or absent body is sent as
// none.
func TestUpstreamRequestLeavesInOneWrite(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		_, _ = io.WriteString(w, strconv.Itoa(len(b)))
	}))
	defer srv.Close()
	var writes atomic.Int64
	dialer := &net.Dialer{}
	client := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dialer.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &countingConn{Conn: c, writes: &writes}, nil
	}}}
	body := bytes.Repeat([]byte("x"), 1<<10)
	for i := range 2 { // a new connection, then a reused one
		before := writes.Load()
		resp, e := openaiDo(context.Background(), Target{Client: client}, http.MethodPost, srv.URL, body, "application/json")
		if e != nil {
			t.Fatal(e)
		}
		got, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(got) != strconv.Itoa(len(body)) {
			t.Fatalf("request %d: the vendor read %s bytes, want %d", i, got, len(body))
		}
		if n := writes.Load() - before; n != 1 {
			t.Fatalf("request %d left in %d writes, want 1", i, n)
		}
	}
	for _, b := range [][]byte{nil, {}} {
		req, sent, err := newUpstreamRequest(context.Background(), http.MethodPost, "http://vendor.test/x", b)
		sent.release()
		if err != nil || req.ContentLength != 0 || (req.Body != nil && req.Body != http.NoBody) {
			t.Fatalf("body %v: length %d, body %T, %v", b, req.ContentLength, req.Body, err)
		}
	}
}

// countingConn counts its writes.
type countingConn struct {
	net.Conn
	writes *atomic.Int64
}

func (c *countingConn) Write(p []byte) (int, error) {
	c.writes.Add(1)
	return c.Conn.Write(p)
}
