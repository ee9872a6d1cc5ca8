package e2e

import (
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/playwright-community/playwright-go"
)

// tokyoPage is a fresh page whose browser lives in Tokyo (UTC+9), so local
// times differ from UTC, and which accepts downloads.
func tokyoPage(t *testing.T) playwright.Page {
	t.Helper()
	ctx, err := browser.NewContext(playwright.BrowserNewContextOptions{TimezoneId: playwright.String("Asia/Tokyo"), AcceptDownloads: playwright.Bool(true)})
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

// TestCallLogsOperatorFindsTheFailuresAndTestRouteAgrees is the call-log
// and Test route issue as an operator meets it: a 200, a 503 from a tier
// with nothing servable and a 401 with a revoked key; the 503 is found by
// HTTP status and by error code and its detail leads with the skip; the
// revoked key's fingerprint finds the 401; rejected rows say nothing was
// spent; the CSV export holds the filtered rows; live tail shows a new row
// without reload; times are local with UTC on hover; the custom range's
// fields are no tab stops on a preset; Test route says one thing about
// the unservable tier, explains the draft and words the retry budget.
func TestCallLogsOperatorFindsTheFailuresAndTestRouteAgrees(t *testing.T) {
	w := newCallLogWorld(t)
	db := w.s.sql(t)
	for deadline := time.Now().Add(5 * time.Second); ; {
		if code, _ := w.send(t, w.checkout, "fast"); code == 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the server does not serve the published version")
		}
		time.Sleep(100 * time.Millisecond)
	}
	code, okID := w.send(t, w.checkout, "fast")
	if code != 200 {
		t.Fatalf("the 200: %d", code)
	}
	// vendor-y refuses its only key: deep's only deployment is left with
	// a quarantined key, so the next deep request reaches no vendor.
	w.fakeRules(t, `[{"key":"sk-vendor-y-key-0000yb02","fault":{"status":401}}]`)
	var unservable string
	for i := 0; unservable == "" && i < 5; i++ {
		if code, id := w.send(t, w.checkout, "deep"); code == http.StatusServiceUnavailable && i > 0 {
			unservable = id
		}
	}
	if unservable == "" {
		t.Fatal("deep never answered 503 once its key was quarantined")
	}

	pg := tokyoPage(t)
	u := &ui{t: t, p: pg, base: w.s.URL}
	u.login("admin", w.s.Admin)

	// The operator revokes limited-app's key on its caller page.
	var callerID, keyID int64
	if err := db.QueryRow(`SELECT c.id, k.id FROM callers c JOIN caller_keys k ON k.caller_name = c.name WHERE c.name = 'limited-app'`).Scan(&callerID, &keyID); err != nil {
		t.Fatal(err)
	}
	kid := strconv.FormatInt(keyID, 10)
	u.p.OnDialog(func(d playwright.Dialog) { _ = d.Accept() })
	u.goto_("/callers/" + strconv.FormatInt(callerID, 10))
	fp := strings.TrimSpace(u.text(u.id("caller-key-fingerprint-"+kid), "the key's fingerprint"))
	if !strings.HasPrefix(fp, w.tight[:9]+"…") || strings.Contains(fp, w.tight[9:15]) {
		t.Fatalf("fingerprint %q", fp)
	}
	u.click(u.id("caller-key-revoke-"+kid), "revoke the key")
	u.see(u.id("caller-keys-notice"), "the key is revoked")
	var revoked string
	for deadline := time.Now().Add(5 * time.Second); revoked == ""; time.Sleep(100 * time.Millisecond) {
		if code, id := w.send(t, w.tight, "fast"); code == http.StatusUnauthorized {
			revoked = id
		} else if time.Now().After(deadline) {
			t.Fatal("the revoked key is still accepted")
		}
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		var n int
		_ = db.QueryRow(`SELECT count(*) FROM call_logs WHERE request_id = ANY($1)`, "{"+okID+","+unservable+","+revoked+"}").Scan(&n)
		if n == 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the call-log rows were not written")
		}
	}

	rows := func() playwright.Locator { return u.p.Locator(`[data-testid^="calllog-row-"]`) }
	only := func(id, what string) {
		t.Helper()
		u.see(u.id("calllog-row-"+id), what)
		u.must(u.p.Locator(`[data-testid^="calllog-row-"]:not([data-testid="calllog-row-`+id+`"])`).First().WaitFor(
			playwright.LocatorWaitForOptions{State: playwright.WaitForSelectorStateDetached}), what+": other rows gone")
		if n, _ := rows().Count(); n != 1 {
			t.Fatalf("%s: %d rows", what, n)
		}
	}
	search := func(field, value, what string) {
		t.Helper()
		u.goto_("/call-logs")
		u.fill(u.id(field), value, what)
		u.click(u.id("calllog-filter-submit"), "search "+what)
	}

	// The 503 by HTTP status and by error code; its detail leads with why.
	// (The deep call that met the refused key is a 503 too: every row of
	// these searches is one, and the okay call is none of them.)
	every := func(what, cell, want string) {
		t.Helper()
		u.see(u.id("calllog-row-"+unservable), what)
		// The unfiltered list also holds the 503, so seeing it does not
		// mean the search has been swapped in yet: wait until every row
		// matches, and name the rows that still do not when time is up.
		var wrong, texts []string
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
			var err error
			texts, err = u.p.Locator(`[data-testid^="calllog-row-"] [data-testid="` + cell + `"]`).AllTextContents()
			u.must(err, what)
			wrong = wrong[:0]
			for _, got := range texts {
				if !strings.Contains(got, want) {
					wrong = append(wrong, got)
				}
			}
			if len(texts) > 0 && len(wrong) == 0 || time.Now().After(deadline) {
				break
			}
		}
		if len(texts) == 0 {
			t.Errorf("%s: no rows", what)
		}
		for _, got := range wrong {
			t.Errorf("%s: a row shows %q, want %q", what, got, want)
		}
		if n, _ := u.id("calllog-row-" + okID).Count(); n != 0 {
			t.Errorf("%s: the 200 is listed", what)
		}
	}
	search("calllog-filter-http-status", "503", "HTTP status 503")
	every("the 503 by HTTP status", "calllog-http", "503")
	search("calllog-filter-error-code", "no_available_model", "error code")
	every("the 503 by error code", "calllog-error-class", "no_available_model")
	if got := u.text(u.id("calllog-row-"+unservable).GetByTestId("nothing-spent"), "the 503's cost"); got != "nothing spent" {
		t.Errorf("the 503 row says %q", got)
	}
	u.click(u.id("calllog-row-"+unservable).GetByTestId("calllog-link"), "open the 503")
	lead := u.text(u.id("calllog-skip-lead"), "the 503's lead")
	if !strings.Contains(lead, "tier deep") || !strings.Contains(lead, "all keys are quarantined") {
		t.Errorf("the 503 detail leads with %q", lead)
	}
	if top := u.eval(`() => [document.querySelector('[data-testid="calllog-skip-lead"]').getBoundingClientRect().top, document.querySelector('[data-testid="calllog-fields"]').getBoundingClientRect().top]`).([]any); toFloat(top[0]) >= toFloat(top[1]) {
		t.Error("the skip reasons are not above the fields")
	}

	// The revoked key's fingerprint finds the 401, which names it.
	search("calllog-filter-caller-key", fp, "caller key")
	only(revoked, "the 401 by its key's fingerprint")
	row := u.id("calllog-row-" + revoked)
	if got := u.text(row.GetByTestId("calllog-caller-key"), "the 401's key"); got != fp {
		t.Errorf("the 401 row shows key %q, want %q", got, fp)
	}
	if got := u.text(row.GetByTestId("nothing-spent"), "the 401's cost"); got != "nothing spent" {
		t.Errorf("the 401 row says %q", got)
	}

	// Time: local (Tokyo) in the cell, UTC in its title.
	tm := row.Locator("time[data-local-time]")
	dt, _ := tm.GetAttribute("datetime")
	title, _ := tm.GetAttribute("title")
	at, err := time.Parse("2006-01-02T15:04:05.000Z", dt)
	if err != nil || title != at.UTC().Format("2006-01-02 15:04:05.000")+" UTC" {
		t.Fatalf("time element: datetime %q title %q", dt, title)
	}
	tokyo := at.In(time.FixedZone("JST", 9*3600)).Format("2006-01-02 15:04:05.000")
	u.must(u.p.Locator(`[data-testid="calllog-row-`+revoked+`"] time[data-local]`).WaitFor(), "local time rendered")
	if got := u.text(tm, "the 401's time"); got != tokyo {
		t.Errorf("the time cell reads %q, want Tokyo time %q", got, tokyo)
	}

	// CSV export of this search.
	if cap := u.text(u.id("calllog-export-cap"), "the export's cap"); !strings.Contains(cap, "10000 rows") {
		t.Errorf("the export's cap is said as %q", cap)
	}
	dl, err := u.p.ExpectDownload(func() error { return u.id("calllog-export").Click() })
	u.must(err, "download the export")
	path, err := dl.Path()
	u.must(err, "the export's file")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "time_utc,request_id,") || !strings.Contains(lines[1], revoked) || !strings.Contains(lines[1], fp) ||
		strings.Contains(string(b), w.tight) || strings.Contains(string(b), okID) {
		t.Errorf("the export:\n%s", b)
	}
	if !strings.HasSuffix(dl.SuggestedFilename(), ".csv") {
		t.Errorf("the export's file name %q", dl.SuggestedFilename())
	}

	// Live tail: a new call appears without reload.
	u.goto_("/call-logs?range=1h")
	u.click(u.id("calllog-filter-tail"), "tick live tail")
	u.see(u.id("calllog-tailing"), "tailing")
	u.eval(`() => { window.__noReload = true }`)
	_, fresh := w.send(t, w.checkout, "fast")
	u.must(u.id("calllog-row-"+fresh).WaitFor(playwright.LocatorWaitForOptions{Timeout: playwright.Float(20000)}), "the new row by live tail")
	if u.eval(`() => window.__noReload === true`) != true {
		t.Error("the page reloaded")
	}
	u.click(u.id("calllog-filter-tail"), "untick live tail")
	u.must(u.id("calllog-tailing").WaitFor(playwright.LocatorWaitForOptions{State: playwright.WaitForSelectorStateDetached}), "tail paused")

	// The custom range's fields are no tab stops unless custom is chosen.
	u.goto_("/call-logs")
	u.must(u.id("calllog-filter-range").Focus(), "focus the range")
	u.must(u.p.Keyboard().Press("Tab"), "Tab")
	if id := u.eval(`() => document.activeElement.id`); id == "cl-from" || id == "cl-to" {
		t.Errorf("Tab from a preset range lands on %v", id)
	}
	u.selectOption(u.id("calllog-filter-range"), "custom", "custom range")
	u.must(u.id("calllog-filter-range").Focus(), "focus the range")
	u.must(u.p.Keyboard().Press("Tab"), "Tab")
	if id := u.eval(`() => document.activeElement.id`); id != "cl-from" {
		t.Errorf("Tab from the custom range lands on %v, want cl-from", id)
	}

	// Test route: deep is red throughout and offers no request.
	var checkoutID int64
	if err := db.QueryRow(`SELECT id FROM callers WHERE name = 'checkout-web'`).Scan(&checkoutID); err != nil {
		t.Fatal(err)
	}
	u.goto_("/test-route")
	u.selectOption(u.id("testroute-caller"), strconv.FormatInt(checkoutID, 10), "caller")
	u.fill(u.id("testroute-model"), "deep", "tier")
	u.click(u.id("testroute-explain-button"), "explain deep")
	u.see(u.id("testroute-overall"), "the verdict")
	if v, _ := u.id("testroute-overall").GetAttribute("data-verdict"); v != "refused" {
		t.Errorf("deep's verdict is %q", v)
	}
	if n, _ := u.p.Locator(`[data-testid="testroute-verdict"] .badge.ok`).Count(); n != 0 {
		t.Error("a green admitted beside the red verdict")
	}
	if n, _ := u.id("testroute-send").Count(); n != 0 {
		t.Error("Send test request is offered for an unservable tier")
	}
	u.see(u.id("testroute-nothing-to-send"), "why there is nothing to send")

	// The retry budget in plain words, then the draft explained.
	u.fill(u.id("testroute-model"), "fast", "tier")
	u.click(u.id("testroute-explain-button"), "explain fast")
	u.must(u.p.Locator(`[data-testid="testroute-overall"][data-verdict="served"]`).WaitFor(), "fast is served")
	if got := u.text(u.id("testroute-retry-budget-state"), "the retry budget"); !strings.Contains(got, "first attempt") || !strings.Contains(got, "may be made now") {
		t.Errorf("the retry budget reads %q", got)
	}
	u.selectOption(u.id("testroute-version"), "draft", "the draft")
	u.click(u.id("testroute-explain-button"), "explain the draft")
	u.see(u.id("testroute-draft-note"), "the draft is explained, not sent")
	if got := u.text(u.id("testroute-target"), "what was explained"); !strings.Contains(got, "the draft") {
		t.Errorf("the draft explanation says %q", got)
	}
	if n, _ := u.id("testroute-send").Count(); n != 0 {
		t.Error("the draft offers a real test request")
	}
}
