package gateway_test

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"switchyard/routing/config"
	"switchyard/store"
	"switchyard/store/calllog"
	"switchyard/web/gateway/gatewaytest"
)

// TestGatewayThroughPgBouncer runs a whole instance with its pool behind a
// PgBouncer in transaction pooling mode and LISTEN on the direct
// connection: an admin publishes through the admin API and the change goes
// live through NOTIFY alone (the periodic check is an hour away), the data
// plane serves concurrent requests, their call logs are stored and the
// signed-in console finds them.
func TestGatewayThroughPgBouncer(t *testing.T) {
	t.Parallel()
	e := gatewaytest.New(t, gatewaytest.Options{PgBouncer: true, ReloadInterval: time.Hour})
	if e.Store.DSN() == e.DSN || e.Store.ListenDSN() != e.DSN {
		t.Fatalf("the pool should go through the pooler and LISTEN direct: pool %q, listen %q", e.Store.DSN(), e.Store.ListenDSN())
	}
	ctx := context.Background()
	b := e.Build()
	b.Provider("fake", config.ProtocolOpenAI, "", "sk-fake-key-0000-0001")
	b.Model(config.LogicModel{Code: "small", Kind: config.KindChat}, config.Deployment{Provider: "fake", UpstreamModel: "fake-small", Weight: 100, Enabled: true,
		Breaker: &config.BreakerSettings{Window: 20, MinCalls: 10, FailurePercent: 50, OpenMS: 1000, HalfOpenProbes: 1}})
	all := []config.Candidate{{LogicModel: "small", Weight: 100}}
	b.Group("default", map[config.TierName][]config.Candidate{config.TierFast: all, config.TierStandard: all, config.TierDeep: all})
	_, key := b.Caller(config.Caller{Name: "app", RouteGroup: "default"})
	e.Publish("first") // waits until this instance serves it: NOTIFY heard

	// A new caller, drafted and then published through the admin API.
	_, newKey := b.Caller(config.Caller{Name: "late", RouteGroup: "default"})
	if res, _ := post(t, e, newKey, "/v1/chat/completions", hello); res.StatusCode == http.StatusOK {
		t.Fatal("a caller that is only in the draft was served")
	}
	token, _, err := e.Store.CreateAdminToken(ctx, "ci", store.RoleAdmin, "test")
	if err != nil {
		t.Fatal(err)
	}
	res, body := apiCall(t, e, http.MethodPost, "/admin/api/publish", token, `{"message":"add late"}`)
	if res.StatusCode != http.StatusCreated {
		t.Fatalf("publish through the admin API: %d %v", res.StatusCode, body)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		res, _ := post(t, e, newKey, "/v1/chat/completions", hello)
		if res.StatusCode == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the published caller is still refused (%d) 10 s later: NOTIFY on the direct connection did not arrive", res.StatusCode)
		}
		time.Sleep(50 * time.Millisecond)
	}

	// Concurrent data-plane requests; each is logged.
	const n = 24
	var wg sync.WaitGroup
	var mu sync.Mutex
	ids := map[string]bool{}
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			k := key
			if i%2 == 1 {
				k = newKey
			}
			status, id := consoleChat(t, e, k, "standard", "hi")
			if status != http.StatusOK {
				t.Errorf("request %d: status %d", i, status)
			}
			mu.Lock()
			ids[id] = true
			mu.Unlock()
		}()
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	logged := map[string]bool{}
	rows := waitCallLogs(t, e, calllog.Filter{Caller: "late"}, n/2+1) // and the request that saw it go live
	for _, r := range append(waitCallLogs(t, e, calllog.Filter{Caller: "app"}, n/2), rows...) {
		if r.Status != calllog.StatusOK || r.LogicModel != "small" {
			t.Fatalf("call-log row: %+v", r)
		}
		logged[r.RequestID] = true
	}
	for id := range ids {
		if !logged[id] {
			t.Fatalf("request %s has no call-log row", id)
		}
	}

	// The console: a session stored through the pooler, the call-log page.
	viewer := obsLogin(t, e, "viewer", store.RoleViewer)
	res, _, page := viewer.get("/call-logs?caller=late&range=1h")
	if res.StatusCode != http.StatusOK {
		t.Fatalf("call-log page: %d", res.StatusCode)
	}
	for _, r := range rows[:3] {
		if !strings.Contains(page, r.RequestID) {
			t.Fatalf("call-log page does not list request %s", r.RequestID)
		}
	}
	if res, body := apiCall(t, e, http.MethodGet, "/admin/api/versions", token, ""); res.StatusCode != http.StatusOK {
		t.Fatalf("versions through the admin API: %d %v", res.StatusCode, body)
	}
}
