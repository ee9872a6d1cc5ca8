package handlers_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"switchyard/store"
	"switchyard/web/webtest"
)

// TestCallerKeyCreateWithTermsAndRotate: the console makes a key with an
// owner, an expiry and a scope, lists them (an expiry within 7 days in
// amber, and on the Callers page), and rotates it with a grace period.
func TestCallerKeyCreateWithTermsAndRotate(t *testing.T) {
	env := webtest.New(t)
	callerSeed(t, env)
	admin := env.Login(t, "ops", store.RoleAdmin)
	id := callerCreate(t, env, "checkout")
	path := "/callers/" + itoa(id)

	res, doc := admin.PostForm(path+"/keys", url.Values{"name": {"prod"}, "owner": {"team-pay"}, "expires_at": {"2020-01-01"}})
	if res.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(webtest.TestID(doc, "caller-key-form").Text(), "must be in the future") {
		t.Fatalf("past expiry: %d", res.StatusCode)
	}
	res, _ = admin.PostForm(path+"/keys", url.Values{"scope_tiers": {"huge"}})
	if res.StatusCode != http.StatusUnprocessableEntity {
		t.Fatalf("unknown tier in scope: %d", res.StatusCode)
	}
	soon := time.Now().Add(72 * time.Hour).UTC().Format(time.RFC3339)
	res, doc = admin.PostForm(path+"/keys", url.Values{"name": {"prod"}, "owner": {"team-pay"}, "expires_at": {soon}, "scope_tiers": {"fast, standard"}, "scope_doors": {"chat_completions"}})
	if res.StatusCode != http.StatusOK || webtest.TestID(doc, "caller-key-plaintext").Length() != 1 {
		t.Fatalf("create: %d", res.StatusCode)
	}
	keys, err := env.Store.CallerKeys(t.Context(), "checkout")
	if err != nil || len(keys) != 1 {
		t.Fatalf("keys: %v", err)
	}
	k := keys[0]
	row := webtest.TestID(doc, "caller-key-"+itoa(k.ID))
	if got := row.Find(`[data-testid="caller-key-owner"]`).Text(); got != "team-pay" {
		t.Fatalf("owner %q", got)
	}
	if got := row.Find(`[data-testid="caller-key-scope"]`).Text(); !strings.Contains(got, "tiers: fast, standard") || !strings.Contains(got, "doors: chat_completions") {
		t.Fatalf("scope %q", got)
	}
	if row.Find(`[data-testid="caller-key-expires"]`).Find(".badge.warn").Length() != 1 {
		t.Fatalf("an expiry within 7 days is not amber: %s", row.Find(`[data-testid="caller-key-expires"]`).Text())
	}
	if _, list := admin.Get("/callers"); webtest.TestID(list, "expiring-key-"+k.Prefix).Length() != 1 {
		t.Fatal("the Callers page does not list the key expiring soon")
	}

	res, doc = admin.PostForm("/caller-keys/"+itoa(k.ID)+"/rotate", url.Values{"grace": {"24h"}})
	if res.StatusCode != http.StatusOK || webtest.TestID(doc, "caller-key-plaintext").Length() != 1 || webtest.TestID(doc, "caller-key-rotated").Length() != 1 {
		t.Fatalf("rotate: %d", res.StatusCode)
	}
	keys, _ = env.Store.CallerKeys(t.Context(), "checkout")
	if len(keys) != 2 || keys[0].RevokeAt == nil || keys[0].RevokedAt != nil || time.Until(*keys[0].RevokeAt) < 23*time.Hour ||
		keys[1].RotatedFrom == nil || *keys[1].RotatedFrom != k.ID || keys[1].Owner != "team-pay" || keys[1].ExpiresAt == nil || len(keys[1].ScopeTiers) != 2 {
		t.Fatalf("after rotation: %+v", keys)
	}
	if got := webtest.TestID(doc, "caller-key-"+itoa(k.ID)).Text(); !strings.Contains(got, "rotated") {
		t.Fatalf("old key row %q", got)
	}
	// A rotated key is not rotated again.
	if res, doc = admin.PostForm("/caller-keys/"+itoa(k.ID)+"/rotate", url.Values{"grace": {"1h"}}); res.StatusCode != http.StatusUnprocessableEntity ||
		!strings.Contains(webtest.TestID(doc, "caller-keys-problem").Text(), "rotated already") {
		t.Fatalf("second rotation: %d", res.StatusCode)
	}
	keys, _ = env.Store.CallerKeys(t.Context(), "checkout")
	if res, doc = admin.PostForm("/caller-keys/"+itoa(keys[1].ID)+"/rotate", url.Values{"grace": {"1h"}, "grace_custom": {"soon"}}); res.StatusCode != http.StatusUnprocessableEntity ||
		webtest.TestID(doc, "caller-keys-problem").Length() != 1 {
		t.Fatalf("a custom grace that is no duration: %d", res.StatusCode)
	}
}

// TestAPICallerKeyTermsAndRotate: the admin API makes a key with terms,
// lists them, and rotates with a grace period.
func TestAPICallerKeyTermsAndRotate(t *testing.T) {
	env := webtest.New(t)
	a := newCRUD(t, env)
	s := crudSeed(t, a)
	var nk struct {
		ID  int64  `json:"id"`
		Key string `json:"key"`
	}
	a.fails("POST", "/callers/"+itoa(s.caller.ID)+"/keys", `{"scope":{"doors":["files"]}}`, http.StatusUnprocessableEntity, "validation_failed")
	a.call("POST", "/callers/"+itoa(s.caller.ID)+"/keys", `{"name":"ci","owner":"bot","expires_at":"2099-01-01T00:00:00Z","scope":{"models":["small"]}}`, http.StatusCreated, &nk)
	var rot struct {
		Key      string    `json:"key"`
		ID       int64     `json:"id"`
		OldKeyID int64     `json:"old_key_id"`
		RevokeAt time.Time `json:"old_key_revoke_at"`
	}
	a.fails("POST", "/caller-keys/"+itoa(nk.ID)+"/rotate", `{"grace":"soon"}`, http.StatusUnprocessableEntity, "validation_failed")
	a.call("POST", "/caller-keys/"+itoa(nk.ID)+"/rotate", `{"grace":"1h"}`, http.StatusCreated, &rot)
	if rot.Key == "" || rot.OldKeyID != nk.ID || time.Until(rot.RevokeAt) < 59*time.Minute {
		t.Fatalf("rotation %+v", rot)
	}
	out := a.call("GET", "/callers/"+itoa(s.caller.ID)+"/keys", "", http.StatusOK)
	var list struct {
		Keys []struct {
			ID          int64      `json:"id"`
			Owner       string     `json:"owner"`
			ExpiresAt   *time.Time `json:"expires_at"`
			RevokeAt    *time.Time `json:"revoke_at"`
			RotatedFrom *int64     `json:"rotated_from"`
			Scope       struct {
				Models []string `json:"models"`
			} `json:"scope"`
		} `json:"keys"`
	}
	if err := json.Unmarshal(out, &list); err != nil || len(list.Keys) != 2 {
		t.Fatalf("list %s", out)
	}
	o, n := list.Keys[0], list.Keys[1]
	if o.Owner != "bot" || o.RevokeAt == nil || n.RotatedFrom == nil || *n.RotatedFrom != nk.ID || len(n.Scope.Models) != 1 || n.ExpiresAt == nil {
		t.Fatalf("keys after rotation %s", out)
	}
}

// TestAdminTokenExpiry: an expired admin API token gets 401 saying it
// expired, not "invalid".
func TestAdminTokenExpiry(t *testing.T) {
	env := webtest.New(t)
	past := time.Now().Add(time.Hour)
	tok, at, err := env.Store.CreateAdminTokenUntil(t.Context(), "short", store.RoleAdmin, "test", &past)
	if err != nil {
		t.Fatal(err)
	}
	api := &apiClient{t: t, base: env.Server.URL + "/admin/api", token: tok}
	if code, b := api.do("GET", "/callers", nil); code != http.StatusOK {
		t.Fatalf("live token: %d %s", code, b)
	}
	if _, err := env.Store.DB().Exec(`UPDATE admin_tokens SET expires_at = now() - interval '1 minute' WHERE id=$1`, at.ID); err != nil {
		t.Fatal(err)
	}
	code, b := api.do("GET", "/callers", nil)
	if code != http.StatusUnauthorized || !strings.Contains(string(b), "token_expired") || !strings.Contains(string(b), "expired at") {
		t.Fatalf("expired token: %d %s", code, b)
	}
	if _, _, err := env.Store.CreateAdminTokenUntil(t.Context(), "x", store.RoleAdmin, "test", &time.Time{}); err == nil {
		t.Fatal("a token expiring in the past was made")
	}

	// The console makes tokens with an expiry and lists it.
	admin := env.Login(t, "ops", store.RoleAdmin)
	res, _ := admin.PostForm("/settings/tokens", url.Values{"token_name": {"ci"}, "token_role": {"viewer"}, "token_expires_at": {"yesterday"}})
	if res.StatusCode != http.StatusUnprocessableEntity {
		t.Fatalf("bad expiry: %d", res.StatusCode)
	}
	res, doc := admin.PostForm("/settings/tokens", url.Values{"token_name": {"ci"}, "token_role": {"viewer"}, "token_expires_at": {"2099-05-01"}})
	if res.StatusCode != http.StatusOK || !strings.Contains(doc.Find(`[data-testid="token-expires"]`).Text(), "2099-05-01") {
		t.Fatalf("token with expiry: %d", res.StatusCode)
	}
	if !strings.Contains(doc.Find(`[data-testid="token-`+itoa(at.ID)+`"]`).Text(), "expired") {
		t.Fatal("the expired token is not shown expired")
	}
}
