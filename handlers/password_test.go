package handlers_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"switchyard/store"
	"switchyard/web/webtest"
)

// A user who must change their password is sent, after a correct sign-in,
// to the change-password page, and every other console route sends them
// back there (pages with where they were going, htmx by HX-Redirect,
// changes refused); the form wants the new password twice, by the rules,
// not the current one; once changed they land where they were going and
// the console is theirs.
func TestMustChangePasswordSeesOnlyTheChangePage(t *testing.T) {
	env := webtest.New(t)
	ctx := context.Background()
	id, err := env.Store.CreateUserToChangePassword(ctx, "first", "generated-pw-1", store.RoleAdmin)
	if err != nil {
		t.Fatal(err)
	}
	u := env.Anonymous(t).NoRedirects()
	res, _ := u.PostForm("/login", url.Values{"username": {"first"}, "password": {"generated-pw-1"}, "next": {"/providers"}})
	if loc := res.Header.Get("Location"); res.StatusCode != http.StatusSeeOther || loc != "/account/password?next=%2Fproviders" {
		t.Fatalf("sign-in: %d %q, want the change-password page", res.StatusCode, loc)
	}
	for _, page := range []string{"/", "/settings", "/callers?q=x"} {
		res, _ := u.Get(page)
		if loc := res.Header.Get("Location"); res.StatusCode != http.StatusSeeOther || loc != "/account/password?next="+url.QueryEscape(page) {
			t.Fatalf("GET %s: %d %q", page, res.StatusCode, loc)
		}
	}
	u.HTMX = true
	req, _ := http.NewRequest(http.MethodGet, u.Base+"/tiers/1", nil)
	req.Header.Set("HX-Request", "true")
	req.Header.Set("HX-Current-URL", u.Base+"/route-groups/1/edit")
	hx, err := u.HTTP.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	hx.Body.Close()
	if to := hx.Header.Get("HX-Redirect"); hx.StatusCode != http.StatusForbidden || to != "/account/password?next=%2Froute-groups%2F1%2Fedit" {
		t.Fatalf("htmx fragment: %d %q", hx.StatusCode, to)
	}
	u.HTMX = false
	if res, _ := u.PostForm("/settings/tokens", url.Values{"token_name": {"ci"}, "token_role": {"admin"}}); res.StatusCode != http.StatusForbidden {
		t.Fatalf("creating a token before the change: %d", res.StatusCode)
	}
	if toks, _ := env.Store.AdminTokens(ctx); len(toks) != 0 {
		t.Fatalf("a token was created: %+v", toks)
	}

	res, doc := u.Get("/account/password?next=%2Fproviders")
	if res.StatusCode != http.StatusOK || webtest.TestID(doc, "password-change").Length() != 1 || !strings.Contains(webtest.TestID(doc, "password-change-why").Text(), "first") {
		t.Fatalf("change page: %d", res.StatusCode)
	}
	for _, bad := range []struct{ pw, again, field string }{
		{"short", "short", "error-password"},
		{"chosen-password-1", "chosen-password-2", "error-password_again"},
		{"generated-pw-1", "generated-pw-1", "error-password"},
	} {
		res, doc, body := u.PostFormRaw("/account/password", url.Values{"password": {bad.pw}, "password_again": {bad.again}, "next": {"/providers"}})
		if res.StatusCode != http.StatusUnprocessableEntity || webtest.TestID(doc, bad.field).Length() != 1 || strings.Contains(body, bad.pw) {
			t.Fatalf("%q/%q: %d, %s shown %d, echoed %v", bad.pw, bad.again, res.StatusCode, bad.field, webtest.TestID(doc, bad.field).Length(), strings.Contains(body, bad.pw))
		}
	}
	res, _ = u.PostForm("/account/password", url.Values{"password": {"chosen-password-1"}, "password_again": {"chosen-password-1"}, "next": {"//evil.example/"}})
	if loc := res.Header.Get("Location"); res.StatusCode != http.StatusSeeOther || loc != "/" {
		t.Fatalf("change: %d %q (next must stay on this site)", res.StatusCode, loc)
	}
	if got, _ := env.Store.UserByID(ctx, id); got.MustChangePassword {
		t.Fatal("the mark is still set")
	}
	if res, _ := u.Get("/providers"); res.StatusCode != http.StatusOK {
		t.Fatalf("the console after the change: %d", res.StatusCode)
	}
	if res, _ := u.Get("/account/password?next=%2Fsettings"); res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/settings" {
		t.Fatalf("the change page once changed: %d %q", res.StatusCode, res.Header.Get("Location"))
	}
}

// A session is refused once its user's access was ended, even when a
// request in flight wrote it back after the reset deleted it.
func TestSessionWrittenBackAfterAResetIsRefused(t *testing.T) {
	env := webtest.New(t)
	admin := env.Login(t, "ops", store.RoleAdmin)
	watcher := env.Login(t, "watcher", store.RoleViewer).NoRedirects()
	wid, _ := settingsUserID(t, env, "watcher")
	var token string
	var data []byte
	if err := env.Store.DB().QueryRow(`SELECT s.token, s.data FROM sessions s JOIN user_sessions u USING (token) WHERE u.user_id=$1`, wid).Scan(&token, &data); err != nil {
		t.Fatal(err)
	}
	if res, _ := admin.PostForm("/settings/users/"+itoa(wid)+"/password", url.Values{"password": {"typed-password-42"}}); res.StatusCode != http.StatusOK {
		t.Fatalf("reset: %d", res.StatusCode)
	}
	if _, err := env.Store.DB().Exec(`INSERT INTO sessions (token, data, expiry) VALUES ($1, $2, now() + interval '1 hour')`, token, data); err != nil {
		t.Fatal(err)
	}
	if res, _ := watcher.Get("/settings"); res.StatusCode != http.StatusSeeOther || !strings.HasPrefix(res.Header.Get("Location"), "/login") {
		t.Fatalf("the written-back session: %d %q, want the login", res.StatusCode, res.Header.Get("Location"))
	}
}

// Lowering a user's role signs them out at once (their next request goes
// to the login page) and revokes every admin API token they created; the
// answer says so. Raising a role ends nothing.
func TestDemotionSignsTheUserOut(t *testing.T) {
	env := webtest.New(t)
	admin := env.Login(t, "ops", store.RoleAdmin)
	lead := env.Login(t, "lead", store.RoleAdmin).NoRedirects()
	lid, _ := settingsUserID(t, env, "lead")
	tok, _, err := env.Store.CreateAdminToken(t.Context(), "lead-read", store.RoleViewer, "lead")
	if err != nil {
		t.Fatal(err)
	}
	admin.HTMX = true
	res, doc := admin.PostForm("/settings/users/"+itoa(lid)+"/role", url.Values{"role": {"viewer"}})
	if said := webtest.TestID(doc, "users-notice").Text(); res.StatusCode != http.StatusOK || !strings.Contains(said, "signed out of every session") || !strings.Contains(said, "admin API token they created is revoked") {
		t.Fatalf("demotion: %d %q", res.StatusCode, said)
	}
	if res, _ := lead.Get("/providers"); res.StatusCode != http.StatusSeeOther || !strings.HasPrefix(res.Header.Get("Location"), "/login") {
		t.Fatalf("the demoted user's session: %d %q", res.StatusCode, res.Header.Get("Location"))
	}
	if _, err := env.Store.AuthenticateAdminToken(t.Context(), tok); err == nil {
		t.Fatal("the demoted user's viewer token still works")
	}
	res, doc = admin.PostForm("/settings/users/"+itoa(lid)+"/role", url.Values{"role": {"admin"}})
	if said := webtest.TestID(doc, "users-notice").Text(); res.StatusCode != http.StatusOK || strings.Contains(said, "signed out") {
		t.Fatalf("promotion: %d %q", res.StatusCode, said)
	}
}
