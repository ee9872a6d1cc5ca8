package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"switchyard/routing/config"
	"switchyard/store"
	"switchyard/store/storetest"
)

// The cache-freshness and shutdown fault tests of the hardening issue
// (items 1, 6, 7, 8), each named in the manual's fault table.

// newCallerKey creates an API key for the seeded caller "app" and returns
// it with its id.
func newCallerKey(t *testing.T, st *store.Store, name string) (string, int64) {
	t.Helper()
	ctx := context.Background()
	key, k, err := st.CreateCallerKey(ctx, "app", name, "test")
	if err != nil {
		t.Fatal(err)
	}
	return key, k.ID
}

func chatStatus(t *testing.T, base, key string) int {
	t.Helper()
	res, err := chat(t, base, key, false)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, res.Body)
	res.Body.Close()
	return res.StatusCode
}

func healthz(t *testing.T, base string) map[string]any {
	t.Helper()
	res, err := http.Get(base + "/healthz")
	if err != nil {
		return nil
	}
	defer res.Body.Close()
	var h map[string]any
	_ = json.NewDecoder(res.Body).Decode(&h)
	return h
}

func testRedis(t *testing.T) *redis.Client {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: storetest.RedisAddr()})
	t.Cleanup(func() { rdb.Close() })
	return rdb
}

// expectRefusal waits for g to exit non-zero with every phrase in its log.
func expectRefusal(t *testing.T, g *gatewayProc, phrases ...string) {
	t.Helper()
	err := g.wait(t, 30*time.Second)
	var exit *exec.ExitError
	if err == nil || !errors.As(err, &exit) || exit.ExitCode() == 0 {
		t.Fatalf("want a refusal to start, got %v\n%s", err, tail(g.log(), 3000))
	}
	for _, p := range phrases {
		if !strings.Contains(g.log(), p) {
			t.Errorf("the refusal should say %q:\n%s", p, tail(g.log(), 3000))
		}
	}
}

// The tester's exact scenario: the cache file saved at version 1 is kept,
// a caller key is revoked and version 2 published, the gateway and
// PostgreSQL stop, the old file is put back and the Redis copy deleted. The
// instance refuses the rolled-back copy (the epoch mark in Redis is newer);
// with the mark gone too (a Redis without persistence) it refuses an
// unwitnessed copy; given the current copy back in Redis it serves that
// one, where the revoked key is 401 and a live key 200, and /healthz names
// the copy and its witness.
func TestRolledBackCacheIsRefusedAndTheRevokedKeyStays401(t *testing.T) {
	in := newInstallation(t)
	st, prefix := in.st, in.prefix
	revoked, revokedID := newCallerKey(t, st, "to-revoke")
	proxy := storetest.NewProxy(t, pgHostPort(t, in.dsn))
	proxied := viaProxy(t, in.dsn, proxy)
	cacheDir := t.TempDir()
	cacheFile := filepath.Join(cacheDir, "config.sealed")
	rdb := testRedis(t)
	ctx := context.Background()

	first := startGateway(t, proxied, prefix, "SWITCHYARD_SPILL_DIR="+t.TempDir(), "SWITCHYARD_CONFIG_CACHE_DIR="+cacheDir)
	waitHealthy(t, first.URL+"/readyz", first.proc)
	if s := chatStatus(t, first.URL, revoked); s != 200 {
		t.Fatalf("the key before revocation: %d", s)
	}
	old, err := os.ReadFile(cacheFile)
	if err != nil {
		t.Fatal(err)
	}
	oldInRedis, _ := rdb.Get(ctx, prefix+":lastgood").Bytes()
	if err := st.RevokeCallerKey(ctx, revokedID, "test"); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Publish(ctx, store.PublishInput{Author: "test", Message: "second version", Check: func(s config.Snapshot) config.Result { return config.DryRun(s, storeEnv) }}); err != nil {
		t.Logf("no second version published (%v): the revocation alone must move the epoch", err)
	}
	// The cache is saved to disk, then to Redis: wait for both copies.
	var current []byte
	waitFor(t, 15*time.Second, "the revoked key to be refused and the cache rewritten", func() bool {
		now, _ := os.ReadFile(cacheFile)
		current, _ = rdb.Get(ctx, prefix+":lastgood").Bytes()
		return chatStatus(t, first.URL, revoked) == http.StatusUnauthorized && string(now) != string(old) &&
			len(current) > 0 && string(current) != string(oldInRedis)
	})
	if err := first.stop(t, 20*time.Second); err != nil {
		t.Fatalf("first process: %v", err)
	}

	proxy.Cut()
	if err := os.WriteFile(cacheFile, old, 0o600); err != nil {
		t.Fatal(err)
	}
	rdb.Del(ctx, prefix+":lastgood")
	start := func() *gatewayProc {
		return startGateway(t, proxied, prefix, "SWITCHYARD_SPILL_DIR="+t.TempDir(), "SWITCHYARD_CONFIG_CACHE_DIR="+cacheDir)
	}
	expectRefusal(t, start(), "refusing to start", "is older than what this installation has reached", "according to redis")

	rdb.Del(ctx, prefix+":lastgood:epoch") // a Redis restarted without persistence
	expectRefusal(t, start(), "refusing to start", "no witness")

	rdb.Set(ctx, prefix+":lastgood", current, 0)
	g := start()
	waitHealthy(t, g.URL+"/readyz", g.proc)
	if s := chatStatus(t, g.URL, revoked); s != http.StatusUnauthorized {
		t.Errorf("the revoked key against the cache: %d, want 401", s)
	}
	if s := chatStatus(t, g.URL, in.key); s != 200 {
		t.Errorf("a live key against the cache: %d, want 200", s)
	}
	h := healthz(t, g.URL)
	cache, _ := h["cache"].(map[string]any)
	if h["config"] != "cache" || cache == nil || !strings.HasPrefix(cache["copy"].(string), "redis ") || cache["witness"] != "redis" {
		t.Errorf("/healthz should name the Redis copy and its witness: %v", h)
	}
	if !strings.Contains(g.log(), "copy=\"redis "+prefix+":lastgood\"") && !strings.Contains(g.log(), "copy=redis") {
		t.Errorf("the start log should name the copy taken:\n%s", tail(g.log(), 2000))
	}
}

// A damaged cache with no other copy says so (not "never loaded a
// published version here").
func TestDamagedCacheWithNoOtherCopySaysSo(t *testing.T) {
	in := newInstallation(t)
	proxy := storetest.NewProxy(t, pgHostPort(t, in.dsn))
	proxied := viaProxy(t, in.dsn, proxy)
	cacheDir := t.TempDir()
	first := startGateway(t, proxied, in.prefix, "SWITCHYARD_SPILL_DIR="+t.TempDir(), "SWITCHYARD_CONFIG_CACHE_DIR="+cacheDir)
	waitHealthy(t, first.URL+"/readyz", first.proc)
	if err := first.stop(t, 20*time.Second); err != nil {
		t.Fatal(err)
	}
	proxy.Cut()
	if err := os.WriteFile(filepath.Join(cacheDir, "config.sealed"), []byte("not a sealed copy"), 0o600); err != nil {
		t.Fatal(err)
	}
	testRedis(t).Del(context.Background(), in.prefix+":lastgood")
	g := startGateway(t, proxied, in.prefix, "SWITCHYARD_SPILL_DIR="+t.TempDir(), "SWITCHYARD_CONFIG_CACHE_DIR="+cacheDir)
	expectRefusal(t, g, "refusing to start", "damaged and there is no other copy")
	if strings.Contains(g.log(), "never loaded") {
		t.Errorf("a damaged copy is reported as no copy:\n%s", tail(g.log(), 2000))
	}
}

// /healthz stops reporting "cannot check the live version" once PostgreSQL
// answers again, without a publish: within 10 s of its return (the check
// runs every 500 ms here, every second by default).
func TestHealthzClearsWhenPostgresReturns(t *testing.T) {
	in := newInstallation(t)
	proxy := storetest.NewProxy(t, pgHostPort(t, in.dsn))
	g := startGateway(t, viaProxy(t, in.dsn, proxy), in.prefix, "SWITCHYARD_SPILL_DIR="+t.TempDir())
	waitHealthy(t, g.URL+"/readyz", g.proc)
	noted := func() bool {
		b, _ := json.Marshal(healthz(t, g.URL)["notes"])
		return strings.Contains(string(b), "cannot check")
	}
	proxy.Cut()
	waitFor(t, 15*time.Second, "/healthz to report PostgreSQL's absence", noted)
	proxy.Restore()
	back := time.Now()
	waitFor(t, 10*time.Second, "/healthz to clear after PostgreSQL returned", func() bool {
		h := healthz(t, g.URL)
		return h["postgres"] == "ok" && !noted()
	})
	t.Logf("/healthz clean %v after PostgreSQL returned", time.Since(back).Round(10*time.Millisecond))
	if err := g.stop(t, 20*time.Second); err != nil {
		t.Errorf("exit: %v", err)
	}
}

// An instance started from the cache while PostgreSQL is down ends on
// SIGTERM within its grace: an in-flight stream longer than the grace is
// cut with an error event, as with PostgreSQL up, and the process exits.
func TestSIGTERMEndsAnInstanceServingTheCacheWithPostgresDown(t *testing.T) {
	in := newInstallation(t, "-reply-chunks", "40", "-inter-chunk-delay", "250ms")
	proxy := storetest.NewProxy(t, pgHostPort(t, in.dsn))
	proxied := viaProxy(t, in.dsn, proxy)
	cacheDir := t.TempDir()
	first := startGateway(t, proxied, in.prefix, "SWITCHYARD_SPILL_DIR="+t.TempDir(), "SWITCHYARD_CONFIG_CACHE_DIR="+cacheDir)
	waitHealthy(t, first.URL+"/readyz", first.proc)
	if err := first.stop(t, 20*time.Second); err != nil {
		t.Fatal(err)
	}
	proxy.Cut()
	g := startGateway(t, proxied, in.prefix, "SWITCHYARD_SPILL_DIR="+t.TempDir(), "SWITCHYARD_CONFIG_CACHE_DIR="+cacheDir,
		"SWITCHYARD_SHUTDOWN_GRACE=2s", "SWITCHYARD_DRAIN_DELAY=1s")
	waitHealthy(t, g.URL+"/readyz", g.proc)

	res, err := chat(t, g.URL, in.key, true)
	if err != nil || res.StatusCode != 200 {
		t.Fatalf("a stream from the cache: %v %v", res, err)
	}
	defer res.Body.Close()
	sc := bufio.NewScanner(res.Body)
	for sc.Scan() && !strings.Contains(sc.Text(), `"content"`) {
	}
	sent := time.Now()
	_ = g.cmd.Process.Signal(syscall.SIGTERM)
	last := ""
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "data: ") {
			last = sc.Text()
		}
	}
	if !strings.Contains(last, "shutting_down") {
		t.Errorf("the stream ended with %q, want the shutting_down error event", last)
	}
	if err := g.wait(t, 25*time.Second); err != nil {
		t.Errorf("exit after a drain: %v", err)
	}
	took := time.Since(sent)
	if took > 10*time.Second {
		t.Errorf("shutdown took %s with a 1 s drain delay and a 2 s grace", took)
	}
	if !strings.Contains(g.log(), "in-flight requests done") || !strings.Contains(g.log(), "call log flushed") {
		t.Errorf("the shutdown log is incomplete:\n%s", tail(g.log(), 3000))
	}
	t.Logf("exited %v after SIGTERM", took.Round(10*time.Millisecond))
}

// consoleClient signs in to the console over HTTP (the CSRF cookie's
// token goes in the header, as htmx sends it).
type consoleClient struct {
	t    *testing.T
	base string
	c    *http.Client
}

func signIn(t *testing.T, base, user, password string) *consoleClient {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	cc := &consoleClient{t: t, base: base, c: &http.Client{Jar: jar}}
	if res, err := cc.c.Get(base + "/login"); err == nil {
		res.Body.Close()
	}
	if res := cc.post("/login", url.Values{"username": {user}, "password": {password}}); res.StatusCode >= 400 {
		t.Fatalf("sign-in as %s: %d", user, res.StatusCode)
	}
	return cc
}

func (cc *consoleClient) post(path string, v url.Values) *http.Response {
	cc.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, cc.base+path, strings.NewReader(v.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	u, _ := url.Parse(cc.base)
	for _, ck := range cc.c.Jar.Cookies(u) {
		if ck.Name == "switchyard_csrf" {
			req.Header.Set("X-CSRF-Token", ck.Value)
		}
	}
	res, err := cc.c.Do(req)
	if err != nil {
		cc.t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	res.Body = io.NopCloser(strings.NewReader(string(b)))
	return res
}

func adminAPIStatus(t *testing.T, base, token string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, base+"/admin/api/versions", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	return res.StatusCode
}

// A password reset revokes the admin API tokens the user created: from the
// console (another admin resets it) and from the reset-password command.
func TestPasswordResetRevokesAdminAPITokens(t *testing.T) {
	s := startServer(t, "")
	st, err := store.Open(context.Background(), s.DSN, nil) // tokens and users need no sealer
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	opsID, err := st.CreateUser(ctx, "ops", "ops-password-1", store.RoleAdmin)
	if err != nil {
		t.Fatal(err)
	}
	mint := func() string {
		tok, _, err := st.CreateAdminToken(ctx, "ops-ci", store.RoleAdmin, "ops")
		if err != nil {
			t.Fatal(err)
		}
		if c := adminAPIStatus(t, s.URL, tok); c != 200 {
			t.Fatalf("a fresh token: %d", c)
		}
		return tok
	}

	tok := mint()
	admin := signIn(t, s.URL, "admin", s.Admin)
	res := admin.post("/settings/users/"+strconv.FormatInt(opsID, 10)+"/password", url.Values{"password": {"ops-password-2"}})
	body, _ := io.ReadAll(res.Body)
	if res.StatusCode != 200 || !strings.Contains(string(body), "admin API token they created is revoked") {
		t.Fatalf("console reset: %d %s", res.StatusCode, tail(string(body), 600))
	}
	if c := adminAPIStatus(t, s.URL, tok); c != http.StatusUnauthorized {
		t.Errorf("the token after a console reset: %d, want 401", c)
	}

	tok = mint()
	cctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(cctx, filepath.Join(binDir, "switchyard"), "reset-password", "ops")
	cmd.Env = append(cmd.Environ(), "SWITCHYARD_DATABASE_URL="+s.DSN, "SWITCHYARD_REDIS_URL="+redisURL(), "SWITCHYARD_REDIS_PREFIX="+redisPrefix(s.DSN))
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "1 admin API token(s) revoked") {
		t.Fatalf("reset-password: %v\n%s", err, out)
	}
	if c := adminAPIStatus(t, s.URL, tok); c != http.StatusUnauthorized {
		t.Errorf("the token after reset-password: %d, want 401", c)
	}
}
