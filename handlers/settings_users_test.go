package handlers_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"switchyard/store"
	"switchyard/web/webtest"
)

// An admin changes another user's role (not their own) and resets another
// user's password: typed (never echoed) or generated (shown once); the
// user's sessions end and only the new password logs in.
func TestSettingsUserRoleAndPasswordReset(t *testing.T) {
	env := webtest.New(t)
	admin := env.Login(t, "ops", store.RoleAdmin)
	watcher := env.Login(t, "watcher", store.RoleViewer)
	me, _ := settingsUserID(t, env, "ops")
	wid, _ := settingsUserID(t, env, "watcher")
	admin.HTMX = true

	// Role: viewer → admin, then the panel shows it; one's own is refused.
	res, doc := admin.PostForm("/settings/users/"+itoa(wid)+"/role", url.Values{"role": {"admin"}})
	if res.StatusCode != http.StatusOK || !strings.Contains(webtest.TestID(doc, "users-notice").Text(), "watcher is now an admin") {
		t.Fatalf("role change: %d %q", res.StatusCode, webtest.TestID(doc, "users-notice").Text())
	}
	if u, _ := env.Store.UserByID(t.Context(), wid); u.Role != store.RoleAdmin {
		t.Fatalf("watcher's role is %s", u.Role)
	}
	if v, _ := webtest.TestID(doc, "user-role-"+itoa(wid)).Find("option[selected]").Attr("value"); v != "admin" {
		t.Fatalf("the role select shows %q", v)
	}
	res, doc = admin.PostForm("/settings/users/"+itoa(me)+"/role", url.Values{"role": {"viewer"}})
	if res.StatusCode != http.StatusUnprocessableEntity || webtest.TestID(doc, "users-error").Length() != 1 {
		t.Fatalf("own role change: %d", res.StatusCode)
	}
	res, _ = admin.PostForm("/settings/users/"+itoa(wid)+"/role", url.Values{"role": {"root"}})
	if res.StatusCode != http.StatusUnprocessableEntity {
		t.Fatalf("role root: %d", res.StatusCode)
	}
	if u, _ := env.Store.UserByID(t.Context(), me); u.Role != store.RoleAdmin {
		t.Fatal("the admin demoted themselves")
	}

	// Password typed by the admin: applied, never echoed; watcher's
	// session ended and the admin API token they created revoked, as the
	// form said beforehand and the answer says after.
	if hint := webtest.TestID(doc, "user-reset-effect-"+itoa(wid)).Text(); !strings.Contains(hint, "admin API tokens watcher created are revoked") {
		t.Fatalf("the reset form does not say tokens are revoked: %q", hint)
	}
	tok, _, err := env.Store.CreateAdminToken(t.Context(), "watcher-ci", store.RoleAdmin, "watcher")
	if err != nil {
		t.Fatal(err)
	}
	res, doc, body := admin.PostFormRaw("/settings/users/"+itoa(wid)+"/password", url.Values{"password": {"typed-password-42"}})
	if res.StatusCode != http.StatusOK || strings.Contains(body, "typed-password-42") || !strings.Contains(body, `data-testid="password-once"`) {
		t.Fatalf("typed reset: %d, echoed %v", res.StatusCode, strings.Contains(body, "typed-password-42"))
	}
	if said := webtest.TestID(doc, "password-reset-effect").Text(); !strings.Contains(said, "admin API token they created is revoked") {
		t.Fatalf("the reset answer does not say the token was revoked: %q", said)
	}
	if _, err := env.Store.AuthenticateAdminToken(t.Context(), tok); err == nil {
		t.Fatal("watcher's admin API token works after the password reset")
	}
	if _, err := env.Store.Login(t.Context(), "watcher", "typed-password-42"); err != nil {
		t.Fatalf("the typed password does not log in: %v", err)
	}
	if res, _ := watcher.NoRedirects().Get("/settings"); res.StatusCode != http.StatusSeeOther {
		t.Fatalf("watcher's old session after the reset: %d, want a redirect to the login", res.StatusCode)
	}

	// Generated: shown once, works; a short typed one is refused and
	// changes nothing.
	res, doc = admin.PostForm("/settings/users/"+itoa(wid)+"/password", url.Values{"password": {""}})
	gen := strings.TrimSpace(webtest.TestID(doc, "password-plaintext").Text())
	if res.StatusCode != http.StatusOK || len(gen) < 20 {
		t.Fatalf("generated reset: %d %q", res.StatusCode, gen)
	}
	if _, err := env.Store.Login(t.Context(), "watcher", gen); err != nil {
		t.Fatalf("the generated password does not log in: %v", err)
	}
	res, doc = admin.PostForm("/settings/users/"+itoa(wid)+"/password", url.Values{"password": {"short"}})
	if res.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(webtest.TestID(doc, "users-error").Text(), "at least 10") {
		t.Fatalf("short password: %d", res.StatusCode)
	}
	if _, err := env.Store.Login(t.Context(), "watcher", gen); err != nil {
		t.Fatal("a refused reset changed the password")
	}
	res, doc = admin.PostForm("/settings/users/"+itoa(me)+"/password", url.Values{"password": {"my-own-password"}})
	if res.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(webtest.TestID(doc, "users-error").Text(), "switchyard reset-password ops") {
		t.Fatalf("own reset: %d", res.StatusCode)
	}
	if res, _ := admin.PostForm("/settings/users/999999/password", nil); res.StatusCode != http.StatusNotFound {
		t.Fatalf("unknown user: %d", res.StatusCode)
	}
}
