package store_test

import (
	"context"
	"strings"
	"testing"

	"switchyard/routing/config"
	"switchyard/store"
	"switchyard/store/storetest"
)

// A route group's trace_content switch is versioned: saved in the draft,
// published in the text, restored by a rollback and kept by export →
// import.
func TestTraceContentSwitchRoundTrip(t *testing.T) {
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
	if g.TraceContent {
		t.Fatal("a new group exports content")
	}
	g.TraceContent = true
	if err := st.UpdateRouteGroup(ctx, s.group, g); err != nil {
		t.Fatal(err)
	}
	v1, err := st.Publish(ctx, store.PublishInput{Author: "a", Message: "content on", Check: check})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(v1.Version.Snapshot, "trace_content: true") {
		t.Fatalf("published text lacks the switch:\n%s", v1.Version.Snapshot)
	}
	draft, _, _ := st.Draft(ctx)
	text, err := config.Encode(draft)
	if err != nil {
		t.Fatal(err)
	}

	g = group()
	g.TraceContent = false
	if err := st.UpdateRouteGroup(ctx, s.group, g); err != nil {
		t.Fatal(err)
	}
	if group().TraceContent {
		t.Fatal("the switch stayed on after the update")
	}
	if _, err := st.Publish(ctx, store.PublishInput{Author: "a", Message: "content off", Check: check}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Publish(ctx, store.PublishInput{Author: "a", Message: "back", RollbackTo: v1.Version.Number, Check: check}); err != nil {
		t.Fatal(err)
	}
	if !group().TraceContent {
		t.Fatal("the rollback did not restore the switch")
	}

	g = group()
	g.TraceContent = false
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
	if !group().TraceContent {
		t.Fatal("import did not restore the switch")
	}
}
