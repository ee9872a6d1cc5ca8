package handlers_test

import (
	"net/http"
	"net/url"
	"testing"

	"switchyard/routing/config"
	"switchyard/store"
	"switchyard/web/webtest"
)

// The route-group form's trace_content box turns content export on, shows
// it ticked, and an unticked save turns it off again.
func TestRouteGroupFormTraceContent(t *testing.T) {
	env := webtest.New(t)
	admin := env.Login(t, "ops", store.RoleAdmin)
	id := createGroup(t, env, config.RouteGroup{Name: "default"})
	edit := "/route-groups/" + itoa(id)
	admin.HTMX = true

	res, _ := admin.PostForm(edit, url.Values{"name": {"default"}, "trace_content": {"on"}})
	wantStatus(t, "content on", res, http.StatusOK)
	if !draftGroup(t, env, "default").TraceContent {
		t.Fatal("the ticked box was not stored")
	}
	admin.HTMX = false
	_, doc := admin.Get(edit + "/edit")
	if webtest.TestID(doc, "check-trace_content").Find("input[checked]").Length() != 1 {
		t.Fatal("the form does not show the box ticked")
	}
	admin.HTMX = true
	res, _ = admin.PostForm(edit, url.Values{"name": {"default"}})
	wantStatus(t, "content off", res, http.StatusOK)
	if draftGroup(t, env, "default").TraceContent {
		t.Fatal("an unticked box left content export on")
	}
}
