package gateway_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"switchyard/routing/config"
	"switchyard/store"
	"switchyard/store/calllog"
	"switchyard/web/gateway/gatewaytest"
	"switchyard/web/webtest"
)

type parkedWorld struct {
	app, acme int64 // caller ids
	appKey    string
}

// newParkedWorld: logic model "big" is primary in standard but its
// deployment on fake-a is parked, so it is served by fake-b; "small" on
// fake-a is the second candidate. Caller app (RPM 5 on standard) uses the
// shared group default; caller acme-app uses acme's dedicated group, which
// falls back to default.
func newParkedWorld(t *testing.T, e *gatewaytest.Env) parkedWorld {
	t.Helper()
	ctx := context.Background()
	b := e.Build()
	b.Provider("fake-a", config.ProtocolOpenAI, "", "sk-fake-key-aaaa-0001")
	b.Provider("fake-b", config.ProtocolOpenAI, "", "sk-fake-key-bbbb-0002")
	price := config.Prices{InputMicros: config.Unit, OutputMicros: 2 * config.Unit, CachedMicros: config.Unit / 2, Currency: "USD"}
	b.Model(config.LogicModel{Code: "big", Kind: config.KindChat},
		config.Deployment{Provider: "fake-a", UpstreamModel: "fake-big-a", Weight: 0, Enabled: true, Prices: price},
		config.Deployment{Provider: "fake-b", UpstreamModel: "fake-big-b", Weight: 100, Enabled: true, Prices: price})
	b.Model(config.LogicModel{Code: "small", Kind: config.KindChat},
		config.Deployment{Provider: "fake-a", UpstreamModel: "fake-small", Weight: 100, Enabled: true, Prices: price})
	small := []config.Candidate{{LogicModel: "small", Priority: 1, Weight: 100}}
	b.Group("default", map[config.TierName][]config.Candidate{
		config.TierFast:     small,
		config.TierStandard: {{LogicModel: "big", Priority: 1, Weight: 100}, {LogicModel: "small", Priority: 2, Weight: 100}},
		config.TierDeep:     small,
	})
	if _, err := e.Store.CreateTenant(ctx, config.Tenant{Name: "acme"}); err != nil {
		t.Fatal(err)
	}
	b.Group("acme-pool", map[config.TierName][]config.Candidate{
		config.TierFast: small, config.TierStandard: {{LogicModel: "big", Priority: 1, Weight: 100}}, config.TierDeep: small,
	})
	snap, _, err := e.Store.Draft(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range snap.RouteGroups {
		if g.Name == "acme-pool" {
			g.Tenant, g.Fallback = "acme", "default"
			if err := e.Store.UpdateRouteGroup(ctx, g.ID, g); err != nil {
				t.Fatal(err)
			}
		}
	}
	var w parkedWorld
	w.app, w.appKey = b.Caller(config.Caller{Name: "app", RouteGroup: "default",
		Limits: []config.TierLimit{{Tier: config.TierStandard, RPM: 5}}})
	w.acme, _ = b.Caller(config.Caller{Name: "acme-app", Tenant: "acme", RouteGroup: "acme-pool"})
	e.Publish("parked world")
	return w
}

func explainURL(caller int64, model string, flags ...string) string {
	v := url.Values{"caller": {itoa(caller)}, "model": {model}}
	for _, f := range flags {
		v.Set(f, "on")
	}
	return "/test-route?" + v.Encode()
}

func TestTestRouteShowsParkedSkipFallbackStepAndLimits(t *testing.T) {
	t.Parallel()
	e := gatewaytest.New(t)
	w := newParkedWorld(t, e)
	admin := obsLogin(t, e, "ops", store.RoleAdmin)

	res, doc, body := admin.get(explainURL(w.app, "standard"))
	if res.StatusCode != http.StatusOK {
		t.Fatalf("explain: %d", res.StatusCode)
	}
	if testID(doc, "testroute-problem").Length() != 0 {
		t.Fatalf("problem: %s", testID(doc, "testroute-problem").Text())
	}
	// The parked primary deployment is a skip, in words.
	skip := doc.Find(`[data-testid="testroute-skip"][data-reason="parked"]`)
	if skip.Length() != 1 {
		t.Fatalf("parked skip not shown: %s", testID(doc, "testroute-skips").Text())
	}
	if txt := skip.Text(); !strings.Contains(txt, "fake-a/fake-big-a") || !strings.Contains(txt, "parked — the deployment is kept in the configuration without traffic") {
		t.Errorf("parked skip says %q", txt)
	}
	// The chain: big on fake-b first, then the next candidate small.
	steps := testID(doc, "testroute-step")
	if steps.Length() != 2 {
		t.Fatalf("steps: %d, want 2\n%s", steps.Length(), body)
	}
	if m, p := steps.Eq(0).AttrOr("data-model", ""), steps.Eq(0).AttrOr("data-provider", ""); m != "big" || p != "fake-b" {
		t.Errorf("step 1 = %s on %s, want big on fake-b", m, p)
	}
	if m, p := steps.Eq(1).AttrOr("data-model", ""), steps.Eq(1).AttrOr("data-provider", ""); m != "small" || p != "fake-a" {
		t.Errorf("step 2 = %s on %s, want small on fake-a", m, p)
	}
	if txt := steps.Eq(0).Text(); !strings.Contains(txt, "1 usable") || !strings.Contains(txt, "closed") {
		t.Errorf("step 1 live state: %q", txt)
	}
	if txt := testID(doc, "testroute-pool").Text(); !strings.Contains(txt, "shared") {
		t.Errorf("pool: %q", txt)
	}
	// The limit check: RPM 5, nothing spent yet.
	if txt := testID(doc, "testroute-remaining-requests").Text(); !strings.Contains(txt, "4 of 5 remaining") {
		t.Errorf("remaining requests: %q", txt)
	}
	if txt := testID(doc, "testroute-verdict").Text(); !strings.Contains(txt, "would be admitted") {
		t.Errorf("verdict: %q", txt)
	}
	// Explaining spends nothing.
	_, doc, _ = admin.get(explainURL(w.app, "standard"))
	if txt := testID(doc, "testroute-remaining-requests").Text(); !strings.Contains(txt, "4 of 5 remaining") {
		t.Errorf("explain spent a request: %q", txt)
	}
	// Real traffic does.
	for range 5 {
		consoleChat(t, e, w.appKey, "standard", "x")
	}
	_, doc, _ = admin.get(explainURL(w.app, "standard"))
	if txt := testID(doc, "testroute-verdict").Text(); !strings.Contains(txt, "would be rejected: rate limited") {
		t.Errorf("verdict after 5 requests: %q", txt)
	}

	// A dedicated group shows its fallback policy and the fallback steps.
	_, doc, _ = admin.get(explainURL(w.acme, "standard"))
	if txt := testID(doc, "testroute-pool").Text(); !strings.Contains(txt, "dedicated pool of tenant acme") || !strings.Contains(txt, "Fallback policy: shared group default") {
		t.Errorf("dedicated pool: %q", txt)
	}
	steps = testID(doc, "testroute-step")
	last := steps.Last()
	if steps.Length() != 2 || last.AttrOr("data-model", "") != "small" || !strings.Contains(last.Text(), "fallback group") {
		t.Errorf("dedicated steps: %d, last %s %q", steps.Length(), last.AttrOr("data-model", ""), last.Text())
	}
	if doc.Find(`[data-testid="testroute-skip"][data-reason="already_in_chain"]`).Length() != 1 {
		t.Error("the fallback group's copy of big should be skipped as already in the chain")
	}

	// Explicit model, thinking flag, and htmx fragment.
	res, doc, body = admin.asHTMX().get(explainURL(w.app, "small", "thinking"))
	if res.StatusCode != http.StatusOK || strings.Contains(body, "<html") || testID(doc, "testroute-explain").Length() != 1 {
		t.Fatalf("htmx explain: %d %s", res.StatusCode, body)
	}
	if doc.Find(`[data-testid="testroute-skip"][data-reason="lacks_capability"]`).Length() != 1 || testID(doc, "testroute-no-steps").Length() != 1 {
		t.Errorf("thinking on a model without it should leave nothing: %s", testID(doc, "testroute-explain").Text())
	}
	// Reasoning on a tier moves to deep.
	_, doc, _ = admin.get(explainURL(w.app, "fast", "thinking"))
	if testID(doc, "testroute-forced").Length() != 1 {
		t.Error("a reasoning request on fast should say it goes to deep")
	}
	// Unknown model and unknown caller are said in words.
	_, doc, _ = admin.get(explainURL(w.app, "gpt-9"))
	if txt := testID(doc, "testroute-problem").Text(); !strings.Contains(txt, "model_not_found") {
		t.Errorf("unknown model: %q", txt)
	}
	_, doc, _ = admin.get(explainURL(99999, "standard"))
	if txt := testID(doc, "testroute-problem").Text(); !strings.Contains(txt, "not in the live version") {
		t.Errorf("unknown caller: %q", txt)
	}
}

func TestTestRouteSendRequestAnswersWithTrailAndCallLog(t *testing.T) {
	t.Parallel()
	e := gatewaytest.New(t)
	w := newParkedWorld(t, e)
	admin := obsLogin(t, e, "ops", store.RoleAdmin)
	viewer := obsLogin(t, e, "watcher", store.RoleViewer)

	// Viewers see the explanation but not the button, and cannot send.
	_, doc, _ := viewer.get(explainURL(w.app, "standard"))
	if testID(doc, "testroute-step").Length() == 0 || testID(doc, "testroute-send").Length() != 0 || testID(doc, "testroute-viewer-note").Length() != 1 {
		t.Fatal("viewer: explanation without a send button expected")
	}
	form := url.Values{"caller": {itoa(w.app)}, "model": {"standard"}, "message": {"hello from the console"}}
	if res, _, _ := viewer.postForm("/test-route/send", form); res.StatusCode != http.StatusForbidden {
		t.Fatalf("viewer send: %d, want 403", res.StatusCode)
	}

	_, doc, _ = admin.get(explainURL(w.app, "standard"))
	if testID(doc, "testroute-send").Length() != 1 {
		t.Fatal("admin: no send button")
	}
	res, doc, body := admin.asHTMX().postForm("/test-route/send", form)
	if res.StatusCode != http.StatusOK || strings.Contains(body, "<html") {
		t.Fatalf("send: %d\n%s", res.StatusCode, body)
	}
	if st := testID(doc, "testroute-status").AttrOr("data-status", ""); st != "200" {
		t.Fatalf("status %s: %s", st, testID(doc, "testroute-error").Text())
	}
	if ans := testID(doc, "testroute-answer").Text(); !strings.Contains(ans, "fake-big-b") {
		t.Errorf("answer %q does not come from the fake vendor's fake-big-b", ans)
	}
	if n := doc.Find(`[data-testid="trail-step"][data-outcome="ok"]`).Length(); n != 1 {
		t.Errorf("ok attempts in the trail: %d, want 1", n)
	}
	if n := doc.Find(`[data-testid="trail-step"][data-outcome="failed"]`).Length(); n != 0 {
		t.Errorf("failed attempts: %d", n)
	}
	link := testID(doc, "testroute-request-id")
	id := strings.TrimSpace(link.Text())
	if id == "" || link.AttrOr("href", "") != "/call-logs/"+id {
		t.Fatalf("request id link %q → %q", id, link.AttrOr("href", ""))
	}
	rows := waitCallLogs(t, e, calllog.Filter{RequestID: id}, 1)
	if r := rows[0]; r.Caller != "app" || r.Status != calllog.StatusOK || r.LogicModel != "big" || r.Provider != "fake-b" {
		t.Errorf("call log of the test request: %+v", r)
	}
	if res, _, _ := admin.get("/call-logs/" + id); res.StatusCode != http.StatusOK {
		t.Errorf("call-log detail of the test request: %d", res.StatusCode)
	}

	// Without htmx the whole page comes back with the result.
	res, doc, _ = admin.postForm("/test-route/send", url.Values{"caller": {itoa(w.app)}, "model": {"gpt-9"}})
	if res.StatusCode != http.StatusOK || testID(doc, "nav").Length() != 1 {
		t.Fatalf("plain send: %d", res.StatusCode)
	}
	if st := testID(doc, "testroute-status").AttrOr("data-status", ""); st != "404" || !strings.Contains(testID(doc, "testroute-error").Text(), "model_not_found") {
		t.Errorf("unknown model send: %s %q", st, testID(doc, "testroute-error").Text())
	}
}

func TestTestRouteWithoutDataPlaneOrPublishedVersion(t *testing.T) {
	t.Parallel()
	// The console-only server has no Ops.
	env := webtest.New(t)
	c := env.Login(t, "ops", store.RoleAdmin)
	res, doc := c.Get("/test-route?caller=1&model=standard")
	if res.StatusCode != http.StatusOK || !strings.Contains(webtest.TestID(doc, "testroute-problem").Text(), "data plane is not running on this instance") {
		t.Fatalf("no Ops: %d %q", res.StatusCode, webtest.TestID(doc, "testroute-problem").Text())
	}

	e := gatewaytest.New(t)
	admin := obsLogin(t, e, "ops", store.RoleAdmin)
	_, doc, _ = admin.get("/test-route")
	if !strings.Contains(testID(doc, "testroute-problem").Text(), "Nothing is published yet") {
		t.Fatalf("unpublished: %q", testID(doc, "testroute-problem").Text())
	}
}
