package handlers_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"switchyard/routing/config"
	"switchyard/store"
	"switchyard/views/pages/groups"
	"switchyard/web/webtest"
)

// The route-group form sets the retry budget and the ladder: bad input is
// a 422 naming the field, good input is stored and shown again; the admin
// API changes one part and keeps the rest.
func TestRouteGroupResilienceFormAndAPI(t *testing.T) {
	env := webtest.New(t)
	admin := env.Login(t, "ops", store.RoleAdmin)
	id := createGroup(t, env, config.RouteGroup{Name: "default"})
	edit := "/route-groups/" + itoa(id)

	_, doc := admin.Get(edit + "/edit")
	if webtest.TestID(doc, "group-retry-budget").Length() != 1 || webtest.TestID(doc, "group-ladder").Length() != 1 {
		t.Fatal("the form has no retry budget or ladder part")
	}
	if webtest.TestID(doc, "step-down-fast").Length() != 0 || webtest.TestID(doc, "step-down-deep").Find(`option[value="standard"]`).Length() != 1 {
		t.Fatal("step-down offers: fast has nothing lighter; deep steps to standard or fast")
	}

	form := url.Values{"name": {"default"},
		groups.FieldBudgetPercent: {"15"}, groups.FieldBudgetMinPerS: {"2"},
		groups.StepDownField(config.TierDeep, "to"): {"standard"}, groups.StepDownField(config.TierDeep, "p95_ms"): {"9000"},
		groups.StepDownField(config.TierDeep, "error_percent"): {"30"},
		groups.FieldCacheOn: {"on"}, groups.FieldCacheScope: {"group"}, groups.FieldCacheTTLMS: {"120000"},
		groups.FieldStatic: {"  Please try again shortly.  "}}
	admin.HTMX = true
	bad := url.Values{}
	for k, v := range form {
		bad[k] = v
	}
	bad.Set(groups.FieldBudgetPercent, "lots")
	bad.Set(groups.StepDownField(config.TierStandard, "to"), "deep") // not lighter
	res, doc := admin.PostForm(edit, bad)
	wantStatus(t, "bad resilience", res, http.StatusUnprocessableEntity)
	if webtest.TestID(doc, "error-"+groups.FieldBudgetPercent).Length() != 1 || webtest.TestID(doc, "error-"+groups.StepDownField(config.TierStandard, "to")).Length() != 1 {
		t.Fatalf("errors not on their fields: %s", webtest.TestID(doc, "group-form").Text())
	}
	if g := draftGroup(t, env, "default"); g.RetryBudget != nil || g.Degradation != nil {
		t.Fatal("an invalid form stored settings")
	}
	res, _ = admin.PostForm(edit, form)
	wantStatus(t, "good resilience", res, http.StatusOK)
	g := draftGroup(t, env, "default")
	if g.RetryBudget == nil || *g.RetryBudget != (config.RetryBudget{Percent: 15, MinPerS: 2}) {
		t.Fatalf("budget stored %+v", g.RetryBudget)
	}
	d := g.Degradation
	if d == nil || len(d.StepDown) != 1 || d.StepDown[0] != (config.StepDown{Tier: config.TierDeep, To: config.TierStandard, P95MS: 9000, ErrorPercent: 30}) ||
		d.Cache == nil || *d.Cache != (config.Cache{Scope: "group", TTLMS: 120000}) || d.StaticAnswer != "Please try again shortly." {
		t.Fatalf("ladder stored %+v %+v", d, d.Cache)
	}
	admin.HTMX = false
	_, doc = admin.Get(edit + "/edit")
	if v, _ := webtest.TestID(doc, "field-"+groups.FieldBudgetPercent).Find("input").Attr("value"); v != "15" {
		t.Fatalf("the form shows percent %q", v)
	}
	if v, _ := webtest.TestID(doc, "step-down-deep").Find("option[selected]").Attr("value"); v != "standard" {
		t.Fatalf("the form shows deep → %q", v)
	}
	_, doc = admin.Get("/route-groups")
	panel := webtest.TestID(doc, "group-default")
	if !strings.Contains(panel.Find(`[data-testid="group-budget"]`).Text(), "15%") || !strings.Contains(panel.Find(`[data-testid="group-ladder"]`).Text(), "step-down deep → standard") {
		t.Fatalf("panel badges: %q %q", panel.Find(`[data-testid="group-budget"]`).Text(), panel.Find(`[data-testid="group-ladder"]`).Text())
	}

	// Admin API: a partial update changes the cache scope, keeps the rest.
	a := newCRUD(t, env)
	var got config.RouteGroup
	a.call(http.MethodPut, "/route-groups/"+itoa(id), `{"degradation":{"cache":{"scope":"caller"}}}`, http.StatusOK, &got)
	if got.Degradation == nil || got.Degradation.Cache.Scope != "caller" || got.Degradation.Cache.TTLMS != 120000 || len(got.Degradation.StepDown) != 1 || got.RetryBudget.Percent != 15 {
		t.Fatalf("API update: %+v %+v", got.Degradation, got.RetryBudget)
	}
	e := a.fails(http.MethodPut, "/route-groups/"+itoa(id), `{"retry_budget":{"window_ms":5}}`, http.StatusUnprocessableEntity, "validation_failed")
	if e.Error.Fields["retry_budget.window_ms"] == "" {
		t.Fatalf("API error fields: %+v", e.Error.Fields)
	}
}
