package handlers_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"

	"switchyard/routing/config"
	"switchyard/store"
	"switchyard/web/webtest"
)

// lmSeedProviders creates two enabled providers in the draft.
func lmSeedProviders(t *testing.T, env *webtest.Env) {
	t.Helper()
	for _, name := range []string{"dashscope", "openrouter"} {
		if _, err := env.Store.CreateProvider(t.Context(), config.Provider{Name: name, Protocol: config.ProtocolOpenAI, BaseURL: "https://" + name + ".example/v1", Enabled: true, TimeoutMS: 60000}); err != nil {
			t.Fatal(err)
		}
	}
}

// lmSeedModel creates a chat logic model with deployments of the given
// weights on dashscope, openrouter, … in turn, and returns the draft.
func lmSeedModel(t *testing.T, env *webtest.Env, code string, weights ...int) config.Snapshot {
	t.Helper()
	ctx := t.Context()
	mid, err := env.Store.CreateLogicModel(ctx, config.LogicModel{Code: code, Kind: config.KindChat})
	if err != nil {
		t.Fatal(err)
	}
	providers := []string{"dashscope", "openrouter"}
	for i, w := range weights {
		d := config.Deployment{Provider: providers[i%2], UpstreamModel: code + "-" + itoa(int64(i)), Weight: w, Enabled: true}
		if _, err := env.Store.CreateDeployment(ctx, mid, d); err != nil {
			t.Fatal(err)
		}
	}
	snap, _, err := env.Store.Draft(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return snap
}

func lmDraftModel(t *testing.T, env *webtest.Env, code string) (config.LogicModel, bool) {
	t.Helper()
	snap, _, err := env.Store.Draft(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range snap.LogicModels {
		if m.Code == code {
			return m, true
		}
	}
	return config.LogicModel{}, false
}

func lmDeploymentForm(provider, upstream, weight string) url.Values {
	return url.Values{
		"provider": {provider}, "upstream_model": {upstream}, "weight": {weight}, "enabled": {"on"},
		"max_concurrency": {"0"}, "price_input": {"0.8"}, "price_output": {"2"}, "price_cached": {"0.2"}, "currency": {"usd"},
		"timeout_ms": {"0"},
	}
}

func TestLogicModelCreateWithTwoDeployments(t *testing.T) {
	env := webtest.New(t)
	admin := env.Login(t, "ops", store.RoleAdmin)

	// Empty state says what to do next.
	_, doc := admin.Get("/logic-models")
	if webtest.TestID(doc, "empty").Length() != 1 || webtest.TestID(doc, "empty-onboarding").AttrOr("href", "") != "/onboarding" {
		t.Fatal("no empty state with an onboarding link")
	}

	// A deployment form before any provider exists says so.
	mid, err := env.Store.CreateLogicModel(t.Context(), config.LogicModel{Code: "bge-m3", Kind: config.KindEmbedding, EmbeddingDimension: 1024, QueryPrefix: "query: "})
	if err != nil {
		t.Fatal(err)
	}
	_, doc = admin.Get("/logic-models/" + itoa(mid) + "/deployments/new")
	if webtest.TestID(doc, "no-providers-link").AttrOr("href", "") != "/providers/new" {
		t.Fatal("deployment form without providers has no link to add one")
	}
	if webtest.TestID(doc, "deployment-embedding-batch-limit").Length() != 1 {
		t.Fatal("embedding model's deployment form lacks the batch limit")
	}
	lmSeedProviders(t, env)

	// A plain form post is answered with 303 to the list.
	res, _ := admin.NoRedirects().PostForm("/logic-models", url.Values{"code": {"qwen3-max"}, "kind": {"chat"}, "description": {"Flagship chat"}})
	if res.StatusCode != http.StatusSeeOther || !strings.HasPrefix(res.Header.Get("Location"), "/logic-models#model-") {
		t.Fatalf("create logic model: %d %s", res.StatusCode, res.Header.Get("Location"))
	}
	m, ok := lmDraftModel(t, env, "qwen3-max")
	if !ok {
		t.Fatal("logic model not stored")
	}
	_, doc = admin.Get("/logic-models/" + itoa(m.ID) + "/deployments/new")
	if webtest.TestID(doc, "deployment-embedding-batch-limit").Length() != 0 {
		t.Fatal("chat model's deployment form shows the embedding batch limit")
	}
	if webtest.TestID(doc, "deployment-form-weight").AttrOr("value", "") != "100" {
		t.Fatal("first deployment should be offered weight 100")
	}

	path := "/logic-models/" + itoa(m.ID) + "/deployments"
	first := lmDeploymentForm("dashscope", "qwen3-max-2025", "70")
	first.Set("cap_thinking", "on")
	first.Set("cap_tools", "on")
	first.Set("max_concurrency", "8")
	first.Set("max_inflight_tokens", "48000")
	first.Set("breaker_window", "100")
	first.Set("breaker_failure_percent", "50")
	res, doc = admin.PostForm(path, first)
	if res.StatusCode != http.StatusOK || !strings.Contains(webtest.TestID(doc, "flash").Text(), "saved") {
		t.Fatalf("first deployment: %d %q", res.StatusCode, webtest.TestID(doc, "form-errors").Text())
	}
	res, _ = admin.NoRedirects().PostForm(path, lmDeploymentForm("openrouter", "qwen/qwen3-max", "30"))
	if res.StatusCode != http.StatusSeeOther {
		t.Fatalf("second deployment: %d", res.StatusCode)
	}

	m, _ = lmDraftModel(t, env, "qwen3-max")
	if len(m.Deployments) != 2 {
		t.Fatalf("deployments stored: %d", len(m.Deployments))
	}
	d := m.Deployments[0]
	if d.Provider != "dashscope" || d.Weight != 70 || !d.Capabilities.Thinking || d.Capabilities.Vision || d.MaxConcurrency != 8 || d.MaxInflightTokens != 48000 ||
		d.Prices.Currency != "USD" || d.Prices.InputMicros != 800_000 || d.Prices.CachedMicros != 200_000 || d.Breaker == nil || d.Breaker.Window != 100 || d.Breaker.MinCalls != 0 {
		t.Fatalf("first deployment stored as %+v breaker %+v", d, d.Breaker)
	}
	if m.Deployments[1].Breaker != nil {
		t.Fatal("blank breaker fields should keep the defaults (no override)")
	}

	_, doc = admin.Get("/logic-models")
	panel := webtest.TestID(doc, "model-qwen3-max")
	if panel.Length() != 1 {
		t.Fatal("logic model panel missing")
	}
	for _, dep := range m.Deployments {
		if panel.Find(`[data-testid="deployment-row-`+itoa(dep.ID)+`"]`).Length() != 1 {
			t.Errorf("row of deployment %s missing", dep.Provider)
		}
	}
	row := panel.Find(`[data-testid="deployment-row-` + itoa(d.ID) + `"]`)
	if v := row.Find(`[data-testid="deployment-weight"]`).AttrOr("value", ""); v != "70" {
		t.Errorf("weight shown as %q", v)
	}
	if caps := row.Find(`[data-testid="deployment-capabilities"]`).Text(); !strings.Contains(caps, "thinking") || !strings.Contains(caps, "tools") || strings.Contains(caps, "vision") {
		t.Errorf("capabilities shown as %q", caps)
	}
	if pr := row.Find(`[data-testid="deployment-prices"]`).Text(); !strings.Contains(pr, "0.8") || !strings.Contains(pr, "USD") {
		t.Errorf("prices shown as %q", pr)
	}
	if row.Find(`[data-testid="deployment-breaker"]`).Length() != 1 {
		t.Error("custom breaker not flagged")
	}
	if got := panel.Find(`[data-testid="weight-sum-value"]`).Text(); got != "100" || panel.Find(`[data-testid="weight-sum-warning"]`).Length() != 0 {
		t.Errorf("weight sum %q, warning shown: %d", got, panel.Find(`[data-testid="weight-sum-warning"]`).Length())
	}
	if !strings.Contains(panel.Find(`[data-testid="model-used-by"]`).Text(), "not a candidate anywhere") {
		t.Error("unused model not flagged")
	}
	emb := webtest.TestID(doc, "model-bge-m3")
	if !strings.Contains(emb.Find(`[data-testid="model-dimension"]`).Text(), "1024") || !strings.Contains(emb.Find(`[data-testid="model-prefixes"]`).Text(), `"query: "`) {
		t.Error("embedding dimension or prefix not shown")
	}
	if emb.Find(`[data-testid="deployments-empty"]`).Length() != 1 {
		t.Error("model without deployments not flagged")
	}

	// Editing keeps what the form does not change and renames the model.
	res, _ = admin.NoRedirects().PostForm("/logic-models/"+itoa(m.ID), url.Values{"code": {"qwen3-max-latest"}, "kind": {"chat"}})
	if res.StatusCode != http.StatusSeeOther {
		t.Fatalf("rename: %d", res.StatusCode)
	}
	if m2, ok := lmDraftModel(t, env, "qwen3-max-latest"); !ok || len(m2.Deployments) != 2 {
		t.Fatal("rename lost the model or its deployments")
	}
	_, doc = admin.Get("/deployments/" + itoa(d.ID) + "/edit")
	if webtest.TestID(doc, "deployment-breaker-window").AttrOr("value", "") != "100" || webtest.TestID(doc, "deployment-breaker-min-calls").AttrOr("value", "x") != "" {
		t.Fatal("edit form does not show the breaker override (blank for defaults)")
	}
	upd := lmDeploymentForm("dashscope", "qwen3-max-2025", "60")
	if res, _ = admin.NoRedirects().PostForm("/deployments/"+itoa(d.ID), upd); res.StatusCode != http.StatusSeeOther {
		t.Fatalf("update deployment: %d", res.StatusCode)
	}
	_, doc = admin.Get("/logic-models")
	panel = webtest.TestID(doc, "model-qwen3-max-latest")
	if panel.Find(`[data-testid="weight-sum-warning"]`).Length() != 1 || panel.Find(`[data-testid="weight-sum-value"]`).Text() != "90" {
		t.Fatal("a weight sum of 90 is not flagged")
	}
}

func TestLogicModelFormRejectsInvalidInput(t *testing.T) {
	env := webtest.New(t)
	admin := env.Login(t, "ops", store.RoleAdmin)
	cases := []struct {
		name  string
		form  url.Values
		field string
		msg   string
	}{
		{"no code", url.Values{"kind": {"chat"}}, "code", "is required"},
		{"bad code", url.Values{"code": {"Qwen Max"}, "kind": {"chat"}}, "code", "lower-case"},
		{"tier name", url.Values{"code": {"fast"}, "kind": {"chat"}}, "code", "reserved"},
		{"bad kind", url.Values{"code": {"x1"}, "kind": {"rerank"}}, "kind", "chat or embedding"},
		{"dimension not a number", url.Values{"code": {"e1"}, "kind": {"embedding"}, "embedding_dimension": {"1k"}}, "embedding_dimension", "whole number"},
		{"dimension on chat", url.Values{"code": {"c1"}, "kind": {"chat"}, "embedding_dimension": {"768"}}, "embedding_dimension", "only embedding"},
		{"dimension too big", url.Values{"code": {"e2"}, "kind": {"embedding"}, "embedding_dimension": {"70000"}}, "embedding_dimension", "between"},
		{"description too long", url.Values{"code": {"c2"}, "kind": {"chat"}, "description": {strings.Repeat("x", 2001)}}, "description", "at most"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, htmx := range []bool{false, true} {
				admin.HTMX = htmx
				res, doc := admin.PostForm("/logic-models", tc.form)
				if res.StatusCode != http.StatusUnprocessableEntity {
					t.Fatalf("htmx=%v: status %d", htmx, res.StatusCode)
				}
				if got := webtest.TestID(doc, "error-"+tc.field).Text(); !strings.Contains(got, tc.msg) {
					t.Fatalf("htmx=%v: error-%s = %q, want %q", htmx, tc.field, got, tc.msg)
				}
				if htmx && webtest.TestID(doc, "nav").Length() != 0 {
					t.Fatal("htmx 422 should be the form fragment")
				}
				if !htmx && webtest.TestID(doc, "model-form").Length() != 1 {
					t.Fatal("plain 422 should re-render the form page")
				}
			}
		})
	}
	admin.HTMX = false
	// What the operator typed is shown again next to the message.
	_, doc := admin.PostForm("/logic-models", url.Values{"code": {"e1"}, "kind": {"embedding"}, "embedding_dimension": {"1k"}})
	if webtest.TestID(doc, "model-embedding-dimension").AttrOr("value", "") != "1k" {
		t.Error("the malformed dimension is not shown again")
	}
	snap, _, _ := env.Store.Draft(t.Context())
	if len(snap.LogicModels) != 0 {
		t.Fatalf("invalid forms stored %d logic models", len(snap.LogicModels))
	}

	// Duplicate code: refused on the field, the first one untouched.
	if res, _ := admin.NoRedirects().PostForm("/logic-models", url.Values{"code": {"deepseek-v3"}, "kind": {"chat"}, "description": {"first"}}); res.StatusCode != http.StatusSeeOther {
		t.Fatalf("create: %d", res.StatusCode)
	}
	res, doc := admin.PostForm("/logic-models", url.Values{"code": {"deepseek-v3"}, "kind": {"chat"}, "description": {"second"}})
	if res.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(webtest.TestID(doc, "error-code").Text(), "already taken") {
		t.Fatalf("duplicate: %d %q", res.StatusCode, webtest.TestID(doc, "error-code").Text())
	}
	if m, _ := lmDraftModel(t, env, "deepseek-v3"); m.Description != "first" {
		t.Fatal("duplicate changed the first logic model")
	}
	// Renaming another model onto a taken code is refused too.
	other, _ := env.Store.CreateLogicModel(t.Context(), config.LogicModel{Code: "kimi-k2", Kind: config.KindChat})
	res, doc = admin.PostForm("/logic-models/"+itoa(other), url.Values{"code": {"deepseek-v3"}, "kind": {"chat"}})
	if res.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(webtest.TestID(doc, "error-code").Text(), "already taken") {
		t.Fatalf("rename onto taken code: %d", res.StatusCode)
	}
	if res, _ := admin.Get("/logic-models/999999/edit"); res.StatusCode != http.StatusNotFound {
		t.Fatalf("edit of a missing model: %d", res.StatusCode)
	}
}

func TestDeploymentFormRejectsInvalidInput(t *testing.T) {
	env := webtest.New(t)
	admin := env.Login(t, "ops", store.RoleAdmin)
	lmSeedProviders(t, env)
	mid, err := env.Store.CreateLogicModel(t.Context(), config.LogicModel{Code: "text-embedding-3-small", Kind: config.KindEmbedding, EmbeddingDimension: 1536})
	if err != nil {
		t.Fatal(err)
	}
	path := "/logic-models/" + itoa(mid) + "/deployments"
	with := func(k, v string) url.Values {
		f := lmDeploymentForm("dashscope", "text-embedding-3-small", "100")
		f.Set(k, v)
		return f
	}
	cases := []struct {
		name  string
		form  url.Values
		field string
		msg   string
	}{
		{"no provider", with("provider", ""), "provider", "is required"},
		{"unknown provider", with("provider", "nowhere"), "provider", "does not exist"},
		{"no upstream model", with("upstream_model", " "), "upstream_model", "is required"},
		{"upstream model with spaces", with("upstream_model", "gpt 4o"), "upstream_model", "without spaces"},
		{"weight blank", with("weight", ""), "weight", "is required"},
		{"weight not a number", with("weight", "ten"), "weight", "whole number"},
		{"weight fraction", with("weight", "50.5"), "weight", "whole number"},
		{"weight too big", with("weight", "20000"), "weight", "between"},
		{"max concurrency negative", with("max_concurrency", "-1"), "max_concurrency", "unlimited"},
		{"price not a number", with("price_input", "cheap"), "price_input", "must be a number"},
		{"price negative", with("price_output", "-2"), "price_output", "non-negative"},
		{"price finer than a micro", with("price_cached", "0.1234567"), "price_cached", "more than 6 decimal places"},
		{"price float syntax", with("price_input", "NaN"), "price_input", "must be a number"},
		{"price too large", with("price_input", "2000000"), "price_input", "non-negative price per 1M tokens, at most 1000000"},
		{"currency", with("currency", "dollars"), "currency", "three-letter"},
		{"batch limit", with("embedding_batch_limit", "-5"), "embedding_batch_limit", "positive"},
		{"timeout negative", with("timeout_ms", "-1"), "timeout_ms", "positive number of milliseconds"},
		{"timeout not a number", with("timeout_ms", "15s"), "timeout_ms", "whole number"},
		{"breaker window not a number", with("breaker_window", "many"), "breaker_window", "whole number"},
		{"breaker min calls above window", func() url.Values {
			f := with("breaker_window", "10")
			f.Set("breaker_min_calls", "20")
			return f
		}(), "breaker", "cannot exceed"},
		{"breaker percent", with("breaker_failure_percent", "140"), "breaker", "between 0 and 100"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, htmx := range []bool{false, true} {
				admin.HTMX = htmx
				res, doc := admin.PostForm(path, tc.form)
				if res.StatusCode != http.StatusUnprocessableEntity {
					t.Fatalf("htmx=%v: status %d", htmx, res.StatusCode)
				}
				if got := webtest.TestID(doc, "error-"+tc.field).Text(); !strings.Contains(got, tc.msg) {
					t.Fatalf("htmx=%v: error-%s = %q, want %q", htmx, tc.field, got, tc.msg)
				}
				if webtest.TestID(doc, "deployment-form").Length() != 1 || (htmx && webtest.TestID(doc, "nav").Length() != 0) {
					t.Fatalf("htmx=%v: want the form (fragment for htmx)", htmx)
				}
			}
		})
	}
	admin.HTMX = false
	_, doc := admin.PostForm(path, with("weight", "ten"))
	if webtest.TestID(doc, "deployment-form-weight").AttrOr("value", "") != "ten" {
		t.Error("the malformed weight is not shown again")
	}
	m, _ := lmDraftModel(t, env, "text-embedding-3-small")
	if len(m.Deployments) != 0 {
		t.Fatalf("invalid forms stored %d deployments", len(m.Deployments))
	}

	// The same upstream model on the same provider twice is refused.
	ok := with("embedding_batch_limit", "256")
	if res, _ := admin.NoRedirects().PostForm(path, ok); res.StatusCode != http.StatusSeeOther {
		t.Fatalf("valid deployment: %d", res.StatusCode)
	}
	res, doc := admin.PostForm(path, ok)
	if res.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(webtest.TestID(doc, "error-upstream_model").Text(), "already") {
		t.Fatalf("duplicate deployment: %d %q", res.StatusCode, webtest.TestID(doc, "error-upstream_model").Text())
	}
	m, _ = lmDraftModel(t, env, "text-embedding-3-small")
	if len(m.Deployments) != 1 || m.Deployments[0].EmbeddingBatchLimit != 256 {
		t.Fatalf("deployments after duplicate: %+v", m.Deployments)
	}
	// An invalid edit stores nothing either.
	res, _ = admin.PostForm("/deployments/"+itoa(m.Deployments[0].ID), with("weight", "x"))
	if res.StatusCode != http.StatusUnprocessableEntity {
		t.Fatalf("invalid edit: %d", res.StatusCode)
	}
	if m2, _ := lmDraftModel(t, env, "text-embedding-3-small"); m2.Deployments[0].Weight != 100 {
		t.Fatal("invalid edit changed the deployment")
	}
	if res, _ := admin.PostForm("/logic-models/999999/deployments", ok); res.StatusCode != http.StatusNotFound {
		t.Fatalf("deployment of a missing model: %d", res.StatusCode)
	}
}

func TestLogicModelDeleteRefusedWhileCandidate(t *testing.T) {
	env := webtest.New(t)
	admin := env.Login(t, "ops", store.RoleAdmin)
	lmSeedProviders(t, env)
	snap := lmSeedModel(t, env, "qwen3-max", 100)
	m := snap.LogicModels[0]
	ctx := t.Context()
	if _, err := env.Store.CreateRouteGroup(ctx, config.RouteGroup{Name: "default"}); err != nil {
		t.Fatal(err)
	}
	snap, _, _ = env.Store.Draft(ctx)
	cid, err := env.Store.AddCandidate(ctx, snap.RouteGroups[0].Tier(config.TierFast).ID, config.Candidate{LogicModel: "qwen3-max", Weight: 100})
	if err != nil {
		t.Fatal(err)
	}

	_, doc := admin.Get("/logic-models")
	if got := webtest.TestID(doc, "model-used-by").Text(); !strings.Contains(got, "Used by default / fast") {
		t.Fatalf("used-by shows %q", got)
	}

	res, _ := admin.NoRedirects().PostForm("/logic-models/"+itoa(m.ID)+"/delete", nil)
	if res.StatusCode != http.StatusSeeOther {
		t.Fatalf("refused delete: %d", res.StatusCode)
	}
	_, doc = admin.Get(res.Header.Get("Location"))
	if flash := webtest.TestID(doc, "flash-refused").Text(); !strings.Contains(flash, "Not deleted") || !strings.Contains(flash, "default / fast") {
		t.Fatalf("flash %q", flash)
	}
	if _, ok := lmDraftModel(t, env, "qwen3-max"); !ok {
		t.Fatal("a logic model in use was deleted")
	}

	// htmx gets a full-page redirect, and once unused the model goes with
	// its deployments.
	if err := env.Store.RemoveCandidate(ctx, cid); err != nil {
		t.Fatal(err)
	}
	admin.HTMX = true
	res, _ = admin.PostForm("/logic-models/"+itoa(m.ID)+"/delete", nil)
	if res.StatusCode != http.StatusOK || res.Header.Get("HX-Redirect") != "/logic-models" {
		t.Fatalf("htmx delete: %d %q", res.StatusCode, res.Header.Get("HX-Redirect"))
	}
	if _, ok := lmDraftModel(t, env, "qwen3-max"); ok {
		t.Fatal("unused logic model not deleted")
	}
}

func TestDeploymentQuickActions(t *testing.T) {
	env := webtest.New(t)
	admin := env.Login(t, "ops", store.RoleAdmin)
	lmSeedProviders(t, env)
	snap := lmSeedModel(t, env, "qwen3-max", 70, 30)
	lmSeedModel(t, env, "deepseek-v3", 100)
	m := snap.LogicModels[0]
	d70, d30 := m.Deployments[0], m.Deployments[1]
	row := func(doc *goquery.Document, id int64) *goquery.Selection {
		return webtest.TestID(doc, "deployment-row-"+itoa(id))
	}
	fragment := func(t *testing.T, res *http.Response, doc *goquery.Document, status int) {
		t.Helper()
		if res.StatusCode != status {
			t.Fatalf("status %d, want %d", res.StatusCode, status)
		}
		if webtest.TestID(doc, "nav").Length() != 0 || webtest.TestID(doc, "model-qwen3-max").Length() != 1 || webtest.TestID(doc, "model-deepseek-v3").Length() != 0 {
			t.Fatal("want just the logic model's panel")
		}
		if id, _ := webtest.TestID(doc, "model-qwen3-max").Attr("id"); id != "model-"+itoa(m.ID) {
			t.Fatalf("panel id %q does not match its hx-target", id)
		}
	}

	admin.HTMX = true
	t.Run("disable and enable", func(t *testing.T) {
		res, doc := admin.PostForm("/deployments/"+itoa(d30.ID)+"/enabled", url.Values{"enabled": {"false"}})
		fragment(t, res, doc, http.StatusOK)
		if row(doc, d30.ID).Find(`[data-testid="deployment-enable"]`).Length() != 1 {
			t.Fatal("disabled deployment offers no enable button")
		}
		if got, _ := lmDraftModel(t, env, "qwen3-max"); got.Deployments[1].Enabled {
			t.Fatal("deployment still enabled")
		}
		res, doc = admin.PostForm("/deployments/"+itoa(d30.ID)+"/enabled", url.Values{"enabled": {"true"}})
		fragment(t, res, doc, http.StatusOK)
		if row(doc, d30.ID).Find(`[data-testid="deployment-disable"]`).Length() != 1 {
			t.Fatal("enabled deployment offers no disable button")
		}
		if got, _ := lmDraftModel(t, env, "qwen3-max"); !got.Deployments[1].Enabled || got.Deployments[1].Weight != 30 || got.Deployments[1].UpstreamModel != d30.UpstreamModel {
			t.Fatalf("toggle changed more than enabled: %+v", got.Deployments[1])
		}
	})

	t.Run("weight edit and sum warning", func(t *testing.T) {
		res, doc := admin.PostForm("/deployments/"+itoa(d70.ID)+"/weight", url.Values{"weight": {"50"}})
		fragment(t, res, doc, http.StatusOK)
		if v := row(doc, d70.ID).Find(`[data-testid="deployment-weight"]`).AttrOr("value", ""); v != "50" {
			t.Fatalf("weight shown as %q", v)
		}
		if webtest.TestID(doc, "weight-sum-value").Text() != "80" || webtest.TestID(doc, "weight-sum-warning").Length() != 1 {
			t.Fatal("sum of 80 not flagged")
		}
		// A weight never parks: 0 and negatives are refused, naming Park.
		for _, w := range []string{"0", "-50"} {
			res, doc = admin.PostForm("/deployments/"+itoa(d70.ID)+"/weight", url.Values{"weight": {w}})
			fragment(t, res, doc, http.StatusUnprocessableEntity)
			if msg := row(doc, d70.ID).Find(`[data-testid="error-weight"]`).Text(); !strings.Contains(msg, "park it") {
				t.Fatalf("weight %s: error %q", w, msg)
			}
		}
		// The Park button: parked, out of the sum, its weight kept.
		res, doc = admin.PostForm("/deployments/"+itoa(d70.ID)+"/parked", url.Values{"parked": {"true"}})
		fragment(t, res, doc, http.StatusOK)
		if row(doc, d70.ID).Find(`[data-testid="deployment-parked"]`).Length() != 1 || row(doc, d70.ID).Find(`[data-testid="deployment-unpark"]`).Length() != 1 {
			t.Fatal("parked deployment not shown as parked with Unpark offered")
		}
		if webtest.TestID(doc, "weight-sum-value").Text() != "30" {
			t.Fatal("parked deployment counted in the sum")
		}
		if v := row(doc, d70.ID).Find(`[data-testid="deployment-weight"]`).AttrOr("value", ""); v != "50" {
			t.Fatalf("parking changed the weight to %q", v)
		}
	})

	t.Run("invalid weight", func(t *testing.T) {
		for _, bad := range []string{"abc", "", "99999"} {
			res, doc := admin.PostForm("/deployments/"+itoa(d70.ID)+"/weight", url.Values{"weight": {bad}})
			fragment(t, res, doc, http.StatusUnprocessableEntity)
			if row(doc, d70.ID).Find(`[data-testid="error-weight"]`).Length() != 1 {
				t.Fatalf("weight %q: no error on the row", bad)
			}
			if v := row(doc, d70.ID).Find(`[data-testid="deployment-weight"]`).AttrOr("value", "-"); v != bad {
				t.Fatalf("weight %q shown again as %q", bad, v)
			}
		}
		if got, _ := lmDraftModel(t, env, "qwen3-max"); got.Deployments[0].Weight != 50 || !got.Deployments[0].Parked {
			t.Fatalf("invalid weight stored: %d", got.Deployments[0].Weight)
		}
	})

	t.Run("without javascript", func(t *testing.T) {
		admin.HTMX = false
		defer func() { admin.HTMX = true }()
		res, _ := admin.NoRedirects().PostForm("/deployments/"+itoa(d70.ID)+"/weight", url.Values{"weight": {"70"}})
		if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/logic-models#model-"+itoa(m.ID) {
			t.Fatalf("plain weight post: %d %s", res.StatusCode, res.Header.Get("Location"))
		}
		res, doc := admin.PostForm("/deployments/"+itoa(d70.ID)+"/weight", url.Values{"weight": {"lots"}})
		if res.StatusCode != http.StatusUnprocessableEntity || webtest.TestID(doc, "nav").Length() != 1 || row(doc, d70.ID).Find(`[data-testid="error-weight"]`).Length() != 1 {
			t.Fatalf("plain invalid weight: %d", res.StatusCode)
		}
		res, _ = admin.NoRedirects().PostForm("/deployments/"+itoa(d30.ID)+"/enabled", url.Values{"enabled": {"false"}})
		if res.StatusCode != http.StatusSeeOther {
			t.Fatalf("plain toggle: %d", res.StatusCode)
		}
		_, doc = admin.Get("/logic-models")
		if webtest.TestID(doc, "weight-sum-value").First().Text() != "100" {
			t.Fatal("weight 70 not stored by the plain post")
		}
	})

	t.Run("delete", func(t *testing.T) {
		res, doc := admin.PostForm("/deployments/"+itoa(d30.ID)+"/delete", nil)
		fragment(t, res, doc, http.StatusOK)
		if row(doc, d30.ID).Length() != 0 || row(doc, d70.ID).Length() != 1 {
			t.Fatal("deleted row still shown or the other one gone")
		}
		if res, _ := admin.PostForm("/deployments/"+itoa(d30.ID)+"/delete", nil); res.StatusCode != http.StatusNotFound {
			t.Fatalf("second delete: %d", res.StatusCode)
		}
	})
}

func TestLogicModelsViewerSeesNoEditControls(t *testing.T) {
	env := webtest.New(t)
	lmSeedProviders(t, env)
	snap := lmSeedModel(t, env, "qwen3-max", 70, 30)
	d := snap.LogicModels[0].Deployments[0]
	viewer := env.Login(t, "watcher", store.RoleViewer)
	_, doc := viewer.Get("/logic-models")
	if webtest.TestID(doc, "model-qwen3-max").Length() != 1 {
		t.Fatal("viewer does not see the logic model")
	}
	for _, id := range []string{"model-new", "model-edit", "model-delete", "deployment-new", "deployment-edit", "deployment-delete",
		"deployment-weight", "deployment-weight-save", "deployment-enable", "deployment-disable"} {
		if webtest.TestID(doc, id).Length() != 0 {
			t.Errorf("viewer sees %s", id)
		}
	}
	if webtest.TestID(doc, "deployment-weight-value").First().Text() != "30" && webtest.TestID(doc, "deployment-weight-value").First().Text() != "70" {
		t.Error("viewer does not see the weights")
	}
	for _, path := range []string{"/deployments/" + itoa(d.ID) + "/weight", "/deployments/" + itoa(d.ID) + "/enabled", "/logic-models"} {
		if res, _ := viewer.PostForm(path, url.Values{"weight": {"1"}}); res.StatusCode != http.StatusForbidden {
			t.Errorf("viewer POST %s: %d", path, res.StatusCode)
		}
	}
}
