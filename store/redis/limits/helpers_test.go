package limits

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"switchyard/store/storetest"
)

func redisAddr() string { return storetest.RedisAddr() }

// testRedis is the real Redis under a fresh prefix (see store/storetest);
// redis_rate's "rate:" copies of the prefix are deleted too.
func testRedis(t testing.TB) (redis.UniversalClient, string) {
	t.Helper()
	rdb, prefix := storetest.TestRedis(t, "limits")
	t.Cleanup(func() { deleteKeys(rdb, "rate:"+prefix+"*") })
	return rdb, prefix
}

func newClient(t testing.TB, addr string) *redis.Client {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = rdb.Close() })
	return rdb
}

func deleteKeys(rdb redis.UniversalClient, patterns ...string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if cc, ok := rdb.(*redis.ClusterClient); ok {
		_ = cc.ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error {
			deleteKeys(n, patterns...)
			return nil
		})
		return
	}
	for _, p := range patterns {
		iter := rdb.Scan(ctx, 0, p, 200).Iterator()
		for iter.Next(ctx) {
			rdb.Del(ctx, iter.Val())
		}
	}
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// testLimiter is a Limiter on the shared Redis with a generous timeout (the
// race detector and parallel packages slow Redis down; a timeout would
// silently switch to local limits).
func testLimiter(t testing.TB, rdb redis.UniversalClient, prefix string, opts Options) *Limiter {
	t.Helper()
	opts.Prefix = prefix
	if opts.Timeout == 0 {
		opts.Timeout = 2 * time.Second
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	l := New(rdb, opts)
	t.Cleanup(func() {
		if n := l.FallbackDecisions(); n != 0 {
			t.Errorf("%d decisions were made locally; Redis must decide in this test", n)
		}
	})
	return l
}

// localLimiter is a Limiter whose Redis refuses connections and that never
// probes again during the test: every decision is the local fallback's.
func localLimiter(t testing.TB) *Limiter {
	t.Helper()
	return New(newClient(t, closedAddr(t)), Options{
		Prefix:        "local",
		ProbeInterval: time.Hour,
		Logger:        slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
}

// commandCounter is a go-redis hook counting what the client sends: each
// command of Process or of a pipeline (a new connection's handshake is
// not counted), and each pipeline as one round trip.
type commandCounter struct {
	mu        sync.Mutex
	names     []string
	ops       []string // per limit script run, its operations ("s,c")
	pipelines int
	trips     int // round trips: a command alone, or a pipeline
}

// scriptOps lists the operations of a limit script run ("c", "p", "s",
// comma-separated), or "" for another command.
func scriptOps(cmd redis.Cmder) string {
	args := cmd.Args()
	if (cmd.Name() != "evalsha" && cmd.Name() != "eval") || len(args) < 3 {
		return ""
	}
	nkeys, ok := args[2].(int)
	if !ok {
		return ""
	}
	var ops []string
	for _, a := range args[3+nkeys:] {
		if s, ok := a.(string); ok {
			ops = append(ops, s)
		}
	}
	return strings.Join(ops, ",")
}

// takeOps returns and clears the operations of the script runs counted.
func (c *commandCounter) takeOps() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	ops := c.ops
	c.ops = nil
	return ops
}

// handshake reports a new connection's own commands (HELLO, CLIENT
// SETINFO), which are not the Limiter's.
func handshake(cmd redis.Cmder) bool { return cmd.Name() == "hello" || cmd.Name() == "client" }

// takeTrips returns and clears the round trips counted.
func (c *commandCounter) takeTrips() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.trips
	c.trips = 0
	return n
}

func (c *commandCounter) DialHook(next redis.DialHook) redis.DialHook { return next }

func (c *commandCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if !handshake(cmd) {
			c.mu.Lock()
			c.names = append(c.names, cmd.Name())
			if ops := scriptOps(cmd); ops != "" {
				c.ops = append(c.ops, ops)
			}
			c.trips++
			c.mu.Unlock()
		}
		return next(ctx, cmd)
	}
}

func (c *commandCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		c.mu.Lock()
		counted := false
		for _, cmd := range cmds {
			if !handshake(cmd) {
				c.names = append(c.names, cmd.Name())
				if ops := scriptOps(cmd); ops != "" {
					c.ops = append(c.ops, ops)
				}
				counted = true
			}
		}
		if counted {
			c.pipelines++
			c.trips++
		}
		c.mu.Unlock()
		return next(ctx, cmds)
	}
}

// take returns and clears what was counted.
func (c *commandCounter) take() (names []string, pipelines int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	names, pipelines = c.names, c.pipelines
	c.names, c.pipelines = nil, 0
	return names, pipelines
}

// logBuffer collects slog output safely across goroutines.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) count(s string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return strings.Count(b.buf.String(), s)
}

func (b *logBuffer) logger() *slog.Logger { return slog.New(slog.NewTextHandler(b, nil)) }

// fakeClock is a settable clock for the day computation.
type fakeClock struct{ ns atomic.Int64 }

func newFakeClock(t time.Time) *fakeClock {
	c := &fakeClock{}
	c.set(t)
	return c
}
func (c *fakeClock) set(t time.Time)     { c.ns.Store(t.UnixNano()) }
func (c *fakeClock) add(d time.Duration) { c.ns.Add(int64(d)) }
func (c *fakeClock) now() time.Time      { return time.Unix(0, c.ns.Load()) }

// proxyMode is how flakyProxy treats connections.
type proxyMode int

const (
	modeForward proxyMode = iota // pass through to Redis
	modeHang                     // accept and never answer
	modeRefuse                   // nothing listens: connections are refused
)

// flakyProxy stands between a client and Redis and can make Redis refuse
// connections or hang, then come back, on the same address.
type flakyProxy struct {
	t      testing.TB
	addr   string
	target string

	mu    sync.Mutex
	mode  proxyMode
	ln    net.Listener
	conns map[net.Conn]struct{}
}

func newFlakyProxy(t testing.TB, target string) *flakyProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &flakyProxy{t: t, addr: ln.Addr().String(), target: target, ln: ln, conns: map[net.Conn]struct{}{}}
	go p.serve(ln)
	t.Cleanup(func() { p.setMode(modeRefuse) })
	return p
}

func (p *flakyProxy) setMode(m proxyMode) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.conns {
		_ = c.Close()
	}
	clear(p.conns)
	switch {
	case m == modeRefuse && p.ln != nil:
		_ = p.ln.Close()
		p.ln = nil
	case m != modeRefuse && p.ln == nil:
		ln, err := net.Listen("tcp", p.addr)
		if err != nil {
			p.t.Errorf("proxy: listen again on %s: %v", p.addr, err)
			return
		}
		p.ln = ln
		go p.serve(ln)
	}
	p.mode = m
}

func (p *flakyProxy) serve(ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		mode := p.mode
		p.conns[c] = struct{}{}
		p.mu.Unlock()
		switch mode {
		case modeForward:
			up, err := net.Dial("tcp", p.target)
			if err != nil {
				_ = c.Close()
				continue
			}
			p.mu.Lock()
			p.conns[up] = struct{}{}
			p.mu.Unlock()
			go func() { _, _ = io.Copy(up, c); _ = up.Close() }()
			go func() { _, _ = io.Copy(c, up); _ = c.Close() }()
		default:
			go func() { _, _ = io.Copy(io.Discard, c) }()
		}
	}
}

// closedAddr is an address where nothing listens.
func closedAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	return addr
}

// privateRedis starts a redis-server of our own on a unix socket, for tests
// that must flush its script cache without disturbing other packages.
func privateRedis(t testing.TB) *redis.Client {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatalf("redis-server is required for this test: %v", err)
	}
	dir, err := os.MkdirTemp("", "sylim")
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "redis.sock")
	cmd := exec.Command(bin, "--port", "0", "--unixsocket", sock, "--save", "", "--appendonly", "no", "--dir", dir)
	if err := cmd.Start(); err != nil {
		t.Fatalf("start redis-server: %v", err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		_ = os.RemoveAll(dir)
	})
	rdb := redis.NewClient(&redis.Options{Network: "unix", Addr: sock, ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = rdb.Close() })
	deadline := time.Now().Add(5 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		err := rdb.Ping(ctx).Err()
		cancel()
		if err == nil {
			return rdb
		}
		if time.Now().After(deadline) {
			t.Fatalf("private redis-server did not answer: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
