package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/playwright-community/playwright-go"

	"switchyard/e2e/oidcprovider"
)

const (
	idpClientID     = "switchyard-console"
	idpClientSecret = "idp-client-secret-9f3a"
)

// configureSSO fills the Sign-in panel as the admin: the test provider,
// switchyard-admins → admin, switchyard-viewers → viewer, nobody else.
func configureSSO(t *testing.T, a *ui, idp *oidcprovider.Provider) {
	t.Helper()
	a.goto_("/settings")
	if got := a.text(a.id("signin-redirect"), "redirect URL"); got != a.base+"/auth/oidc/callback" {
		t.Fatalf("redirect URL shown %q, want %s/auth/oidc/callback", got, a.base)
	}
	a.fill(a.id("signin-name"), "Test IdP", "name")
	a.fill(a.id("signin-issuer"), idp.URL, "issuer")
	a.fill(a.id("signin-client-id"), idpClientID, "client id")
	a.fill(a.id("signin-client-secret"), idpClientSecret, "client secret")
	a.fill(a.id("signin-admin-groups"), "switchyard-admins", "admin groups")
	a.fill(a.id("signin-viewer-groups"), "switchyard-viewers", "viewer groups")
	a.click(a.id("signin-save"), "save sign-in settings")
	a.see(a.id("signin-notice"), "saved")
	if fp := a.text(a.id("signin-secret-set"), "secret fingerprint"); !strings.Contains(fp, "…9f3a") || strings.Contains(fp, "idp-client") {
		t.Fatalf("secret shown as %q", fp)
	}
	html, _ := a.p.Content()
	if strings.Contains(html, idpClientSecret) {
		t.Fatal("the client secret is in the page")
	}
}

// ssoSignIn opens a fresh browser and clicks "Sign in with Test IdP".
func ssoSignIn(t *testing.T, base string) *ui {
	t.Helper()
	u := &ui{t: t, p: newPage(t), base: base}
	u.goto_("/login")
	u.click(u.id("login-sso"), "Sign in with Test IdP")
	u.must(u.p.WaitForLoadState(playwright.PageWaitForLoadStateOptions{State: playwright.LoadStateLoad}), "back from the provider")
	return u
}

// signedInAs waits for the console frame naming the user and role.
func signedInAs(t *testing.T, u *ui, name, role string) {
	t.Helper()
	// (An empty configuration's home is the onboarding wizard, which a
	// viewer may not open.)
	u.goto_("/providers")
	u.see(u.id("whoami"), "signed in as "+name)
	if who := u.text(u.id("whoami"), "whoami"); !strings.Contains(who, name) || !strings.Contains(who, role) {
		t.Fatalf("signed in as %q, want %s (%s)", who, name, role)
	}
}

// refused expects the login page with a refusal saying want, and no
// session: the console sends the browser back to the login page.
func refused(t *testing.T, u *ui, want string) {
	t.Helper()
	u.see(u.id("login-refusal"), "refusal")
	if got := u.text(u.id("login-refusal"), "refusal"); !strings.Contains(got, want) {
		t.Fatalf("refusal %q, want it to say %q", got, want)
	}
	u.goto_("/providers")
	if !strings.Contains(u.p.URL(), "/login") {
		t.Fatalf("after a refused sign-in the console opened at %s", u.p.URL())
	}
}

func userRole(t *testing.T, s *Server, subject string) string {
	t.Helper()
	var role string
	if err := s.sql(t).QueryRow(`SELECT role FROM users WHERE idp_subject=$1`, subject).Scan(&role); err != nil {
		t.Fatalf("user of %s: %v", subject, err)
	}
	return role
}

// TestSingleSignOn drives sign-in through a real OpenID Connect provider
// run by the test, in the browser: the admin sets it up under Users &
// tokens; the first sign-in creates the user with the role their group
// maps to; a group change demotes them at the next sign-in and ends their
// older session; a tampered ID token, a wrong nonce, an expired token and a
// user in no mapped group are refused with no session; a refused refresh
// ends the session; with local passwords off a password sign-in is refused.
func TestSingleSignOn(t *testing.T) {
	idp := oidcprovider.Start(t, idpClientID, idpClientSecret)
	s := startServer(t, "", "SWITCHYARD_SSO_RECHECK_INTERVAL=1s")
	a := &ui{t: t, p: newPage(t), base: s.URL}
	a.login("admin", adminPassword)
	configureSSO(t, a, idp)

	// First sign-in: the user is created with the mapped role.
	idp.SetUser(oidcprovider.User{Subject: "sub-ada", Name: "ada", Email: "ada@example.com", Groups: []string{"staff", "switchyard-admins"}})
	first := ssoSignIn(t, s.URL)
	signedInAs(t, first, "ada", "admin")
	if r := userRole(t, s, "sub-ada"); r != "admin" {
		t.Fatalf("created with role %q", r)
	}

	// Moved to the viewers group at the provider: the next sign-in demotes
	// ada and ends the admin session.
	idp.SetUser(oidcprovider.User{Subject: "sub-ada", Name: "ada", Groups: []string{"switchyard-viewers"}})
	second := ssoSignIn(t, s.URL)
	signedInAs(t, second, "ada", "viewer")
	first.goto_("/providers")
	if !strings.Contains(first.p.URL(), "/login") {
		t.Fatalf("the admin session outlived the demotion: %s", first.p.URL())
	}

	// Spoiled ID tokens and an unmapped user are refused.
	for _, c := range []struct {
		fault oidcprovider.Fault
		user  oidcprovider.User
		want  string
	}{
		{oidcprovider.Tampered, oidcprovider.User{Subject: "sub-eve", Name: "eve", Groups: []string{"switchyard-viewers"}}, "signature, issuer or audience"},
		{oidcprovider.WrongNonce, oidcprovider.User{Subject: "sub-eve", Name: "eve", Groups: []string{"switchyard-admins"}}, "nonce mismatch"},
		{oidcprovider.Expired, oidcprovider.User{Subject: "sub-eve", Name: "eve", Groups: []string{"switchyard-admins"}}, "has expired"},
		{oidcprovider.NoFault, oidcprovider.User{Subject: "sub-eve", Name: "eve", Groups: []string{"marketing"}}, "none of your groups"},
	} {
		idp.SetFault(c.fault)
		idp.SetUser(c.user)
		refused(t, ssoSignIn(t, s.URL), c.want)
	}
	idp.SetFault(oidcprovider.NoFault)
	var eves int
	_ = s.sql(t).QueryRow(`SELECT count(*) FROM users WHERE username='eve'`).Scan(&eves)
	if eves != 0 {
		t.Fatal("a refused sign-in created a user")
	}

	// The provider revokes ada's refresh tokens: her session ends within
	// a few recheck intervals.
	idp.RevokeRefreshTokens("sub-ada")
	deadline := time.Now().Add(15 * time.Second)
	for {
		second.goto_("/providers")
		if strings.Contains(second.p.URL(), "/login") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the session outlived its refused refresh")
		}
		time.Sleep(500 * time.Millisecond)
	}

	// Local passwords off: a password sign-in is refused, even the admin's.
	a.goto_("/settings")
	a.click(a.id("check-local_passwords").Locator("input"), "local passwords off")
	a.click(a.id("signin-save"), "save")
	a.see(a.id("signin-notice"), "saved")
	p := &ui{t: t, p: newPage(t), base: s.URL}
	p.goto_("/login")
	p.click(p.id("login-local").Locator("summary"), "open password sign-in")
	p.fill(p.id("login-username"), "admin", "username")
	p.fill(p.id("login-password"), adminPassword, "password")
	p.click(p.id("login-submit"), "log in")
	refused(t, p, "Password sign-in is switched off")
}
