package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"switchyard/routing/config"
	"switchyard/store"
	"switchyard/store/storetest"
)

// TestCallerKeyLifecycle: terms reach the live key set; rotation makes a
// successor with the same terms and gives the old key a revoke instant;
// the sweep marks it revoked by rotation once that instant has passed;
// expiring keys are listed.
func TestCallerKeyLifecycle(t *testing.T) {
	st, _ := storetest.New(t)
	ctx := context.Background()
	soon := time.Now().Add(48 * time.Hour)
	plain, k, err := st.CreateCallerKeyWith(ctx, "app", store.NewCallerKey{Name: "ci", Owner: "team", ExpiresAt: &soon,
		Scope: config.KeyScope{Tiers: []config.TierName{config.TierFast}, Doors: []config.Door{config.DoorChat}}}, "alice")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := st.CreateCallerKeyWith(ctx, "app", store.NewCallerKey{Scope: config.KeyScope{Doors: []config.Door{"files"}}}, "alice"); err == nil {
		t.Fatal("an unknown front door was accepted")
	}
	live, err := st.LiveCallerKeys(ctx)
	lk := live[config.HashCallerKey(plain)]
	if err != nil || lk.ID != k.ID || lk.ExpiresAt.Sub(soon).Abs() > time.Microsecond || !lk.Scope.AllowsTier(config.TierFast) || lk.Scope.AllowsTier(config.TierDeep) || lk.Scope.AllowsDoor(config.DoorEmbeddings) {
		t.Fatalf("live key %+v %v", lk, err)
	}
	exp, err := st.CallerKeysExpiringWithin(ctx, 72*time.Hour)
	if err != nil || len(exp) != 1 || exp[0].ID != k.ID {
		t.Fatalf("expiring within 72h: %+v %v", exp, err)
	}
	if exp, _ := st.CallerKeysExpiringWithin(ctx, time.Hour); len(exp) != 0 {
		t.Fatalf("expiring within 1h: %+v", exp)
	}

	r, err := st.RotateCallerKey(ctx, k.ID, time.Hour, "bob")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.RotateCallerKey(ctx, k.ID, time.Hour, "bob"); err == nil {
		t.Fatal("a rotated key was rotated again")
	}
	if _, err := st.RotateCallerKey(ctx, 999999, time.Hour, "bob"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("rotating a missing key: %v", err)
	}
	live, _ = st.LiveCallerKeys(ctx)
	oldK, newK := live[config.HashCallerKey(plain)], live[config.HashCallerKey(r.Plaintext)]
	if !oldK.RevokeAt.Equal(r.RevokeAt) || time.Until(r.RevokeAt) < 59*time.Minute || newK.ID != r.New.ID || newK.ExpiresAt.IsZero() || !newK.Scope.AllowsTier(config.TierFast) || newK.Scope.AllowsTier(config.TierDeep) {
		t.Fatalf("after rotation: old %+v new %+v", oldK, newK)
	}
	if n, err := st.SweepRotatedKeys(ctx); err != nil || n != 0 {
		t.Fatalf("sweep inside the grace: %d %v", n, err)
	}
	if _, err := st.DB().Exec(`UPDATE caller_keys SET revoke_at = now() - interval '1 second' WHERE id=$1`, k.ID); err != nil {
		t.Fatal(err)
	}
	if n, err := st.SweepRotatedKeys(ctx); err != nil || n != 1 {
		t.Fatalf("sweep after the grace: %d %v", n, err)
	}
	keys, _ := st.CallerKeys(ctx, "app")
	if keys[0].RevokedAt == nil || keys[0].RevokedBy == nil || *keys[0].RevokedBy != store.RevokedByRotation {
		t.Fatalf("swept key %+v", keys[0])
	}
	if live, _ = st.LiveCallerKeys(ctx); len(live) != 1 {
		t.Fatalf("%d live keys after the sweep, want the successor only", len(live))
	}
}

// TestUseLogBatchesLastUse: uses are kept in memory until a flush, the
// newest wins, and an admin token's use is written the same way.
func TestUseLogBatchesLastUse(t *testing.T) {
	st, _ := storetest.New(t)
	ctx := context.Background()
	_, k, err := st.CreateCallerKey(ctx, "app", "ci", "alice")
	if err != nil {
		t.Fatal(err)
	}
	tok, at, err := st.CreateAdminToken(ctx, "ci", store.RoleAdmin, "alice")
	if err != nil {
		t.Fatal(err)
	}
	u := st.NewUseLog()
	t1 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	u.CallerKeyUsed(k.ID, t1.Add(time.Minute), "10.0.0.2:5555")
	u.CallerKeyUsed(k.ID, t1, "10.0.0.1:4444") // older: ignored
	u.AdminTokenUsed(at.ID, t1, "[2001:db8::1]:443")
	if keys, _ := st.CallerKeys(ctx, "app"); keys[0].LastUsedAt != nil {
		t.Fatal("a use was written before the flush")
	}
	if err := u.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	keys, _ := st.CallerKeys(ctx, "app")
	if keys[0].LastUsedAt == nil || !keys[0].LastUsedAt.Equal(t1.Add(time.Minute)) || *keys[0].LastUsedAddr != "10.0.0.2" {
		t.Fatalf("last use %+v", keys[0])
	}
	// A flush of an older use does not move it back.
	u.CallerKeyUsed(k.ID, t1, "10.0.0.9:1")
	if err := u.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if keys, _ = st.CallerKeys(ctx, "app"); !keys[0].LastUsedAt.Equal(t1.Add(time.Minute)) {
		t.Fatalf("an older use replaced a newer one: %+v", keys[0])
	}
	got, err := st.AuthenticateAdminToken(ctx, tok)
	if err != nil || got.LastUsedAt == nil || !got.LastUsedAt.Equal(t1) || got.LastUsedAddr != "2001:db8::1" {
		t.Fatalf("admin token last use %+v %v", got, err)
	}
}
