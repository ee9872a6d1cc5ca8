package config

import (
	"testing"
	"time"
)

func TestLiveKeyState(t *testing.T) {
	now := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name string
		k    LiveKey
		want KeyState
	}{
		{"no terms", LiveKey{}, KeyValid},
		{"expires later", LiveKey{ExpiresAt: now.Add(time.Second)}, KeyValid},
		{"expires now", LiveKey{ExpiresAt: now}, KeyExpired},
		{"in grace", LiveKey{RevokeAt: now.Add(time.Nanosecond)}, KeyValid},
		{"grace over", LiveKey{RevokeAt: now}, KeyRotatedOut},
		{"expired before the grace ended", LiveKey{ExpiresAt: now.Add(-time.Hour), RevokeAt: now.Add(-time.Minute)}, KeyExpired},
		{"grace ended before expiry", LiveKey{ExpiresAt: now.Add(-time.Minute), RevokeAt: now.Add(-time.Hour)}, KeyRotatedOut},
		{"grace over, expiry later", LiveKey{ExpiresAt: now.Add(time.Hour), RevokeAt: now.Add(-time.Hour)}, KeyRotatedOut},
	} {
		if got := tc.k.State(now); got != tc.want {
			t.Errorf("%s: state %d, want %d", tc.name, got, tc.want)
		}
	}
}

func TestKeyScope(t *testing.T) {
	var none KeyScope
	if !none.AllowsTier(TierDeep) || !none.AllowsModel("gpt") || !none.AllowsDoor(DoorEmbeddings) || !none.Empty() {
		t.Fatal("an empty scope limits nothing")
	}
	s := KeyScope{Tiers: []TierName{TierFast}, Doors: []Door{DoorChat}}
	if !s.AllowsTier(TierFast) || s.AllowsTier(TierDeep) {
		t.Fatal("tiers")
	}
	if s.AllowsModel("gpt") {
		t.Fatal("a scope naming tiers only must refuse explicit logic models")
	}
	if !s.AllowsDoor(DoorChat) || s.AllowsDoor(DoorResponses) {
		t.Fatal("doors")
	}
	f := FieldErrors{}
	ValidateKeyScope(KeyScope{Tiers: []TierName{"huge"}, Models: []string{"a b"}, Doors: []Door{"files"}}, f)
	if len(f) != 3 {
		t.Fatalf("field errors: %v", f)
	}
}
