package handlers_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"switchyard/e2e/oidcprovider"
	"switchyard/store"
	"switchyard/web/webtest"
)

// ssoEnv is a console with single sign-on set up, by its admin through the
// Sign-in form, against a test provider.
func ssoEnv(t *testing.T) (*webtest.Env, *webtest.Client, *oidcprovider.Provider) {
	t.Helper()
	idp := oidcprovider.Start(t, "console", "the-client-secret")
	env := webtest.New(t)
	admin := env.Login(t, "root", store.RoleAdmin)
	admin.HTMX = true
	form := url.Values{"display_name": {"Corp"}, "issuer_url": {idp.URL}, "client_id": {"console"}, "client_secret": {"the-client-secret"},
		"scopes": {"openid profile groups"}, "groups_claim": {"groups"}, "admin_groups": {"ops"}, "viewer_groups": {"staff"}, "local_passwords": {"on"}}
	res, doc := admin.PostForm("/settings/sign-in", form)
	if res.StatusCode != http.StatusOK || webtest.TestID(doc, "signin-notice").Length() != 1 {
		t.Fatalf("save sign-in settings: %d %s", res.StatusCode, doc.Text())
	}
	return env, admin, idp
}

// ssoSignIn walks a sign-in by hand: start, the provider's authorize
// endpoint, the callback (moved onto the test server); edit may spoil the
// callback's query. It returns the callback's answer.
func ssoSignIn(t *testing.T, env *webtest.Env, c *webtest.Client, edit func(url.Values)) *http.Response {
	t.Helper()
	nr := c.NoRedirects()
	res, _ := nr.Get("/auth/oidc/start?next=/providers")
	authz, err := url.Parse(res.Header.Get("Location"))
	if res.StatusCode != http.StatusFound || err != nil {
		t.Fatalf("start: %d %s", res.StatusCode, res.Header.Get("Location"))
	}
	q := authz.Query()
	if q.Get("code_challenge_method") != "S256" || q.Get("code_challenge") == "" || q.Get("nonce") == "" || q.Get("state") == "" {
		t.Fatalf("the authorization request lacks PKCE, nonce or state: %s", authz.RawQuery)
	}
	plain := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	back, err := plain.Get(authz.String())
	if err != nil {
		t.Fatal(err)
	}
	back.Body.Close()
	cb, _ := url.Parse(back.Header.Get("Location"))
	if cb.Path != "/auth/oidc/callback" || cb.Host != "gateway.test" {
		t.Fatalf("the provider was sent back to %s, not the public callback URL", cb)
	}
	cq := cb.Query()
	if edit != nil {
		edit(cq)
	}
	res, _ = nr.Get("/auth/oidc/callback?" + cq.Encode())
	return res
}

// TestSSOSignInStateRoleAndDemotion: a callback whose state is not this
// browser's is refused without a session; the first good sign-in creates
// the user with the role of their group and returns to the page asked for;
// a later sign-in in another group demotes them and ends the old session.
func TestSSOSignInStateRoleAndDemotion(t *testing.T) {
	env, _, idp := ssoEnv(t)
	idp.SetUser(oidcprovider.User{Subject: "s-1", Name: "grace", Groups: []string{"ops"}})

	c := env.Anonymous(t)
	if res := ssoSignIn(t, env, c, func(q url.Values) { q.Set("state", "forged") }); res.StatusCode != http.StatusForbidden {
		t.Fatalf("forged state: %d", res.StatusCode)
	}
	if idp.Exchanges() != 0 {
		t.Fatal("a code was exchanged for a callback with a forged state")
	}
	if res, _ := c.NoRedirects().Get("/providers"); res.StatusCode != http.StatusSeeOther {
		t.Fatalf("a refused sign-in opened the console: %d", res.StatusCode)
	}

	res := ssoSignIn(t, env, c, nil)
	if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/providers" {
		t.Fatalf("sign-in: %d → %s", res.StatusCode, res.Header.Get("Location"))
	}
	if _, doc := c.Get("/providers"); !strings.Contains(webtest.TestID(doc, "whoami").Text(), "grace (admin)") {
		t.Fatalf("signed in as %q", webtest.TestID(doc, "whoami").Text())
	}

	idp.SetUser(oidcprovider.User{Subject: "s-1", Name: "grace", Groups: []string{"staff"}})
	c2 := env.Anonymous(t)
	if res := ssoSignIn(t, env, c2, nil); res.StatusCode != http.StatusSeeOther {
		t.Fatalf("second sign-in: %d", res.StatusCode)
	}
	if _, doc := c2.Get("/providers"); !strings.Contains(webtest.TestID(doc, "whoami").Text(), "grace (viewer)") {
		t.Fatalf("after the group change signed in as %q", webtest.TestID(doc, "whoami").Text())
	}
	if res, _ := c.NoRedirects().Get("/providers"); res.StatusCode != http.StatusSeeOther {
		t.Fatalf("the admin session outlived the demotion: %d", res.StatusCode)
	}
}

// TestSSORecheckEndsSessionsWhoseRefreshIsRefused: a recheck keeps a
// session the provider still refreshes and ends it once the provider
// refuses the refresh token.
func TestSSORecheckEndsSessionsWhoseRefreshIsRefused(t *testing.T) {
	env, _, idp := ssoEnv(t)
	idp.SetUser(oidcprovider.User{Subject: "s-2", Name: "linus", Groups: []string{"staff"}})
	c := env.Anonymous(t)
	if res := ssoSignIn(t, env, c, nil); res.StatusCode != http.StatusSeeOther {
		t.Fatalf("sign-in: %d", res.StatusCode)
	}
	if ended, err := env.Handler.RecheckSSOSessions(t.Context(), 0); err != nil || ended != 0 {
		t.Fatalf("recheck while the provider refreshes: ended %d, %v", ended, err)
	}
	if res, _ := c.NoRedirects().Get("/providers"); res.StatusCode != http.StatusOK {
		t.Fatalf("session after a good refresh: %d", res.StatusCode)
	}
	idp.RevokeRefreshTokens("s-2")
	if ended, err := env.Handler.RecheckSSOSessions(t.Context(), 0); err != nil || ended != 1 {
		t.Fatalf("recheck after the revocation: ended %d, %v", ended, err)
	}
	if res, _ := c.NoRedirects().Get("/providers"); res.StatusCode != http.StatusSeeOther {
		t.Fatalf("the session outlived its refused refresh: %d", res.StatusCode)
	}
}

// TestLocalPasswordsOff: with local passwords off the password sign-in is
// refused before the password is checked, the login page folds the form
// away under the single-sign-on button; the break-glass switches them on.
func TestLocalPasswordsOff(t *testing.T) {
	env, admin, idp := ssoEnv(t)
	form := url.Values{"issuer_url": {idp.URL}, "client_id": {"console"}, "scopes": {"openid"}, "groups_claim": {"groups"}, "admin_groups": {"ops"}}
	res, doc := admin.PostForm("/settings/sign-in", form)
	if res.StatusCode != http.StatusOK || !strings.Contains(webtest.TestID(doc, "signin-notice").Text(), "Password sign-in is off") {
		t.Fatalf("switch passwords off: %d %s", res.StatusCode, webtest.TestID(doc, "signin-notice").Text())
	}
	if fp := webtest.TestID(doc, "signin-secret-set").Text(); !strings.Contains(fp, "…cret") {
		t.Fatalf("a blank secret field lost the stored secret: %q", fp)
	}
	c := env.Anonymous(t)
	_, doc = c.Get("/login")
	if webtest.TestID(doc, "login-sso").Length() != 1 || webtest.TestID(doc, "login-local").Length() != 1 {
		t.Fatal("the login page does not lead with single sign-on")
	}
	res, doc = c.NoRedirects().PostForm("/login", url.Values{"username": {"root"}, "password": {"password-for-tests"}})
	if res.StatusCode != http.StatusForbidden || !strings.Contains(webtest.TestID(doc, "login-refusal").Text(), "Password sign-in is switched off") {
		t.Fatalf("password sign-in with local passwords off: %d %q", res.StatusCode, webtest.TestID(doc, "login-refusal").Text())
	}
	if on, err := env.Store.EnableLocalPasswords(t.Context()); err != nil || !on {
		t.Fatalf("break-glass: %v %v", on, err)
	}
	if res, _ := c.NoRedirects().PostForm("/login", url.Values{"username": {"root"}, "password": {"password-for-tests"}}); res.StatusCode != http.StatusSeeOther {
		t.Fatalf("after the break-glass the password is still refused: %d", res.StatusCode)
	}
}

// TestSignInSettingsValidation: a remote issuer over http, or one that does
// not answer as an OpenID Connect provider, is refused with 422; viewers see
// the settings without a form.
func TestSignInSettingsValidation(t *testing.T) {
	env, admin, _ := ssoEnv(t)
	for issuer, want := range map[string]string{
		"http://sso.example.com": "must use https",
		env.Server.URL + "/nope": "did not answer as an OpenID Connect provider",
	} {
		res, doc := admin.PostForm("/settings/sign-in", url.Values{"issuer_url": {issuer}, "client_id": {"x"}, "scopes": {"openid"}, "groups_claim": {"groups"}, "local_passwords": {"on"}})
		if res.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(doc.Text(), want) {
			t.Errorf("issuer %s: %d, want 422 saying %q", issuer, res.StatusCode, want)
		}
	}
	viewer := env.Login(t, "watcher", store.RoleViewer)
	_, doc := viewer.Get("/settings")
	if webtest.TestID(doc, "signin-form").Length() != 0 || webtest.TestID(doc, "signin-summary").Length() != 1 {
		t.Fatal("a viewer is shown the sign-in form")
	}
}
