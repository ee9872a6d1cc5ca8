package e2e

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"switchyard/store"
	"switchyard/store/storetest"
)

// The fault tests run real processes and take PostgreSQL away from them
// through a cuttable TCP proxy (the shared server stays up for everyone
// else). Each is named in the manual's fault table
// (static/manual/operating.md, "Faults").

// gatewayProc is a switchyard process started with chosen settings.
type gatewayProc struct {
	*proc
	URL string
}

// startGateway runs switchyard against dsn with extra settings. It does not
// wait for health: a test may expect the process to refuse to start.
func startGateway(t *testing.T, dsn, prefix string, extra ...string) *gatewayProc {
	t.Helper()
	addr := freePort(t)
	env := append([]string{
		"SWITCHYARD_ADDR=" + addr, "SWITCHYARD_DATABASE_URL=" + dsn, "SWITCHYARD_SECRET_KEY=" + storetest.TestKey,
		"SWITCHYARD_ADMIN_PASSWORD=" + adminPassword, "SWITCHYARD_LOG_FORMAT=text", "SWITCHYARD_RELOAD_INTERVAL=500ms",
		"SWITCHYARD_REDIS_URL=" + redisURL(), "SWITCHYARD_REDIS_PREFIX=" + prefix,
	}, extra...)
	return &gatewayProc{proc: start(t, "switchyard", env), URL: "http://" + addr}
}

// stop sends SIGTERM and waits for the exit; it returns the exit error.
func (g *gatewayProc) stop(t *testing.T, within time.Duration) error {
	t.Helper()
	_ = g.cmd.Process.Signal(syscall.SIGTERM)
	return g.wait(t, within)
}

func (g *gatewayProc) wait(t *testing.T, within time.Duration) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- g.cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(within):
		_ = g.cmd.Process.Kill()
		t.Fatalf("switchyard did not exit within %s\n%s", within, tail(g.log(), 4000))
		return nil
	}
}

// installation is a published configuration on a fresh database, served
// by a fake vendor started with fakeArgs, with a caller key and a Redis
// prefix cleaned up afterwards: what every fault test starts from.
type installation struct {
	dsn, key, prefix string
	st               *store.Store
}

func newInstallation(t *testing.T, fakeArgs ...string) installation {
	t.Helper()
	dsn := storetest.NewDatabase(t)
	fakeAddr := freePort(t)
	start(t, "fakeupstream", nil, append([]string{"-addr", fakeAddr}, fakeArgs...)...)
	waitHealthy(t, "http://"+fakeAddr+"/_fake/stats", nil)
	st := seedPublished(t, dsn, "http://"+fakeAddr)
	in := installation{dsn: dsn, st: st, key: callerKey(t, st), prefix: redisPrefix(dsn)}
	cleanRedisPrefix(t, in.prefix)
	return in
}

// callerKey creates an API key for the seeded caller "app".
func callerKey(t *testing.T, st *store.Store) string {
	t.Helper()
	ctx := context.Background()
	key, _, err := st.CreateCallerKey(ctx, "app", "faults", "e2e")
	if err != nil {
		t.Fatal(err)
	}
	return key
}

func chat(t *testing.T, base, key string, stream bool) (*http.Response, error) {
	t.Helper()
	body := fmt.Sprintf(`{"model":"fast","stream":%t,"messages":[{"role":"user","content":"hello"}]}`, stream)
	req, _ := http.NewRequest(http.MethodPost, base+"/v1/chat/completions", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	return http.DefaultClient.Do(req)
}

// viaProxy points dsn at the proxy's address.
func viaProxy(t *testing.T, dsn string, p *storetest.Proxy) string {
	t.Helper()
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	u.Host = p.Addr
	return u.String()
}

func pgHostPort(t *testing.T, dsn string) string {
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	return u.Host
}

func rowsFor(t *testing.T, db *sql.DB, ids []string) (rows, distinct int, statuses map[string]int) {
	t.Helper()
	statuses = map[string]int{}
	r, err := db.Query(`SELECT request_id, status FROM call_logs WHERE request_id = ANY($1)`, "{"+strings.Join(ids, ",")+"}")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	seen := map[string]bool{}
	for r.Next() {
		var id, status string
		if err := r.Scan(&id, &status); err != nil {
			t.Fatal(err)
		}
		rows++
		seen[id] = true
		statuses[status]++
	}
	return rows, len(seen), statuses
}

// SIGTERM with streams longer than the grace: readiness turns 503 at once,
// each stream ends with an OpenAI error event (never a bare EOF), and each
// has exactly one call-log row, status interrupted.
func TestSIGTERMCutsLongStreamsWithAnErrorEventAndOneRowEach(t *testing.T) {
	// 40 chunks 250 ms apart: a 10 s stream against a 2 s grace.
	in := newInstallation(t, "-reply-chunks", "40", "-inter-chunk-delay", "250ms")
	dsn, st, key, prefix := in.dsn, in.st, in.key, in.prefix
	g := startGateway(t, dsn, prefix, "SWITCHYARD_SPILL_DIR="+t.TempDir(), "SWITCHYARD_SHUTDOWN_GRACE=2s", "SWITCHYARD_DRAIN_DELAY=1s")
	waitHealthy(t, g.URL+"/readyz", g.proc)

	const streams = 6
	type result struct {
		id        string
		lastEvent string
		content   int
		err       error
	}
	results := make([]result, streams)
	started := make(chan struct{}, streams)
	var wg sync.WaitGroup
	for i := range streams {
		wg.Go(func() {
			res, err := chat(t, g.URL, key, true)
			if err != nil {
				results[i].err = err
				started <- struct{}{}
				return
			}
			defer res.Body.Close()
			results[i].id = res.Header.Get("X-Request-Id")
			sc := bufio.NewScanner(res.Body)
			signalled := false
			for sc.Scan() {
				line := sc.Text()
				if !strings.HasPrefix(line, "data: ") {
					continue
				}
				results[i].lastEvent = strings.TrimPrefix(line, "data: ")
				if strings.Contains(line, `"content"`) {
					results[i].content++
					if !signalled {
						signalled = true
						started <- struct{}{}
					}
				}
			}
			results[i].err = sc.Err() // nil at a clean end of the body; unexpected EOF otherwise
			if !signalled {
				started <- struct{}{}
			}
		})
	}
	for range streams {
		<-started
	}
	sent := time.Now()
	_ = g.cmd.Process.Signal(syscall.SIGTERM)
	// Readiness turns 503 at once, while the drain delay keeps the listener open.
	time.Sleep(200 * time.Millisecond)
	if res, err := http.Get(g.URL + "/readyz"); err != nil || res.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("/readyz during drain: %v %v, want 503", res, err)
	} else {
		res.Body.Close()
	}
	if err := g.wait(t, 20*time.Second); err != nil {
		t.Errorf("exit after a drain: %v", err)
	}
	took := time.Since(sent)
	wg.Wait()
	if took > 8*time.Second {
		t.Errorf("shutdown took %s with a 1 s drain delay and a 2 s grace", took)
	}
	var ids []string
	for i, r := range results {
		if r.err != nil {
			t.Errorf("stream %d: %v (a cut stream must end cleanly after its error event)", i, r.err)
			continue
		}
		var ev struct {
			Error struct{ Code, Type, Message string } `json:"error"`
		}
		if err := json.Unmarshal([]byte(r.lastEvent), &ev); err != nil || ev.Error.Code != "shutting_down" {
			t.Errorf("stream %d ended with %q, want an error event with code shutting_down", i, r.lastEvent)
		}
		if r.content == 0 || r.content >= 40 {
			t.Errorf("stream %d got %d content chunks: it should have been cut mid-way", i, r.content)
		}
		ids = append(ids, r.id)
	}
	rows, distinct, statuses := rowsFor(t, st.DB(), ids)
	if rows != streams || distinct != streams || statuses["interrupted"] != streams {
		t.Errorf("call log: %d rows for %d distinct of %d streams, statuses %v; want one interrupted row each", rows, distinct, streams, statuses)
	}
	if !strings.Contains(g.log(), "cut_at_grace="+fmt.Sprint(streams)) {
		t.Errorf("the shutdown log should say it cut %d requests:\n%s", streams, tail(g.log(), 2000))
	}
}

// An instance that starts while PostgreSQL is unreachable serves the
// last-known-good version a previous process cached, spills its call logs,
// closes the console with a page that says why, and writes every spilled
// row once PostgreSQL returns.
func TestStartWithoutPostgresServesTheCachedVersion(t *testing.T) {
	in := newInstallation(t)
	dsn, st, key, prefix := in.dsn, in.st, in.key, in.prefix
	proxy := storetest.NewProxy(t, pgHostPort(t, dsn))
	proxied := viaProxy(t, dsn, proxy)
	cacheDir := t.TempDir()

	// A first process loads the version (and caches it), then stops.
	first := startGateway(t, proxied, prefix, "SWITCHYARD_SPILL_DIR="+t.TempDir(), "SWITCHYARD_CONFIG_CACHE_DIR="+cacheDir)
	waitHealthy(t, first.URL+"/readyz", first.proc)
	if err := first.stop(t, 20*time.Second); err != nil {
		t.Fatalf("first process: %v", err)
	}
	if _, err := os.Stat(filepath.Join(cacheDir, "config.sealed")); err != nil {
		t.Fatalf("no cached version after a load: %v", err)
	}

	proxy.Cut()
	g := startGateway(t, proxied, prefix, "SWITCHYARD_SPILL_DIR="+t.TempDir(), "SWITCHYARD_CONFIG_CACHE_DIR="+cacheDir)
	waitHealthy(t, g.URL+"/readyz", g.proc)
	var health map[string]any
	res, err := http.Get(g.URL + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	_ = json.NewDecoder(res.Body).Decode(&health)
	res.Body.Close()
	if res.StatusCode != 200 || health["config"] != "cache" || health["postgres"] != "unreachable" {
		t.Errorf("/healthz while serving the cache: %d %v", res.StatusCode, health)
	}
	const calls = 20
	var ids []string
	for range calls {
		res, err := chat(t, g.URL, key, false)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != 200 {
			t.Fatalf("served from the cache: %d %s", res.StatusCode, b)
		}
		ids = append(ids, res.Header.Get("X-Request-Id"))
	}
	page, err := http.Get(g.URL + "/login")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(page.Body)
	page.Body.Close()
	if page.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(body), "PostgreSQL is unreachable") {
		t.Errorf("console while PostgreSQL is down: %d %s", page.StatusCode, tail(string(body), 400))
	}
	for _, path := range []string{"/", "/admin/api/versions"} { // a signed-in page, and the admin API
		res, err := http.Get(g.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(b), "PostgreSQL is unreachable") {
			t.Errorf("%s while PostgreSQL is down: %d %s", path, res.StatusCode, tail(string(b), 400))
		}
	}

	proxy.Restore()
	deadline := time.Now().Add(30 * time.Second)
	for {
		rows, distinct, _ := rowsFor(t, st.DB(), ids)
		if rows == calls && distinct == calls {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after PostgreSQL returned: %d rows for %d distinct of %d calls", rows, distinct, calls)
		}
		time.Sleep(200 * time.Millisecond)
	}
	waitFor(t, 15*time.Second, "/healthz to say config comes from PostgreSQL again", func() bool {
		res, err := http.Get(g.URL + "/healthz")
		if err != nil {
			return false
		}
		defer res.Body.Close()
		var h map[string]any
		_ = json.NewDecoder(res.Body).Decode(&h)
		return h["config"] == "postgres" && h["postgres"] == "ok"
	})
	if err := g.stop(t, 20*time.Second); err != nil {
		t.Errorf("exit: %v", err)
	}
	if rows, distinct, _ := rowsFor(t, st.DB(), ids); rows != calls || distinct != calls {
		t.Errorf("after stop: %d rows for %d distinct of %d calls (duplicates?)", rows, distinct, calls)
	}
}

// With neither PostgreSQL nor a cached version an instance refuses to start
// and says why.
func TestStartWithNeitherPostgresNorCacheRefuses(t *testing.T) {
	dsn := storetest.NewDatabase(t)
	proxy := storetest.NewProxy(t, pgHostPort(t, dsn))
	proxy.Cut()
	prefix := redisPrefix(dsn)
	cleanRedisPrefix(t, prefix)
	g := startGateway(t, viaProxy(t, dsn, proxy), prefix, "SWITCHYARD_SPILL_DIR="+t.TempDir(), "SWITCHYARD_CONFIG_CACHE_DIR="+t.TempDir())
	err := g.wait(t, 30*time.Second)
	var exit *exec.ExitError
	if err == nil || !errors.As(err, &exit) || exit.ExitCode() == 0 {
		t.Fatalf("want a non-zero exit, got %v", err)
	}
	if out := g.log(); !strings.Contains(out, "no cached configuration") || !strings.Contains(out, "refusing to start") {
		t.Errorf("the refusal should say why:\n%s", tail(out, 2000))
	}
}

func waitFor(t *testing.T, within time.Duration, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Not ready until loaded: the listener opens only after the first version
// is loaded, so the first request a restarted instance accepts is served —
// never "nothing has been published yet".
func TestFirstAcceptedRequestAfterStartIsServed(t *testing.T) {
	in := newInstallation(t)
	key := in.key
	g := startGateway(t, in.dsn, in.prefix, "SWITCHYARD_SPILL_DIR="+t.TempDir())
	deadline := time.Now().Add(30 * time.Second)
	for {
		res, err := chat(t, g.URL, key, false)
		if err != nil { // not listening yet
			if time.Now().After(deadline) {
				t.Fatalf("never listened: %v\n%s", err, tail(g.log(), 2000))
			}
			time.Sleep(2 * time.Millisecond)
			continue
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusOK {
			t.Fatalf("the first accepted request got %d %s", res.StatusCode, b)
		}
		return
	}
}

// The crash window: kill -9 under 100 requests/s loses at most the rows of
// the last ~QuickFlush+insert (light load) — bounded here by what arrives in
// FlushInterval (200 ms, 20 requests) — of answered requests. Rows the
// killed process had spilled are replayed by the next process on the same
// spill directory, so they are not counted as lost.
func TestKill9LosesOnlyTheLastFewAnsweredRequests(t *testing.T) {
	in := newInstallation(t)
	dsn, st, key, prefix := in.dsn, in.st, in.key, in.prefix
	spill := t.TempDir()
	g := startGateway(t, dsn, prefix, "SWITCHYARD_SPILL_DIR="+spill)
	waitHealthy(t, g.URL+"/readyz", g.proc)

	var mu sync.Mutex
	var answered []string
	var wg sync.WaitGroup
	tick := time.NewTicker(10 * time.Millisecond) // 100 requests/s
	killAt := time.After(3 * time.Second)
loop:
	for {
		select {
		case <-tick.C:
			wg.Go(func() {
				res, err := chat(t, g.URL, key, false)
				if err != nil {
					return
				}
				_, _ = io.Copy(io.Discard, res.Body)
				res.Body.Close()
				if res.StatusCode == 200 {
					mu.Lock()
					answered = append(answered, res.Header.Get("X-Request-Id"))
					mu.Unlock()
				}
			})
		case <-killAt:
			_ = g.cmd.Process.Kill()
			break loop
		}
	}
	tick.Stop()
	wg.Wait()
	_ = g.wait(t, 10*time.Second)
	mu.Lock()
	ids := append([]string(nil), answered...)
	mu.Unlock()
	if len(ids) < 200 {
		t.Fatalf("only %d requests answered before the kill; the load did not run", len(ids))
	}
	// The next process replays what the killed one spilled.
	next := startGateway(t, dsn, prefix, "SWITCHYARD_SPILL_DIR="+spill)
	waitHealthy(t, next.URL+"/readyz", next.proc)
	time.Sleep(time.Second)
	rows, distinct, _ := rowsFor(t, st.DB(), ids)
	lost := len(ids) - distinct
	t.Logf("kill -9 at 100 req/s: %d answered, %d rows, %d lost", len(ids), rows, lost)
	if rows != distinct {
		t.Errorf("%d rows for %d requests: duplicates", rows, distinct)
	}
	if lost > 20 {
		t.Errorf("kill -9 lost %d answered requests' rows; the bound is 20 (200 ms at 100 req/s)", lost)
	}
}
