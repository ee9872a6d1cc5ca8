package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/playwright-community/playwright-go"
)

// consolePage is one page of the console walk. path may hold placeholders
// ("{app}") that furnish fills with ids; open, when set, reaches a page
// that has no URL of its own (a form's answer) by operator actions from
// path. Pages are visited in this order; anonymous ones first.
type consolePage struct {
	name string
	path string
	anon bool
	open func(u *ui)
}

// consolePages is every console page. A new page is one more row here: the
// walk checks it at both widths (no horizontal overflow, axe-core without a
// serious or critical violation) and writes its screenshots.
var consolePages = []consolePage{
	{name: "login", path: "/login", anon: true},
	{name: "onboarding", path: "/onboarding"},
	{name: "onboarding-form", path: "/onboarding/templates/openai"},
	{name: "providers", path: "/providers"},
	{name: "provider-new", path: "/providers/new"},
	{name: "provider-edit", path: "/providers/{vendor-a}/edit"},
	{name: "logic-models", path: "/logic-models"},
	{name: "logic-model-new", path: "/logic-models/new"},
	{name: "logic-model-edit", path: "/logic-models/{chat-main}/edit"},
	{name: "deployment-new", path: "/logic-models/{chat-main}/deployments/new"},
	{name: "deployment-edit", path: "/deployments/{dep-a}/edit"},
	{name: "route-groups", path: "/route-groups"},
	{name: "route-groups-add-candidate", path: "/route-groups", open: func(u *ui) {
		u.click(u.id("tier-main-deep").GetByTestId("cand-add-deep").Locator("summary"), "open add candidate")
		u.see(u.id("tier-main-deep").GetByTestId("cand-add-model"), "the logic-model select")
	}},
	{name: "route-group-new", path: "/route-groups/new"},
	{name: "route-group-edit", path: "/route-groups/{main}/edit"},
	{name: "callers", path: "/callers"},
	{name: "caller-new", path: "/callers/new"},
	{name: "caller", path: "/callers/{app}"},
	{name: "caller-edit", path: "/callers/{app}/edit"},
	{name: "tenants", path: "/tenants"},
	{name: "tenant-new", path: "/tenants/new"},
	{name: "tenant-edit", path: "/tenants/{acme}/edit"},
	{name: "versions", path: "/versions"},
	{name: "version", path: "/versions/1"},
	{name: "version-diff", path: "/versions/diff?from=1&to=draft"},
	{name: "version-rollback", path: "/versions/1/rollback"},
	{name: "config-import", path: "/config/import"},
	{name: "dry-run", path: "/dry-run"},
	{name: "test-route", path: "/test-route"},
	{name: "test-route-explained", path: "/test-route", open: func(u *ui) {
		u.fill(u.id("testroute-model"), "deep", "tier")
		u.click(u.id("testroute-explain-button"), "explain the route")
		u.see(u.id("testroute-step"), "the explained chain")
	}},
	{name: "overview", path: "/"},
	{name: "call-logs", path: "/call-logs"},
	{name: "call-log", path: "/call-logs/{failover}"},
	{name: "dashboard", path: "/dashboard"},
	{name: "usage", path: "/usage?caller=app"},
	{name: "usage-tenant", path: "/usage?tenant=acme"},
	{name: "health", path: "/health"},
	{name: "jobs", path: "/jobs"},
	{name: "settings", path: "/settings"},
	{name: "settings-alerts", path: "/settings/alerts"},
	{name: "audit", path: "/audit"},
	{name: "manual", path: "/manual/"},
	{name: "manual-fields", path: "/manual/fields.md"},
	{name: "not-found", path: "/no-such-page"},
	{name: "onboarding-review", path: "/onboarding/templates/sandbox", open: func(u *ui) {
		u.click(u.id("review"), "review")
		u.see(u.id("dryrun-ok"), "the plan's dry-run")
	}},
	// Last: it creates and publishes the sandbox's configuration, with a
	// caller, so the page shows its key and the code snippets.
	{name: "onboarding-done", path: "/onboarding/templates/sandbox", open: func(u *ui) {
		u.selectOption(u.id("group-choice"), "main", "route group")
		u.fill(u.id("caller-name"), "walk-team", "first caller")
		u.click(u.id("review"), "review")
		u.click(u.id("create-publish"), "create and publish")
		u.see(u.id("published-version"), "published")
	}},
}

// walkWidths are the viewport widths every page is checked at: a laptop
// and a phone.
var walkWidths = []int{1280, 390}

// screenshotDir is where the walk writes its screenshots: a folder git
// ignores, unless SWITCHYARD_SCREENSHOTS names another (make screenshots
// refreshes the committed set in e2e/screenshots so).
func screenshotDir() string {
	if d := os.Getenv("SWITCHYARD_SCREENSHOTS"); d != "" {
		return d
	}
	return filepath.Join("..", ".cache", "screenshots")
}

// TestConsoleWalk visits every console page of a furnished installation at
// 1280 and 390 px: no horizontal overflow of the page (and, at 1280, of
// any table or other box), no serious or critical axe-core violation, and
// a screenshot of each (see screenshotDir). One server, one browser page;
// each page is loaded once and resized.
func TestConsoleWalk(t *testing.T) {
	began := time.Now()
	axe := axeSource(t)
	f := furnish(t)
	ctx, err := browser.NewContext(playwright.BrowserNewContextOptions{Viewport: &playwright.Size{Width: walkWidths[0], Height: 800}})
	if err != nil {
		t.Fatal(err)
	}
	defer ctx.Close()
	ctx.SetDefaultTimeout(10000)
	if err := ctx.AddInitScript(playwright.Script{Content: &axe}); err != nil {
		t.Fatal(err)
	}
	pg, err := ctx.NewPage()
	if err != nil {
		t.Fatal(err)
	}
	u := &ui{t: t, p: pg, base: f.s.URL}
	if err := os.MkdirAll(screenshotDir(), 0o755); err != nil {
		t.Fatal(err)
	}

	t.Logf("furnished in %v", time.Since(began).Round(100*time.Millisecond))
	walked := time.Now()
	var inChecks, inShots time.Duration
	// Screenshots are shrunk and written beside the walk.
	shots := make(chan screenshot, len(consolePages)*len(walkWidths))
	written := make(chan error, 1)
	go func() { written <- writeScreenshots(shots) }()
	var problems []string
	loggedIn := false
	for _, cp := range consolePages {
		if !cp.anon && !loggedIn {
			u.login("admin", f.s.Admin)
			loggedIn = true
		}
		pageBegan := time.Now()
		path := cp.path
		for k, v := range f.ids {
			path = strings.ReplaceAll(path, "{"+k+"}", v)
		}
		if strings.Contains(path, "{") {
			t.Fatalf("page %s: unknown placeholder in %s", cp.name, path)
		}
		u.must(pg.SetViewportSize(walkWidths[0], 800), "viewport")
		u.goto_(path)
		if cp.open != nil {
			cp.open(u)
		}
		for _, w := range walkWidths {
			u.must(pg.SetViewportSize(w, 800), "viewport")
			_, err := pg.Evaluate(`() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))`)
			u.must(err, "let the page lay out")
			t0 := time.Now()
			for _, p := range checkPage(u, w) {
				problems = append(problems, fmt.Sprintf("%s at %d px: %s", cp.name, w, p))
			}
			t1 := time.Now()
			shot, err := pg.Screenshot(playwright.PageScreenshotOptions{FullPage: playwright.Bool(true), Animations: playwright.ScreenshotAnimationsDisabled})
			u.must(err, "screenshot "+cp.name)
			shots <- screenshot{name: cp.name + "-" + strconv.Itoa(w) + ".png", png: shot}
			inChecks, inShots = inChecks+t1.Sub(t0), inShots+time.Since(t1)
		}
		u.slow("page "+cp.name, pageBegan)
	}
	close(shots)
	if err := <-written; err != nil {
		t.Fatal(err)
	}
	t.Logf("walked %d pages × %d widths in %v (checks %v, screenshots %v)", len(consolePages), len(walkWidths),
		time.Since(walked).Round(100*time.Millisecond), inChecks.Round(100*time.Millisecond), inShots.Round(100*time.Millisecond))
	if len(problems) > 0 {
		t.Fatalf("%d problems:\n%s", len(problems), strings.Join(problems, "\n"))
	}
}

type screenshot struct {
	name string
	png  []byte
}

// writeScreenshots shrinks each screenshot and writes it to screenshotDir.
func writeScreenshots(shots <-chan screenshot) error {
	var first error
	for s := range shots {
		b, err := shrinkPNG(s.png)
		if err == nil {
			err = os.WriteFile(filepath.Join(screenshotDir(), s.name), b, 0o644)
		}
		if err != nil && first == nil {
			first = fmt.Errorf("screenshot %s: %w", s.name, err)
		}
	}
	return first
}

// checkPage measures horizontal overflow and runs axe-core on the current
// page at width w.
func checkPage(u *ui, w int) []string {
	u.t.Helper()
	var out []string
	res, err := u.p.Evaluate(overflowJS, w >= 1000)
	u.must(err, "measure overflow")
	var o struct {
		Doc  [2]int   `json:"doc"`
		Wide []string `json:"wide"`
	}
	remarshal(u.t, res, &o)
	if o.Doc[0] > o.Doc[1] {
		out = append(out, fmt.Sprintf("the page scrolls sideways: scrollWidth %d > clientWidth %d", o.Doc[0], o.Doc[1]))
	}
	for _, el := range o.Wide {
		out = append(out, "cut off (scrolls or clips sideways): "+el)
	}
	res, err = u.p.Evaluate(axeJS)
	u.must(err, "run axe-core")
	var vs []struct {
		ID, Impact, Help string
		Nodes            []string
	}
	remarshal(u.t, res, &vs)
	for _, v := range vs {
		out = append(out, fmt.Sprintf("axe %s (%s): %s — %s", v.ID, v.Impact, v.Help, strings.Join(v.Nodes, " | ")))
	}
	return out
}

// overflowJS reports the document's scroll and client widths and every box
// whose content is wider than the box and is clipped or scrolled: at the
// desktop width (strict) any such box, on a phone only clipped ones (a
// table may scroll inside its own frame there). A box marked
// data-scroll-ok (a text diff, a raw body) may scroll.
const overflowJS = `(strict) => {
	const de = document.documentElement;
	const wide = [];
	const name = (el) => el.tagName.toLowerCase() + (el.id ? '#' + el.id : '') +
		(el.dataset.testid ? '[data-testid=' + el.dataset.testid + ']' : '') +
		(el.className && typeof el.className === 'string' ? '.' + el.className.trim().split(/\s+/).join('.') : '');
	for (const el of document.body.querySelectorAll('*')) {
		if (['INPUT', 'SELECT', 'TEXTAREA', 'OPTION', 'svg'].includes(el.tagName) || el.closest('svg')) continue;
		if (el.scrollWidth <= el.clientWidth + 1 || el.clientWidth <= 1) continue; // 1 px: visually hidden (.sr-only)
		const ox = getComputedStyle(el).overflowX;
		if (ox === 'visible') continue;
		const clips = ox === 'hidden' || ox === 'clip';
		if (!clips && (!strict || el.closest('[data-scroll-ok]'))) continue;
		let where = name(el);
		for (let p = el.parentElement; p && p !== document.body && where.length < 160; p = p.parentElement) {
			if (p.id || p.dataset.testid) { where = name(p) + ' > ' + where; break; }
		}
		wide.push(where + ' (' + el.scrollWidth + ' > ' + el.clientWidth + ' px)');
	}
	return {doc: [de.scrollWidth, de.clientWidth], wide};
}`

// axeJS runs axe-core (injected by the context's init script) and returns
// the serious and critical violations.
const axeJS = `async () => {
	const r = await axe.run(document, {resultTypes: ['violations']});
	return r.violations.filter(v => v.impact === 'serious' || v.impact === 'critical').map(v => ({
		id: v.id, impact: v.impact, help: v.help,
		nodes: v.nodes.slice(0, 5).map(n => n.target.join(' ') + (n.failureSummary ? ' — ' + n.failureSummary.replace(/\s+/g, ' ').slice(0, 200) : '')),
	}));
}`

// axeSource is axe.min.js as e2e/scripts/e2e-deps.sh fetched it from npm.
func axeSource(t *testing.T) string {
	t.Helper()
	path := os.Getenv("SWITCHYARD_AXE_PATH")
	if path == "" {
		path = filepath.Join("..", ".cache", "axe-core", "axe.min.js")
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("axe-core missing (run ./e2e/scripts/e2e-deps.sh; `make test` does): %v", err)
	}
	return string(b)
}

func remarshal(t testing.TB, in, out any) {
	t.Helper()
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, out); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
}
