package guard

import (
	"container/list"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Why a connection was closed or refused by the connection caps.
const (
	// ClosedIdlePerIP: its address had more than IdlePerIP idle
	// connections; the oldest of them was closed.
	ClosedIdlePerIP = "idle_per_ip"
	// ClosedIdleCap: more than MaxIdleConns connections were idle; the
	// oldest was closed.
	ClosedIdleCap = "idle_cap"
	// ClosedForNew: the instance was at MaxConns; the oldest idle
	// connection was closed to accept a new one.
	ClosedForNew = "for_new"
	// RefusedAtCap: the instance was at MaxConns with none idle; the new
	// connection was answered 503 and closed.
	RefusedAtCap = "refused_at_cap"
)

// Conns bounds the open connections of one server: at most MaxConns open,
// at most MaxIdleConns of them idle (the rest, MaxConns - MaxIdleConns, is
// headroom kept for connections carrying a request — an authenticated call
// in progress is never closed by it), and at most IdlePerIP idle from one
// address. Idle means keep-alive between requests, or accepted and not yet
// sending one. Whenever a cap bites, the oldest idle connection (of the
// address, or of all) is closed first; a new connection at MaxConns closes
// the oldest idle one, and only when none is idle is it refused (503).
type Conns struct {
	maxConns, maxIdle, idlePerIP int

	mu    sync.Mutex
	open  int
	idle  list.List // *tracked, oldest first
	perIP map[string]*list.List

	log     *slog.Logger
	onClose func(reason string)
	closed  [4]atomic.Int64
	logged  [4]atomic.Int64 // unix seconds of the last log line per reason
}

// Stats are the connections now open and idle.
func (t *Conns) Stats() (open, idle int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.open, t.idle.Len()
}

// Closed is how many connections a cap closed or refused for reason.
func (t *Conns) Closed(reason string) int64 { return t.closed[reasonIndex(reason)].Load() }

func reasonIndex(reason string) int {
	switch reason {
	case ClosedIdlePerIP:
		return 0
	case ClosedIdleCap:
		return 1
	case ClosedForNew:
		return 2
	}
	return 3
}

// tracked is one accepted connection.
type tracked struct {
	net.Conn
	t      *Conns
	ip     string
	el     *list.Element // in t.idle while idle
	ipEl   *list.Element // in t.perIP[ip] while idle
	closed sync.Once
}

func (c *tracked) Close() error {
	err := c.Conn.Close()
	c.closed.Do(func() {
		c.t.mu.Lock()
		c.t.busy(c)
		c.t.open--
		c.t.mu.Unlock()
	})
	return err
}

// CloseWrite half-closes the connection when the transport can.
func (c *tracked) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// ReadFrom lets the transport copy directly (sendfile) when it can.
func (c *tracked) ReadFrom(r io.Reader) (int64, error) {
	if rf, ok := c.Conn.(io.ReaderFrom); ok {
		return rf.ReadFrom(r)
	}
	return io.Copy(struct{ io.Writer }{c.Conn}, r)
}

// Serve returns the server for h (Server) and the listener to serve it on:
// ln under the per-address cap (Listener) and the instance-wide caps
// (Conns). log and onClose (may be nil) hear when a cap closes or refuses
// a connection: onClose each time, log at most once per reason every
// 10 s with the count so far.
func (l Limits) Serve(ln net.Listener, h http.Handler, log *slog.Logger, onClose func(reason string)) (*http.Server, net.Listener, *Conns) {
	srv := l.Server(h)
	t := l.conns(log, onClose)
	if t == nil {
		return srv, l.Listener(ln), nil
	}
	srv.ConnState = t.state
	return srv, &connsListener{Listener: l.Listener(ln), t: t}, t
}

func (l Limits) conns(log *slog.Logger, onClose func(string)) *Conns {
	if l.MaxConns <= 0 {
		return nil
	}
	maxIdle := l.MaxIdleConns
	if maxIdle <= 0 || maxIdle > l.MaxConns {
		maxIdle = l.MaxConns * 3 / 4
	}
	return &Conns{maxConns: l.MaxConns, maxIdle: max(maxIdle, 1), idlePerIP: l.IdlePerIP,
		perIP: map[string]*list.List{}, log: log, onClose: onClose}
}

type connsListener struct {
	net.Listener
	t *Conns
}

func (ln *connsListener) Accept() (net.Conn, error) {
	for {
		c, err := ln.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if tc := ln.t.admit(c); tc != nil {
			return tc, nil
		}
		go refuseFull(c)
	}
}

const instanceFull = "this gateway instance has no free connection; retry shortly\n"

// refuseFull answers a connection over MaxConns 503, as refuseConn does.
func refuseFull(c net.Conn) {
	answerAndClose(c, "503 Service Unavailable", instanceFull)
}

// admit counts a new connection in, closing the oldest idle one when the
// instance is at MaxConns; nil when none is idle (refuse it).
func (t *Conns) admit(c net.Conn) *tracked {
	t.mu.Lock()
	var victim *tracked
	if t.open >= t.maxConns {
		victim = t.oldest(t.idle.Front())
		if victim == nil {
			t.mu.Unlock()
			t.bite(RefusedAtCap)
			return nil
		}
		t.busy(victim)
	}
	t.open++
	tc := &tracked{Conn: c, t: t, ip: ClientIP(c.RemoteAddr().String())}
	t.mu.Unlock()
	if victim != nil {
		_ = victim.Close()
		t.bite(ClosedForNew)
	}
	return tc
}

func (t *Conns) oldest(e *list.Element) *tracked {
	if e == nil {
		return nil
	}
	return e.Value.(*tracked)
}

// state follows net/http's connection states (http.Server.ConnState).
func (t *Conns) state(c net.Conn, st http.ConnState) {
	tc, ok := c.(*tracked)
	if !ok {
		return
	}
	switch st {
	case http.StateNew, http.StateIdle:
		t.idleNow(tc)
	default: // active, hijacked, closed
		t.mu.Lock()
		t.busy(tc)
		t.mu.Unlock()
	}
}

// idleNow marks tc idle (the newest) and closes the oldest idle
// connections over the caps.
func (t *Conns) idleNow(tc *tracked) {
	var victims [2]*tracked
	var why [2]string
	t.mu.Lock()
	if tc.el == nil {
		tc.el = t.idle.PushBack(tc)
		if t.idlePerIP > 0 {
			l := t.perIP[tc.ip]
			if l == nil {
				l = list.New()
				t.perIP[tc.ip] = l
			}
			tc.ipEl = l.PushBack(tc)
			if l.Len() > t.idlePerIP {
				victims[0], why[0] = t.oldest(l.Front()), ClosedIdlePerIP
				t.busy(victims[0])
			}
		}
		if t.idle.Len() > t.maxIdle {
			victims[1], why[1] = t.oldest(t.idle.Front()), ClosedIdleCap
			t.busy(victims[1])
		}
	}
	t.mu.Unlock()
	for i, v := range victims {
		if v != nil {
			_ = v.Close()
			t.bite(why[i])
		}
	}
}

// busy takes tc off the idle lists; t.mu is held.
func (t *Conns) busy(tc *tracked) {
	if tc.el != nil {
		t.idle.Remove(tc.el)
		tc.el = nil
	}
	if tc.ipEl != nil {
		if l := t.perIP[tc.ip]; l != nil {
			l.Remove(tc.ipEl)
			if l.Len() == 0 {
				delete(t.perIP, tc.ip)
			}
		}
		tc.ipEl = nil
	}
}

// bite counts a cap closing or refusing a connection, tells onClose, and
// logs at most once per reason every 10 s.
func (t *Conns) bite(reason string) {
	i := reasonIndex(reason)
	n := t.closed[i].Add(1)
	if t.onClose != nil {
		t.onClose(reason)
	}
	now := time.Now().Unix()
	last := t.logged[i].Load()
	if t.log == nil || now-last < 10 || !t.logged[i].CompareAndSwap(last, now) {
		return
	}
	open, idle := t.Stats()
	t.log.Warn("connection cap: closed or refused connections", "reason", reason, "count_so_far", n,
		"open", open, "idle", idle, "max_conns", t.maxConns, "max_idle", t.maxIdle, "idle_per_ip", t.idlePerIP)
}

// answerAndClose answers a connection before reading its request, as
// refuseConn does, with status and text.
func answerAndClose(c net.Conn, status, text string) {
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Second))
	_, err := io.WriteString(c, "HTTP/1.1 "+status+"\r\nContent-Type: text/plain; charset=utf-8\r\nRetry-After: 1\r\nConnection: close\r\nContent-Length: "+
		strconv.Itoa(len(text))+"\r\n\r\n"+text)
	if err != nil {
		return
	}
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
		_ = c.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
		_, _ = io.Copy(io.Discard, io.LimitReader(c, 64<<10))
	}
}
