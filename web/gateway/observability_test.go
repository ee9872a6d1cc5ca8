package gateway_test

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"switchyard/e2e/fakevendor"
	"switchyard/web/gateway/gatewaytest"
)

// syncBuffer is a goroutine-safe log sink.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestLogsCarryRequestIDsAndNoSecrets(t *testing.T) {
	t.Parallel()
	var logs syncBuffer
	e := gatewaytest.New(t, gatewaytest.Options{Logger: slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	key := e.Simple()
	// Both provider keys fail with 401: they are quarantined and logged about.
	e.Fake.SetRules(fakevendor.Rule{Model: "fake-small", Fault: fakevendor.Fault{Status: 401}})
	res, _ := post(t, e, key, "/v1/chat/completions", hello)
	if res.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("status %d", res.StatusCode)
	}
	id := res.Header.Get("X-Request-Id")
	e.Fake.ClearRules()
	_, _ = post(t, e, "sy-wrong-key", "/v1/chat/completions", hello)
	deadline := time.Now().Add(3 * time.Second)
	for !strings.Contains(logs.String(), id) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	out := logs.String()
	if !strings.Contains(out, `"request_id":"`+id+`"`) || !strings.Contains(out, `"level":"WARN"`) {
		t.Fatalf("no warn line with the request id %s:\n%s", id, out)
	}
	for _, secret := range []string{"sk-fake-key-one-0001", "sk-fake-key-two-0002", key, "sy-wrong-key"} {
		if strings.Contains(out, secret) {
			t.Fatalf("a secret (%s…) reached the logs", secret[:8])
		}
	}
}

func TestMetricsAndHealth(t *testing.T) {
	t.Parallel()
	e := gatewaytest.New(t, gatewaytest.Options{ProxyPostgres: true})
	key := e.Simple()
	for range 3 {
		post(t, e, key, "/v1/chat/completions", hello)
	}
	res, err := http.Get(e.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	for _, want := range []string{
		`switchyard_requests_total{caller="app",class="",endpoint="chat_completions",model="small",status="ok",tier="standard"} 3`,
		`switchyard_request_duration_seconds_bucket`, `switchyard_tokens_total{caller="app",kind="prompt"`,
		`switchyard_config_version 1`, `switchyard_calllog_buffer_depth`, `switchyard_redis_degraded 0`,
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	var detail map[string]any
	health := func() int {
		res, err := http.Get(e.URL + "/healthz")
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		detail = nil
		_ = json.NewDecoder(res.Body).Decode(&detail)
		return res.StatusCode
	}
	if code := health(); code != 200 || detail["postgres"] != "ok" {
		t.Fatalf("healthz %d %v", code, detail)
	}
	e.PGProxy.Cut()
	// The instance still serves (a liveness probe must not restart it), and
	// says PostgreSQL is unreachable.
	if code := health(); code != http.StatusOK || detail["postgres"] != "unreachable" {
		t.Fatalf("healthz with PostgreSQL unreachable: %d %v", code, detail)
	}
	// The data plane keeps serving from the live configuration meanwhile.
	if res, body := post(t, e, key, "/v1/chat/completions", hello); res.StatusCode != 200 {
		t.Fatalf("data plane with PostgreSQL down: %d %s", res.StatusCode, body)
	}
	e.PGProxy.Restore()
	deadline := time.Now().Add(5 * time.Second)
	for health() != 200 || detail["postgres"] != "ok" {
		if time.Now().After(deadline) {
			t.Fatal("healthz did not recover")
		}
		time.Sleep(100 * time.Millisecond)
	}
}
