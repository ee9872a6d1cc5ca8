package handlers_test

import (
	"net/http"
	"strings"
	"testing"

	"switchyard/routing/config"
	"switchyard/store"
	"switchyard/web/webtest"
)

// The web-search capability and the strict field policy go from the
// deployment form to the draft, back to the form and the list, into the
// canonical text, and through the admin API, as responses_api does.
func TestDeploymentWebSearchAndStrictFields(t *testing.T) {
	env := webtest.New(t)
	admin := env.Login(t, "ops", store.RoleAdmin)
	lmSeedProviders(t, env)
	mid, err := env.Store.CreateLogicModel(t.Context(), config.LogicModel{Code: "claude-opus", Kind: config.KindChat})
	if err != nil {
		t.Fatal(err)
	}
	_, doc := admin.Get("/logic-models/" + itoa(mid) + "/deployments/new")
	if doc.Find(`input[name="cap_web_search"]`).Length() != 1 || doc.Find(`input[name="strict_fields"]`).Length() != 1 {
		t.Fatal("the deployment form lacks the web search or strict field policy checkbox")
	}
	if hint := webtest.TestID(doc, "strict-fields-hint").Text(); !strings.Contains(hint, "refused instead") {
		t.Fatalf("the strict field policy is not explained: %q", hint)
	}
	form := lmDeploymentForm("dashscope", "claude-opus-4-5", "100")
	form.Set("cap_web_search", "on")
	form.Set("strict_fields", "on")
	if res, doc := admin.PostForm("/logic-models/"+itoa(mid)+"/deployments", form); res.StatusCode != http.StatusOK {
		t.Fatalf("create: %d %q", res.StatusCode, webtest.TestID(doc, "form-errors").Text())
	}
	m, _ := lmDraftModel(t, env, "claude-opus")
	if len(m.Deployments) != 1 || !m.Deployments[0].Capabilities.WebSearch || !m.Deployments[0].StrictFields || m.Deployments[0].Capabilities.Tools {
		t.Fatalf("stored %+v", m.Deployments)
	}
	d := m.Deployments[0]
	_, doc = admin.Get("/logic-models")
	caps := doc.Find(`[data-testid="deployment-row-` + itoa(d.ID) + `"] [data-testid="deployment-capabilities"]`).Text()
	if !strings.Contains(caps, "web search") || !strings.Contains(caps, "strict fields") {
		t.Fatalf("capabilities shown as %q", caps)
	}
	_, doc = admin.Get("/deployments/" + itoa(d.ID) + "/edit")
	for _, name := range []string{"cap_web_search", "strict_fields"} {
		if _, checked := doc.Find(`input[name="` + name + `"]`).Attr("checked"); !checked {
			t.Fatalf("the edit form does not show %s ticked", name)
		}
	}
	snap, _, err := env.Store.Draft(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if text, _ := config.Encode(snap); !strings.Contains(string(text), "web_search: true") || !strings.Contains(string(text), "strict_fields: true") {
		t.Fatalf("canonical text:\n%s", text)
	}
	// Unticked on edit: off again.
	form.Del("cap_web_search")
	form.Del("strict_fields")
	if res, _ := admin.PostForm("/deployments/"+itoa(d.ID), form); res.StatusCode != http.StatusOK {
		t.Fatalf("update: %d", res.StatusCode)
	}
	if m, _ := lmDraftModel(t, env, "claude-opus"); m.Deployments[0].Capabilities.WebSearch || m.Deployments[0].StrictFields {
		t.Fatal("still set after unticking")
	}
	// The admin API reads and writes both.
	api := newCRUD(t, env)
	var got config.Deployment
	api.call(http.MethodPut, "/deployments/"+itoa(d.ID), `{"strict_fields": true, "capabilities": {"web_search": true}}`, http.StatusOK, &got)
	if !got.StrictFields || !got.Capabilities.WebSearch {
		t.Fatalf("the API's answer: %+v", got)
	}
	if m, _ := lmDraftModel(t, env, "claude-opus"); !m.Deployments[0].StrictFields || !m.Deployments[0].Capabilities.WebSearch {
		t.Fatal("the API did not store them")
	}
}
