package e2e

import (
	"strings"
	"testing"

	"github.com/playwright-community/playwright-go"
)

// forbiddenControls matches every control that changes something: a POST
// form other than Log out, links to New and Edit forms and to the wizard,
// and the publish banner.
const forbiddenControls = `form[method=post]:not([action="/logout"]), [hx-post], a[href$="/new"], a[href$="/edit"], ` +
	`a[href="/onboarding"], a[href^="/onboarding/"], a[href="/config/import"], [data-testid=draft-banner], [data-testid=nav-onboarding]`

// TestViewerSeesNoControlItCannotUse signs in as a viewer and walks the
// console: no Onboarding in the menu, no publish banner, no create, edit,
// delete or park control anywhere; the wizard and the forms say plainly
// that the role cannot do this before anything is filled. An admin still
// sees them.
func TestViewerSeesNoControlItCannotUse(t *testing.T) {
	f := furnish(t)
	u := &ui{t: t, p: newPage(t), base: f.s.URL}
	u.login("watcher", "watcher-password-1")
	u.see(u.id("draft-note"), "the viewer's draft note")
	walked := 0
	for _, cp := range consolePages {
		if cp.anon || cp.open != nil || cp.name == "not-found" {
			continue
		}
		path := cp.path
		for k, v := range f.ids {
			path = strings.ReplaceAll(path, "{"+k+"}", v)
		}
		res, err := u.p.Goto(u.base + path)
		u.must(err, "goto "+path)
		refused := strings.Contains(path, "/new") || strings.HasSuffix(path, "/edit") || strings.HasPrefix(path, "/onboarding") || path == "/config/import" ||
			path == "/audit" // managing users includes reading the audit trail
		if refused {
			if res.Status() != 403 {
				t.Errorf("%s: viewer answered %d, want 403", path, res.Status())
			}
			body := u.text(u.p.Locator("main"), "refusal")
			if !strings.Contains(body, "The viewer role cannot") {
				t.Errorf("%s: the refusal does not say what the role cannot do: %q", path, body)
			}
		} else if res.Status() != 200 {
			t.Errorf("%s: viewer answered %d", path, res.Status())
		}
		n, err := u.p.Locator(forbiddenControls).Count()
		u.must(err, "count controls on "+path)
		if n > 0 {
			html, _ := u.p.Locator(forbiddenControls).First().Evaluate("e => e.outerHTML", nil)
			t.Errorf("%s: the viewer is shown %d control(s) it cannot use, e.g. %v", path, n, html)
		}
		walked++
	}
	if walked < 25 {
		t.Fatalf("walked only %d pages", walked)
	}

	// The admin sees them.
	a := &ui{t: t, p: newPage(t), base: f.s.URL}
	a.login("admin", adminPassword)
	a.goto_("/providers")
	for _, id := range []string{"nav-onboarding", "draft-banner", "provider-new", "provider-edit"} {
		a.see(a.id(id), id+" for the admin")
	}
	a.goto_("/route-groups")
	a.see(a.id("group-new"), "Add route group for the admin")
}

// TestCallLogsAndGroupsOnAPhone: at 390 px every call-log row shows its
// status and error inside the viewport (the rows stack, nothing scrolls
// sideways), and the route groups' glyph buttons have accessible names.
func TestCallLogsAndGroupsOnAPhone(t *testing.T) {
	f := furnish(t)
	u := &ui{t: t, p: newPage(t), base: f.s.URL}
	u.must(u.p.SetViewportSize(390, 800), "viewport")
	u.login("admin", adminPassword)
	u.goto_("/call-logs")
	rows := u.p.Locator(`#calllog-results tbody > tr`)
	u.see(rows, "call-log rows")
	n, err := rows.Count()
	u.must(err, "count rows")
	if n < 3 {
		t.Fatalf("%d call-log rows", n)
	}
	limited := false
	for i := range n {
		row := rows.Nth(i)
		for _, id := range []string{"calllog-status", "calllog-error-class"} {
			cell := row.Locator(`[data-testid=` + id + `]`)
			box, err := cell.BoundingBox()
			u.must(err, "box of "+id)
			if box == nil || box.X < 0 || box.X+box.Width > 390 || box.Width < 20 {
				t.Errorf("row %d: %s lies outside the 390 px viewport: %+v", i, id, box)
			}
			vis, err := cell.IsVisible()
			u.must(err, "visible "+id)
			if !vis {
				t.Errorf("row %d: %s is not visible", i, id)
			}
		}
		if txt := u.text(row.Locator(`[data-testid=calllog-error-class]`), "error"); strings.Contains(txt, "limit") || strings.Contains(txt, "rate") {
			limited = true
		}
	}
	if !limited {
		t.Error("no call-log row shows the rate-limited call's error")
	}
	wide, err := u.p.Evaluate(`() => [...document.querySelectorAll('.table-wrap')].some(w => w.scrollWidth > w.clientWidth + 1) || document.documentElement.scrollWidth > document.documentElement.clientWidth`)
	u.must(err, "measure overflow")
	if wide == true {
		t.Error("something scrolls sideways at 390 px on Call logs")
	}

	u.goto_("/route-groups")
	for _, name := range []string{"Move chat-main up in main / deep", "Move chat-b down in main / deep", "Edit priority and weight of chat-b in main / deep", "Remove chat-b from main / deep"} {
		btn := u.p.GetByRole("button", playwright.PageGetByRoleOptions{Name: name, Exact: playwright.Bool(true)})
		if c, err := btn.Count(); err != nil || c != 1 {
			t.Errorf("no button named %q (%d, %v)", name, c, err)
		}
	}
	unnamed, err := u.p.Evaluate(`() => [...document.querySelectorAll('main button')].filter(b => !/[A-Za-z0-9]/.test(b.textContent) && !(b.getAttribute('aria-label') || '').trim()).length`)
	u.must(err, "unnamed glyph buttons")
	if unnamed != 0 {
		t.Errorf("%v glyph buttons without an accessible name", unnamed)
	}
}
