package gateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"

	"switchyard/e2e/fakevendor"
	"switchyard/routing/config"
	"switchyard/store"
	"switchyard/web/gateway/gatewaytest"
	"switchyard/web/webtest"
)

// onbFake starts the fake vendor and returns its OpenAI base URL.
func onbFake(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(fakevendor.New(fakevendor.Options{}))
	t.Cleanup(srv.Close)
	return srv.URL + "/v1"
}

// onbFormValues reads a form as a browser would submit it: named inputs
// with their values, ticked boxes, selected options. Submit buttons are
// left out (the test adds the one it "clicks").
func onbFormValues(doc *goquery.Document, sel string) url.Values {
	v := url.Values{}
	form := doc.Find(sel)
	form.Find("input").Each(func(_ int, s *goquery.Selection) {
		name, ok := s.Attr("name")
		if !ok || name == "" {
			return
		}
		switch s.AttrOr("type", "text") {
		case "checkbox", "radio":
			if _, on := s.Attr("checked"); on {
				v.Add(name, s.AttrOr("value", "on"))
			}
		case "submit", "button":
		default:
			v.Add(name, s.AttrOr("value", ""))
		}
	})
	form.Find("select").Each(func(_ int, s *goquery.Selection) {
		name := s.AttrOr("name", "")
		opt := s.Find("option[selected]")
		if opt.Length() == 0 {
			opt = s.Find("option").First()
		}
		v.Add(name, opt.AttrOr("value", ""))
	})
	return v
}

func onbText(doc *goquery.Document, id string) string {
	return strings.TrimSpace(webtest.TestID(doc, id).Text())
}

func onbHTML(doc *goquery.Document) string {
	h, _ := doc.Html()
	return h
}

func onbStatus(t *testing.T, res *http.Response, want int, doc *goquery.Document) {
	t.Helper()
	if res.StatusCode != want {
		errs := webtest.TestID(doc, "form-errors").Text() + " " + doc.Find(".error").Text() + " " + webtest.TestID(doc, "review-error").Text()
		t.Fatalf("%s %s: status %d, want %d; %s", res.Request.Method, res.Request.URL.Path, res.StatusCode, want, strings.TrimSpace(errs))
	}
}

// A rejected key is explained in words, and verifying creates nothing.
func TestOnboardingVerifyRejectedKeyCreatesNothing(t *testing.T) {
	t.Parallel()
	env := webtest.New(t)
	c := env.Login(t, "admin", store.RoleAdmin)
	fake := onbFake(t)
	rev0, _ := env.Store.DraftRevision(t.Context())

	res, doc := c.Get("/onboarding/templates/openai")
	onbStatus(t, res, http.StatusOK, doc)
	if _, on := webtest.TestID(doc, "model-check-gpt-4.1").Attr("checked"); !on {
		t.Error("recommended model gpt-4.1 is not pre-ticked")
	}
	if _, on := webtest.TestID(doc, "model-check-gpt-4o-mini").Attr("checked"); on {
		t.Error("non-recommended model gpt-4o-mini is pre-ticked")
	}
	v := onbFormValues(doc, `[data-testid="onboarding-form"]`)
	v.Set("base_url", fake)
	v["key"] = []string{"bad-key-rejected-0001", "broke-key-no-money-01", "sk-good-key-000000001"}
	res, doc = c.PostForm("/onboarding/verify", v)
	onbStatus(t, res, http.StatusOK, doc)
	for id, want := range map[string]string{
		"verify-result-0": "key rejected (401)",
		"verify-result-1": "billing problem (429)",
		"verify-result-2": "reachable, 3 models listed",
	} {
		if got := onbText(doc, id); !strings.HasPrefix(got, want) {
			t.Errorf("%s = %q, want %q…", id, got, want)
		}
	}
	if _, on := webtest.TestID(doc, "key-drop-0").Attr("checked"); !on {
		t.Error("the rejected key is not offered for removal")
	}
	if _, on := webtest.TestID(doc, "key-drop-2").Attr("checked"); on {
		t.Error("the working key is ticked for removal")
	}
	for _, k := range v["key"] {
		if strings.Contains(onbHTML(doc), k) {
			t.Errorf("the verify page shows the plaintext key %s", k)
		}
	}

	// Anthropic and an unreachable server are described too.
	res, doc = c.Get("/onboarding/templates/anthropic")
	onbStatus(t, res, http.StatusOK, doc)
	v = onbFormValues(doc, `[data-testid="onboarding-form"]`)
	v.Set("base_url", strings.TrimSuffix(fake, "/v1"))
	v.Set("key", "bad-anthropic-key-01")
	_, doc = c.PostForm("/onboarding/verify", v)
	if got := onbText(doc, "verify-result-0"); !strings.HasPrefix(got, "key rejected (401)") {
		t.Errorf("anthropic bad key: %q", got)
	}
	dead := httptest.NewServer(http.NotFoundHandler())
	deadURL := dead.URL
	dead.Close()
	v.Set("base_url", deadURL)
	v.Set("key", "sk-ant-some-key-0001")
	_, doc = c.PostForm("/onboarding/verify", v)
	if got := onbText(doc, "verify-result-0"); !strings.HasPrefix(got, "cannot connect: ") {
		t.Errorf("dead server: %q", got)
	}

	snap, rev, err := env.Store.Draft(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if rev != rev0 || len(snap.Providers) != 0 || len(snap.LogicModels) != 0 {
		t.Errorf("verification changed the draft: revision %d → %d, %d providers", rev0, rev, len(snap.Providers))
	}
	var sealed int
	if err := env.Store.DB().QueryRowContext(t.Context(), `SELECT count(*) FROM provider_keys`).Scan(&sealed); err != nil || sealed != 0 {
		t.Errorf("%d provider keys stored by a verification (%v)", sealed, err)
	}
}

// Leaving at the review step leaves the draft exactly as it was.
func TestOnboardingAbandonAtReviewCreatesNothing(t *testing.T) {
	t.Parallel()
	env := webtest.New(t)
	c := env.Login(t, "admin", store.RoleAdmin)
	fake := onbFake(t)
	rev0, _ := env.Store.DraftRevision(t.Context())
	const secret = "sk-deepseek-abandoned-0001"

	_, doc := c.Get("/onboarding/templates/deepseek")
	v := onbFormValues(doc, `[data-testid="onboarding-form"]`)
	v.Set("base_url", fake)
	v.Set("key", secret)
	res, doc := c.PostForm("/onboarding/review", v)
	onbStatus(t, res, http.StatusOK, doc)
	if webtest.TestID(doc, "dryrun-ok").Length() != 1 {
		t.Errorf("review dry-run does not pass: %s", webtest.TestID(doc, "review-dryrun").Text())
	}
	if webtest.TestID(doc, "review-candidate-fast-deepseek-chat").Length() != 1 {
		t.Error("the fast tier does not borrow deepseek-chat from standard")
	}
	if strings.Contains(onbHTML(doc), secret) {
		t.Error("the review page carries the plaintext provider key")
	}

	// Back keeps every choice, the key included (sealed).
	back := onbFormValues(doc, `[data-testid="review-form"]`)
	res, doc = c.PostForm("/onboarding/form", back)
	onbStatus(t, res, http.StatusOK, doc)
	if webtest.TestID(doc, "key-entered-0").Length() != 1 || strings.Contains(onbHTML(doc), secret) {
		t.Error("back to the form lost the key, or shows it")
	}

	// Cancel: the operator just leaves.
	res, doc = c.Get("/onboarding")
	onbStatus(t, res, http.StatusOK, doc)
	snap, rev, _ := env.Store.Draft(t.Context())
	if rev != rev0 || len(snap.Providers)+len(snap.LogicModels)+len(snap.RouteGroups)+len(snap.Callers) != 0 {
		t.Errorf("abandoning changed the draft: revision %d → %d, %+v", rev0, rev, snap)
	}
	var n int
	_ = env.Store.DB().QueryRowContext(t.Context(), `SELECT (SELECT count(*) FROM provider_keys) + (SELECT count(*) FROM caller_keys)`).Scan(&n)
	if n != 0 {
		t.Errorf("%d keys stored before confirmation", n)
	}

	// Invalid choices re-render the form with 422 and per-field errors.
	_, doc = c.Get("/onboarding/templates/deepseek")
	bad := onbFormValues(doc, `[data-testid="onboarding-form"]`)
	bad.Del("model")
	bad.Set("base_url", "api.deepseek.com")
	res, doc = c.PostForm("/onboarding/review", bad)
	onbStatus(t, res, http.StatusUnprocessableEntity, doc)
	if webtest.TestID(doc, "error-models").Length() != 1 || webtest.TestID(doc, "error-base_url").Length() != 1 || webtest.TestID(doc, "error-keys").Length() != 1 {
		t.Errorf("missing field errors: %s", doc.Find(".error, .banner.bad").Text())
	}

	// Viewers are told before the wizard that they cannot onboard, and
	// cannot post it either.
	viewer := env.Login(t, "viewer", store.RoleViewer)
	if res, doc := viewer.Get("/onboarding"); res.StatusCode != http.StatusForbidden || !strings.Contains(doc.Text(), "viewer role cannot") {
		t.Errorf("viewer GET /onboarding: %d %q, want 403 naming the role", res.StatusCode, doc.Text())
	}
	if res, _ := viewer.PostForm("/onboarding/review", v); res.StatusCode != http.StatusForbidden {
		t.Errorf("viewer review: %d, want 403", res.StatusCode)
	}
}

// The whole flow on a fresh instance with the sandbox template: an empty
// console leads to the wizard, the configuration is created, passes the
// dry-run, is published, and the caller key shown once gets an answer for
// model "standard" from the data plane of the same instance.
func TestOnboardingSandboxEndToEnd(t *testing.T) {
	t.Parallel()
	e := gatewaytest.New(t)
	con := &webtest.Env{Store: e.Store, Server: &httptest.Server{URL: e.URL}}
	c := con.Login(t, "admin", store.RoleAdmin)
	interactions := 3 // login: username, password, submit

	res, doc := c.Get("/") // an empty console leads to the wizard
	onbStatus(t, res, http.StatusOK, doc)
	if res.Request.URL.Path != "/onboarding" || webtest.TestID(doc, "template-sandbox").Length() != 1 || webtest.TestID(doc, "onboarding-empty").Length() != 1 {
		t.Fatalf("empty console landed on %s", res.Request.URL.Path)
	}
	if !strings.Contains(webtest.TestID(doc, "template-sandbox").Text(), "local sandbox") {
		t.Error("the sandbox template is not labelled as a local sandbox")
	}

	href, _ := webtest.TestID(doc, "template-sandbox").Attr("href")
	res, doc = c.Get(href)
	interactions++ // click the sandbox card
	onbStatus(t, res, http.StatusOK, doc)
	v := onbFormValues(doc, `[data-testid="onboarding-form"]`)
	if v.Get("base_url") != "http://127.0.0.1:9090/v1" || v.Get("caller") != "first-app" || v.Get("group") != "" || v.Get("new_group") != "default" {
		t.Errorf("form defaults = %v", v)
	}
	v.Set("base_url", e.FakeURL+"/v1") // the test's fake vendor instead of make demo's

	res, doc = c.PostForm("/onboarding/review", v)
	interactions++ // click Review
	onbStatus(t, res, http.StatusOK, doc)
	if webtest.TestID(doc, "dryrun-ok").Length() != 1 {
		t.Fatalf("dry-run of the plan: %s", webtest.TestID(doc, "review-dryrun").Text())
	}
	for _, id := range []string{"review-candidate-fast-fake-fast", "review-candidate-standard-fake-standard", "review-candidate-deep-fake-deep", "review-model-fake-standard"} {
		if webtest.TestID(doc, id).Length() != 1 {
			t.Errorf("review lacks %s", id)
		}
	}
	cv := onbFormValues(doc, `[data-testid="review-form"]`)
	cv.Set("mode", "publish")
	res, doc = c.PostForm("/onboarding/create", cv)
	interactions++ // click Create and publish
	onbStatus(t, res, http.StatusOK, doc)
	key := onbText(doc, "caller-key")
	if !strings.HasPrefix(key, store.CallerKeyPrefix) || webtest.TestID(doc, "published-version").Length() != 1 {
		t.Fatalf("done page: key %q, %s", key, webtest.TestID(doc, "publish-error").Text())
	}
	interactions++ // click Copy
	for _, id := range []string{"snippet-curl", "snippet-python", "snippet-node", "snippet-go"} {
		if s := onbText(doc, id); !strings.Contains(s, key) || !strings.Contains(s, "http://gateway.test/v1") {
			t.Errorf("%s lacks the key or base URL: %s", id, s)
		}
	}
	if interactions > 15 {
		t.Errorf("the happy path takes %d interactions, the target is 15", interactions)
	}

	live, err := e.Store.LatestVersion(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if r := live.CheckResults(); r.Blocking() {
		t.Errorf("published with blocking findings: %+v", r.Errors())
	}
	e.WaitVersion(live.Number)
	// The caller key works on every instance at once (NOTIFY "keys"); the
	// periodic check is the safety net, so allow it a moment.
	var body []byte
	var resp *http.Response
	for range 50 {
		req, _ := http.NewRequest(http.MethodPost, e.URL+"/v1/chat/completions", strings.NewReader(`{"model":"standard","messages":[{"role":"user","content":"hi"}]}`))
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/json")
		resp, err = http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ = io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if resp.StatusCode != http.StatusOK || !bytes.Contains(body, []byte("Hello from fake-standard")) {
		t.Fatalf("data plane: %d %s", resp.StatusCode, body)
	}
	if resp.Header.Get("X-Switchyard-Tier") != "standard" || resp.Header.Get("X-Switchyard-Model") != "fake-standard" || resp.Header.Get("X-Switchyard-Provider") != "sandbox" {
		t.Errorf("headers = %v", resp.Header)
	}
	var answer struct {
		Choices []struct{ Message struct{ Content string } }
	}
	if json.Unmarshal(body, &answer) != nil || len(answer.Choices) != 1 {
		t.Errorf("answer = %s", body)
	}

	// The caller key was on the done page only: no other page, export or
	// stored version carries it.
	for _, path := range []string{"/onboarding", "/onboarding/templates/sandbox", "/providers", "/logic-models", "/route-groups", "/callers", "/dry-run", "/versions", "/config/export"} {
		res, doc := c.Get(path)
		if res.StatusCode != http.StatusOK {
			t.Errorf("GET %s: %d", path, res.StatusCode)
		}
		if strings.Contains(onbHTML(doc), key) {
			t.Errorf("%s shows the caller key", path)
		}
	}
	if strings.Contains(live.Snapshot, key) {
		t.Error("the published snapshot carries the caller key")
	}
	snap, _, _ := e.Store.Draft(t.Context())
	if len(snap.Providers) != 1 || !snap.Providers[0].Sandbox || !strings.Contains(snap.Providers[0].Notes, "LOCAL SANDBOX") {
		t.Errorf("sandbox provider not marked: %+v", snap.Providers)
	}
	// The providers page badges it from the mark, not from its notes.
	_, page := c.Get("/providers")
	if !strings.Contains(webtest.TestID(page, "provider-"+snap.Providers[0].Name).Text(), "local sandbox") {
		t.Error("the providers page does not badge the sandbox provider")
	}
}

// A second provider of a family already onboarded becomes a backup
// deployment of the same logic model, with the weights rebalanced.
func TestOnboardingSecondProviderBacksUp(t *testing.T) {
	t.Parallel()
	env := webtest.New(t)
	c := env.Login(t, "admin", store.RoleAdmin)
	fake := onbFake(t)
	onboard := func(template, key string, edit func(url.Values)) *goquery.Document {
		t.Helper()
		_, doc := c.Get("/onboarding/templates/" + template)
		v := onbFormValues(doc, `[data-testid="onboarding-form"]`)
		v.Set("base_url", fake)
		v.Set("key", key)
		if edit != nil {
			edit(v)
		}
		res, doc := c.PostForm("/onboarding/review", v)
		onbStatus(t, res, http.StatusOK, doc)
		review := doc
		cv := onbFormValues(doc, `[data-testid="review-form"]`)
		cv.Set("mode", "publish")
		res, doc = c.PostForm("/onboarding/create", cv)
		onbStatus(t, res, http.StatusOK, doc)
		if webtest.TestID(doc, "published-version").Length() != 1 {
			t.Fatalf("not published: %s", webtest.TestID(doc, "publish-error").Text())
		}
		return review
	}
	onboard("deepseek", "sk-deepseek-key-000001", nil)

	_, doc := c.Get("/onboarding/templates/siliconflow")
	if sel := webtest.TestID(doc, "model-use-deepseek-ai/DeepSeek-V3"); !strings.Contains(sel.Find("option[selected]").Text(), "backup deployment of deepseek-chat") {
		t.Errorf("the form does not offer a backup of deepseek-chat: %q", sel.Text())
	}
	review := onboard("siliconflow", "sk-siliconflow-key-0001", func(v url.Values) {
		if v.Get("group") != "default" || v.Get("caller") != "" {
			t.Errorf("second onboarding defaults: group %q caller %q", v.Get("group"), v.Get("caller"))
		}
	})
	if got := onbText(review, "review-reweight-deepseek-chat-deepseek"); !strings.Contains(got, "100 → 50") {
		t.Errorf("review reweight = %q", got)
	}
	if got := webtest.TestID(review, "review-notes").Text(); !strings.Contains(got, "split 50/50") {
		t.Errorf("review notes do not say the split: %q", got)
	}
	if webtest.TestID(review, "dryrun-ok").Length() != 1 {
		t.Errorf("dry-run: %s", webtest.TestID(review, "review-dryrun").Text())
	}

	snap, _, _ := env.Store.Draft(t.Context())
	var chat *config.LogicModel
	n := 0
	for i := range snap.LogicModels {
		if strings.HasPrefix(snap.LogicModels[i].Code, "deepseek-chat") {
			n++
			chat = &snap.LogicModels[i]
		}
	}
	if n != 1 || len(chat.Deployments) != 2 {
		t.Fatalf("%d deepseek-chat logic models, deployments %+v", n, chat)
	}
	for _, d := range chat.Deployments {
		if d.Weight != 50 {
			t.Errorf("deployment on %s weight %d, want 50", d.Provider, d.Weight)
		}
	}
	if r := config.DryRun(snap, webtest.Implemented); r.Blocking() {
		t.Errorf("dry-run: %+v", r.Errors())
	}
	if len(snap.Callers) != 1 {
		t.Errorf("%d callers, want the first one only", len(snap.Callers))
	}
}

// A draft changed by someone else between review and create refuses the
// create and shows the review again; nothing is created.
func TestOnboardingStaleReviewCreatesNothing(t *testing.T) {
	t.Parallel()
	env := webtest.New(t)
	c := env.Login(t, "admin", store.RoleAdmin)
	fake := onbFake(t)
	_, doc := c.Get("/onboarding/templates/sandbox")
	v := onbFormValues(doc, `[data-testid="onboarding-form"]`)
	v.Set("base_url", fake)
	_, doc = c.PostForm("/onboarding/review", v)
	cv := onbFormValues(doc, `[data-testid="review-form"]`)
	if _, err := env.Store.CreateTenant(context.Background(), config.Tenant{Name: "meanwhile"}); err != nil {
		t.Fatal(err)
	}
	cv.Set("mode", "draft")
	res, doc := c.PostForm("/onboarding/create", cv)
	onbStatus(t, res, http.StatusConflict, doc)
	if webtest.TestID(doc, "review-error").Length() != 1 {
		t.Error("no explanation of the refused create")
	}
	snap, _, _ := env.Store.Draft(t.Context())
	if len(snap.Providers) != 0 {
		t.Errorf("created despite a stale review: %+v", snap.Providers)
	}
	// The refreshed review creates (as a draft: nothing published).
	cv = onbFormValues(doc, `[data-testid="review-form"]`)
	cv.Set("mode", "draft")
	res, doc = c.PostForm("/onboarding/create", cv)
	onbStatus(t, res, http.StatusOK, doc)
	if webtest.TestID(doc, "kept-draft").Length() != 1 {
		t.Error("draft mode did not say it kept a draft")
	}
	if n, _ := env.Store.LatestVersionNumber(t.Context()); n != 0 {
		t.Errorf("draft mode published version %d", n)
	}
}
