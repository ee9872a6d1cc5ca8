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

// TestMessagesCallInCallLog is issue 15's acceptance in the browser: a call
// through the Anthropic front door (/v1/messages, x-api-key) whose first
// deployment (Anthropic protocol, a revoked key) fails and whose second
// (OpenAI protocol, translated) serves it appears in the call log, found
// by its front door, with the attempt trail.
func TestMessagesCallInCallLog(t *testing.T) {
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
	for _, p := range []struct {
		name  string
		proto config.Protocol
		base  string
		key   string
	}{
		{"claude-vendor", config.ProtocolAnthropic, "http://" + fakeAddr, "bad-revoked-key-0001"},
		{"openai-vendor", config.ProtocolOpenAI, "http://" + fakeAddr + "/v1", "sk-openai-key-000001"},
	} {
		pid, err := st.CreateProvider(ctx, config.Provider{Name: p.name, Protocol: p.proto, BaseURL: p.base, Enabled: true, TimeoutMS: 30000})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.AddProviderKey(ctx, pid, "", p.key); err != nil {
			t.Fatal(err)
		}
	}
	for _, m := range []struct{ code, provider, upstream string }{{"claude", "claude-vendor", "claude-up"}, {"gpt", "openai-vendor", "gpt-up"}} {
		mid, _ := st.CreateLogicModel(ctx, config.LogicModel{Code: m.code, Kind: config.KindChat})
		if _, err := st.CreateDeployment(ctx, mid, config.Deployment{Provider: m.provider, UpstreamModel: m.upstream, Weight: 100, Enabled: true}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := st.CreateRouteGroup(ctx, config.RouteGroup{Name: "main"}); err != nil {
		t.Fatal(err)
	}
	snap, _, _ := st.Draft(ctx)
	for _, tr := range snap.RouteGroups[0].Tiers {
		for i, m := range []string{"claude", "gpt"} {
			if _, err := st.AddCandidate(ctx, tr.ID, config.Candidate{LogicModel: m, Priority: i + 1, Weight: 100}); err != nil {
				t.Fatal(err)
			}
		}
	}
	_, _ = st.CreateCaller(ctx, config.Caller{Name: "claude-code", RouteGroup: "main", PriorityClass: config.ClassInteractive, Enabled: true})
	appKey, _, _ := st.CreateCallerKey(ctx, "claude-code", "e2e", "e2e")
	if _, err := st.Publish(ctx, store.PublishInput{Author: "seed", Message: "messages", Check: func(s config.Snapshot) config.Result { return config.DryRun(s, storeEnv) }}); err != nil {
		t.Fatal(err)
	}
	s := startServer(t, dsn)

	var requestID string
	for deadline := time.Now().Add(5 * time.Second); ; {
		req, _ := http.NewRequest(http.MethodPost, s.URL+"/v1/messages", strings.NewReader(`{"model":"standard","max_tokens":100,"messages":[{"role":"user","content":"hi"}]}`))
		req.Header.Set("x-api-key", appKey)
		req.Header.Set("anthropic-version", "2023-06-01")
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode == 200 {
			requestID = res.Header.Get("X-Request-Id")
			if res.Header.Get("X-Switchyard-Provider") != "openai-vendor" {
				t.Fatalf("served by %q", res.Header.Get("X-Switchyard-Provider"))
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/v1/messages answers %d", res.StatusCode)
		}
		time.Sleep(100 * time.Millisecond)
	}
	db := s.sql(t)
	for deadline := time.Now().Add(10 * time.Second); ; {
		var n int
		_ = db.QueryRow(`SELECT count(*) FROM call_logs WHERE request_id = $1`, requestID).Scan(&n)
		if n == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the Messages call has no call-log row")
		}
		time.Sleep(100 * time.Millisecond)
	}

	u := &ui{t: t, p: newPage(t), base: s.URL}
	u.login("admin", s.Admin)
	u.goto_("/call-logs")
	u.selectOption(u.id("calllog-filter-endpoint"), "messages", "front-door filter")
	u.click(u.id("calllog-filter-submit"), "search")
	row := u.id("calllog-row-" + requestID)
	u.see(row, "the Messages call in the results")
	if door := u.text(row.GetByTestId("calllog-endpoint"), "front door cell"); !strings.Contains(door, "messages") {
		t.Fatalf("front door cell %q", door)
	}
	u.click(row.GetByTestId("calllog-link"), "open the call")
	if door := u.text(u.id("calllog-field-endpoint"), "front door field"); !strings.Contains(door, "messages") {
		t.Fatalf("front door field %q", door)
	}
	steps := u.id("trail-step")
	if n, _ := steps.Count(); n != 2 {
		t.Fatalf("%d trail steps, want the failed Anthropic attempt and the served OpenAI one", n)
	}
	if o, _ := steps.Nth(0).GetAttribute("data-outcome"); o != "failed" {
		t.Fatalf("first step %q", o)
	}
	if o, _ := steps.Nth(1).GetAttribute("data-outcome"); o != "ok" {
		t.Fatalf("second step %q", o)
	}
	if txt := u.text(steps.Nth(0), "first step"); !strings.Contains(txt, "claude-vendor") {
		t.Fatalf("first step %q", txt)
	}
}
