package e2e

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"switchyard/store"
)

// choosePassword answers the change-password page a user who must change
// their password is sent to after signing in, and waits for the console.
func (u *ui) choosePassword(password string) {
	u.t.Helper()
	u.see(u.id("password-change"), "the change-password page")
	u.fill(u.id("password-new"), password, "new password")
	u.fill(u.id("password-again"), password, "new password again")
	u.click(u.id("password-change-submit"), "change password")
	u.see(u.id("whoami"), "the console after choosing a password")
}

var generatedLogin = regexp.MustCompile(`Log in as admin with password (\S+) \(`)

// The first admin signs in with the generated password and must choose
// their own before the console shows anything; an admin resets another
// user's password (the form says it ends their sessions and tokens): that
// user's open session ends, their admin API token gets 401, and signing in
// with the new generated password asks them to choose their own too.
func TestGeneratedPasswordsAreChangedAtFirstSignIn(t *testing.T) {
	t.Parallel()
	s := startServer(t, "", "SWITCHYARD_ADMIN_PASSWORD=")
	var generated string
	for deadline := time.Now().Add(20 * time.Second); generated == ""; time.Sleep(100 * time.Millisecond) {
		if m := generatedLogin.FindStringSubmatch(s.proc.log()); m != nil {
			generated = m[1]
		} else if time.Now().After(deadline) {
			t.Fatalf("no generated password in the start message:\n%s", tail(s.proc.log(), 2000))
		}
	}

	a := &ui{t: t, p: pageAt(t, 1280), base: s.URL}
	a.goto_("/providers")
	a.fill(a.id("login-username"), "admin", "username")
	a.fill(a.id("login-password"), generated, "generated password")
	a.click(a.id("login-submit"), "log in")
	a.see(a.id("password-change"), "the change-password page after signing in")
	a.goto_("/callers")
	a.see(a.id("password-change"), "the change-password page instead of Callers")
	a.fill(a.id("password-new"), generated, "the generated password again")
	a.fill(a.id("password-again"), generated, "again")
	a.click(a.id("password-change-submit"), "change password")
	a.see(a.id("error-password"), "the current password refused")
	a.choosePassword("admin-own-password-1")
	if !strings.HasSuffix(a.p.URL(), "/callers") {
		t.Fatalf("after the change the admin is at %s, want where they were going (/callers)", a.p.URL())
	}

	// ops has a session and an admin API token.
	st, err := store.Open(context.Background(), s.DSN, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	opsID, err := st.CreateUser(ctx, "ops", "ops-password-1", store.RoleAdmin)
	if err != nil {
		t.Fatal(err)
	}
	tok, _, err := st.CreateAdminToken(ctx, "ops-ci", store.RoleAdmin, "ops")
	if err != nil {
		t.Fatal(err)
	}
	o := &ui{t: t, p: pageAt(t, 1280), base: s.URL}
	o.login("ops", "ops-password-1")
	o.see(o.id("whoami"), "ops signed in")
	if c := adminAPIStatus(t, s.URL, tok); c != 200 {
		t.Fatalf("ops's token before the reset: %d", c)
	}

	oid := itoa(opsID)
	a.goto_("/settings")
	a.click(a.id("user-reset-"+oid).Locator("summary"), "open reset password")
	if said := a.text(a.id("user-reset-effect-"+oid), "what a reset does"); !strings.Contains(said, "signed out of every session") || !strings.Contains(said, "admin API tokens ops created are revoked") {
		t.Fatalf("the reset form says %q", said)
	}
	a.click(a.id("user-reset-submit-"+oid), "reset password")
	pw := strings.TrimSpace(a.text(a.id("password-plaintext"), "the new password"))
	a.see(a.id("user-must-change-ops"), "ops must choose a new password")

	o.goto_("/providers")
	o.see(o.id("login"), "ops's session ended: the login page")
	if c := adminAPIStatus(t, s.URL, tok); c != 401 {
		t.Fatalf("ops's token after the reset: %d, want 401", c)
	}
	o.login("ops", pw)
	o.goto_("/callers")
	o.see(o.id("password-change"), "ops must choose a password first")
	o.choosePassword("ops-own-password-2")
	if who := o.text(o.id("whoami"), "whoami"); !strings.Contains(who, "ops") {
		t.Fatalf("ops signed in as %q", who)
	}
}
