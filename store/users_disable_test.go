package store_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"switchyard/store"
	"switchyard/store/storetest"
)

// TestDisableUserRevokesSessionsAndTokens: disabling a user deletes their
// console sessions and revokes the admin API tokens they own, in one
// transaction; other users' sessions and tokens are untouched, and a token
// whose owner is disabled is refused even if its revocation were undone.
func TestDisableUserRevokesSessionsAndTokens(t *testing.T) {
	st, _ := storetest.New(t)
	ctx := context.Background()
	must := storetest.Must[int64](t)
	ops := must(st.CreateUser(ctx, "ops", "password-for-tests", store.RoleAdmin))
	keep := must(st.CreateUser(ctx, "keeper", "password-for-tests", store.RoleAdmin))

	opsTok, _, err := st.CreateAdminToken(ctx, "ops-ci", store.RoleAdmin, "ops")
	if err != nil {
		t.Fatal(err)
	}
	keepTok, _, _ := st.CreateAdminToken(ctx, "keeper-ci", store.RoleAdmin, "keeper")
	scriptTok, _, _ := st.CreateAdminToken(ctx, "ownerless", store.RoleAdmin, "a-script")

	// Two sessions of ops (as scs stores them), one of keeper.
	exp := time.Now().Add(time.Hour)
	for tok, uid := range map[string]int64{"sess-ops-1": ops, "sess-ops-2": ops, "sess-keep": keep} {
		if _, err := st.DB().ExecContext(ctx, `INSERT INTO sessions (token, data, expiry) VALUES ($1, 'x', $2)`, tok, exp); err != nil {
			t.Fatal(err)
		}
		if err := st.RecordSession(ctx, uid, tok, exp); err != nil {
			t.Fatal(err)
		}
	}

	d, err := st.DisableUser(ctx, ops)
	if err != nil {
		t.Fatal(err)
	}
	if d.Username != "ops" || d.SessionsEnded != 2 || d.TokensRevoked != 1 {
		t.Fatalf("disabled %+v, want ops with 2 sessions and 1 token", d)
	}
	var sessions string
	if err := st.DB().QueryRowContext(ctx, `SELECT string_agg(token, ',' ORDER BY token) FROM sessions`).Scan(&sessions); err != nil {
		t.Fatal(err)
	}
	if sessions != "sess-keep" {
		t.Fatalf("sessions left: %v", sessions)
	}
	if _, err := st.AuthenticateAdminToken(ctx, opsTok); !errors.Is(err, store.ErrBadLogin) {
		t.Fatalf("disabled user's token: %v, want ErrBadLogin", err)
	}
	for name, tok := range map[string]string{"another user's": keepTok, "an ownerless": scriptTok} {
		if _, err := st.AuthenticateAdminToken(ctx, tok); err != nil {
			t.Fatalf("%s token was refused: %v", name, err)
		}
	}
	toks, _ := st.AdminTokens(ctx)
	for _, tk := range toks {
		if (tk.Name == "ops-ci") != (tk.RevokedAt != nil) {
			t.Errorf("token %s revoked=%v", tk.Name, tk.RevokedAt != nil)
		}
	}

	// Defence in depth: even un-revoked by hand, the owner check refuses it.
	if _, err := st.DB().ExecContext(ctx, `UPDATE admin_tokens SET revoked_at=NULL`); err != nil {
		t.Fatal(err)
	}
	if _, err := st.AuthenticateAdminToken(ctx, opsTok); !errors.Is(err, store.ErrBadLogin) {
		t.Fatalf("token of a disabled owner authenticates once un-revoked: %v", err)
	}

	if _, err := st.DisableUser(ctx, ops); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("disabling twice: %v, want ErrNotFound", err)
	}
	if _, err := st.DisableUser(ctx, 999999); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("disabling an unknown user: %v, want ErrNotFound", err)
	}
}

func TestAuthenticateAdminTokenRefusesJunkWithoutError(t *testing.T) {
	st, _ := storetest.New(t)
	ctx := context.Background()
	for _, tok := range []string{"", "sya-\x00nul", "sya-\xff\xfe", strings.Repeat("a", 100_000)} {
		if _, err := st.AuthenticateAdminToken(ctx, tok); !errors.Is(err, store.ErrBadLogin) {
			t.Errorf("token %.20q: %v, want ErrBadLogin", tok, err)
		}
	}
}
