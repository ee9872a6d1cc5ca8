package store_test

import (
	"context"
	"testing"

	"switchyard/routing/config"
	"switchyard/store"
	"switchyard/store/storetest"
)

// liveAuth compiles the live version with the stored caller keys, as an
// instance does, and authenticates key against it.
func liveAuth(t *testing.T, st *store.Store, key string) (caller, absent string) {
	t.Helper()
	ctx := context.Background()
	n, text, err := st.LiveSnapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	snap, err := config.Decode(text)
	if err != nil {
		t.Fatal(err)
	}
	keys, err := st.LiveCallerKeys(ctx)
	if err != nil {
		t.Fatal(err)
	}
	secrets := map[int64]string{}
	for _, p := range snap.Providers {
		for _, k := range p.Keys {
			secrets[k.ID] = "sk-test"
		}
	}
	rt, err := config.Compile(n, snap, config.Credentials{ProviderKeySecrets: secrets, CallerKeys: keys})
	if err != nil {
		t.Fatal(err)
	}
	c, k := rt.Authenticate(key)
	if c != nil {
		return c.Name, ""
	}
	return "", k.Caller
}

// TestCallerKeysOutliveVersionsWithoutTheirCaller: a key belongs to its
// caller's name, outside the draft. A version without the caller suspends
// it (kept, not deleted), a rollback that brings the caller back restores
// it, a published rename takes it along, and making or revoking it never
// touches the draft.
func TestCallerKeysOutliveVersionsWithoutTheirCaller(t *testing.T) {
	st, _ := storetest.New(t)
	ctx := context.Background()
	s := seed(t, st)
	if _, err := st.Publish(ctx, store.PublishInput{Author: "alice", Message: "v1", Check: check}); err != nil {
		t.Fatal(err)
	}
	rev, _ := st.DraftRevision(ctx)
	plain, key, err := st.CreateCallerKey(ctx, "contracts", "ci", "alice")
	if err != nil {
		t.Fatal(err)
	}
	if now, _ := st.DraftRevision(ctx); now != rev {
		t.Fatalf("making a key moved the draft revision %d → %d", rev, now)
	}
	if _, differs, _ := st.DraftState(ctx); differs {
		t.Fatal("making a key made the draft differ from live")
	}
	if c, _ := liveAuth(t, st, plain); c != "contracts" {
		t.Fatalf("new key authenticates as %q", c)
	}

	// v2 removes the caller: the key is kept, suspended.
	if err := st.DeleteCaller(ctx, s.caller); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Publish(ctx, store.PublishInput{Author: "alice", Message: "v2 without contracts", Check: check}); err != nil {
		t.Fatal(err)
	}
	if c, absent := liveAuth(t, st, plain); c != "" || absent != "contracts" {
		t.Fatalf("key of a removed caller: caller %q absent %q", c, absent)
	}
	if keys, _ := st.CallerKeys(ctx, "contracts"); len(keys) != 1 || keys[0].RevokedAt != nil || keys[0].CreatedBy != "alice" {
		t.Fatalf("the removed caller's keys: %+v", keys)
	}

	// Rolling back to v1 brings the caller, and so its key, back.
	out, err := st.Publish(ctx, store.PublishInput{Author: "bob", Message: "back to v1", RollbackTo: 1, Check: check})
	if err != nil {
		t.Fatal(err)
	}
	if c, _ := liveAuth(t, st, plain); c != "contracts" {
		t.Fatalf("after the rollback (v%d) the key authenticates as %q", out.Version.Number, c)
	}

	// A published rename takes the keys along; an unpublished one does not.
	snap, _, _ := st.Draft(ctx)
	cl := snap.Callers[0]
	cl.Name = "legal-bot"
	if err := st.UpdateCaller(ctx, cl.ID, cl); err != nil {
		t.Fatal(err)
	}
	if c, _ := liveAuth(t, st, plain); c != "contracts" {
		t.Fatalf("a draft rename changed the live key owner: %q", c)
	}
	if _, err := st.Publish(ctx, store.PublishInput{Author: "bob", Message: "rename", Check: check}); err != nil {
		t.Fatal(err)
	}
	if c, _ := liveAuth(t, st, plain); c != "legal-bot" {
		t.Fatalf("after a published rename the key authenticates as %q", c)
	}

	// Revoking is audited, immediate and leaves the draft alone.
	rev, _ = st.DraftRevision(ctx)
	if err := st.RevokeCallerKey(ctx, key.ID, "carol"); err != nil {
		t.Fatal(err)
	}
	if now, _ := st.DraftRevision(ctx); now != rev {
		t.Fatal("revoking a key moved the draft revision")
	}
	keys, _ := st.CallerKeys(ctx, "legal-bot")
	if len(keys) != 1 || keys[0].RevokedAt == nil || keys[0].RevokedBy == nil || *keys[0].RevokedBy != "carol" {
		t.Fatalf("revoked key: %+v", keys)
	}
	if c, absent := liveAuth(t, st, plain); c != "" || absent != "" {
		t.Fatalf("a revoked key authenticates: %q %q", c, absent)
	}
}
