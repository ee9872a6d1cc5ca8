package store_test

import (
	"context"
	"testing"

	"switchyard/store"
	"switchyard/store/storetest"
)

// The configuration epoch grows with every publish and every caller-key
// creation and revocation (the triggers of migration 0020), so a cached
// copy read before a revocation is always older than the epoch after it;
// an unrelated change (a console user) leaves it alone.
func TestConfigEpochGrowsOnPublishAndKeyChanges(t *testing.T) {
	st, _ := storetest.New(t)
	ctx := context.Background()
	seed(t, st)
	epoch := func() int64 {
		t.Helper()
		e, err := st.ConfigEpoch(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	last := epoch()
	grew := func(what string) {
		t.Helper()
		if e := epoch(); e <= last {
			t.Fatalf("%s: the epoch stayed at %d", what, e)
		} else {
			last = e
		}
	}
	if _, err := st.Publish(ctx, store.PublishInput{Author: "alice", Message: "first", Check: check}); err != nil {
		t.Fatal(err)
	}
	grew("publish")
	_, key, err := st.CreateCallerKey(ctx, "contracts", "ci", "alice")
	if err != nil {
		t.Fatal(err)
	}
	grew("key created")
	if err := st.RevokeCallerKey(ctx, key.ID, "alice"); err != nil {
		t.Fatal(err)
	}
	grew("key revoked")
	if _, err := st.CreateUser(ctx, "ops", "password-for-tests", store.RoleAdmin); err != nil {
		t.Fatal(err)
	}
	if e := epoch(); e != last {
		t.Fatalf("creating a console user moved the epoch %d → %d", last, e)
	}
}
