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

// TestCallLogsTestRouteAndDashboard is issue 7's acceptance in the browser.
func TestCallLogsTestRouteAndDashboard(t *testing.T) {
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
	for _, name := range []string{"vendor-a", "vendor-b"} {
		pid, _ := st.CreateProvider(ctx, config.Provider{Name: name, Protocol: config.ProtocolOpenAI, BaseURL: "http://" + fakeAddr + "/v1", Enabled: true, TimeoutMS: 30000})
		if _, err := st.AddProviderKey(ctx, pid, "", "sk-"+name+"-key-000001"); err != nil {
			t.Fatal(err)
		}
	}
	mid, _ := st.CreateLogicModel(ctx, config.LogicModel{Code: "main", Kind: config.KindChat})
	// main's primary deployment on vendor-a is parked; vendor-b carries it.
	for _, d := range []config.Deployment{
		{Provider: "vendor-a", UpstreamModel: "main-a", Weight: 0, Enabled: true},
		{Provider: "vendor-b", UpstreamModel: "main-b", Weight: 100, Enabled: true},
	} {
		if _, err := st.CreateDeployment(ctx, mid, d); err != nil {
			t.Fatal(err)
		}
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
	appID, _ := st.CreateCaller(ctx, config.Caller{Name: "app", RouteGroup: "main", PriorityClass: config.ClassInteractive, Enabled: true,
		Limits: []config.TierLimit{{Tier: config.TierFast, RPM: 1}}})
	_, _ = st.CreateCaller(ctx, config.Caller{Name: "other", RouteGroup: "main", PriorityClass: config.ClassInteractive, Enabled: true})
	appKey, _, _ := st.CreateCallerKey(ctx, "app", "e2e", "e2e")
	otherKey, _, _ := st.CreateCallerKey(ctx, "other", "e2e", "e2e")
	if _, err := st.Publish(ctx, store.PublishInput{Author: "seed", Message: "observe", Check: func(s config.Snapshot) config.Result { return config.DryRun(s, storeEnv) }}); err != nil {
		t.Fatal(err)
	}
	s := startServer(t, dsn)

	// Traffic: app's second fast request is rate limited; other is served.
	send := func(key string) (int, string) {
		req, _ := http.NewRequest(http.MethodPost, s.URL+"/v1/chat/completions", strings.NewReader(`{"model":"fast","messages":[{"role":"user","content":"hi"}]}`))
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode, res.Header.Get("X-Request-Id")
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		if code, _ := send(otherKey); code == 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the server does not serve the published version")
		}
		time.Sleep(100 * time.Millisecond)
	}
	if code, _ := send(appKey); code != 200 {
		t.Fatalf("app's first request: %d", code)
	}
	code, limitedID := send(appKey)
	if code != 429 {
		t.Fatalf("app's second request: %d, want 429", code)
	}
	db := s.sql(t)
	for deadline := time.Now().Add(10 * time.Second); ; {
		var n int
		_ = db.QueryRow(`SELECT count(*) FROM call_logs WHERE request_id = $1`, limitedID).Scan(&n)
		if n == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the rate-limited request has no call-log row")
		}
		time.Sleep(100 * time.Millisecond)
	}

	u := &ui{t: t, p: newPage(t), base: s.URL}
	u.login("admin", s.Admin)

	// Filter by caller and status=rejected; open the rate-limited request.
	u.goto_("/call-logs")
	u.fill(u.id("calllog-filter-caller"), "app", "caller filter")
	u.selectOption(u.id("calllog-filter-status"), "rejected", "status filter")
	u.click(u.id("calllog-filter-submit"), "search")
	row := u.id("calllog-row-" + limitedID)
	u.see(row, "the rate-limited request in the results")
	if n, _ := u.p.Locator(`[data-testid^="calllog-row-"]`).Count(); n != 1 {
		t.Fatalf("%d rows for app + rejected, want 1", n)
	}
	u.click(row.GetByTestId("calllog-link"), "open the request")
	why := u.text(u.id("calllog-rejection"), "why it was rejected")
	if !strings.Contains(strings.ToLower(why), "rate limit") {
		t.Fatalf("the detail does not explain the rate limit: %q", why)
	}

	// Test route for standard: the primary deployment is parked.
	u.goto_("/test-route")
	u.selectOption(u.id("testroute-caller"), itoa(appID), "caller")
	u.fill(u.id("testroute-model"), "standard", "tier")
	u.click(u.id("testroute-explain-button"), "explain the route")
	skip := u.id("testroute-skip")
	u.see(skip, "a skip")
	if txt := u.text(skip, "skip"); !strings.Contains(txt, "parked") {
		t.Fatalf("the skip does not say parked: %q", txt)
	}
	if n, _ := u.id("testroute-step").Count(); n != 1 {
		t.Fatalf("%d steps; want vendor-b only", n)
	}

	// The dashboard shows a chart with the test traffic.
	u.goto_("/dashboard")
	chart := u.id("chart-requests")
	u.see(chart.GetByTestId("chart-svg"), "requests chart")
	if n, _ := chart.Locator("svg path, svg rect, svg circle").Count(); n == 0 {
		t.Fatal("the requests chart draws nothing")
	}
	if total := u.text(u.id("total-requests"), "total requests"); strings.TrimSpace(total) == "0" {
		t.Fatalf("dashboard total requests %q", total)
	}
}

func itoa(v int64) string { return strconv.FormatInt(v, 10) }
