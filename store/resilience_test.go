package store_test

import (
	"context"
	"strings"
	"testing"

	"switchyard/routing/config"
	"switchyard/store"
	"switchyard/store/storetest"
)

// A route group's retry budget and degradation ladder travel with it:
// draft → publish → rollback restores them, and export → import gives
// the same text.
func TestResilienceSettingsRoundTrip(t *testing.T) {
	t.Parallel()
	st, _ := storetest.New(t)
	ctx := context.Background()
	s := seed(t, st)
	group := func() config.RouteGroup {
		snap, _, err := st.Draft(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return snap.RouteGroups[0]
	}
	g := group()
	if g.RetryBudget != nil || g.Degradation != nil {
		t.Fatalf("a new group has settings: %+v %+v", g.RetryBudget, g.Degradation)
	}
	g.RetryBudget = &config.RetryBudget{Percent: 10, MinPerS: 1, WindowMS: 5000}
	g.Degradation = &config.Degradation{
		StepDown:     []config.StepDown{{Tier: config.TierDeep, To: config.TierStandard, P95MS: 9000, ErrorPercent: 40}},
		Cache:        &config.Cache{Scope: config.CacheScopeCaller, TTLMS: 120000, MaxEntries: 50},
		StaticAnswer: "Our assistant is unavailable; please try again shortly.",
	}
	if err := st.UpdateRouteGroup(ctx, s.group, g); err != nil {
		t.Fatal(err)
	}
	v1, err := st.Publish(ctx, store.PublishInput{Author: "a", Message: "ladder on", Check: check})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"retry_budget:", "percent: 10", "step_down:", "static_answer: Our assistant", "max_entries: 50"} {
		if !strings.Contains(v1.Version.Snapshot, want) {
			t.Fatalf("published text lacks %q:\n%s", want, v1.Version.Snapshot)
		}
	}

	// Invalid settings are refused with the field named, and nothing changes.
	bad := group()
	bad.Degradation.StepDown[0].To = config.TierDeep
	if err := st.UpdateRouteGroup(ctx, s.group, bad); err == nil || !strings.Contains(err.Error(), "degradation.step_down[0].to") {
		t.Fatalf("a step-down to the same tier: %v", err)
	}

	// Change and clear, publish v2; rolling back to v1 restores the settings.
	g = group()
	g.RetryBudget, g.Degradation = &config.RetryBudget{Off: true}, nil
	if err := st.UpdateRouteGroup(ctx, s.group, g); err != nil {
		t.Fatal(err)
	}
	if got := group(); got.Degradation != nil || got.RetryBudget == nil || !got.RetryBudget.Off {
		t.Fatalf("after the update: %+v %+v", got.RetryBudget, got.Degradation)
	}
	if _, err := st.Publish(ctx, store.PublishInput{Author: "a", Message: "ladder off", Check: check}); err != nil {
		t.Fatal(err)
	}
	v3, err := st.Publish(ctx, store.PublishInput{Author: "a", Message: "back", RollbackTo: v1.Version.Number, Check: check})
	if err != nil {
		t.Fatal(err)
	}
	if v3.Version.Snapshot != v1.Version.Snapshot {
		t.Fatal("the rollback's text differs from v1")
	}
	if got := group(); got.Degradation == nil || got.Degradation.Cache == nil || got.Degradation.Cache.MaxEntries != 50 || got.RetryBudget.Percent != 10 {
		t.Fatalf("the rollback did not restore the draft's settings: %+v %+v", got.RetryBudget, got.Degradation)
	}

	// Export → import (after the draft moved on) gives the same text back.
	draft, _, _ := st.Draft(ctx)
	text, err := config.Encode(draft)
	if err != nil {
		t.Fatal(err)
	}
	g = group()
	g.RetryBudget, g.Degradation = nil, nil
	if err := st.UpdateRouteGroup(ctx, s.group, g); err != nil {
		t.Fatal(err)
	}
	imported, err := config.Decode(text)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.ReplaceDraft(ctx, imported); err != nil {
		t.Fatal(err)
	}
	draft, _, _ = st.Draft(ctx)
	if again, _ := config.Encode(draft); string(again) != string(text) {
		t.Fatalf("import round trip differs:\n%s\n---\n%s", again, text)
	}
}
