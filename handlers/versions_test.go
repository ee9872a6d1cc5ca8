package handlers_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"switchyard/routing/config"
	"switchyard/store"
	"switchyard/web/webtest"
)

const secretInTests = "sk-test-SECRET-never-shown-4242"

// seedDraft builds a publishable draft through the store.
func seedDraft(t *testing.T, st *store.Store) (tiers map[config.TierName]int64) {
	t.Helper()
	ctx := t.Context()
	pid, err := st.CreateProvider(ctx, config.Provider{Name: "openai", Protocol: config.ProtocolOpenAI, BaseURL: "https://api.openai.com/v1", Enabled: true, TimeoutMS: 30000})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.AddProviderKey(ctx, pid, "main", secretInTests); err != nil {
		t.Fatal(err)
	}
	mid, err := st.CreateLogicModel(ctx, config.LogicModel{Code: "small", Kind: config.KindChat})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.CreateDeployment(ctx, mid, config.Deployment{Provider: "openai", UpstreamModel: "gpt-4o-mini", Weight: 100, Enabled: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.CreateRouteGroup(ctx, config.RouteGroup{Name: "default"}); err != nil {
		t.Fatal(err)
	}
	snap, _, _ := st.Draft(ctx)
	tiers = map[config.TierName]int64{}
	for _, tr := range snap.RouteGroups[0].Tiers {
		tiers[tr.Name] = tr.ID
		if _, err := st.AddCandidate(ctx, tr.ID, config.Candidate{LogicModel: "small", Weight: 100}); err != nil {
			t.Fatal(err)
		}
	}
	return tiers
}

type apiClient struct {
	t     *testing.T
	base  string
	token string
}

func newAPI(t *testing.T, env *webtest.Env, role string) *apiClient {
	tok, _, err := env.Store.CreateAdminToken(t.Context(), "ci-"+role, role, "test")
	if err != nil {
		t.Fatal(err)
	}
	return &apiClient{t: t, base: env.Server.URL + "/admin/api", token: tok}
}

func (a *apiClient) do(method, path string, body []byte) (int, []byte) {
	a.t.Helper()
	req, _ := http.NewRequest(method, a.base+path, bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+a.token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		a.t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, b
}

func TestAPIPublishRefusedOnEachCheckThenRollback(t *testing.T) {
	env := webtest.New(t)
	tiers := seedDraft(t, env.Store)
	api := newAPI(t, env, store.RoleAdmin)
	ctx := t.Context()

	code, body := api.do("POST", "/publish", []byte(`{"message":"first"}`))
	if code != http.StatusCreated {
		t.Fatalf("first publish: %d %s", code, body)
	}
	// A blocking finding (an empty tier) refuses the publish with the finding.
	snap, _, _ := env.Store.Draft(ctx)
	for _, c := range snap.RouteGroups[0].Tier(config.TierDeep).Candidates {
		if err := env.Store.RemoveCandidate(ctx, c.ID); err != nil {
			t.Fatal(err)
		}
	}
	code, body = api.do("POST", "/publish", []byte(`{"message":"broken"}`))
	if code != http.StatusUnprocessableEntity || !strings.Contains(string(body), `"check":"tier_empty"`) || !strings.Contains(string(body), "dry_run_failed") {
		t.Fatalf("publish with empty tier: %d %s", code, body)
	}
	code, body = api.do("POST", "/dry-run", nil)
	if code != http.StatusOK || !strings.Contains(string(body), `"blocking":true`) {
		t.Fatalf("dry-run: %d %s", code, body)
	}
	if _, err := env.Store.AddCandidate(ctx, tiers[config.TierDeep], config.Candidate{LogicModel: "small", Weight: 100}); err != nil {
		t.Fatal(err)
	}
	if err := env.Store.UpdateTier(ctx, tiers[config.TierFast], 7000, 2000); err != nil {
		t.Fatal(err)
	}
	// A stale expected revision is refused with 409.
	code, body = api.do("POST", "/publish", []byte(`{"message":"v2","expected_revision":1}`))
	if code != http.StatusConflict || !strings.Contains(string(body), "draft_changed") {
		t.Fatalf("stale revision: %d %s", code, body)
	}
	code, body = api.do("POST", "/publish", []byte(`{"message":"v2"}`))
	if code != http.StatusCreated {
		t.Fatalf("v2: %d %s", code, body)
	}
	code, body = api.do("GET", "/versions/1/diff/2", nil)
	if code != http.StatusOK || !strings.Contains(string(body), `-        timeout_ms: 15000`) || !strings.Contains(string(body), `+        timeout_ms: 7000`) {
		t.Fatalf("diff: %d %s", code, body)
	}
	code, body = api.do("POST", "/versions/1/rollback", []byte(`{"message":"undo"}`))
	if code != http.StatusCreated || !strings.Contains(string(body), `"rollback_of":1`) {
		t.Fatalf("rollback: %d %s", code, body)
	}
	v1, _ := env.Store.Version(ctx, 1)
	v3, _ := env.Store.Version(ctx, 3)
	if v1.Snapshot != v3.Snapshot {
		t.Fatal("rollback snapshot differs from v1")
	}
	// Malformed bodies are 400, never 500, and publish nothing even when
	// the draft has a change waiting.
	if err := env.Store.UpdateTier(ctx, tiers[config.TierFast], 8000, 2000); err != nil {
		t.Fatal(err)
	}
	before, _ := env.Store.LatestVersionNumber(ctx)
	for _, b := range []string{``, `{`, `{"message":5}`, `{"message":"x"} trailing`, `{"message":"x"}}`, `{"nope":1}`, "{\"message\":\"\xff\"}"} {
		if code, body := api.do("POST", "/publish", []byte(b)); code != http.StatusBadRequest || strings.Contains(string(body), `"number"`) {
			t.Fatalf("body %q: %d %s", b, code, body)
		}
	}
	if after, _ := env.Store.LatestVersionNumber(ctx); after != before {
		t.Fatalf("a malformed publish body published version %d", after)
	}
	// Viewers may read but not publish.
	viewer := newAPI(t, env, store.RoleViewer)
	if code, _ := viewer.do("GET", "/versions", nil); code != http.StatusOK {
		t.Fatalf("viewer GET versions: %d", code)
	}
	if code, _ := viewer.do("POST", "/publish", []byte(`{"message":"x"}`)); code != http.StatusForbidden {
		t.Fatalf("viewer publish: %d", code)
	}
}

func TestExportImportPublishIsByteIdenticalAndSecretFree(t *testing.T) {
	env := webtest.New(t)
	seedDraft(t, env.Store)
	api := newAPI(t, env, store.RoleAdmin)
	if code, body := api.do("POST", "/publish", []byte(`{"message":"v1"}`)); code != http.StatusCreated {
		t.Fatalf("%d %s", code, body)
	}
	code, exported := api.do("GET", "/config/draft", nil)
	if code != http.StatusOK {
		t.Fatal(code)
	}
	// Change the draft, then import the export back over it.
	snap, _, _ := env.Store.Draft(t.Context())
	if err := env.Store.UpdateTier(t.Context(), snap.RouteGroups[0].Tiers[0].ID, 5000, 1000); err != nil {
		t.Fatal(err)
	}
	code, preview := api.do("POST", "/config/import?preview=true", exported)
	if code != http.StatusOK || !strings.Contains(string(preview), `"applied":false`) || !strings.Contains(string(preview), "timeout_ms: 15000") {
		t.Fatalf("preview: %d %s", code, preview)
	}
	if code, body := api.do("POST", "/config/import", exported); code != http.StatusOK {
		t.Fatalf("import: %d %s", code, body)
	}
	// Importing the live content back means nothing changed.
	if code, body := api.do("POST", "/publish", []byte(`{"message":"again"}`)); code != http.StatusConflict || !strings.Contains(string(body), "nothing_to_publish") {
		t.Fatalf("publish identical: %d %s", code, body)
	}
	v1, _ := env.Store.Version(t.Context(), 1)
	if v1.Snapshot != string(exported) {
		t.Fatalf("export differs from the published snapshot")
	}
	// Bad imports are refused with reasons and change nothing.
	for name, text := range map[string]string{
		"yaml garbage":  "{{{",
		"unknown field": "format: switchyard/v1\nsurprise: true\n",
		"bad reference": strings.Replace(string(exported), "route_group: default", "route_group: ghost", 1) + "callers:\n  - name: c\n    route_group: ghost\n    priority_class: batch\n    enabled: true\n    limits: []\n    keys: []\n",
	} {
		code, body := api.do("POST", "/config/import", []byte(text))
		if code != http.StatusBadRequest && code != http.StatusUnprocessableEntity {
			t.Fatalf("%s: %d %s", name, code, body)
		}
	}
	// No secret in any answer.
	var all []byte
	for _, p := range []string{"/config/draft", "/config/draft?format=json", "/versions", "/versions/1", "/versions/1/diff/draft"} {
		_, b := api.do("GET", p, nil)
		all = append(all, b...)
	}
	if bytes.Contains(all, []byte("SECRET-never-shown")) {
		t.Fatal("a secret leaked through the config API")
	}
	var v map[string]any
	_, b := api.do("GET", "/versions/1", nil)
	if err := json.Unmarshal(b, &v); err != nil || v["snapshot"] == nil {
		t.Fatalf("version JSON: %v %s", err, b)
	}
}

func TestConsoleDryRunPublishDiffRollback(t *testing.T) {
	env := webtest.New(t)
	tiers := seedDraft(t, env.Store)
	admin := env.Login(t, "ops", store.RoleAdmin)

	_, doc := admin.Get("/dry-run")
	if webtest.TestID(doc, "dryrun-clean").Length() != 1 {
		t.Fatal("seeded draft should be clean")
	}
	rev, _ := doc.Find(`input[name="revision"]`).Attr("value")
	// Publishing without a message is refused (422) and stores nothing.
	res, doc := admin.PostForm("/publish", url.Values{"revision": {rev}, "message": {""}})
	if res.StatusCode != http.StatusUnprocessableEntity || webtest.TestID(doc, "publish-error").Length() != 1 {
		t.Fatalf("publish without message: %d", res.StatusCode)
	}
	res, _ = admin.PostForm("/publish", url.Values{"revision": {rev}, "message": {"first"}})
	if res.StatusCode != http.StatusOK {
		t.Fatalf("publish: %d", res.StatusCode)
	}
	// Empty the deep tier: dry-run shows tier_empty linked to that tier.
	snap, _, _ := env.Store.Draft(t.Context())
	for _, c := range snap.RouteGroups[0].Tier(config.TierDeep).Candidates {
		_ = env.Store.RemoveCandidate(t.Context(), c.ID)
	}
	_, doc = admin.Get("/dry-run")
	row := webtest.TestID(doc, "finding-tier_empty")
	if href, _ := row.Find(`[data-testid="finding-link"]`).Attr("href"); href != "/route-groups#tier-default-deep" {
		t.Fatalf("tier_empty link = %q", href)
	}
	if webtest.TestID(doc, "draft-banner").Length() != 1 {
		t.Fatal("no draft banner while the draft differs")
	}
	rev, _ = doc.Find(`input[name="revision"]`).Attr("value")
	res, doc = admin.PostForm("/publish", url.Values{"revision": {rev}, "message": {"broken"}})
	if res.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(webtest.TestID(doc, "publish-error").Text(), "blocking") {
		t.Fatalf("publish with a blocking finding: %d", res.StatusCode)
	}
	if _, err := env.Store.AddCandidate(t.Context(), tiers[config.TierDeep], config.Candidate{LogicModel: "small", Weight: 50}); err != nil {
		t.Fatal(err)
	}
	_, doc = admin.Get("/dry-run")
	rev, _ = doc.Find(`input[name="revision"]`).Attr("value")
	if res, _ := admin.PostForm("/publish", url.Values{"revision": {rev}, "message": {"deep at 50"}}); res.StatusCode != http.StatusOK {
		t.Fatalf("second publish: %d", res.StatusCode)
	}
	_, doc = admin.Get("/versions/diff?from=1&to=2")
	if !strings.Contains(webtest.TestID(doc, "diff").Text(), "weight: 50") {
		t.Fatal("diff does not show the change")
	}
	res, _ = admin.PostForm("/versions/1/rollback", url.Values{"message": {"back"}})
	if res.StatusCode != http.StatusOK {
		t.Fatalf("rollback: %d", res.StatusCode)
	}
	_, doc = admin.Get("/versions")
	top := doc.Find(`[data-testid="versions"] tbody tr`).First()
	if id, _ := top.Attr("data-testid"); id != "version-3" || !strings.Contains(top.Text(), "rollback to v1") {
		t.Fatalf("top of history: %s %q", id, top.Text())
	}
	// The viewer sees no publish or rollback controls.
	viewer := env.Login(t, "watch", store.RoleViewer)
	_, doc = viewer.Get("/dry-run")
	if webtest.TestID(doc, "publish-form").Length() != 0 {
		t.Fatal("viewer sees the publish form")
	}
}
