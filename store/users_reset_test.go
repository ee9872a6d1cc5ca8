package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"switchyard/store"
	"switchyard/store/rows"
	"switchyard/store/storetest"
)

// A password reset replaces the hash, ends that user's sessions and revokes
// the admin API tokens they created (no one else's), in one transaction; a disabled or unknown user and a short password are
// refused.
func TestResetPasswordEndsThatUsersSessionsAndTokens(t *testing.T) {
	st, _ := storetest.New(t)
	ctx := context.Background()
	must := storetest.Must[int64](t)
	ops := must(st.CreateUser(ctx, "ops", "old-password-1", store.RoleAdmin))
	keep := must(st.CreateUser(ctx, "keeper", "password-for-tests", store.RoleAdmin))
	exp := time.Now().Add(time.Hour)
	for tok, uid := range map[string]int64{"sess-ops": ops, "sess-keep": keep} {
		if _, err := st.DB().ExecContext(ctx, `INSERT INTO sessions (token, data, expiry) VALUES ($1, 'x', $2)`, tok, exp); err != nil {
			t.Fatal(err)
		}
		if err := st.RecordSession(ctx, uid, tok, exp); err != nil {
			t.Fatal(err)
		}
	}

	opsTok, _, _ := st.CreateAdminToken(ctx, "ops-ci", store.RoleAdmin, "ops")
	opsRead, _, _ := st.CreateAdminToken(ctx, "ops-read", store.RoleViewer, "ops")
	keepTok, _, _ := st.CreateAdminToken(ctx, "keeper-ci", store.RoleAdmin, "keeper")

	r, err := st.ResetPasswordByName(ctx, "ops", "new-password-2", true)
	if err != nil || r.UserID != ops || r.SessionsEnded != 1 || r.TokensRevoked != 2 {
		t.Fatalf("reset %+v, %v", r, err)
	}
	for name, tok := range map[string]string{"admin": opsTok, "viewer": opsRead} {
		if _, err := st.AuthenticateAdminToken(ctx, tok); !errors.Is(err, store.ErrBadLogin) {
			t.Fatalf("the reset user's %s token still works: %v", name, err)
		}
	}
	if _, err := st.AuthenticateAdminToken(ctx, keepTok); err != nil {
		t.Fatalf("another user's token was revoked: %v", err)
	}
	if _, err := st.Login(ctx, "ops", "old-password-1"); !errors.Is(err, store.ErrBadLogin) {
		t.Fatalf("old password after the reset: %v", err)
	}
	if _, err := st.Login(ctx, "ops", "new-password-2"); err != nil {
		t.Fatalf("new password: %v", err)
	}
	var left string
	if err := st.DB().QueryRowContext(ctx, `SELECT string_agg(token, ',') FROM sessions`).Scan(&left); err != nil || left != "sess-keep" {
		t.Fatalf("sessions left %q, %v", left, err)
	}

	if _, err := st.ResetPassword(ctx, keep, "short"); err == nil {
		t.Fatal("a 5-character password was accepted")
	}
	if _, err := st.ResetPasswordByName(ctx, "nobody", "new-password-2", true); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("unknown user: %v", err)
	}
	if _, err := st.DisableUser(ctx, keep); err != nil {
		t.Fatal(err)
	}
	if _, err := st.ResetPassword(ctx, keep, "new-password-3"); !errors.Is(err, store.ErrUserDisabled) {
		t.Fatalf("disabled user: %v", err)
	}
	if a, b := rows.RandomPassword(), rows.RandomPassword(); a == b || len(a) != 23 || rows.ValidatePassword(a).Err() != nil {
		t.Fatalf("random passwords %q %q", a, b)
	}
}

// Becoming a viewer ends the user's access (EndUserAccess): every admin API
// token they created, admin or viewer role, is revoked, and not other
// users'; the role is what UserByID reads.
func TestSetUserRoleDemotionRevokesTheirTokens(t *testing.T) {
	st, _ := storetest.New(t)
	ctx := context.Background()
	must := storetest.Must[int64](t)
	ops := must(st.CreateUser(ctx, "ops", "password-for-tests", store.RoleAdmin))
	must(st.CreateUser(ctx, "keeper", "password-for-tests", store.RoleAdmin))
	adminTok, _, _ := st.CreateAdminToken(ctx, "ops-ci", store.RoleAdmin, "ops")
	viewerTok, _, _ := st.CreateAdminToken(ctx, "ops-read", store.RoleViewer, "ops")
	otherTok, _, _ := st.CreateAdminToken(ctx, "keeper-ci", store.RoleAdmin, "keeper")

	c, err := st.SetUserRole(ctx, ops, store.RoleViewer)
	if err != nil || c.Username != "ops" || c.From != store.RoleAdmin || c.To != store.RoleViewer || c.TokensRevoked != 2 {
		t.Fatalf("role change %+v, %v", c, err)
	}
	if u, err := st.UserByID(ctx, ops); err != nil || u.Role != store.RoleViewer {
		t.Fatalf("user after: %+v, %v", u, err)
	}
	for name, tok := range map[string]string{"admin": adminTok, "viewer": viewerTok} {
		if _, err := st.AuthenticateAdminToken(ctx, tok); !errors.Is(err, store.ErrBadLogin) {
			t.Fatalf("the demoted user's %s token: %v", name, err)
		}
	}
	if _, err := st.AuthenticateAdminToken(ctx, otherTok); err != nil {
		t.Fatalf("another user's token: %v", err)
	}
	if c, err := st.SetUserRole(ctx, ops, store.RoleAdmin); err != nil || c.TokensRevoked != 0 || c.From != store.RoleViewer {
		t.Fatalf("promotion %+v, %v", c, err)
	}
	if _, err := st.SetUserRole(ctx, ops, "root"); err == nil {
		t.Fatal("role root accepted")
	}
	if _, err := st.SetUserRole(ctx, 9999, store.RoleViewer); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("unknown user: %v", err)
	}
}
