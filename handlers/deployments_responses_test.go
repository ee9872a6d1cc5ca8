package handlers_test

import (
	"net/http"
	"strings"
	"testing"

	"switchyard/routing/config"
	"switchyard/store"
	"switchyard/web/webtest"
)

// The Responses API capability (responses_api) goes from the deployment
// form to the draft and back to the form and the list, is in the canonical
// text, and survives a snapshot replacing the draft (import, rollback).
func TestDeploymentResponsesAPICapability(t *testing.T) {
	env := webtest.New(t)
	admin := env.Login(t, "ops", store.RoleAdmin)
	lmSeedProviders(t, env)
	mid, err := env.Store.CreateLogicModel(t.Context(), config.LogicModel{Code: "gpt-5", Kind: config.KindChat})
	if err != nil {
		t.Fatal(err)
	}
	form := lmDeploymentForm("dashscope", "gpt-5-2025", "100")
	form.Set("cap_responses_api", "on")
	if res, doc := admin.PostForm("/logic-models/"+itoa(mid)+"/deployments", form); res.StatusCode != http.StatusOK {
		t.Fatalf("create: %d %q", res.StatusCode, webtest.TestID(doc, "form-errors").Text())
	}
	m, _ := lmDraftModel(t, env, "gpt-5")
	if len(m.Deployments) != 1 || !m.Deployments[0].Capabilities.ResponsesAPI || m.Deployments[0].Capabilities.Tools {
		t.Fatalf("stored %+v", m.Deployments)
	}
	d := m.Deployments[0]
	_, doc := admin.Get("/logic-models")
	if caps := doc.Find(`[data-testid="deployment-row-` + itoa(d.ID) + `"] [data-testid="deployment-capabilities"]`).Text(); !strings.Contains(caps, "responses API") {
		t.Fatalf("capabilities shown as %q", caps)
	}
	_, doc = admin.Get("/deployments/" + itoa(d.ID) + "/edit")
	if _, checked := doc.Find(`input[name="cap_responses_api"]`).Attr("checked"); !checked {
		t.Fatal("the edit form does not show responses_api ticked")
	}
	snap, _, err := env.Store.Draft(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	text, err := config.Encode(snap)
	if err != nil || !strings.Contains(string(text), "responses_api: true") {
		t.Fatalf("canonical text: %v\n%s", err, text)
	}
	// Unticked on edit: off again.
	form.Del("cap_responses_api")
	if res, _ := admin.PostForm("/deployments/"+itoa(d.ID), form); res.StatusCode != http.StatusOK {
		t.Fatalf("update: %d", res.StatusCode)
	}
	if m, _ := lmDraftModel(t, env, "gpt-5"); m.Deployments[0].Capabilities.ResponsesAPI {
		t.Fatal("responses_api still set after unticking it")
	}
	// A snapshot that sets it (an import, a rollback) brings it back.
	if _, err := env.Store.ReplaceDraft(t.Context(), snap); err != nil {
		t.Fatal(err)
	}
	if m, _ := lmDraftModel(t, env, "gpt-5"); !m.Deployments[0].Capabilities.ResponsesAPI {
		t.Fatal("responses_api lost by ReplaceDraft")
	}
}
