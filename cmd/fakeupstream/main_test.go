package main

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// startRun runs the command with args and returns its base URL once it has
// printed the listening line, and a channel with run's result.
func startRun(t *testing.T, ctx context.Context, args ...string) (string, chan error) {
	t.Helper()
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, args, pw)
		pw.Close()
	}()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatalf("no listening line: %v (run: %v)", err, <-done)
	}
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	const prefix = "fakeupstream listening on http://"
	if !strings.HasPrefix(line, prefix) {
		t.Fatalf("first line %q", line)
	}
	return "http://" + strings.TrimSpace(line[len(prefix):]), done
}

func post(t *testing.T, ctx context.Context, url, body string, header ...string) (*http.Response, error) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer k")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	return http.DefaultClient.Do(req)
}

const chat = `{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}`

func TestFlagsAndGracefulShutdown(t *testing.T) {
	rules := filepath.Join(t.TempDir(), "rules.json")
	if err := os.WriteFile(rules, []byte(`[{"model":"limited","fault":{"status":429,"retry_after":"3s"}}]`), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	base, done := startRun(t, ctx, "-addr", "127.0.0.1:0", "-status", "503", "-fail-times", "1", "-reply-chunks", "2", "-rules", rules)

	statuses := []int{}
	for range 2 {
		resp, err := post(t, context.Background(), base+"/v1/chat/completions", chat)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		statuses = append(statuses, resp.StatusCode)
		if resp.StatusCode == 200 && strings.Count(string(b), "Hello from gpt-4o.") != 2 {
			t.Errorf("-reply-chunks 2 not applied: %s", b)
		}
	}
	if statuses[0] != 503 || statuses[1] != 200 {
		t.Errorf("statuses %v, want [503 200] from -status 503 -fail-times 1", statuses)
	}
	resp, err := post(t, context.Background(), base+"/v1/chat/completions", strings.Replace(chat, "gpt-4o", "limited", 1))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "3" {
		t.Errorf("-rules file: %d Retry-After %q", resp.StatusCode, resp.Header.Get("Retry-After"))
	}

	// A request waiting on a long latency must not hold up shutdown.
	waiting := make(chan error, 1)
	go func() {
		resp, err := post(t, context.Background(), base+"/v1/chat/completions", chat, "X-Fake-Latency", "1m")
		if err == nil {
			resp.Body.Close()
		}
		waiting <- err
	}()
	time.Sleep(100 * time.Millisecond)
	t0 := time.Now()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("run returned %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no shutdown within 5s")
	}
	if d := time.Since(t0); d > 2*time.Second {
		t.Errorf("shutdown took %v with a request in flight", d)
	}
	<-waiting
	if _, err := post(t, context.Background(), base+"/v1/chat/completions", chat); err == nil {
		t.Error("still serving after shutdown")
	}
}

func TestBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"-status", "1000"},
		{"-latency", "-1s"},
		{"-rules", filepath.Join(t.TempDir(), "missing.json")},
		{"-addr", "256.0.0.1:0"},
		{"-nope"},
	} {
		if err := run(context.Background(), args, io.Discard); err == nil {
			t.Errorf("%v: no error", args)
		}
	}
}
