package e2e

import (
	"context"
	"fmt"
	"net/http"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/playwright-community/playwright-go"

	"switchyard/store/storetest"
)

// Issue 16's operator scenarios (items 2, 6, 10 and 11) in Chromium; the
// walk over every page (items 7 and 10's axe check) is walk_test.go.

// pageAt opens a fresh browser context at a viewport width.
func pageAt(t *testing.T, width int) playwright.Page {
	t.Helper()
	ctx, err := browser.NewContext(playwright.BrowserNewContextOptions{Viewport: &playwright.Size{Width: width, Height: 800},
		Permissions: []string{"clipboard-read", "clipboard-write"}})
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

// eval runs a script on the page and fails the test on an error.
func (u *ui) eval(script string, arg ...any) any {
	u.t.Helper()
	v, err := u.p.Evaluate(script, arg...)
	u.must(err, "evaluate "+tail(script, 80))
	return v
}

var wordHealthy = regexp.MustCompile(`\bhealthy\b`)

// Item 2: Health says first whether each deployment can serve and why not,
// in the row; what cannot serve never reads "healthy"; the 15-second
// refresh keeps an opened history open.
func TestHealthShowsServabilityFirst(t *testing.T) {
	t.Parallel()
	f := furnish(t)
	u := &ui{t: t, p: pageAt(t, 1280), base: f.s.URL}
	u.login("admin", f.s.Admin)
	u.goto_("/health")

	for _, c := range []struct {
		dep, serving, badge, why string
	}{
		{"dep-solo", "no", "no usable key", "Its only key, only (sk-…0003), is quarantined: refused as unauthorised (HTTP 401)"},
		{"dep-b", "no", "no usable key", "is quarantined"},
		{"dep-disabled", "no", "disabled", "Disabled by an operator"},
		{"dep-retired", "no", "provider disabled", "Its provider retired is disabled"},
		{"dep-a", "yes", "serving", ""},
	} {
		row := u.id("health-" + f.ids[c.dep])
		u.see(row, "health row of "+c.dep)
		if got, _ := row.GetAttribute("data-serving"); got != c.serving {
			t.Errorf("%s: data-serving %q, want %q", c.dep, got, c.serving)
		}
		cell := row.GetByTestId("health-serving")
		if got := strings.TrimSpace(u.text(cell.GetByTestId("badge"), "serving badge")); got != c.badge {
			t.Errorf("%s: serving badge %q, want %q", c.dep, got, c.badge)
		}
		if c.why != "" {
			if got := u.text(cell.GetByTestId("health-why"), "why"); !strings.Contains(got, c.why) {
				t.Errorf("%s: the row says %q, want %q", c.dep, got, c.why)
			}
		}
		if txt := u.text(row, "row"); c.serving == "no" && wordHealthy.MatchString(txt) {
			t.Errorf("%s cannot serve but reads healthy: %q", c.dep, txt)
		}
	}
	// The fix of the quarantined key is one click away.
	if href, _ := u.id("health-" + f.ids["dep-solo"]).Locator(`[data-testid="health-why"] a`).GetAttribute("href"); href != "/providers" {
		t.Errorf("the quarantined key's fix links to %q", href)
	}

	// Open a history, then let the board refresh as its 15-second poll
	// does (the same request and swap, without the wait): it stays open.
	detail := "health-detail-" + f.ids["dep-solo"]
	u.click(u.id(detail).Locator("summary"), "open the history")
	u.eval(`() => { document.getElementById('health-board').dataset.old = '1'; }`)
	u.eval(`() => htmx.ajax('GET', '/health', {source: '#health-board', target: '#health-board', swap: 'outerHTML'})`)
	u.must(u.p.Locator(`#health-board:not([data-old])`).WaitFor(), "the refreshed board")
	if open := u.eval(`(id) => document.getElementById(id).open`, detail); open != true {
		t.Fatal("the refresh closed the history the operator opened")
	}
	if n, _ := u.p.Locator(`details[id^="health-detail-"][open]`).Count(); n != 1 {
		t.Fatalf("%d histories open after the refresh, want 1", n)
	}
}

// Item 6: an inline change (a key added, a weight set) shows "the draft
// differs from live" at once, without a reload.
func TestDraftBannerAppearsAfterInlineEdits(t *testing.T) {
	t.Parallel()
	dsn := storetest.NewDatabase(t)
	fakeAddr := freePort(t)
	start(t, "fakeupstream", nil, "-addr", fakeAddr)
	seedPublished(t, dsn, "http://"+fakeAddr)
	s := startServer(t, dsn)
	u := &ui{t: t, p: pageAt(t, 1280), base: s.URL}
	u.login("admin", s.Admin)

	u.goto_("/providers")
	if n, _ := u.id("draft-banner").Count(); n != 0 {
		t.Fatal("the banner shows before any change")
	}
	u.eval(`() => { window.notReloaded = true; }`)
	panel := u.id("provider-fake")
	u.fill(panel.GetByTestId("key-secret"), "sk-e2e-provider-key-0002", "key secret")
	u.click(panel.GetByTestId("key-add"), "add key")
	u.see(u.id("draft-banner"), "the draft banner after adding a key")
	if v := u.eval(`() => window.notReloaded === true`); v != true {
		t.Fatal("the page was reloaded")
	}

	// Publish from the banner's link, then set a weight inline: it comes
	// back.
	u.click(u.id("draft-banner").GetByRole("link", playwright.LocatorGetByRoleOptions{Name: "dry-run and publish"}), "dry-run and publish")
	u.fill(u.id("publish-message"), "another key", "publish message")
	u.click(u.id("publish-submit"), "publish")
	u.must(u.p.Locator(`[data-testid="draft-state"]:not(:has([data-testid="draft-banner"]))`).First().WaitFor(playwright.LocatorWaitForOptions{State: playwright.WaitForSelectorStateAttached}), "no banner after publishing")
	u.goto_("/logic-models")
	u.eval(`() => { window.notReloaded = true; }`)
	row := u.id("model-small").Locator(`[data-testid^="deployment-row-"]`).First()
	u.click(row.GetByTestId("deployment-disable"), "disable the deployment")
	u.see(u.id("draft-banner"), "the draft banner after disabling a deployment")
	if v := u.eval(`() => window.notReloaded === true`); v != true {
		t.Fatal("the page was reloaded")
	}
}

// Item 10: a skip link is the first Tab stop and leads to the content;
// focus is visible on the dark sidebar; the dry-run says severity in words;
// at 390 px the navigation is a menu above the content.
func TestKeyboardSkipLinkFocusAndMenu(t *testing.T) {
	t.Parallel()
	f := furnish(t)
	u := &ui{t: t, p: pageAt(t, 1280), base: f.s.URL}
	u.login("admin", f.s.Admin)
	u.goto_("/call-logs")

	u.must(u.p.Keyboard().Press("Tab"), "Tab")
	if id := u.eval(`() => document.activeElement.dataset.testid`); id != "skip-link" {
		t.Fatalf("the first Tab stop is %v, want the skip link", id)
	}
	if top := u.eval(`() => document.activeElement.getBoundingClientRect().top`); toFloat(top) < 0 {
		t.Fatal("the focused skip link is off screen")
	}
	u.must(u.p.Keyboard().Press("Enter"), "Enter")
	u.must(u.p.Keyboard().Press("Tab"), "Tab")
	if in := u.eval(`() => !!document.activeElement.closest('main')`); in != true {
		t.Fatal("after the skip link the next Tab is not in the content")
	}

	// Focus on a sidebar link is drawn, in a colour that stands out on the
	// dark sidebar (contrast at least 3:1).
	u.must(u.id("nav-health").Focus(), "focus a sidebar link")
	u.must(u.p.Keyboard().Press("Shift+Tab"), "Shift+Tab")
	u.must(u.p.Keyboard().Press("Tab"), "Tab")
	ring := u.eval(`() => {
		const el = document.activeElement, cs = getComputedStyle(el);
		const rgb = (c) => c.match(/\d+(\.\d+)?/g).slice(0, 3).map(Number);
		const lum = (c) => { const v = rgb(c).map(x => { x /= 255; return x <= 0.03928 ? x / 12.92 : Math.pow((x + 0.055) / 1.055, 2.4); }); return 0.2126*v[0] + 0.7152*v[1] + 0.0722*v[2]; };
		const a = lum(cs.outlineColor), b = lum(getComputedStyle(el.closest('nav')).backgroundColor);
		return {id: el.dataset.testid, style: cs.outlineStyle, width: parseFloat(cs.outlineWidth), contrast: (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05)};
	}`).(map[string]any)
	if ring["id"] != "nav-health" || ring["style"] == "none" || toFloat(ring["width"]) < 2 || toFloat(ring["contrast"]) < 3 {
		t.Fatalf("focus ring on the sidebar: %v", ring)
	}

	// Dry-run findings say their severity in words.
	u.goto_("/dry-run")
	sev := u.p.Locator(`[data-testid="findings"] [data-testid="finding-severity"]`)
	n, _ := sev.Count()
	if n == 0 {
		t.Fatal("the furnished draft has no findings to show")
	}
	for i := 0; i < n; i++ {
		if w := strings.TrimSpace(u.text(sev.Nth(i), "severity")); w != "error: blocks publishing" && w != "warning" {
			t.Errorf("finding %d says %q", i, w)
		}
	}

	// A phone: the content starts right under a Menu bar; the menu opens,
	// is announced, and closes with Escape.
	m := &ui{t: t, p: pageAt(t, 390), base: f.s.URL}
	m.login("admin", f.s.Admin)
	m.goto_("/call-logs")
	if top := toFloat(m.eval(`() => document.querySelector('main').getBoundingClientRect().top`)); top > 80 {
		t.Fatalf("the content starts %v px down at 390 px", top)
	}
	if vis, _ := m.id("nav-health").IsVisible(); vis {
		t.Fatal("the navigation links show before the menu is opened")
	}
	m.click(m.id("nav-toggle"), "Menu")
	m.see(m.id("nav-health"), "the links in the open menu")
	if exp, _ := m.id("nav-toggle").GetAttribute("aria-expanded"); exp != "true" {
		t.Fatalf("aria-expanded %q after opening", exp)
	}
	m.must(m.p.Keyboard().Press("Escape"), "Escape")
	if vis, _ := m.id("nav-health").IsVisible(); vis {
		t.Fatal("Escape did not close the menu")
	}
	m.click(m.id("nav-toggle"), "Menu")
	m.click(m.id("nav-health"), "go to Health")
	m.must(m.p.WaitForURL("**/health"), "Health")
}

// Item 11: one colour per status across charts, disabled arrows that look
// disabled, tier selects inside their tier, onboarding snippets that fit,
// the favicon, and users: role change and a password reset in the console.
func TestSmallerConsoleFixes(t *testing.T) {
	t.Parallel()
	f := furnish(t)
	u := &ui{t: t, p: pageAt(t, 1280), base: f.s.URL}
	u.login("admin", f.s.Admin)

	// Favicon: served, and named by every page.
	res, err := http.Get(f.s.URL + "/favicon.ico")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 200 || res.Header.Get("Content-Type") != "image/x-icon" {
		t.Fatalf("/favicon.ico: %d %s", res.StatusCode, res.Header.Get("Content-Type"))
	}

	// The requests chart tells "rejected by us" from upstream errors by
	// colour (the error-rate chart draws every non-2xx by cause instead).
	u.goto_("/dashboard")
	legend := func(chart string) map[string]string {
		out := map[string]string{}
		for k, v := range u.eval(`(id) => Object.fromEntries([...document.querySelectorAll('[data-testid="' + id + '"] [data-testid="chart-legend"] > span')].map(s => [s.textContent.trim(), s.querySelector('rect').getAttribute('fill')]))`, chart).(map[string]any) {
			out[k] = fmt.Sprint(v)
		}
		return out
	}
	req := legend("chart-requests")
	for _, status := range []string{"rejected by us", "upstream errors"} {
		if req[status] == "" {
			t.Errorf("%q has no colour in the requests chart: %v", status, req)
		}
	}
	if req["rejected by us"] == req["upstream errors"] {
		t.Error("rejected and upstream errors share a colour")
	}

	// Disabled ▲/▼ look disabled: fainter than the enabled ones.
	u.goto_("/route-groups")
	look := u.eval(`() => {
		const op = (b) => parseFloat(getComputedStyle(b).opacity);
		const on = [...document.querySelectorAll('[data-testid="cand-up"]:not(:disabled), [data-testid="cand-down"]:not(:disabled)')];
		const off = [...document.querySelectorAll('[data-testid="cand-up"]:disabled, [data-testid="cand-down"]:disabled')];
		return {on: on.length, off: off.length, maxOff: Math.max(...off.map(op)), minOn: Math.min(...on.map(op)), cursor: off.length ? getComputedStyle(off[0]).cursor : ''};
	}`).(map[string]any)
	if toFloat(look["on"]) == 0 || toFloat(look["off"]) == 0 || toFloat(look["maxOff"]) >= toFloat(look["minOn"]) || look["cursor"] != "not-allowed" {
		t.Fatalf("disabled move buttons do not look disabled: %v", look)
	}

	// The add-candidate select stays inside its tier at every width.
	tier := u.id("tier-main-deep")
	u.click(tier.GetByTestId("cand-add-deep").Locator("summary"), "open add candidate")
	for _, w := range []int{1280, 1000, 390} {
		u.must(u.p.SetViewportSize(w, 800), "viewport")
		in := u.eval(`() => {
			const t = document.querySelector('[data-testid="tier-main-deep"]').getBoundingClientRect();
			const s = document.querySelector('[data-testid="tier-main-deep"] [data-testid="cand-add-model"]').getBoundingClientRect();
			return s.left >= t.left && s.right <= t.right + 0.5;
		}`)
		if in != true {
			t.Errorf("at %d px the tier's select sticks out of the tier", w)
		}
	}
	u.must(u.p.SetViewportSize(1280, 800), "viewport")

	// Users: make the viewer an admin, reset their password (generated,
	// shown once), and they log in with it as an admin.
	u.goto_("/settings")
	wid := userID(t, f, "watcher")
	u.selectOption(u.id("user-role-"+wid), "admin", "role")
	u.click(u.id("user-role-save-"+wid), "change role")
	u.see(u.id("users-notice"), "role changed")
	if got := u.text(u.id("users-notice"), "notice"); !strings.Contains(got, "watcher is now an admin") {
		t.Fatalf("notice %q", got)
	}
	u.click(u.id("user-reset-"+wid).Locator("summary"), "open reset password")
	u.click(u.id("user-reset-submit-"+wid), "reset password")
	pw := strings.TrimSpace(u.text(u.id("password-plaintext"), "the new password"))
	u.goto_("/settings")
	if html, _ := u.p.Content(); strings.Contains(html, pw) {
		t.Fatal("the new password is shown again")
	}
	w := &ui{t: t, p: pageAt(t, 1280), base: f.s.URL}
	w.login("watcher", pw)
	w.choosePassword("watcher-own-password")
	if who := u.text(w.id("whoami"), "whoami"); !strings.Contains(who, "(admin)") {
		t.Fatalf("watcher signed in as %q", who)
	}
}

// Item 11: a locked-out admin resets their password with the
// reset-password command (no server started), which lifts the lockout; a
// server started on the existing database says how to log in and how to
// reset a lost password (what make demo prints).
func TestLockedOutAdminResetsPasswordFromTheCommandLine(t *testing.T) {
	t.Parallel()
	// Three wrong passwords lock a username out (the address is not
	// throttled here, so the browser can still try).
	s := startServer(t, "", "SWITCHYARD_SIGNIN_BACKOFF_AFTER=3", "SWITCHYARD_SIGNIN_LOCKOUT_AFTER=3",
		"SWITCHYARD_SIGNIN_IP_BACKOFF_AFTER=1000", "SWITCHYARD_SIGNIN_IP_LOCKOUT_AFTER=1000")
	u := &ui{t: t, p: pageAt(t, 1280), base: s.URL}
	refused := u.p.Locator(`[data-testid="login-error"], [data-testid="login-throttle"]`)
	for i := 0; i < 3; i++ {
		u.goto_("/login")
		u.fill(u.id("login-username"), "admin", "username")
		u.fill(u.id("login-password"), "not-the-password", "wrong password")
		u.click(u.id("login-submit"), "log in")
		u.see(refused, "refused")
	}
	// Now even the right password is refused.
	u.goto_("/login")
	u.fill(u.id("login-username"), "admin", "username")
	u.fill(u.id("login-password"), s.Admin, "password")
	u.click(u.id("login-submit"), "log in")
	u.see(u.id("login-throttle"), "the lockout")

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(binDir, "switchyard"), "reset-password", "admin")
	cmd.Env = append(cmd.Environ(), "SWITCHYARD_DATABASE_URL="+s.DSN, "SWITCHYARD_REDIS_URL="+redisURL(), "SWITCHYARD_REDIS_PREFIX="+redisPrefix(s.DSN),
		"SWITCHYARD_ADDR="+strings.TrimPrefix(s.URL, "http://")) // the server's own address: the command must not listen
	began := time.Now()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("reset-password: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	pw := strings.TrimSpace(lines[len(lines)-1])
	if !strings.Contains(string(out), "shown once") || len(pw) < 20 {
		t.Fatalf("reset-password printed %q", out)
	}
	t.Logf("reset-password ran in %v", time.Since(began).Round(time.Millisecond))

	u.login("admin", pw)
	u.choosePassword("admin-own-password")

	// A second instance on this database: it says how to log in now that
	// SWITCHYARD_ADMIN_PASSWORD is no longer the admin's password.
	g := startGateway(t, s.DSN, redisPrefix(s.DSN)+"b")
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(g.log(), "reset-password admin") {
		if time.Now().After(deadline) {
			t.Fatalf("the start message does not say how to reset the password:\n%s", tail(g.log(), 2000))
		}
		time.Sleep(100 * time.Millisecond)
	}
	if !strings.Contains(g.log(), "Switchyard console: http://") || !strings.Contains(g.log(), "Log in as admin") {
		t.Fatalf("start message:\n%s", tail(g.log(), 2000))
	}
}

// userID is a console user's id.
func userID(t *testing.T, f *furnished, name string) string {
	t.Helper()
	var id int64
	if err := f.st.DB().QueryRow(`SELECT id FROM users WHERE username = $1`, name).Scan(&id); err != nil {
		t.Fatal(err)
	}
	return itoa(id)
}

func toFloat(v any) float64 {
	switch x := v.(type) {
	case float64:
		return x
	case int:
		return float64(x)
	case int64:
		return float64(x)
	}
	return -1
}
