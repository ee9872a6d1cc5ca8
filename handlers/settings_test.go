package handlers_test

import (
	"bytes"
	"crypto/sha256"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"switchyard/store"
	"switchyard/web/webtest"
)

func settingsUserID(t *testing.T, env *webtest.Env, username string) (int64, bool) {
	t.Helper()
	users, err := env.Store.Users(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range users {
		if u.Username == username {
			return u.ID, true
		}
	}
	return 0, false
}

func TestSettingsUsersCreateAndDisable(t *testing.T) {
	env := webtest.New(t)
	admin := env.Login(t, "ops", store.RoleAdmin)
	me, _ := settingsUserID(t, env, "ops")

	res, doc := admin.Get("/settings")
	if res.StatusCode != http.StatusOK || webtest.TestID(doc, "user-ops").Length() != 1 || webtest.TestID(doc, "user-form").Length() != 1 {
		t.Fatalf("settings page: %d", res.StatusCode)
	}
	if webtest.TestID(doc, "user-disable-"+itoa(me)).Length() != 0 {
		t.Fatal("you are offered to disable yourself")
	}

	// Create a viewer (plain post: 303 back to the page).
	res, _ = admin.NoRedirects().PostForm("/settings/users", url.Values{"username": {"watcher"}, "password": {"long-enough-pw"}, "role": {"viewer"}})
	if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/settings" {
		t.Fatalf("create user: %d %s", res.StatusCode, res.Header.Get("Location"))
	}
	u, err := env.Store.Login(t.Context(), "watcher", "long-enough-pw")
	if err != nil || u.Role != store.RoleViewer {
		t.Fatalf("new user cannot log in as viewer: %v %+v", err, u)
	}
	_, doc = admin.Get("/settings")
	if !strings.Contains(webtest.TestID(doc, "flash").Text(), "watcher") || !strings.Contains(webtest.TestID(doc, "user-watcher").Text(), "viewer") {
		t.Fatal("new user not listed with its role")
	}

	// Refusals: 422 with the field message, nothing stored, password never echoed.
	for _, tc := range []struct {
		name  string
		form  url.Values
		field string
		msg   string
	}{
		{"duplicate", url.Values{"username": {"watcher"}, "password": {"another-long-pw"}, "role": {"admin"}}, "username", "already taken"},
		{"short password", url.Values{"username": {"shorty"}, "password": {"short"}, "role": {"viewer"}}, "password", "at least 10"},
		{"bad role", url.Values{"username": {"roley"}, "password": {"long-enough-pw"}, "role": {"root"}}, "role", "admin or viewer"},
		{"space in name", url.Values{"username": {"two words"}, "password": {"long-enough-pw"}, "role": {"viewer"}}, "username", "without spaces"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, doc := admin.PostForm("/settings/users", tc.form)
			if res.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(webtest.TestID(doc, "error-"+tc.field).Text(), tc.msg) {
				t.Fatalf("status %d, error %q", res.StatusCode, webtest.TestID(doc, "error-"+tc.field).Text())
			}
			if v, _ := doc.Find(`input[name="password"]`).Attr("value"); v != "" {
				t.Fatal("password echoed back")
			}
		})
	}
	users, _ := env.Store.Users(t.Context())
	if len(users) != 2 {
		t.Fatalf("%d users after refusals, want 2", len(users))
	}

	// htmx create: the users panel fragment.
	admin.HTMX = true
	res, doc = admin.PostForm("/settings/users", url.Values{"username": {"second-admin"}, "password": {"long-enough-pw"}, "role": {"admin"}})
	if res.StatusCode != http.StatusOK || webtest.TestID(doc, "settings-users").Length() != 1 || webtest.TestID(doc, "nav").Length() != 0 || webtest.TestID(doc, "user-second-admin").Length() != 1 {
		t.Fatalf("htmx create user: %d", res.StatusCode)
	}

	// You cannot disable yourself.
	res, doc = admin.PostForm("/settings/users/"+itoa(me)+"/disable", nil)
	if res.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(webtest.TestID(doc, "users-error").Text(), "cannot disable yourself") {
		t.Fatalf("disable self: %d", res.StatusCode)
	}
	if _, ok := settingsUserID(t, env, "ops"); !ok {
		t.Fatal("disabled yourself")
	}

	// Disable another user: gone from the list, cannot log in, session refused.
	watcher := env.Anonymous(t).NoRedirects()
	res, _ = watcher.PostForm("/login", url.Values{"username": {"watcher"}, "password": {"long-enough-pw"}})
	if res.StatusCode != http.StatusSeeOther || strings.HasPrefix(res.Header.Get("Location"), "/login") {
		t.Fatalf("watcher login: %d %s", res.StatusCode, res.Header.Get("Location"))
	}
	if res, _ = watcher.Get("/settings"); res.StatusCode != http.StatusOK {
		t.Fatalf("watcher session: %d", res.StatusCode)
	}
	wid, _ := settingsUserID(t, env, "watcher")
	res, doc = admin.PostForm("/settings/users/"+itoa(wid)+"/disable", nil)
	if res.StatusCode != http.StatusOK || webtest.TestID(doc, "user-watcher").Length() != 0 {
		t.Fatalf("disable user: %d", res.StatusCode)
	}
	if _, err := env.Store.Login(t.Context(), "watcher", "long-enough-pw"); err == nil {
		t.Fatal("disabled user can still log in")
	}
	res, _ = watcher.Get("/settings")
	if res.StatusCode != http.StatusSeeOther {
		t.Fatalf("disabled user's session still works: %d", res.StatusCode)
	}
	admin.HTMX = false
	res, _ = admin.PostForm("/settings/users/999999/disable", nil)
	if res.StatusCode != http.StatusNotFound {
		t.Fatalf("disable unknown user: %d", res.StatusCode)
	}
}

func TestSettingsTokenCreateShownOnceAndRevoke(t *testing.T) {
	env := webtest.New(t)
	admin := env.Login(t, "ops", store.RoleAdmin)

	_, doc := admin.Get("/settings")
	if webtest.TestID(doc, "tokens-empty").Length() != 1 || webtest.TestID(doc, "token-form").Length() != 1 {
		t.Fatal("empty token list or form missing")
	}

	// Invalid: 422, nothing stored.
	res, doc := admin.PostForm("/settings/tokens", url.Values{"token_name": {" "}, "token_role": {"root"}})
	if res.StatusCode != http.StatusUnprocessableEntity || webtest.TestID(doc, "error-token_name").Length() != 1 || webtest.TestID(doc, "error-token_role").Length() != 1 {
		t.Fatalf("invalid token: %d", res.StatusCode)
	}
	if toks, _ := env.Store.AdminTokens(t.Context()); len(toks) != 0 {
		t.Fatal("an invalid form stored a token")
	}

	// A plain post answers with the page and the plaintext, once (200, no redirect).
	res, doc = admin.NoRedirects().PostForm("/settings/tokens", url.Values{"token_name": {"ci-deploy"}, "token_role": {"viewer"}})
	if res.StatusCode != http.StatusOK || res.Header.Get("Location") != "" {
		t.Fatalf("create token: %d", res.StatusCode)
	}
	plain := strings.TrimSpace(webtest.TestID(doc, "token-plaintext").Text())
	if !strings.HasPrefix(plain, store.AdminTokenPrefix) {
		t.Fatalf("token plaintext %q", plain)
	}
	if !strings.Contains(webtest.TestID(doc, "token-once").Text(), "will not be shown again") || webtest.TestID(doc, "token-copy").Length() != 1 {
		t.Fatal("no shown-once warning or copy button")
	}
	if ex := webtest.TestID(doc, "token-example").Text(); ex != `curl -H "Authorization: Bearer `+plain+`" http://gateway.test/admin/api/config/draft` {
		t.Fatalf("example %q", ex)
	}
	toks, _ := env.Store.AdminTokens(t.Context())
	if len(toks) != 1 || toks[0].Name != "ci-deploy" || toks[0].Role != store.RoleViewer || toks[0].CreatedBy != "ops" {
		t.Fatalf("stored tokens %+v", toks)
	}
	tok := toks[0]

	// Only the hash is stored; the plaintext is nowhere in the database.
	var hash []byte
	if err := env.Store.DB().QueryRowContext(t.Context(), `SELECT hash FROM admin_tokens WHERE id=$1`, tok.ID).Scan(&hash); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte(plain))
	if !bytes.Equal(hash, sum[:]) {
		t.Fatal("stored hash does not match the token")
	}
	var leaks int
	if err := env.Store.DB().QueryRowContext(t.Context(), `
		SELECT (SELECT count(*) FROM admin_tokens WHERE name=$1 OR prefix=$1 OR created_by=$1 OR hash=convert_to($1, 'UTF8'))
		     + (SELECT count(*) FROM sessions WHERE position(convert_to($1, 'UTF8') in data) > 0)`, plain).Scan(&leaks); err != nil {
		t.Fatal(err)
	}
	if leaks != 0 {
		t.Fatal("the plaintext token is stored somewhere")
	}
	if _, err := env.Store.AuthenticateAdminToken(t.Context(), plain); err != nil {
		t.Fatalf("new token does not authenticate: %v", err)
	}

	// The page never shows it again.
	_, doc = admin.Get("/settings")
	html, _ := doc.Html()
	if strings.Contains(html, plain) || webtest.TestID(doc, "token-plaintext").Length() != 0 {
		t.Fatal("token shown again")
	}
	row := webtest.TestID(doc, "token-"+itoa(tok.ID))
	if !strings.Contains(row.Text(), tok.Prefix) || !strings.Contains(row.Text(), "ops") || !strings.Contains(row.Text(), "live") {
		t.Fatalf("token row %q", row.Text())
	}

	// htmx create: the tokens fragment with the new plaintext.
	admin.HTMX = true
	res, doc = admin.PostForm("/settings/tokens", url.Values{"token_name": {"backup"}, "token_role": {"admin"}})
	if res.StatusCode != http.StatusOK || webtest.TestID(doc, "settings-tokens").Length() != 1 || webtest.TestID(doc, "nav").Length() != 0 {
		t.Fatalf("htmx create token: %d", res.StatusCode)
	}
	if p := webtest.TestID(doc, "token-plaintext").Text(); p == "" || p == plain {
		t.Fatal("htmx create shows no new token")
	}

	// Revoke: refused afterwards, shown revoked, no revoke button.
	res, doc = admin.PostForm("/settings/tokens/"+itoa(tok.ID)+"/revoke", nil)
	if res.StatusCode != http.StatusOK || !strings.Contains(webtest.TestID(doc, "token-"+itoa(tok.ID)).Text(), "revoked") {
		t.Fatalf("revoke: %d", res.StatusCode)
	}
	if webtest.TestID(doc, "token-revoke-"+itoa(tok.ID)).Length() != 0 {
		t.Fatal("revoked token still has a revoke button")
	}
	if _, err := env.Store.AuthenticateAdminToken(t.Context(), plain); err == nil {
		t.Fatal("revoked token still authenticates")
	}
	admin.HTMX = false
	res, _ = admin.NoRedirects().PostForm("/settings/tokens/"+itoa(tok.ID)+"/revoke", nil)
	if res.StatusCode != http.StatusSeeOther {
		t.Fatalf("revoking twice: %d", res.StatusCode)
	}
	res, _ = admin.PostForm("/settings/tokens/999999/revoke", nil)
	if res.StatusCode != http.StatusNotFound {
		t.Fatalf("revoke unknown token: %d", res.StatusCode)
	}
}

func TestSettingsViewerSeesNoControlsAndCannotPost(t *testing.T) {
	env := webtest.New(t)
	if _, _, err := env.Store.CreateAdminToken(t.Context(), "ci", store.RoleAdmin, "ops"); err != nil {
		t.Fatal(err)
	}
	env.Login(t, "ops", store.RoleAdmin)
	viewer := env.Login(t, "watcher", store.RoleViewer)
	opsID, _ := settingsUserID(t, env, "ops")
	toks, _ := env.Store.AdminTokens(t.Context())

	res, doc := viewer.Get("/settings")
	if res.StatusCode != http.StatusOK || webtest.TestID(doc, "user-ops").Length() != 1 || webtest.TestID(doc, "token-"+itoa(toks[0].ID)).Length() != 1 {
		t.Fatalf("viewer settings page: %d", res.StatusCode)
	}
	for _, tid := range []string{"user-form", "user-create", "user-disable-" + itoa(opsID), "user-role-" + itoa(opsID), "user-reset-" + itoa(opsID), "token-form", "token-create", "token-revoke-" + itoa(toks[0].ID)} {
		if webtest.TestID(doc, tid).Length() != 0 {
			t.Errorf("viewer sees %s", tid)
		}
	}
	for _, p := range []string{"/settings/users", "/settings/users/" + itoa(opsID) + "/disable", "/settings/users/" + itoa(opsID) + "/role", "/settings/users/" + itoa(opsID) + "/password", "/settings/tokens", "/settings/tokens/" + itoa(toks[0].ID) + "/revoke"} {
		res, _ := viewer.PostForm(p, url.Values{"username": {"x"}, "password": {"long-enough-pw"}, "role": {"admin"}, "token_name": {"x"}, "token_role": {"admin"}})
		if res.StatusCode != http.StatusForbidden {
			t.Errorf("viewer POST %s: %d", p, res.StatusCode)
		}
	}
	users, _ := env.Store.Users(t.Context())
	toks, _ = env.Store.AdminTokens(t.Context())
	if len(users) != 2 || len(toks) != 1 || toks[0].RevokedAt != nil {
		t.Fatal("viewer changed users or tokens")
	}
}
