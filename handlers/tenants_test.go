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

func tenantDraft(t *testing.T, env *webtest.Env) []config.Tenant {
	t.Helper()
	snap, _, err := env.Store.Draft(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return snap.Tenants
}

func TestTenantCRUDAndDeleteRefusal(t *testing.T) {
	env := webtest.New(t)
	admin := env.Login(t, "ops", store.RoleAdmin)

	res, doc := admin.Get("/tenants")
	if res.StatusCode != http.StatusOK || webtest.TestID(doc, "empty").Length() != 1 || webtest.TestID(doc, "tenant-new").Length() != 1 {
		t.Fatalf("empty tenants page: %d", res.StatusCode)
	}
	_, doc = admin.Get("/tenants/new")
	if webtest.TestID(doc, "tenant-form").Length() != 1 {
		t.Fatal("no tenant form")
	}

	// Invalid: 422 with the field message, nothing stored.
	for _, tc := range []struct {
		name  string
		form  url.Values
		field string
	}{
		{"bad name", url.Values{"name": {"has space"}}, "name"},
		{"missing name", url.Values{"name": {""}}, "name"},
		{"long description", url.Values{"name": {"ok"}, "description": {strings.Repeat("d", 501)}}, "description"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, doc := admin.PostForm("/tenants", tc.form)
			if res.StatusCode != http.StatusUnprocessableEntity || webtest.TestID(doc, "error-"+tc.field).Length() != 1 {
				t.Fatalf("status %d, error shown %d", res.StatusCode, webtest.TestID(doc, "error-"+tc.field).Length())
			}
			if len(tenantDraft(t, env)) != 0 {
				t.Fatal("an invalid form stored a tenant")
			}
		})
	}

	// Create (plain post: 303 to the list).
	res, _ = admin.NoRedirects().PostForm("/tenants", url.Values{"name": {"payments"}, "description": {"Payments team"}})
	if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/tenants" {
		t.Fatalf("create tenant: %d %s", res.StatusCode, res.Header.Get("Location"))
	}
	ts := tenantDraft(t, env)
	if len(ts) != 1 || ts[0].Name != "payments" || ts[0].Description != "Payments team" {
		t.Fatalf("stored tenants %+v", ts)
	}
	id := ts[0].ID

	// Duplicate (htmx): the form fragment with the message.
	admin.HTMX = true
	res, doc = admin.PostForm("/tenants", url.Values{"name": {"payments"}})
	if res.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(webtest.TestID(doc, "error-name").Text(), "already taken") || webtest.TestID(doc, "nav").Length() != 0 {
		t.Fatalf("duplicate tenant: %d %q", res.StatusCode, webtest.TestID(doc, "error-name").Text())
	}
	admin.HTMX = false

	// Edit.
	_, doc = admin.Get("/tenants/" + itoa(id) + "/edit")
	if v, _ := doc.Find(`input[name="name"]`).Attr("value"); v != "payments" {
		t.Fatalf("edit form name %q", v)
	}
	res, doc = admin.PostForm("/tenants/"+itoa(id), url.Values{"name": {"payments-eu"}, "description": {"EU payments"}})
	if res.StatusCode != http.StatusOK || webtest.TestID(doc, "tenant-payments-eu").Length() != 1 {
		t.Fatalf("rename tenant: %d", res.StatusCode)
	}
	res, _ = admin.PostForm("/tenants/999999", url.Values{"name": {"ghost"}})
	if res.StatusCode != http.StatusNotFound {
		t.Fatalf("update unknown tenant: %d", res.StatusCode)
	}

	// A dedicated route group and a caller belong to it: listed, and delete is refused.
	ctx := t.Context()
	if _, err := env.Store.CreateRouteGroup(ctx, config.RouteGroup{Name: "eu-pool", Tenant: "payments-eu", Fallback: config.FallbackNone}); err != nil {
		t.Fatal(err)
	}
	cid, err := env.Store.CreateCaller(ctx, config.Caller{Name: "eu-checkout", Tenant: "payments-eu", RouteGroup: "eu-pool", PriorityClass: config.ClassInteractive, Enabled: true})
	if err != nil {
		t.Fatal(err)
	}
	_, doc = admin.Get("/tenants")
	row := webtest.TestID(doc, "tenant-payments-eu")
	if href, _ := row.Find(`[data-testid="tenant-groups"] a`).Attr("href"); href != "/route-groups#group-eu-pool" {
		t.Errorf("dedicated group link %q", href)
	}
	if href, _ := row.Find(`[data-testid="tenant-callers"] a`).Attr("href"); href != "/callers/"+itoa(cid) {
		t.Errorf("caller link %q", href)
	}
	if c, _ := row.Find(`[data-testid="tenant-delete"]`).Closest("form").Attr("hx-confirm"); c == "" {
		t.Error("delete has no confirmation")
	}

	res, doc = admin.PostForm("/tenants/"+itoa(id)+"/delete", nil)
	flash := webtest.TestID(doc, "flash-refused").Text()
	if res.StatusCode != http.StatusOK || !strings.Contains(flash, "Not deleted") || !strings.Contains(flash, "eu-checkout") || !strings.Contains(flash, "eu-pool") {
		t.Fatalf("referenced delete: %d %q", res.StatusCode, flash)
	}
	if len(tenantDraft(t, env)) != 1 {
		t.Fatal("referenced tenant was deleted")
	}

	// Unreferenced: deleted (htmx navigates with HX-Redirect).
	if err := env.Store.DeleteCaller(ctx, cid); err != nil {
		t.Fatal(err)
	}
	if err := env.Store.DeleteRouteGroup(ctx, tenantGroupID(t, env, "eu-pool")); err != nil {
		t.Fatal(err)
	}
	admin.HTMX = true
	res, _ = admin.PostForm("/tenants/"+itoa(id)+"/delete", nil)
	if res.StatusCode != http.StatusOK || res.Header.Get("HX-Redirect") != "/tenants" {
		t.Fatalf("htmx delete: %d %q", res.StatusCode, res.Header.Get("HX-Redirect"))
	}
	if len(tenantDraft(t, env)) != 0 {
		t.Fatal("tenant not deleted")
	}
}

func tenantGroupID(t *testing.T, env *webtest.Env, name string) int64 {
	t.Helper()
	snap, _, err := env.Store.Draft(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range snap.RouteGroups {
		if g.Name == name {
			return g.ID
		}
	}
	t.Fatalf("no route group %s", name)
	return 0
}

func TestTenantViewerSeesNoControlsAndCannotPost(t *testing.T) {
	env := webtest.New(t)
	id, err := env.Store.CreateTenant(t.Context(), config.Tenant{Name: "payments"})
	if err != nil {
		t.Fatal(err)
	}
	viewer := env.Login(t, "watcher", store.RoleViewer)
	_, doc := viewer.Get("/tenants")
	if webtest.TestID(doc, "tenant-payments").Length() != 1 {
		t.Fatal("viewer does not see the tenant")
	}
	for _, tid := range []string{"tenant-new", "tenant-edit", "tenant-delete"} {
		if webtest.TestID(doc, tid).Length() != 0 {
			t.Errorf("viewer sees %s", tid)
		}
	}
	for _, p := range []string{"/tenants", "/tenants/" + itoa(id), "/tenants/" + itoa(id) + "/delete"} {
		res, _ := viewer.PostForm(p, url.Values{"name": {"x"}})
		if res.StatusCode != http.StatusForbidden {
			t.Errorf("viewer POST %s: %d", p, res.StatusCode)
		}
	}
	if ts := tenantDraft(t, env); len(ts) != 1 || ts[0].Name != "payments" {
		t.Fatal("viewer changed tenants")
	}
}
