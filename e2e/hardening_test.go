package e2e

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"switchyard/routing/config"
	"switchyard/store"
)

// The hardening tests run real processes against clients that misbehave on
// purpose. Each is named in the manual's fault table
// (static/manual/operating.md, "Faults") and on static/manual/hardening.md.

// tightenFast gives the fast tier timeoutMS and its deployments one
// concurrency slot each, and publishes that.
func tightenFast(t *testing.T, st *store.Store, timeoutMS int) {
	t.Helper()
	ctx := context.Background()
	snap, _, err := st.Draft(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, tr := range snap.RouteGroups[0].Tiers {
		if tr.Name == config.TierFast {
			if err := st.UpdateTier(ctx, tr.ID, timeoutMS, min(tr.FirstChunkTimeoutMS, timeoutMS)); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, m := range snap.LogicModels {
		for _, d := range m.Deployments {
			d.MaxConcurrency = 1
			if err := st.UpdateDeployment(ctx, d.ID, d); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := st.Publish(ctx, store.PublishInput{Author: "e2e", Message: "tight fast tier", Check: func(s config.Snapshot) config.Result { return config.DryRun(s, storeEnv) }}); err != nil {
		t.Fatal(err)
	}
}

// neverReading opens a streamed chat with a tiny receive buffer and never
// reads past the headers: the gateway's writes back up at once.
func neverReading(t *testing.T, base, key string) (requestID string, conn net.Conn) {
	t.Helper()
	d := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		err := c.Control(func(fd uintptr) { serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
		if err != nil {
			return err
		}
		return serr
	}}
	c, err := d.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	body := `{"model":"fast","stream":true,"messages":[{"role":"user","content":"hello"}]}`
	req, _ := http.NewRequest(http.MethodPost, base+"/v1/chat/completions", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	if err := req.Write(c); err != nil {
		t.Fatal(err)
	}
	// Read the status line and headers only (the first few kilobytes).
	buf := make([]byte, 1024)
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	n, err := c.Read(buf)
	if err != nil {
		t.Fatalf("no answer to the stream: %v", err)
	}
	head := string(buf[:n])
	if !strings.HasPrefix(head, "HTTP/1.1 200") {
		t.Fatalf("stream answered %q", head)
	}
	for _, line := range strings.Split(head, "\r\n") {
		if v, ok := strings.CutPrefix(line, "X-Request-Id: "); ok {
			requestID = v
		}
	}
	return requestID, c
}

// TestNeverReadingStreamReleasedAtTierDeadline: a streamed chat whose
// client never reads (its first event is 6 MB, far more than the socket
// buffers hold) is released at the fast tier's 5 s deadline: the next
// caller of the deployment (one concurrency slot) gets 200 while the
// stalled client still holds its connection, and the call is logged
// client_stalled with a latency near the deadline.
func TestNeverReadingStreamReleasedAtTierDeadline(t *testing.T) {
	in := newInstallation(t, "-oversized-line", "6000000", "-reply-chunks", "3")
	tightenFast(t, in.st, 5000)
	g := startGateway(t, in.dsn, in.prefix, "SWITCHYARD_SPILL_DIR="+t.TempDir())
	waitHealthy(t, g.URL+"/readyz", g.proc)

	begun := time.Now()
	id, _ := neverReading(t, g.URL, in.key)
	if id == "" {
		t.Fatal("the stream carried no X-Request-Id")
	}
	// The stalled stream holds the only slot until the deadline; then the
	// next caller is served (a queued wait counts: the answer is 200).
	time.Sleep(5500 * time.Millisecond)
	res, err := chat(t, g.URL, in.key, false)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("the next caller got %d, want 200: the stalled stream kept the slot", res.StatusCode)
	}
	if took := time.Since(begun); took > 10*time.Second {
		t.Fatalf("the next caller was served %s after the stall began; the deadline is 5 s", took)
	}
	var status, code string
	var latency int
	waitFor(t, 15*time.Second, "the stalled call's row", func() bool {
		err := in.st.DB().QueryRow(`SELECT status, coalesce(error_code, ''), latency_ms FROM call_logs WHERE request_id = $1`, id).Scan(&status, &code, &latency)
		return err == nil
	})
	if status != "client_cancelled" || code != "client_stalled" {
		t.Fatalf("stalled call logged %s/%s, want client_cancelled/client_stalled", status, code)
	}
	if latency < 4500 || latency > 8000 {
		t.Fatalf("stalled call's latency %d ms, want near the 5 s deadline (+1 s for the closing event)", latency)
	}
}

// limitCaller gives the caller "app" rpm on every tier and publishes that.
func limitCaller(t *testing.T, st *store.Store, rpm int64) {
	t.Helper()
	ctx := context.Background()
	snap, _, err := st.Draft(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range snap.Callers {
		if c.Name != "app" {
			continue
		}
		c.Limits = nil
		for _, tier := range []config.TierName{config.TierFast, config.TierStandard, config.TierDeep} {
			c.Limits = append(c.Limits, config.TierLimit{Tier: tier, RPM: rpm})
		}
		if err := st.UpdateCaller(ctx, c.ID, c); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := st.Publish(ctx, store.PublishInput{Author: "e2e", Message: "rpm", Check: func(s config.Snapshot) config.Result { return config.DryRun(s, storeEnv) }}); err != nil {
		t.Fatal(err)
	}
}

func countTokens(t *testing.T, base, key, body string) (status int, retryAfter, text string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, base+"/v1/messages/count_tokens", strings.NewReader(body))
	req.Header.Set("x-api-key", key)
	req.Header.Set("anthropic-version", "2023-06-01")
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, res.Header.Get("Retry-After"), string(b)
}

// TestCountTokensHasItsOwnLimitAndBodyBound: with RPM 2 on every tier and
// SWITCHYARD_COUNT_TOKENS_PER_RPM=2, count_tokens gets 4 a minute, then
// 429 with Retry-After, while the caller's two chats still pass (the two
// limits are apart); a count_tokens body over
// SWITCHYARD_COUNT_TOKENS_MAX_BODY_BYTES is refused 413 saying so.
func TestCountTokensHasItsOwnLimitAndBodyBound(t *testing.T) {
	in := newInstallation(t)
	limitCaller(t, in.st, 2)
	g := startGateway(t, in.dsn, in.prefix, "SWITCHYARD_SPILL_DIR="+t.TempDir(),
		"SWITCHYARD_COUNT_TOKENS_PER_RPM=2", "SWITCHYARD_COUNT_TOKENS_MAX_BODY_BYTES=1048576")
	waitHealthy(t, g.URL+"/readyz", g.proc)

	small := `{"model":"fast","messages":[{"role":"user","content":"hello"}]}`
	var got []int
	for range 5 {
		status, retry, text := countTokens(t, g.URL, in.key, small)
		got = append(got, status)
		if status == http.StatusTooManyRequests && (retry == "" || !strings.Contains(text, "count_tokens rate limit of 4 requests per minute")) {
			t.Fatalf("count_tokens 429 without Retry-After or its limit: %q %s", retry, text)
		}
	}
	if fmt.Sprint(got) != "[200 200 200 200 429]" {
		t.Fatalf("count_tokens answered %v, want [200 200 200 200 429]", got)
	}
	for i := range 2 {
		res, err := chat(t, g.URL, in.key, false)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusOK {
			t.Fatalf("chat %d after count_tokens got %d: count_tokens spent the chat limit", i+1, res.StatusCode)
		}
	}
	big := `{"model":"fast","messages":[{"role":"user","content":"` + strings.Repeat("word ", 300_000) + `"}]}`
	status, _, text := countTokens(t, g.URL, in.key, big)
	if status != http.StatusRequestEntityTooLarge || !strings.Contains(text, "count_tokens request body is larger than 1 MB") {
		t.Fatalf("oversized count_tokens answered %d %s, want 413 naming the bound", status, text)
	}
}

// holdConnsEnv makes the test binary a connection holder (holdConns)
// instead of running tests: TestManyIdleConnections starts several, each
// with its own file-descriptor limit.
const holdConnsEnv = "SWITCHYARD_E2E_HOLD_CONNS"

// holdConns opens perIP keep-alive connections to addr from each of the
// loopback addresses 127.0.0.first … first+n-1, sends one GET /healthz on
// each, then leaves them idle; it prints "held" and how many were still
// open after their answer, and waits for its stdin to close.
func holdConns(spec string) int {
	var addr string
	var first, n, perIP int
	if _, err := fmt.Sscanf(spec, "%s %d %d %d", &addr, &first, &n, &perIP); err != nil {
		fmt.Fprintln(os.Stderr, "hold: bad spec", spec, err)
		return 2
	}
	var held atomic.Int64
	var conns sync.Map
	jobs := make(chan string)
	var wg sync.WaitGroup
	for range 32 {
		wg.Go(func() {
			for src := range jobs {
				d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}, Timeout: 5 * time.Second}
				c, err := d.Dial("tcp", addr)
				if err != nil {
					continue
				}
				conns.Store(c, true)
				_ = c.SetDeadline(time.Now().Add(10 * time.Second))
				if _, err := io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: gw\r\n\r\n"); err != nil {
					continue
				}
				res, err := http.ReadResponse(bufio.NewReader(c), nil)
				if err != nil {
					continue
				}
				_, _ = io.Copy(io.Discard, res.Body)
				res.Body.Close()
				_ = c.SetDeadline(time.Time{})
				held.Add(1)
			}
		})
	}
	for i := range n {
		src := fmt.Sprintf("127.0.0.%d", first+i)
		for range perIP {
			jobs <- src
		}
	}
	close(jobs)
	wg.Wait()
	fmt.Printf("held %d\n", held.Load())
	_, _ = io.Copy(io.Discard, os.Stdin)
	return 0
}

// TestManyIdleConnections: 20,000 keep-alive connections from 20 loopback
// addresses (four holder processes of 5,000 each), every one idle after a
// GET /healthz, against an instance capped at 4,000 connections
// (SWITCHYARD_MAX_CONNS): the caps close the oldest idle connections
// (per address beyond SWITCHYARD_MAX_IDLE_CONNS_PER_IP, and over the idle
// cap), the open count stays under the cap, the cap is logged and counted
// on /metrics, and an authenticated chat is answered in its normal time
// throughout.
func TestManyIdleConnections(t *testing.T) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil || lim.Max < 6000 {
		msg := fmt.Sprintf("the holder processes need 5,000 file descriptors each; the hard limit is %d (raise it with ulimit -Hn)", lim.Max)
		if os.Getenv("CI") != "" {
			t.Fatal(msg) // CI must run it, never skip it quietly
		}
		t.Skip(msg)
	}
	in := newInstallation(t)
	g := startGateway(t, in.dsn, in.prefix, "SWITCHYARD_SPILL_DIR="+t.TempDir(), "SWITCHYARD_MAX_CONNS=4000")
	waitHealthy(t, g.URL+"/readyz", g.proc)
	addr := strings.TrimPrefix(g.URL, "http://")

	holders := make([]*exec.Cmd, 4)
	outs := make([]*proc, 4)
	for i := range holders {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), holdConnsEnv+"="+fmt.Sprintf("%s %d %d %d", addr, 2+5*i, 5, 1000))
		outs[i] = &proc{cmd: cmd}
		cmd.Stdout, cmd.Stderr = outs[i], outs[i]
		stdin, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { stdin.Close(); _ = cmd.Wait() })
		holders[i] = cmd
	}
	done := make(chan struct{})
	go func() {
		for _, h := range holders {
			for h.ProcessState == nil && !strings.Contains(outs[indexOf(holders, h)].log(), "held") {
				time.Sleep(200 * time.Millisecond)
			}
		}
		close(done)
	}()
	worst := time.Duration(0)
	chats := 0
	for finished := false; !finished; {
		select {
		case <-done:
			finished = true
		case <-time.After(500 * time.Millisecond):
		}
		began := time.Now()
		res, err := chat(t, g.URL, in.key, false)
		if err != nil {
			t.Fatalf("chat during the flood: %v", err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusOK {
			t.Fatalf("chat during the flood got %d", res.StatusCode)
		}
		worst = max(worst, time.Since(began))
		chats++
	}
	if worst > 3*time.Second {
		t.Fatalf("the slowest of %d chats during the flood took %s", chats, worst)
	}
	metrics := get(t, g.URL+"/metrics")
	open := metricValue(metrics, "switchyard_connections_open")
	if open <= 0 || open > 4000 {
		t.Fatalf("switchyard_connections_open %v, want at most the cap of 4000", open)
	}
	for _, reason := range []string{"idle_per_ip", "idle_cap"} {
		if metricValue(metrics, `switchyard_connections_closed_total{reason="`+reason+`"}`) <= 0 {
			t.Fatalf("no connection closed for %s:\n%s", reason, metrics)
		}
	}
	if !strings.Contains(g.log(), "connection cap") {
		t.Fatal("the connection cap was not logged")
	}
	t.Logf("%d chats during the flood, slowest %s; %v connections open at the end; holders: %q %q %q %q; gateway %s",
		chats, worst, open, outs[0].log(), outs[1].log(), outs[2].log(), outs[3].log(), rss(g.cmd.Process.Pid))
}

func indexOf(cmds []*exec.Cmd, c *exec.Cmd) int {
	for i, x := range cmds {
		if x == c {
			return i
		}
	}
	return -1
}

func get(t *testing.T, url string) string {
	t.Helper()
	res, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return string(b)
}

// metricValue is the value of the sample line starting with series, or -1.
func metricValue(text, series string) float64 {
	for _, line := range strings.Split(text, "\n") {
		if v, ok := strings.CutPrefix(line, series+" "); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err == nil {
				return f
			}
		}
	}
	return -1
}

// rss is a process's resident set size as /proc says it.
func rss(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return "RSS unknown"
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "VmRSS:") {
			return strings.Join(strings.Fields(line), " ")
		}
	}
	return "RSS unknown"
}
