package e2e

import (
	"strconv"
	"strings"
	"testing"

	"github.com/playwright-community/playwright-go"
)

// TestAuditTrailInTheConsole: a failed sign-in, a sign-in and two changes
// on Users & tokens are rows of the Audit page; the filter narrows them
// to one action; Verify chain finds the chain whole, and after a row is
// edited in the database (the append-only trigger switched off, as a table
// owner could) names that row as edited.
func TestAuditTrailInTheConsole(t *testing.T) {
	s := startServer(t, "")
	u := &ui{t: t, p: newPage(t), base: s.URL}
	u.goto_("/login")
	u.fill(u.id("login-username"), "admin", "username")
	u.fill(u.id("login-password"), "not-the-password", "password")
	u.click(u.id("login-submit"), "log in with a wrong password")
	u.see(u.id("login-error"), "the refusal")
	u.login("admin", adminPassword)

	u.goto_("/settings")
	u.fill(u.id("user-username"), "auditor", "new user")
	u.fill(u.id("user-password"), "auditor-password-1", "new user's password")
	u.click(u.id("user-create"), "add the user")
	u.see(u.id("user-auditor"), "the new user")
	u.fill(u.id("token-name"), "ci-deploy", "token name")
	u.click(u.id("token-create"), "create a token")
	u.see(u.id("token-plaintext"), "the token, once")

	u.goto_("/audit")
	results := u.text(u.id("audit-results"), "the audit rows")
	for _, want := range []string{"session.sign_in", "refused", "user.create", "auditor", "admin_token.create", "ci-deploy"} {
		if !strings.Contains(results, want) {
			t.Errorf("the Audit page lacks %q:\n%s", want, results)
		}
	}
	if strings.Contains(results, "not-the-password") || strings.Contains(results, "auditor-password-1") {
		t.Fatal("a password is on the Audit page")
	}

	u.fill(u.id("audit-filter-action"), "admin_token.create", "action filter")
	u.click(u.id("audit-filter-apply"), "filter")
	u.must(u.p.Locator(`[data-testid=audit-results] [data-testid=audit-action]:text-is("user.create")`).First().WaitFor(playwright.LocatorWaitForOptions{State: playwright.WaitForSelectorStateDetached}), "the other rows go")
	n, err := u.p.Locator(`[data-testid=audit-action]`).Count()
	u.must(err, "count rows")
	if n != 1 {
		t.Fatalf("%d rows for admin_token.create, want 1", n)
	}

	u.click(u.id("audit-verify"), "verify the chain")
	ok := u.text(u.id("audit-verify-ok"), "the chain is whole")
	if !strings.Contains(ok, "row(s) checked") {
		t.Errorf("verify said %q", ok)
	}

	db := s.sql(t)
	var first string
	if err := db.QueryRow(`SELECT object_name FROM audit_log WHERE actor_kind = 'system' AND action = 'user.create'`).Scan(&first); err != nil || first != "admin" {
		t.Fatalf("the first admin's creation by the server: %q, %v", first, err)
	}
	var id int64
	if err := db.QueryRow(`SELECT id FROM audit_log WHERE action = 'user.create' AND actor_kind = 'user'`).Scan(&id); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{`ALTER TABLE audit_log DISABLE TRIGGER USER`, `UPDATE audit_log SET object_name = 'someone-else' WHERE id = ` + strconv.FormatInt(id, 10), `ALTER TABLE audit_log ENABLE TRIGGER USER`} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	u.goto_("/audit")
	u.click(u.id("audit-verify"), "verify the chain again")
	broken := u.text(u.id("audit-verify-broken"), "the broken link")
	if !strings.Contains(broken, "#"+strconv.FormatInt(id, 10)) || !strings.Contains(broken, "edited") {
		t.Errorf("verify after the edit said %q, want row #%d edited", broken, id)
	}
}
