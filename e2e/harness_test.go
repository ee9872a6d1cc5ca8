// Package e2e drives the real switchyard binary in Debian's Chromium with
// playwright-go. Each test gets its own database, server process and fake
// vendor, and a fresh browser context; server logs are printed only when a
// test fails.
package e2e

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/playwright-community/playwright-go"
	"github.com/redis/go-redis/v9"

	"switchyard/store/storetest"
)

var (
	binDir  string
	pw      *playwright.Playwright
	browser playwright.Browser
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	if spec := os.Getenv(holdConnsEnv); spec != "" {
		return holdConns(spec) // a child of TestManyIdleConnections
	}
	dir, err := os.MkdirTemp("", "switchyard-e2e-*")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	binDir = dir
	for _, cmd := range []string{"switchyard", "fakeupstream"} {
		out, err := exec.Command("go", "build", "-o", filepath.Join(dir, cmd), "../cmd/"+cmd).CombinedOutput()
		if err != nil {
			fmt.Fprintf(os.Stderr, "e2e: build %s: %v\n%s", cmd, err, out)
			return 1
		}
	}
	pw, err = playwright.Run(&playwright.RunOptions{DriverDirectory: os.Getenv("PLAYWRIGHT_DRIVER_PATH"), SkipInstallBrowsers: true, Verbose: false})
	if err != nil {
		fmt.Fprintf(os.Stderr, "e2e: playwright driver missing (run ./e2e/scripts/e2e-deps.sh and set PLAYWRIGHT_DRIVER_PATH; `make test` does both): %v\n", err)
		return 1
	}
	defer pw.Stop()
	exe := "/usr/bin/chromium"
	browser, err = pw.Chromium.Launch(playwright.BrowserTypeLaunchOptions{
		ExecutablePath: &exe, Headless: playwright.Bool(true),
		Args: []string{"--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"},
	})
	if err != nil {
		fmt.Fprintf(os.Stderr, "e2e: launch Debian's chromium (apt-get install chromium): %v\n", err)
		return 1
	}
	defer browser.Close()
	return m.Run()
}

func freePort(t testing.TB) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// proc is a running binary whose output is kept for failure reports.
type proc struct {
	cmd *exec.Cmd
	mu  sync.Mutex
	out bytes.Buffer
}

func (p *proc) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.Write(b)
}

func (p *proc) log() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.String()
}

func start(t testing.TB, name string, env []string, args ...string) *proc {
	t.Helper()
	p := &proc{cmd: exec.Command(filepath.Join(binDir, name), args...)}
	p.cmd.Env = append(os.Environ(), env...)
	p.cmd.Stdout, p.cmd.Stderr = p, p
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = p.cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { _ = p.cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = p.cmd.Process.Kill()
		}
		if t.Failed() {
			t.Logf("---- %s output ----\n%s", name, tail(p.log(), 8000))
		}
	})
	return p
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}

// Server is one switchyard process with its database and fake vendor.
type Server struct {
	URL     string
	FakeURL string
	DSN     string
	Admin   string // admin password
	proc    *proc
	t       testing.TB
}

const adminPassword = "e2e-admin-password"

// startServer runs the fake vendor and switchyard on a fresh database;
// extra settings (NAME=value) are added to the server's environment.
func startServer(t testing.TB, dsn string, extra ...string) *Server {
	t.Helper()
	if dsn == "" {
		dsn = storetest.NewDatabase(t)
	}
	fakeAddr := freePort(t)
	start(t, "fakeupstream", nil, "-addr", fakeAddr)
	addr := freePort(t)
	env := []string{
		"SWITCHYARD_ADDR=" + addr, "SWITCHYARD_DATABASE_URL=" + dsn, "SWITCHYARD_SECRET_KEY=" + storetest.TestKey,
		"SWITCHYARD_ADMIN_PASSWORD=" + adminPassword, "SWITCHYARD_SPILL_DIR=" + t.TempDir(), "SWITCHYARD_LOG_FORMAT=text",
		"SWITCHYARD_SANDBOX_URL=http://" + fakeAddr + "/v1", "SWITCHYARD_RELOAD_INTERVAL=500ms",
		"SWITCHYARD_REDIS_URL=" + redisURL(), "SWITCHYARD_REDIS_PREFIX=" + redisPrefix(dsn),
		// Browser tests are not about Redis timeouts: at the default 50 ms a
		// machine busy compiling the suite sends a sign-in failure to the
		// per-instance counter now and then, splitting the count that a
		// lockout test waits for (as the scale-out test, which sets 2 s).
		"SWITCHYARD_REDIS_TIMEOUT=1s",
	}
	env = append(env, extra...)
	cleanRedisPrefix(t, redisPrefix(dsn)) // registered first, so it runs after the server stopped
	p := start(t, "switchyard", env)
	s := &Server{URL: "http://" + addr, FakeURL: "http://" + fakeAddr, DSN: dsn, Admin: adminPassword, proc: p, t: t}
	waitHealthy(t, s.URL+"/healthz", p)
	waitHealthy(t, s.FakeURL+"/_fake/stats", nil)
	return s
}

// redisPrefix isolates one test's servers in the shared Redis (servers on
// one database share it, as instances of one installation do).
func redisPrefix(dsn string) string {
	u, err := url.Parse(dsn)
	if err != nil {
		return "sye2e"
	}
	return "sye2e" + strings.TrimPrefix(u.Path, "/")
}

// cleanRedisPrefix deletes the servers' Redis keys when the test ends (after
// the servers stopped: cleanups run last-registered first).
func cleanRedisPrefix(t testing.TB, prefix string) {
	t.Cleanup(func() {
		opt, err := redis.ParseURL(redisURL())
		if err != nil {
			return
		}
		rdb := redis.NewClient(opt)
		defer rdb.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		iter := rdb.Scan(ctx, 0, prefix+":*", 500).Iterator()
		for iter.Next(ctx) {
			rdb.Del(ctx, iter.Val())
		}
	})
}

func redisURL() string {
	if v := os.Getenv("SWITCHYARD_TEST_REDIS_URL"); v != "" {
		return v
	}
	return "redis://127.0.0.1:6379/0"
}

func waitHealthy(t testing.TB, url string, p *proc) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		res, err := http.Get(url)
		if err == nil {
			res.Body.Close()
			if res.StatusCode == 200 {
				return
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	log := ""
	if p != nil {
		log = p.log()
	}
	t.Fatalf("e2e: %s not healthy after 30s\n%s", url, log)
}

// page opens a fresh browser context and page.
func newPage(t testing.TB) playwright.Page {
	t.Helper()
	ctx, err := browser.NewContext(playwright.BrowserNewContextOptions{Permissions: []string{"clipboard-read", "clipboard-write"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ctx.Close() })
	ctx.SetDefaultTimeout(10000)
	pg, err := ctx.NewPage()
	if err != nil {
		t.Fatal(err)
	}
	return pg
}

// ui wraps a page with fail-fast helpers that count operator interactions.
type ui struct {
	t       testing.TB
	p       playwright.Page
	base    string
	actions int
}

func (u *ui) must(err error, what string) {
	u.t.Helper()
	if err != nil {
		shot := filepath.Join(os.TempDir(), fmt.Sprintf("e2e-%d.png", time.Now().UnixNano()))
		_, _ = u.p.Screenshot(playwright.PageScreenshotOptions{Path: &shot, FullPage: playwright.Bool(true)})
		html, _ := u.p.Content()
		u.t.Fatalf("%s: %v\n(url %s, screenshot %s)\n%s", what, err, u.p.URL(), shot, tail(html, 3000))
	}
}

func (u *ui) slow(what string, since time.Time) {
	if d := time.Since(since); d > 2*time.Second {
		u.t.Logf("slow step (%v): %s", d.Round(100*time.Millisecond), what)
	}
}

func (u *ui) goto_(path string) {
	u.t.Helper()
	defer u.slow("goto "+path, time.Now())
	// Let a navigation started by the previous click finish first, or the
	// new one aborts it.
	if u.p.URL() != "about:blank" {
		_ = u.p.WaitForLoadState(playwright.PageWaitForLoadStateOptions{State: playwright.LoadStateLoad, Timeout: playwright.Float(5000)})
	}
	_, err := u.p.Goto(u.base + path)
	u.must(err, "goto "+path)
}

func (u *ui) id(testID string) playwright.Locator { return u.p.GetByTestId(testID) }

func (u *ui) click(loc playwright.Locator, what string) {
	u.t.Helper()
	defer u.slow("click "+what, time.Now())
	u.actions++
	u.must(loc.Click(), "click "+what)
}

func (u *ui) fill(loc playwright.Locator, value, what string) {
	u.t.Helper()
	defer u.slow("fill "+what, time.Now())
	u.actions++
	u.must(loc.Fill(value), "fill "+what)
}

func (u *ui) selectOption(loc playwright.Locator, value, what string) {
	u.t.Helper()
	u.actions++
	_, err := loc.SelectOption(playwright.SelectOptionValues{Values: &[]string{value}})
	u.must(err, "select "+what)
}

// see waits for a locator to be visible.
func (u *ui) see(loc playwright.Locator, what string) {
	u.t.Helper()
	defer u.slow("see "+what, time.Now())
	u.must(loc.First().WaitFor(playwright.LocatorWaitForOptions{State: playwright.WaitForSelectorStateVisible}), "see "+what)
}

func (u *ui) text(loc playwright.Locator, what string) string {
	u.t.Helper()
	s, err := loc.First().TextContent()
	u.must(err, "text of "+what)
	return s
}

// login signs in through the login form.
func (u *ui) login(user, password string) {
	u.t.Helper()
	u.goto_("/login")
	u.fill(u.id("login-username"), user, "username")
	u.fill(u.id("login-password"), password, "password")
	u.click(u.id("login-submit"), "log in")
	u.must(u.p.WaitForURL(u.base+"/**", playwright.PageWaitForURLOptions{WaitUntil: playwright.WaitUntilStateLoad}), "after login")
	if strings.Contains(u.p.URL(), "/login") {
		u.must(fmt.Errorf("still on the login page"), "login")
	}
}

// sql runs a query against the server's database (for assertions only).
func (s *Server) sql(t testing.TB) *sql.DB {
	db, err := sql.Open("postgres", s.DSN)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

var _ = context.Background
