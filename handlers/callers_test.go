package handlers_test

import (
	"bytes"
	"crypto/sha256"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"

	"switchyard/routing/config"
	"switchyard/store"
	"switchyard/web/webtest"
)

// callerSeed creates a route group (and a tenant) callers can bind to.
func callerSeed(t *testing.T, env *webtest.Env) {
	t.Helper()
	ctx := t.Context()
	if _, err := env.Store.CreateTenant(ctx, config.Tenant{Name: "payments"}); err != nil {
		t.Fatal(err)
	}
	for _, g := range []string{"main", "bulk"} {
		if _, err := env.Store.CreateRouteGroup(ctx, config.RouteGroup{Name: g}); err != nil {
			t.Fatal(err)
		}
	}
}

// callerCreate stores a caller directly and returns its id.
func callerCreate(t *testing.T, env *webtest.Env, name string) int64 {
	t.Helper()
	id, err := env.Store.CreateCaller(t.Context(), config.Caller{Name: name, RouteGroup: "main", PriorityClass: config.ClassInteractive, Enabled: true})
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func callerDraft(t *testing.T, env *webtest.Env, name string) (config.Caller, bool) {
	t.Helper()
	snap, _, err := env.Store.Draft(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range snap.Callers {
		if c.Name == name {
			return c, true
		}
	}
	return config.Caller{}, false
}

func callerForm(over map[string]string) url.Values {
	v := url.Values{
		"name": {"checkout"}, "business_line": {"retail"}, "tenant": {"payments"}, "route_group": {"main"},
		"priority_class": {"batch"}, "enabled": {"on"},
		"limits.fast.rpm": {"60"}, "limits.fast.tpm": {"100000"}, "limits.fast.daily_tokens": {""},
		"limits.standard.rpm": {""}, "limits.standard.tpm": {""}, "limits.standard.daily_tokens": {""},
		"limits.deep.rpm": {""}, "limits.deep.tpm": {""}, "limits.deep.daily_tokens": {"5000000"},
		"monthly_budget": {"250.5"}, "budget_currency": {"eur"},
	}
	for k, val := range over {
		v.Set(k, val)
	}
	return v
}

func callerHTML(t *testing.T, doc *goquery.Document) string {
	t.Helper()
	html, err := doc.Html()
	if err != nil {
		t.Fatal(err)
	}
	return html
}

func TestCallersEmptyStateNeedsRouteGroup(t *testing.T) {
	env := webtest.New(t)
	admin := env.Login(t, "ops", store.RoleAdmin)
	res, doc := admin.Get("/callers")
	if res.StatusCode != http.StatusOK || webtest.TestID(doc, "empty").Length() != 1 {
		t.Fatalf("empty callers page: %d", res.StatusCode)
	}
	if webtest.TestID(doc, "callers-need-group").Find(`a[href="/route-groups/new"]`).Length() != 1 {
		t.Fatal("empty state does not point to creating a route group")
	}
	if webtest.TestID(doc, "caller-new").Length() != 0 {
		t.Fatal("add button shown although no route group exists")
	}
	_, doc = admin.Get("/callers/new")
	if webtest.TestID(doc, "caller-no-groups").Find(`a[href="/route-groups/new"]`).Length() != 1 {
		t.Fatal("form does not say a route group is needed")
	}
}

func TestCallerQuotasAndBudgetSavedAndShown(t *testing.T) {
	env := webtest.New(t)
	callerSeed(t, env)
	admin := env.Login(t, "ops", store.RoleAdmin)

	_, doc := admin.Get("/callers/new")
	if webtest.TestID(doc, "caller-form").Length() != 1 || doc.Find(`select[name="route_group"] option`).Length() != 2 {
		t.Fatal("new caller form lacks the route group choices")
	}
	if doc.Find(`input[name="limits.deep.daily_tokens"]`).Length() != 1 {
		t.Fatal("limits grid is missing a cell")
	}

	res, doc := admin.NoRedirects().PostForm("/callers", callerForm(nil))
	if res.StatusCode != http.StatusSeeOther {
		t.Fatalf("create caller: %d %s", res.StatusCode, webtest.TestID(doc, "form-errors").Text())
	}
	c, ok := callerDraft(t, env, "checkout")
	if !ok {
		t.Fatal("caller not stored")
	}
	if loc := res.Header.Get("Location"); loc != "/callers/"+itoa(c.ID) {
		t.Fatalf("redirect to %q", loc)
	}
	want := config.Caller{ID: c.ID, Name: "checkout", BusinessLine: "retail", Tenant: "payments", RouteGroup: "main",
		PriorityClass: config.ClassBatch, Enabled: true, MonthlyBudgetMicros: 250_500_000, BudgetCurrency: "EUR",
		Limits: []config.TierLimit{{Tier: config.TierFast, RPM: 60, TPM: 100000}, {Tier: config.TierDeep, DailyTokens: 5000000}}}
	if c.Limit(config.TierFast) != want.Limits[0] || c.Limit(config.TierDeep) != want.Limits[1] || c.Limit(config.TierStandard) != (config.TierLimit{Tier: config.TierStandard}) {
		t.Fatalf("limits stored as %+v", c.Limits)
	}
	c.Limits, want.Limits = nil, nil
	if c.Name != want.Name || c.BusinessLine != want.BusinessLine || c.Tenant != want.Tenant || c.RouteGroup != want.RouteGroup ||
		c.PriorityClass != want.PriorityClass || !c.Enabled || c.MonthlyBudgetMicros != want.MonthlyBudgetMicros || c.BudgetCurrency != want.BudgetCurrency {
		t.Fatalf("caller stored as %+v", c)
	}

	// The list shows the quotas per tier, the budget and the route group link.
	_, doc = admin.Get("/callers")
	row := webtest.TestID(doc, "caller-checkout")
	if row.Length() != 1 {
		t.Fatal("caller row missing")
	}
	fast := strings.Join(strings.Fields(row.Find(`[data-testid="limits-fast"]`).Text()), " ")
	if fast != "fast 60 / 100,000 / unlimited" {
		t.Errorf("fast limits shown as %q", fast)
	}
	if got := strings.Join(strings.Fields(row.Find(`[data-testid="limits-deep"]`).Text()), " "); got != "deep unlimited / unlimited / 5,000,000" {
		t.Errorf("deep limits shown as %q", got)
	}
	if got := row.Find(`[data-testid="caller-budget"]`).Text(); got != "250.50 EUR / month" {
		t.Errorf("budget shown as %q", got)
	}
	if href, _ := row.Find(`[data-testid="caller-group"]`).Attr("href"); href != "/route-groups#group-main" {
		t.Errorf("route group link %q", href)
	}
	if row.Find(`[data-testid="caller-keys-count"]`).Text() != "0" || !strings.Contains(row.Text(), "batch") || !strings.Contains(row.Text(), "payments") {
		t.Errorf("row misses key count, class or tenant: %q", row.Text())
	}

	// The edit form shows the stored values; blank means unlimited.
	_, doc = admin.Get("/callers/" + itoa(c.ID) + "/edit")
	if v, _ := doc.Find(`input[name="limits.fast.rpm"]`).Attr("value"); v != "60" {
		t.Errorf("edit form fast rpm %q", v)
	}
	if v, _ := doc.Find(`input[name="limits.standard.rpm"]`).Attr("value"); v != "" {
		t.Errorf("edit form standard rpm %q, want blank", v)
	}
	if v, _ := doc.Find(`input[name="monthly_budget"]`).Attr("value"); v != "250.5" {
		t.Errorf("edit form budget %q", v)
	}

	// Update: clearing a cell makes it unlimited; the detail page shows the result.
	res, doc = admin.PostForm("/callers/"+itoa(c.ID), callerForm(map[string]string{"limits.fast.rpm": "", "limits.standard.rpm": "30", "tenant": "", "monthly_budget": ""}))
	if res.StatusCode != http.StatusOK || webtest.TestID(doc, "caller-detail").Length() != 1 {
		t.Fatalf("update caller: %d", res.StatusCode)
	}
	if !strings.Contains(webtest.TestID(doc, "flash").Text(), "saved") {
		t.Error("no flash after saving")
	}
	c, _ = callerDraft(t, env, "checkout")
	if c.Limit(config.TierFast).RPM != 0 || c.Limit(config.TierFast).TPM != 100000 || c.Limit(config.TierStandard).RPM != 30 || c.Tenant != "" || c.MonthlyBudgetMicros != 0 {
		t.Fatalf("update stored %+v", c)
	}
	if got := webtest.TestID(doc, "caller-settings").Find(`[data-testid="caller-budget"]`).Text(); got != "no budget" {
		t.Errorf("detail budget %q", got)
	}
}

func TestCallerInvalidInputRefused(t *testing.T) {
	env := webtest.New(t)
	callerSeed(t, env)
	admin := env.Login(t, "ops", store.RoleAdmin)

	cases := []struct {
		name  string
		over  map[string]string
		field string
		msg   string
	}{
		{"negative rpm", map[string]string{"limits.fast.rpm": "-5"}, "limits.fast.rpm", "0 (unlimited) or positive"},
		{"non-numeric tpm", map[string]string{"limits.standard.tpm": "lots"}, "limits.standard.tpm", "whole number"},
		{"fractional daily tokens", map[string]string{"limits.deep.daily_tokens": "1.5"}, "limits.deep.daily_tokens", "whole number"},
		{"bad currency", map[string]string{"budget_currency": "DOLLARS"}, "budget_currency", "three-letter"},
		{"non-numeric budget", map[string]string{"monthly_budget": "a lot"}, "monthly_budget", "number"},
		{"negative budget", map[string]string{"monthly_budget": "-1"}, "monthly_budget", "positive"},
		{"unknown route group", map[string]string{"route_group": "ghost"}, "route_group", "does not exist"},
		{"no route group", map[string]string{"route_group": ""}, "route_group", "required"},
		{"bad class", map[string]string{"priority_class": "urgent"}, "priority_class", "interactive, normal or batch"},
		{"unknown tenant", map[string]string{"tenant": "nobody"}, "tenant", "does not exist"},
		{"bad name", map[string]string{"name": "has space"}, "name", "letters"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res, doc := admin.PostForm("/callers", callerForm(tc.over))
			if res.StatusCode != http.StatusUnprocessableEntity {
				t.Fatalf("status %d, want 422", res.StatusCode)
			}
			msg := webtest.TestID(doc, "error-"+tc.field).Text()
			if !strings.Contains(msg, tc.msg) {
				t.Fatalf("error for %s: %q, want it to mention %q", tc.field, msg, tc.msg)
			}
			if _, ok := callerDraft(t, env, "checkout"); ok {
				t.Fatal("an invalid form stored a caller")
			}
			if tc.name == "non-numeric tpm" {
				if v, _ := doc.Find(`input[name="limits.standard.tpm"]`).Attr("value"); v != "lots" {
					t.Errorf("rejected value re-shown as %q", v)
				}
			}
		})
	}

	// htmx gets the form fragment with the same errors and status.
	admin.HTMX = true
	res, doc := admin.PostForm("/callers", callerForm(map[string]string{"limits.fast.rpm": "-1"}))
	if res.StatusCode != http.StatusUnprocessableEntity || webtest.TestID(doc, "caller-form").Length() != 1 || webtest.TestID(doc, "nav").Length() != 0 {
		t.Fatalf("htmx invalid caller: %d", res.StatusCode)
	}
	if webtest.TestID(doc, "error-limits.fast.rpm").Length() != 1 {
		t.Fatal("htmx fragment lacks the field error")
	}
	// An invalid update leaves the stored caller untouched.
	admin.HTMX = false
	id := callerCreate(t, env, "orders")
	res, _ = admin.PostForm("/callers/"+itoa(id), callerForm(map[string]string{"name": "orders", "limits.fast.rpm": "-1"}))
	if res.StatusCode != http.StatusUnprocessableEntity {
		t.Fatalf("invalid update: %d", res.StatusCode)
	}
	if c, _ := callerDraft(t, env, "orders"); c.PriorityClass != config.ClassInteractive || len(c.Limits) != 0 {
		t.Fatalf("invalid update changed the caller: %+v", c)
	}
	// Duplicate names are refused on the name field.
	res, doc = admin.PostForm("/callers", callerForm(map[string]string{"name": "orders"}))
	if res.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(webtest.TestID(doc, "error-name").Text(), "already taken") {
		t.Fatalf("duplicate caller: %d %q", res.StatusCode, webtest.TestID(doc, "error-name").Text())
	}
}

func TestCallerKeyShownOnceAndStoredHashed(t *testing.T) {
	env := webtest.New(t)
	callerSeed(t, env)
	admin := env.Login(t, "ops", store.RoleAdmin)
	id := callerCreate(t, env, "checkout")
	path := "/callers/" + itoa(id)

	_, doc := admin.Get(path)
	if webtest.TestID(doc, "caller-not-live").Length() != 1 || webtest.TestID(doc, "caller-no-keys").Length() != 1 {
		t.Fatal("a draft-only caller without keys should say so")
	}

	// A plain post answers with the page itself (200), never a redirect.
	res, doc := admin.NoRedirects().PostForm(path+"/keys", url.Values{"name": {"production"}})
	if res.StatusCode != http.StatusOK {
		t.Fatalf("create key: %d", res.StatusCode)
	}
	if res.Header.Get("Location") != "" || !strings.Contains(res.Header.Get("Cache-Control"), "no-store") {
		t.Fatalf("key response headers: %v", res.Header)
	}
	plain := strings.TrimSpace(webtest.TestID(doc, "caller-key-plaintext").Text())
	if !strings.HasPrefix(plain, store.CallerKeyPrefix) || len(plain) < 30 {
		t.Fatalf("plaintext key %q", plain)
	}
	once := webtest.TestID(doc, "caller-key-once")
	if !once.HasClass("secret-once") || !strings.Contains(once.Text(), "will not be shown again") {
		t.Fatal("no clear shown-once warning")
	}
	if sel, _ := webtest.TestID(doc, "caller-key-copy").Attr("data-copy"); doc.Find(sel).Text() != plain {
		t.Fatalf("copy button points at %q", sel)
	}
	for key, want := range map[string][]string{
		"curl":   {"curl http://gateway.test/v1/chat/completions", "Bearer " + plain, `"model": "standard"`},
		"python": {`base_url="http://gateway.test/v1"`, `api_key="` + plain + `"`, `model="standard"`},
		"node":   {`baseURL: "http://gateway.test/v1"`, `apiKey: "` + plain + `"`},
		"go":     {`option.WithBaseURL("http://gateway.test/v1")`, `option.WithAPIKey("` + plain + `")`, `"github.com/openai/openai-go/v3/option"`},
	} {
		snip := webtest.TestID(doc, "snippet-panel-"+key)
		if snip.Find("pre").Length() != 1 || webtest.TestID(doc, "copy-snippet-"+key).Length() != 1 {
			t.Errorf("%s snippet lacks a <pre> or a copy button", key)
		}
		for _, w := range want {
			if !strings.Contains(snip.Find("pre").Text(), w) {
				t.Errorf("%s snippet misses %q", key, w)
			}
		}
	}

	// The database holds the hash and the public prefix, never the key.
	var name, prefix string
	var hash []byte
	var keyID int64
	if err := env.Store.DB().QueryRowContext(t.Context(), `SELECT id, name, prefix, hash FROM caller_keys WHERE caller_name=$1`, "checkout").Scan(&keyID, &name, &prefix, &hash); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte(plain))
	if !bytes.Equal(hash, sum[:]) || name != "production" || !strings.HasPrefix(plain, prefix) || len(prefix) >= len(plain) {
		t.Fatalf("stored key: name %q prefix %q hash ok %v", name, prefix, bytes.Equal(hash, sum[:]))
	}
	var leaks int
	if err := env.Store.DB().QueryRowContext(t.Context(), `
		SELECT (SELECT count(*) FROM caller_keys WHERE name=$1 OR prefix=$1 OR hash=convert_to($1, 'UTF8'))
		     + (SELECT count(*) FROM sessions WHERE position(convert_to($1, 'UTF8') in data) > 0)`, plain).Scan(&leaks); err != nil {
		t.Fatal(err)
	}
	if leaks != 0 {
		t.Fatal("the plaintext key is stored somewhere")
	}
	live, err := env.Store.LiveCallerKeys(t.Context())
	if err != nil || live[sum].Caller != "checkout" {
		t.Fatalf("key not live: %v", err)
	}

	// Shown once: the page never shows it again, only the prefix.
	_, doc = admin.Get(path)
	if strings.Contains(callerHTML(t, doc), plain) || webtest.TestID(doc, "caller-key-plaintext").Length() != 0 {
		t.Fatal("the key is shown again")
	}
	row := webtest.TestID(doc, "caller-key-"+itoa(keyID))
	// The caller is only in the draft: its key is kept but suspended until
	// it is published; who made it is recorded.
	if !strings.Contains(row.Text(), prefix) || !strings.Contains(row.Text(), "suspended until the caller is published") || !strings.Contains(row.Text(), "by ops") {
		t.Fatalf("key row: %q", row.Text())
	}
	confirm, _ := webtest.TestID(doc, "caller-key-revoke-"+itoa(keyID)).Closest("form").Attr("hx-confirm")
	if confirm != "Revoke key "+prefix+"…? Requests using it are refused within seconds." {
		t.Errorf("revoke confirm %q", confirm)
	}

	// htmx: the key panel fragment with the new key.
	admin.HTMX = true
	res, doc = admin.PostForm(path+"/keys", url.Values{})
	if res.StatusCode != http.StatusOK || webtest.TestID(doc, "caller-keys").Length() != 1 || webtest.TestID(doc, "nav").Length() != 0 {
		t.Fatalf("htmx create key: %d", res.StatusCode)
	}
	second := strings.TrimSpace(webtest.TestID(doc, "caller-key-plaintext").Text())
	if second == "" || second == plain {
		t.Fatal("htmx create key shows no new key")
	}

	// A too-long name is refused with 422 and nothing is created.
	res, doc = admin.PostForm(path+"/keys", url.Values{"name": {strings.Repeat("k", 101)}})
	if res.StatusCode != http.StatusUnprocessableEntity || webtest.TestID(doc, "error-name").Length() != 1 || webtest.TestID(doc, "caller-key-plaintext").Length() != 0 {
		t.Fatalf("long key name: %d", res.StatusCode)
	}
	keys, _ := env.Store.CallerKeys(t.Context(), "checkout")
	if len(keys) != 2 {
		t.Fatalf("%d keys stored, want 2", len(keys))
	}

	// Revoke (htmx): the panel shows it revoked and the data plane drops it.
	res, doc = admin.PostForm("/caller-keys/"+itoa(keyID)+"/revoke", nil)
	if res.StatusCode != http.StatusOK || !strings.Contains(webtest.TestID(doc, "caller-key-"+itoa(keyID)).Text(), "revoked") {
		t.Fatalf("revoke: %d", res.StatusCode)
	}
	if webtest.TestID(doc, "caller-key-revoke-"+itoa(keyID)).Length() != 0 {
		t.Fatal("a revoked key still has a revoke button")
	}
	live, _ = env.Store.LiveCallerKeys(t.Context())
	if _, ok := live[sum]; ok {
		t.Fatal("revoked key is still live")
	}
	// Revoke (plain): 303 back to the caller.
	admin.HTMX = false
	res, _ = admin.NoRedirects().PostForm("/caller-keys/"+itoa(keys[1].ID)+"/revoke", nil)
	if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != path {
		t.Fatalf("plain revoke: %d %s", res.StatusCode, res.Header.Get("Location"))
	}
	if live, _ = env.Store.LiveCallerKeys(t.Context()); len(live) != 0 {
		t.Fatalf("%d keys still live", len(live))
	}
	res, _ = admin.PostForm("/caller-keys/999999/revoke", nil)
	if res.StatusCode != http.StatusNotFound {
		t.Fatalf("revoke unknown key: %d", res.StatusCode)
	}
}

func TestCallerLiveStatusAndDelete(t *testing.T) {
	env := webtest.New(t)
	callerSeed(t, env)
	admin := env.Login(t, "ops", store.RoleAdmin)
	id := callerCreate(t, env, "checkout")
	path := "/callers/" + itoa(id)

	_, doc := admin.Get("/callers")
	if !strings.Contains(webtest.TestID(doc, "caller-checkout").Text(), "not live yet") {
		t.Fatal("list does not mark the unpublished caller")
	}
	_, err := env.Store.Publish(t.Context(), store.PublishInput{Author: "ops", Message: "first", Check: func(config.Snapshot) config.Result { return config.Result{} }})
	if err != nil {
		t.Fatal(err)
	}
	_, doc = admin.Get(path)
	if webtest.TestID(doc, "caller-not-live").Length() != 0 || webtest.TestID(doc, "caller-changed").Length() != 0 {
		t.Fatal("a published caller is shown as not live")
	}
	admin.PostForm(path, callerForm(map[string]string{"name": "checkout", "priority_class": "interactive"}))
	_, doc = admin.Get(path)
	if webtest.TestID(doc, "caller-changed").Length() != 1 {
		t.Fatal("edited caller does not say its changes are not live")
	}

	res, _ := admin.NoRedirects().PostForm(path+"/delete", nil)
	if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/callers" {
		t.Fatalf("delete: %d %s", res.StatusCode, res.Header.Get("Location"))
	}
	if _, ok := callerDraft(t, env, "checkout"); ok {
		t.Fatal("caller not deleted")
	}
	res, _ = admin.Get(path)
	if res.StatusCode != http.StatusNotFound {
		t.Fatalf("deleted caller page: %d", res.StatusCode)
	}
}

func TestCallerViewerSeesNoControlsAndCannotPost(t *testing.T) {
	env := webtest.New(t)
	callerSeed(t, env)
	id := callerCreate(t, env, "checkout")
	plain, k, err := env.Store.CreateCallerKey(t.Context(), "checkout", "prod", "alice")
	if err != nil {
		t.Fatal(err)
	}
	viewer := env.Login(t, "watcher", store.RoleViewer)

	_, doc := viewer.Get("/callers")
	if webtest.TestID(doc, "caller-checkout").Length() != 1 || webtest.TestID(doc, "caller-new").Length() != 0 {
		t.Fatal("viewer list: row missing or add button shown")
	}
	_, doc = viewer.Get("/callers/" + itoa(id))
	for _, tid := range []string{"caller-edit", "caller-delete", "caller-key-form", "caller-key-create", "caller-key-revoke-" + itoa(k.ID)} {
		if webtest.TestID(doc, tid).Length() != 0 {
			t.Errorf("viewer sees %s", tid)
		}
	}
	if strings.Contains(callerHTML(t, doc), plain) {
		t.Fatal("viewer sees a key")
	}
	for _, p := range []string{"/callers", "/callers/" + itoa(id), "/callers/" + itoa(id) + "/delete", "/callers/" + itoa(id) + "/keys", "/caller-keys/" + itoa(k.ID) + "/revoke"} {
		res, _ := viewer.PostForm(p, callerForm(nil))
		if res.StatusCode != http.StatusForbidden {
			t.Errorf("viewer POST %s: %d", p, res.StatusCode)
		}
	}
	if keys, _ := env.Store.CallerKeys(t.Context(), "checkout"); len(keys) != 1 || keys[0].RevokedAt != nil {
		t.Fatal("viewer changed keys")
	}
}

// TestCallerKeyClearsTheStaleFlash: the htmx answer to a new key removes
// "Caller saved. Create an API key below" from the page (out of band).
func TestCallerKeyClearsTheStaleFlash(t *testing.T) {
	env := webtest.New(t)
	callerSeed(t, env)
	admin := env.Login(t, "ops", store.RoleAdmin)
	id := callerCreate(t, env, "checkout")
	admin.HTMX = true
	res, doc := admin.PostForm("/callers/"+itoa(id)+"/keys", url.Values{"name": {"production"}})
	if res.StatusCode != http.StatusOK {
		t.Fatalf("create key: %d", res.StatusCode)
	}
	flash := doc.Find(`#flash[hx-swap-oob]`)
	if _, hidden := flash.Attr("hidden"); flash.Length() != 1 || !hidden || strings.TrimSpace(flash.Text()) != "" {
		t.Fatalf("the answer does not clear the flash: %d", flash.Length())
	}
}
