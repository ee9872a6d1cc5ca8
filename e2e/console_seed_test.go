package e2e

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"switchyard/routing/config"
	"switchyard/store"
	"switchyard/store/secrets"
	"switchyard/store/storetest"
)

// furnished is an installation with something on every console page: two
// providers (vendor-b's only key is refused by the fake vendor with a 401,
// so the first request that reaches it quarantines it), a disabled
// provider, logic models with a disabled and a parked deployment, two route
// groups (one dedicated to a tenant), callers with limits, two published
// versions and a draft that differs, and call logs with an answer, a
// failover after the 401 and a rate-limited request.
type furnished struct {
	s   *Server
	st  *store.Store
	ids map[string]string // placeholders of page paths: "{name}" → id
	// Request ids of the seeded traffic.
	okID, failoverID, limitedID string
	key                         string // app's caller key
}

// The fake vendor refuses this key as unauthorised (vendor-b's only key).
const refusedKey = "sk-vendor-b-key-000003"

func furnish(t *testing.T, extra ...string) *furnished {
	t.Helper()
	dsn := storetest.NewDatabase(t)
	fakeAddr := freePort(t)
	fakeURL := "http://" + fakeAddr
	start(t, "fakeupstream", nil, "-addr", fakeAddr)
	waitHealthy(t, fakeURL+"/_fake/stats", nil)
	putFake(t, fakeURL+"/_fake/rules", `[{"key":"`+refusedKey+`","fault":{"Status":401}}]`)

	key, _ := secrets.ParseKey(storetest.TestKey)
	sealer, _ := secrets.NewSealer(key)
	ctx := context.Background()
	st, err := store.Open(ctx, dsn, sealer)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if _, err := st.Migrate(); err != nil {
		t.Fatal(err)
	}
	f := &furnished{st: st, ids: map[string]string{}}
	must := func(id int64, err error) int64 {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	usd := config.Prices{InputMicros: 2_500_000, OutputMicros: 10_000_000, Currency: "USD"}

	a := must(st.CreateProvider(ctx, config.Provider{Name: "vendor-a", Protocol: config.ProtocolOpenAI, BaseURL: fakeURL + "/v1", Enabled: true, TimeoutMS: 30000}))
	b := must(st.CreateProvider(ctx, config.Provider{Name: "vendor-b", Protocol: config.ProtocolOpenAI, BaseURL: fakeURL + "/v1", Enabled: true, TimeoutMS: 30000}))
	old := must(st.CreateProvider(ctx, config.Provider{Name: "retired", Protocol: config.ProtocolOpenAI, BaseURL: fakeURL + "/v1", Enabled: false, TimeoutMS: 30000}))
	for _, k := range []struct {
		p             int64
		label, secret string
	}{{a, "primary", "sk-vendor-a-key-000001"}, {a, "spare", "sk-vendor-a-key-000002"}, {b, "only", refusedKey}, {old, "old", "sk-retired-key-000004"}} {
		if _, err := st.AddProviderKey(ctx, k.p, k.label, k.secret); err != nil {
			t.Fatal(err)
		}
	}
	f.ids["vendor-a"] = itoa(a)

	main := must(st.CreateLogicModel(ctx, config.LogicModel{Code: "chat-main", Kind: config.KindChat}))
	f.ids["chat-main"] = itoa(main)
	f.ids["dep-a"] = itoa(must(st.CreateDeployment(ctx, main, config.Deployment{Provider: "vendor-a", UpstreamModel: "fake-a", Weight: 70, Enabled: true, Prices: usd})))
	f.ids["dep-b"] = itoa(must(st.CreateDeployment(ctx, main, config.Deployment{Provider: "vendor-b", UpstreamModel: "fake-b", Weight: 30, Enabled: true, Prices: usd})))
	f.ids["dep-disabled"] = itoa(must(st.CreateDeployment(ctx, main, config.Deployment{Provider: "vendor-a", UpstreamModel: "fake-a-old", Weight: 0, Enabled: false, Prices: usd})))
	solo := must(st.CreateLogicModel(ctx, config.LogicModel{Code: "chat-b", Kind: config.KindChat}))
	f.ids["dep-solo"] = itoa(must(st.CreateDeployment(ctx, solo, config.Deployment{Provider: "vendor-b", UpstreamModel: "fake-b-solo", Weight: 100, Enabled: true, Prices: usd})))
	legacy := must(st.CreateLogicModel(ctx, config.LogicModel{Code: "chat-legacy", Kind: config.KindChat}))
	f.ids["dep-retired"] = itoa(must(st.CreateDeployment(ctx, legacy, config.Deployment{Provider: "retired", UpstreamModel: "fake-legacy", Weight: 100, Enabled: true})))

	acme := must(st.CreateTenant(ctx, config.Tenant{Name: "acme", Description: "a customer with its own route group"}))
	f.ids["acme"] = itoa(acme)
	f.ids["main"] = itoa(must(st.CreateRouteGroup(ctx, config.RouteGroup{Name: "main", Description: "every team's default"})))
	must(st.CreateRouteGroup(ctx, config.RouteGroup{Name: "acme-dedicated", Tenant: "acme", Fallback: "main"}))
	snap, _, err := st.Draft(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range snap.RouteGroups {
		for _, tr := range g.Tiers {
			models := []string{"chat-main"}
			if g.Name == "main" && tr.Name == config.TierDeep {
				models = []string{"chat-b", "chat-main"} // vendor-b first: the failover after its 401
			}
			for _, m := range models {
				must(st.AddCandidate(ctx, tr.ID, config.Candidate{LogicModel: m, Weight: 100}))
			}
		}
	}
	app := must(st.CreateCaller(ctx, config.Caller{Name: "app", BusinessLine: "contracts", RouteGroup: "main", PriorityClass: config.ClassInteractive, Enabled: true,
		Limits: []config.TierLimit{{Tier: config.TierFast, RPM: 2}, {Tier: config.TierDeep, TPM: 50000}}, MonthlyBudgetMicros: 300_000_000, BudgetCurrency: "USD"}))
	f.ids["app"] = itoa(app)
	must(st.CreateCaller(ctx, config.Caller{Name: "acme-bot", Tenant: "acme", RouteGroup: "acme-dedicated", PriorityClass: config.ClassBatch, Enabled: true}))
	if f.key, _, err = st.CreateCallerKey(ctx, "app", "e2e", "e2e"); err != nil {
		t.Fatal(err)
	}
	publish := func(msg string) {
		t.Helper()
		if _, err := st.Publish(ctx, store.PublishInput{Author: "seed", Message: msg, Check: func(s config.Snapshot) config.Result { return config.DryRun(s, storeEnv) }}); err != nil {
			t.Fatal(err)
		}
	}
	publish("first version")
	if err := st.UpdateCaller(ctx, app, withLimit(t, st, "app", config.TierLimit{Tier: config.TierStandard, RPM: 600})); err != nil {
		t.Fatal(err)
	}
	publish("standard rpm for app")
	if _, err := st.CreateUser(ctx, "admin", adminPassword, store.RoleAdmin); err != nil {
		t.Fatal(err)
	}
	if _, err := st.CreateUser(ctx, "watcher", "watcher-password-1", store.RoleViewer); err != nil {
		t.Fatal(err)
	}
	if _, _, err := st.CreateAdminToken(ctx, "ci-deploy", store.RoleAdmin, "admin"); err != nil {
		t.Fatal(err)
	}

	f.s = startServer(t, dsn, extra...)
	f.okID = f.chatUntil(t, "standard", 200)
	f.failoverID = f.chatUntil(t, "deep", 200)
	f.chatUntil(t, "fast", 200)
	f.limitedID = f.chatUntil(t, "fast", 429)
	f.ids["failover"] = f.failoverID
	waitCallLogs(t, f.s, f.okID, f.failoverID, f.limitedID)

	// A draft that differs from live: the banner shows on every page.
	if err := st.SetDeploymentWeight(ctx, must(parseID(f.ids["dep-a"])), 60); err != nil {
		t.Fatal(err)
	}
	if err := st.SetDeploymentWeight(ctx, must(parseID(f.ids["dep-b"])), 40); err != nil {
		t.Fatal(err)
	}
	return f
}

// withLimit is the stored caller with one more tier limit.
func withLimit(t *testing.T, st *store.Store, name string, l config.TierLimit) config.Caller {
	t.Helper()
	snap, _, err := st.Draft(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range snap.Callers {
		if c.Name == name {
			c.Limits = append(c.Limits, l)
			return c
		}
	}
	t.Fatalf("no caller %s", name)
	return config.Caller{}
}

// chatUntil sends one chat request for model as app, retrying until the
// server serves the published version, and wants the status; it returns the
// request id.
func (f *furnished) chatUntil(t *testing.T, model string, want int) string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		req, _ := http.NewRequest(http.MethodPost, f.s.URL+"/v1/chat/completions", strings.NewReader(`{"model":"`+model+`","messages":[{"role":"user","content":"hello"}]}`))
		req.Header.Set("Authorization", "Bearer "+f.key)
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode == want {
			return res.Header.Get("X-Request-Id")
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s request answered %d, want %d", model, res.StatusCode, want)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// waitCallLogs waits until the requests have call-log rows.
func waitCallLogs(t *testing.T, s *Server, ids ...string) {
	t.Helper()
	db := s.sql(t)
	for deadline := time.Now().Add(10 * time.Second); ; {
		var n int
		_ = db.QueryRow(`SELECT count(*) FROM call_logs WHERE request_id = ANY($1)`, "{"+strings.Join(ids, ",")+"}").Scan(&n)
		if n >= len(ids) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d requests have call-log rows", n, len(ids))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func putFake(t *testing.T, url, body string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPut, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 200 {
		t.Fatalf("PUT %s: %d", url, res.StatusCode)
	}
}

func parseID(s string) (int64, error) { return strconv.ParseInt(s, 10, 64) }
