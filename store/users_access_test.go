package store_test

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"switchyard/routing/config"
	"switchyard/store"
	"switchyard/store/storetest"
)

// One rule ends a user's access, whatever the cause: after each, every
// console session of that user is deleted, every admin API token they
// created (admin and viewer role alike) is refused, and their access epoch
// has moved on so a session written back by a request in flight is refused
// too; another user's sessions and tokens are untouched.
func TestEveryCauseEndsSessionsAndTokens(t *testing.T) {
	st, _ := storetest.New(t)
	ctx := context.Background()
	must := storetest.Must[int64](t)
	causes := []struct {
		cause store.AccessEndCause
		end   func(id int64, name string) error
	}{
		{store.AccessEndDisabled, func(id int64, _ string) error { _, err := st.DisableUser(ctx, id); return err }},
		{store.AccessEndDemoted, func(id int64, _ string) error { _, err := st.SetUserRole(ctx, id, store.RoleViewer); return err }},
		{store.AccessEndPasswordReset, func(id int64, _ string) error {
			_, err := st.ResetPassword(ctx, id, "console-reset-1")
			return err
		}},
		{store.AccessEndPasswordReset + " (command)", func(_ int64, name string) error {
			_, err := st.ResetPasswordByName(ctx, name, "command-reset-1", true)
			return err
		}},
		{store.AccessEndRemovedByIdentityProvider, func(id int64, _ string) error {
			return st.EndUserAccess(ctx, id, store.AccessEndRemovedByIdentityProvider)
		}},
	}
	keep := must(st.CreateUser(ctx, "keeper", "password-for-tests", store.RoleAdmin))
	keepTok, _, _ := st.CreateAdminToken(ctx, "keeper-ci", store.RoleAdmin, "keeper")
	session(t, st, keep, "sess-keeper")
	for i, c := range causes {
		t.Run(string(c.cause), func(t *testing.T) {
			name := "user" + strconv.Itoa(i)
			id := must(st.CreateUser(ctx, name, "password-for-tests", store.RoleAdmin))
			before, _ := st.UserByID(ctx, id)
			session(t, st, id, name+"-a")
			session(t, st, id, name+"-b")
			adminTok, _, _ := st.CreateAdminToken(ctx, name+"-ci", store.RoleAdmin, name)
			viewerTok, _, _ := st.CreateAdminToken(ctx, name+"-read", store.RoleViewer, name)

			if err := c.end(id, name); err != nil {
				t.Fatal(err)
			}
			var left int
			if err := st.DB().QueryRowContext(ctx, `SELECT count(*) FROM sessions WHERE token LIKE $1`, name+"-%").Scan(&left); err != nil || left != 0 {
				t.Fatalf("%d sessions of %s left, %v", left, name, err)
			}
			for role, tok := range map[string]string{"admin": adminTok, "viewer": viewerTok} {
				if _, err := st.AuthenticateAdminToken(ctx, tok); !errors.Is(err, store.ErrBadLogin) {
					t.Fatalf("their %s-role token still works: %v", role, err)
				}
			}
			var epoch int64
			if err := st.DB().QueryRowContext(ctx, `SELECT access_epoch FROM users WHERE id=$1`, id).Scan(&epoch); err != nil || epoch != before.AccessEpoch+1 {
				t.Fatalf("access epoch %d → %d, %v", before.AccessEpoch, epoch, err)
			}
			if _, err := st.AuthenticateAdminToken(ctx, keepTok); err != nil {
				t.Fatalf("another user's token was revoked: %v", err)
			}
			var kept int
			if err := st.DB().QueryRowContext(ctx, `SELECT count(*) FROM sessions WHERE token='sess-keeper'`).Scan(&kept); err != nil || kept != 1 {
				t.Fatalf("another user's session: %d, %v", kept, err)
			}
		})
	}

	// Raising a role, or keeping it, ends nothing; an unknown cause or user
	// is refused.
	v := must(st.CreateUser(ctx, "viewer", "password-for-tests", store.RoleViewer))
	session(t, st, v, "sess-viewer")
	vTok, _, _ := st.CreateAdminToken(ctx, "viewer-read", store.RoleViewer, "viewer")
	for _, role := range []string{store.RoleViewer, store.RoleAdmin, store.RoleAdmin} {
		if c, err := st.SetUserRole(ctx, v, role); err != nil || c.SessionsEnded != 0 || c.TokensRevoked != 0 {
			t.Fatalf("to %s: %+v, %v", role, c, err)
		}
	}
	if _, err := st.AuthenticateAdminToken(ctx, vTok); err != nil {
		t.Fatalf("a promotion revoked the token: %v", err)
	}
	if u, _ := st.UserByID(ctx, v); u.AccessEpoch != 0 {
		t.Fatalf("a promotion moved the access epoch to %d", u.AccessEpoch)
	}
	if err := st.EndUserAccess(ctx, v, "bored"); err == nil {
		t.Fatal("an unknown cause was accepted")
	}
	if err := st.EndUserAccess(ctx, 999999, store.AccessEndDisabled); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("unknown user: %v", err)
	}
}

// A password the user did not choose must be changed: the generated first
// admin's, one an admin reset in the console, one the reset-password
// command generated (not one its operator typed). Changing it needs the
// rules, both entries equal and a new password, and clears the mark
// without ending the user's sessions.
func TestMustChangePassword(t *testing.T) {
	st, _ := storetest.New(t)
	ctx := context.Background()
	must := storetest.Must[int64](t)
	mustChange := func(id int64) bool {
		u, err := st.UserByID(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		return u.MustChangePassword
	}
	first := must(st.CreateUserToChangePassword(ctx, "admin", "generated-pass-1", store.RoleAdmin))
	ops := must(st.CreateUser(ctx, "ops", "chosen-password-1", store.RoleAdmin))
	if !mustChange(first) || mustChange(ops) {
		t.Fatalf("after creation: first %v, ops %v", mustChange(first), mustChange(ops))
	}
	if u, err := st.Login(ctx, "admin", "generated-pass-1"); err != nil || !u.MustChangePassword {
		t.Fatalf("login of the first admin: %+v, %v", u, err)
	}
	if _, err := st.ResetPasswordByName(ctx, "ops", "typed-on-stdin-1", false); err != nil || mustChange(ops) {
		t.Fatalf("typed on the command's stdin: must change %v, %v", mustChange(ops), err)
	}
	if _, err := st.ResetPasswordByName(ctx, "ops", "command-generated", true); err != nil || !mustChange(ops) {
		t.Fatalf("generated by the command: must change %v, %v", mustChange(ops), err)
	}
	if err := st.ChangePassword(ctx, ops, "ops-own-password", ""); err == nil {
		t.Fatal("a change without the second entry was accepted")
	}
	if _, err := st.ResetPassword(ctx, ops, "console-reset-1"); err != nil || !mustChange(ops) {
		t.Fatalf("console reset: must change %v, %v", mustChange(ops), err)
	}

	session(t, st, ops, "sess-ops")
	for _, bad := range []struct{ pw, again, field string }{
		{"short", "short", "password"},
		{"ops-own-password", "ops-own-passwore", "password_again"},
		{"console-reset-1", "console-reset-1", "password"},
	} {
		err := st.ChangePassword(ctx, ops, bad.pw, bad.again)
		if fe, ok := fieldErrs(err); !ok || fe[bad.field] == "" {
			t.Fatalf("change to %q/%q: %v, want an error on %s", bad.pw, bad.again, err, bad.field)
		}
		if !mustChange(ops) {
			t.Fatal("a refused change cleared the mark")
		}
	}
	if err := st.ChangePassword(ctx, ops, "ops-own-password", "ops-own-password"); err != nil || mustChange(ops) {
		t.Fatalf("change: must change %v, %v", mustChange(ops), err)
	}
	if _, err := st.Login(ctx, "ops", "ops-own-password"); err != nil {
		t.Fatalf("the chosen password: %v", err)
	}
	var n int
	if err := st.DB().QueryRowContext(ctx, `SELECT count(*) FROM sessions WHERE token='sess-ops'`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("the user's own change ended their session: %d, %v", n, err)
	}
	if u, _ := st.UserByID(ctx, ops); u.AccessEpoch != 3 {
		t.Fatalf("access epoch %d after three resets and one change, want 3", u.AccessEpoch)
	}
}

// session stores a console session for user as scs and login do.
func session(t *testing.T, st *store.Store, user int64, token string) {
	t.Helper()
	exp := time.Now().Add(time.Hour)
	if _, err := st.DB().ExecContext(context.Background(), `INSERT INTO sessions (token, data, expiry) VALUES ($1, 'x', $2)`, token, exp); err != nil {
		t.Fatal(err)
	}
	if err := st.RecordSession(context.Background(), user, token, exp); err != nil {
		t.Fatal(err)
	}
}

// fieldErrs is a validation error's fields.
func fieldErrs(err error) (config.FieldErrors, bool) {
	var ve *config.ValidationError
	if errors.As(err, &ve) {
		return ve.Fields, true
	}
	return nil, false
}
