package e2e

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"switchyard/routing/config"
	"switchyard/store"
	"switchyard/store/secrets"
	"switchyard/store/storetest"
)

// TestUsagePage: real requests through the fake vendor show on the Usage
// page, for the caller and for its tenant: the month's spend (the call
// logs' cost) against the budget, a bar of today's tokens among 30 days,
// the last hour's minutes against the RPM limit, and the logic model.
func TestUsagePage(t *testing.T) {
	dsn := storetest.NewDatabase(t)
	fakeAddr := freePort(t)
	start(t, "fakeupstream", nil, "-addr", fakeAddr)
	key, _ := secrets.ParseKey(storetest.TestKey)
	sealer, _ := secrets.NewSealer(key)
	ctx := context.Background()
	st, err := store.Open(ctx, dsn, sealer)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.Migrate(); err != nil {
		t.Fatal(err)
	}
	pid, _ := st.CreateProvider(ctx, config.Provider{Name: "vendor-a", Protocol: config.ProtocolOpenAI, BaseURL: "http://" + fakeAddr + "/v1", Enabled: true, TimeoutMS: 30000})
	if _, err := st.AddProviderKey(ctx, pid, "", "sk-vendor-a-key-000001"); err != nil {
		t.Fatal(err)
	}
	mid, _ := st.CreateLogicModel(ctx, config.LogicModel{Code: "main", Kind: config.KindChat})
	prices := config.Prices{InputMicros: 1000 * config.Unit, OutputMicros: 2000 * config.Unit, Currency: "USD"}
	if _, err := st.CreateDeployment(ctx, mid, config.Deployment{Provider: "vendor-a", UpstreamModel: "main-a", Weight: 100, Enabled: true, Prices: prices}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.CreateTenant(ctx, config.Tenant{Name: "acme"}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.CreateRouteGroup(ctx, config.RouteGroup{Name: "main"}); err != nil {
		t.Fatal(err)
	}
	snap, _, _ := st.Draft(ctx)
	for _, tr := range snap.RouteGroups[0].Tiers {
		if _, err := st.AddCandidate(ctx, tr.ID, config.Candidate{LogicModel: "main", Weight: 100}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := st.CreateCaller(ctx, config.Caller{Name: "app", Tenant: "acme", RouteGroup: "main", PriorityClass: config.ClassInteractive, Enabled: true,
		MonthlyBudgetMicros: 5 * config.Unit, BudgetCurrency: "USD", Limits: []config.TierLimit{{Tier: config.TierFast, RPM: 100}}}); err != nil {
		t.Fatal(err)
	}
	appKey, _, _ := st.CreateCallerKey(ctx, "app", "e2e", "e2e")
	if _, err := st.Publish(ctx, store.PublishInput{Author: "seed", Message: "usage", Check: func(s config.Snapshot) config.Result { return config.DryRun(s, storeEnv) }}); err != nil {
		t.Fatal(err)
	}
	s := startServer(t, dsn)

	send := func() int {
		req, _ := http.NewRequest(http.MethodPost, s.URL+"/v1/chat/completions", strings.NewReader(`{"model":"fast","messages":[{"role":"user","content":"hello there"}]}`))
		req.Header.Set("Authorization", "Bearer "+appKey)
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	for deadline := time.Now().Add(5 * time.Second); send() != http.StatusOK; {
		if time.Now().After(deadline) {
			t.Fatal("the server does not serve the published version")
		}
		time.Sleep(100 * time.Millisecond)
	}
	for range 2 {
		if code := send(); code != http.StatusOK {
			t.Fatalf("request: %d", code)
		}
	}
	db := s.sql(t)
	var cost int64
	for deadline := time.Now().Add(10 * time.Second); ; {
		var n int
		_ = db.QueryRow(`SELECT count(*), coalesce(sum(cost_micros), 0) FROM call_logs WHERE caller = 'app' AND status = 'ok'`).Scan(&n, &cost)
		if n == 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of the 3 calls are in the call logs", n)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if cost <= 0 {
		t.Fatal("the calls cost nothing: the deployment's prices did not apply")
	}

	u := &ui{t: t, p: newPage(t), base: s.URL}
	u.login("admin", s.Admin)
	u.goto_("/usage")
	u.click(u.id("nav-usage"), "the Usage entry of the navigation")
	u.selectOption(u.id("usage-subject"), "caller:app", "the caller")
	spend := u.id("usage-spend")
	u.see(spend, "the month's spend")
	if got, want := u.text(spend.GetByTestId("spend-month-to-date"), "spent"), config.Micros(cost).String()+" USD"; got != want {
		t.Errorf("spent %q, want the call logs' %q", got, want)
	}
	if got := u.text(spend.GetByTestId("spend-budget"), "budget"); got != "5 USD" {
		t.Errorf("budget %q, want 5 USD", got)
	}
	if n, _ := spend.Locator(`svg [data-testid="spend-bar"], svg [data-testid="spend-marker"]`).Count(); n != 2 {
		t.Errorf("the spend bar draws %d of its bar and marker", n)
	}
	tokens := u.id("usage-tokens-svg")
	u.see(tokens, "the tokens-per-day chart")
	if n, _ := tokens.GetByTestId("token-day").Count(); n != 30 {
		t.Errorf("%d days on the tokens chart, want 30", n)
	}
	if n, _ := tokens.GetByTestId("token-bar").Count(); n != 1 {
		t.Errorf("%d token bars, want today's for main", n)
	}
	rpm := u.id("usage-rpm-chart")
	if n, _ := rpm.Locator(`g[data-series="fast"] circle`).Count(); n != 60 {
		t.Errorf("the requests-per-minute chart has %d points for fast, want 60", n)
	}
	if n, _ := rpm.Locator(`g[data-series="fast RPM limit"] path`).Count(); n != 1 {
		t.Error("the requests-per-minute chart has no line for fast's limit")
	}
	if got := u.text(u.id("usage-model-requests"), "the top model's requests"); got != "3" {
		t.Errorf("top model requests %q, want 3", got)
	}

	u.selectOption(u.id("usage-subject"), "tenant:acme", "the tenant")
	u.see(u.p.GetByText("Tenant acme"), "the tenant's usage")
	if got := u.text(u.id("spend-month-to-date"), "the tenant's spend"); got != config.Micros(cost).String()+" USD" {
		t.Errorf("tenant spent %q", got)
	}
}
