package handlers_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"switchyard/routing/config"
	"switchyard/store"
	"switchyard/web/webtest"
)

// TestRollbackPreviewNamesRemovedCallersAndKeepsTheirKeys: a rollback goes
// through a publish page (diff against live, dry-run, impact) that names
// the live callers it removes with their last-day traffic and the keys it
// suspends, and changes nothing until confirmed; the confirmed rollback
// keeps the caller's key (suspended), and rolling forward restores it.
func TestRollbackPreviewNamesRemovedCallersAndKeepsTheirKeys(t *testing.T) {
	t.Parallel()
	env := webtest.New(t)
	seedDraft(t, env.Store)
	ctx := t.Context()
	api := newAPI(t, env, store.RoleAdmin)
	if code, body := api.do("POST", "/publish", []byte(`{"message":"no callers"}`)); code != http.StatusCreated {
		t.Fatalf("v1: %d %s", code, body)
	}
	cid, err := env.Store.CreateCaller(ctx, config.Caller{Name: "app", RouteGroup: "default", PriorityClass: config.ClassInteractive, Enabled: true})
	if err != nil {
		t.Fatal(err)
	}
	if code, body := api.do("POST", "/publish", []byte(`{"message":"app"}`)); code != http.StatusCreated {
		t.Fatalf("v2: %d %s", code, body)
	}
	admin := env.Login(t, "ops", store.RoleAdmin)
	_, doc := admin.PostForm("/callers/"+itoa(cid)+"/keys", url.Values{"name": {"prod"}})
	plain := strings.TrimSpace(webtest.TestID(doc, "caller-key-plaintext").Text())
	if plain == "" {
		t.Fatal("no key made")
	}
	logCalls(t, env, cid, "app", "fast", "ok", 7, 10, 5)

	_, doc = admin.Get("/versions/1/rollback")
	if webtest.TestID(doc, "rollback-preview").Length() != 1 || webtest.TestID(doc, "impact").Length() != 1 || webtest.TestID(doc, "rollback-form").Length() != 1 {
		t.Fatal("the rollback preview lacks the preview banner, the impact or the confirm form")
	}
	if href := webtest.TestID(doc, "publish-diff").AttrOr("href", ""); href != "/versions/diff?from=2&to=1" {
		t.Fatalf("diff link %q", href)
	}
	row := webtest.TestID(doc, "removed-app")
	if row.Length() != 1 || strings.TrimSpace(row.Find(`[data-testid="removed-requests"]`).Text()) != "7" ||
		!strings.Contains(row.Find(`[data-testid="removed-keys"]`).Text(), plain[:len(store.CallerKeyPrefix)+4]) {
		t.Fatalf("removed caller row: %q", row.Text())
	}
	if n, _ := env.Store.LatestVersionNumber(ctx); n != 2 {
		t.Fatalf("the preview published: live v%d", n)
	}

	res, _ := admin.PostForm("/versions/1/rollback", url.Values{"message": {"app goes"}})
	if n, _ := env.Store.LatestVersionNumber(ctx); res.StatusCode != http.StatusOK || n != 3 {
		t.Fatalf("rollback: %d, live v%d", res.StatusCode, n)
	}
	keys, _ := env.Store.CallerKeys(ctx, "app")
	if len(keys) != 1 || keys[0].RevokedAt != nil {
		t.Fatalf("the removed caller's key after the rollback: %+v", keys)
	}
	res, _ = admin.PostForm("/versions/2/rollback", url.Values{"message": {"app back"}})
	if n, _ := env.Store.LatestVersionNumber(ctx); res.StatusCode != http.StatusOK || n != 4 {
		t.Fatalf("roll forward: %d, live v%d", res.StatusCode, n)
	}
	_, doc = admin.Get("/callers/" + itoa(cid))
	if st := webtest.TestID(doc, "caller-key-status").Text(); !strings.Contains(st, "live") || strings.Contains(st, "suspended") {
		t.Fatalf("key after roll forward: %q", st)
	}
}

// TestCallerKeysNeverDirtyTheDraft: making and revoking a key of a live
// caller leaves the draft equal to live: no banner, no key in any diff.
func TestCallerKeysNeverDirtyTheDraft(t *testing.T) {
	t.Parallel()
	env := webtest.New(t)
	seedDraft(t, env.Store)
	cid, err := env.Store.CreateCaller(t.Context(), config.Caller{Name: "app", RouteGroup: "default", PriorityClass: config.ClassInteractive, Enabled: true})
	if err != nil {
		t.Fatal(err)
	}
	api := newAPI(t, env, store.RoleAdmin)
	if code, body := api.do("POST", "/publish", []byte(`{"message":"app"}`)); code != http.StatusCreated {
		t.Fatalf("v1: %d %s", code, body)
	}
	admin := env.Login(t, "ops", store.RoleAdmin)
	admin.HTMX = true
	res, doc := admin.PostForm("/callers/"+itoa(cid)+"/keys", url.Values{"name": {"prod"}})
	if res.StatusCode != http.StatusOK || strings.Contains(doc.Text(), "differs from live") {
		t.Fatalf("making a key: %d, banner %q", res.StatusCode, webtest.TestID(doc, "draft-state").Text())
	}
	admin.HTMX = false
	keys, _ := env.Store.CallerKeys(t.Context(), "app")
	_, doc = admin.Get("/versions/diff?from=1&to=draft")
	if strings.Contains(doc.Text(), "differs from live") || strings.Contains(webtest.TestID(doc, "diff").Text(), keys[0].Prefix) {
		t.Fatal("a new key shows in the draft banner or diff")
	}
	if res, _ := admin.PostForm("/caller-keys/"+itoa(keys[0].ID)+"/revoke", nil); res.StatusCode != http.StatusOK {
		t.Fatalf("revoke: %d", res.StatusCode)
	}
	_, doc = admin.Get("/dry-run")
	if strings.Contains(doc.Text(), "differs from live") || webtest.TestID(doc, "diff-semantic").Length() != 0 {
		t.Fatal("revoking a key made the draft differ from live")
	}
}
