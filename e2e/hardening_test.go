package e2e

import (
	"context"
	"net"
	"net/http"
	"strings"
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
