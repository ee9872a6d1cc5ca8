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
	"switchyard/store/storetest"
)

// TestTwoProcessesSwitchVersionWithinTwoSeconds publishes through one
// server process and measures when the other one serves the new version.
func TestTwoProcessesSwitchVersionWithinTwoSeconds(t *testing.T) {
	dsn := storetest.NewDatabase(t)
	fakeAddr := freePort(t)
	start(t, "fakeupstream", nil, "-addr", fakeAddr)
	st := seedPublished(t, dsn, "http://"+fakeAddr)
	ctx := context.Background()
	callerKey, _, err := st.CreateCallerKey(ctx, "app", "reload", "e2e")
	if err != nil {
		t.Fatal(err)
	}
	token, _, err := st.CreateAdminToken(ctx, "ci", store.RoleAdmin, "e2e")
	if err != nil {
		t.Fatal(err)
	}
	a := startServer(t, dsn)
	b := startServer(t, dsn)
	version := func(s *Server) int {
		req, _ := http.NewRequest(http.MethodGet, s.URL+"/v1/models", nil)
		req.Header.Set("Authorization", "Bearer "+callerKey)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			return -1
		}
		res.Body.Close()
		n, _ := strconv.Atoi(res.Header.Get("X-Switchyard-Config-Version"))
		return n
	}
	for _, s := range []*Server{a, b} {
		deadline := time.Now().Add(5 * time.Second)
		for version(s) != 1 {
			if time.Now().After(deadline) {
				t.Fatalf("%s does not serve version 1", s.URL)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	// Change the draft, then publish through A's admin API.
	snap, _, _ := st.Draft(ctx)
	if err := st.UpdateTier(ctx, snap.RouteGroups[0].Tiers[0].ID, 9000, 3000); err != nil {
		t.Fatal(err)
	}
	var worst time.Duration
	for round := 2; round <= 4; round++ {
		if round > 2 {
			if err := st.UpdateTier(ctx, snap.RouteGroups[0].Tiers[0].ID, 9000+round, 3000); err != nil {
				t.Fatal(err)
			}
		}
		req, _ := http.NewRequest(http.MethodPost, a.URL+"/admin/api/publish", strings.NewReader(`{"message":"reload round"}`))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		if err != nil || res.StatusCode != http.StatusCreated {
			t.Fatalf("publish on A: %v %v", err, res)
		}
		res.Body.Close()
		published := time.Now()
		for version(b) != round {
			if time.Since(published) > 2*time.Second {
				t.Fatalf("B still serves version %d 2 s after A published %d", version(b), round)
			}
			time.Sleep(5 * time.Millisecond)
		}
		if el := time.Since(published); el > worst {
			worst = el
		}
	}
	t.Logf("the other process served each new version within %v (worst of 3)", worst.Round(time.Millisecond))
	_ = config.TierFast
}
