package guard

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestConnsCloseOldestIdleThenRefuse: at MaxConns a new connection closes
// the oldest idle one; a connection carrying a request is never closed;
// with none idle the new one is answered 503 and closed.
func TestConnsCloseOldestIdleThenRefuse(t *testing.T) {
	release := make(chan struct{})
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/block" {
			<-release
		}
		_, _ = io.WriteString(w, "ok")
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv, gln, conns := Limits{MaxConns: 3, MaxIdleConns: 3}.Serve(ln, h, nil, nil)
	go func() { _ = srv.Serve(gln) }()
	t.Cleanup(func() { close(release); _ = srv.Close() })
	addr := ln.Addr().String()
	dial := func() net.Conn {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	get := func(c net.Conn) int {
		_ = c.SetDeadline(time.Now().Add(5 * time.Second))
		if _, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
			return 0
		}
		res, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			return 0
		}
		res.Body.Close()
		return res.StatusCode
	}
	block := func(c net.Conn) {
		if _, err := io.WriteString(c, "GET /block HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
	}
	waitOpen := func(want, wantIdle int) {
		for range 200 {
			if open, idle := conns.Stats(); open == want && idle == wantIdle {
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
		open, idle := conns.Stats()
		t.Fatalf("open %d idle %d, want open %d", open, idle, want)
	}
	// Limits: three open, all of them may be idle. The server marks a
	// connection idle only after the client has read its answer, so each
	// step waits for that before the next connection: otherwise c2 could
	// turn idle before c1 and be the oldest.
	c1 := dial()
	if get(c1) != 200 {
		t.Fatal("c1")
	}
	waitOpen(1, 1)
	c2 := dial()
	if get(c2) != 200 {
		t.Fatal("c2")
	}
	waitOpen(2, 2)
	c3 := dial()
	block(c3) // active from now on
	waitOpen(3, 2)
	c4 := dial() // at the cap: c1, the oldest idle, is closed
	if get(c4) != 200 {
		t.Fatal("c4 was not served")
	}
	if get(c1) != 0 {
		t.Fatal("c1, the oldest idle connection, was not closed")
	}
	if conns.Closed(ClosedForNew) != 1 {
		t.Fatalf("closed for new: %d", conns.Closed(ClosedForNew))
	}
	waitOpen(3, 2) // c2 and c4 idle, c3 active
	c5 := dial()   // closes c2
	block(c5)
	waitOpen(3, 1) // c4 idle, c3 and c5 active
	c6 := dial()   // closes c4
	block(c6)
	waitOpen(3, 0)
	c7 := dial() // three active, none idle: refused
	_ = c7.SetDeadline(time.Now().Add(5 * time.Second))
	b, _ := io.ReadAll(c7)
	if !strings.HasPrefix(string(b), "HTTP/1.1 503") || conns.Closed(RefusedAtCap) != 1 {
		t.Fatalf("c7 got %q (refused %d)", b, conns.Closed(RefusedAtCap))
	}
}
