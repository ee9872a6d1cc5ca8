package store_test

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"switchyard/store"
	"switchyard/store/rows"
	"switchyard/store/storetest"
)

func ssoSettings() rows.OIDCSettingsUpdate {
	s := rows.NoOIDC()
	s.DisplayName, s.IssuerURL, s.ClientID = "Keycloak", "https://sso.example.com/realms/staff", "switchyard"
	s.AdminGroups, s.ViewerGroups = []string{"ops"}, []string{"staff"}
	return rows.OIDCSettingsUpdate{OIDCSettings: s, ClientSecret: "client-secret-abcd"}
}

// TestOIDCSettingsSealTheSecret: the client secret is stored sealed (its
// plaintext is nowhere in the row), shown only by a fingerprint, kept when
// a later save leaves it blank, and forgotten when single sign-on is
// switched off; local passwords cannot be switched off without it.
func TestOIDCSettingsSealTheSecret(t *testing.T) {
	st, _ := storetest.New(t)
	ctx := context.Background()
	if got, _ := st.OIDCSettings(ctx); got.Configured() || !got.LocalPasswords {
		t.Fatalf("fresh settings %+v, want unconfigured with local passwords", got)
	}
	if err := st.SaveOIDCSettings(ctx, ssoSettings()); err != nil {
		t.Fatal(err)
	}
	var raw []byte
	if err := st.DB().QueryRowContext(ctx, `SELECT client_secret FROM oidc_settings`).Scan(&raw); err != nil || bytes.Contains(raw, []byte("client-secret")) {
		t.Fatalf("sealed secret %q (%v)", raw, err)
	}
	u := ssoSettings()
	u.ClientSecret, u.LocalPasswords, u.AdminGroups = "", false, []string{"ops", "sre"}
	if err := st.SaveOIDCSettings(ctx, u); err != nil {
		t.Fatal(err)
	}
	got, _ := st.OIDCSettings(ctx)
	if got.SecretFingerprint != "••• set …abcd" || got.LocalPasswords || len(got.AdminGroups) != 2 {
		t.Fatalf("settings %+v", got)
	}
	if sec, err := st.OIDCClientSecret(ctx); err != nil || sec != "client-secret-abcd" {
		t.Fatalf("secret %q, %v: a blank field must keep it", sec, err)
	}
	if on, err := st.EnableLocalPasswords(ctx); err != nil || !on {
		t.Fatalf("break-glass: %v %v", on, err)
	}
	off := rows.OIDCSettingsUpdate{OIDCSettings: rows.NoOIDC()}
	off.LocalPasswords = false
	if err := st.SaveOIDCSettings(ctx, off); err == nil {
		t.Fatal("local passwords switched off without single sign-on")
	}
	if err := st.SaveOIDCSettings(ctx, rows.OIDCSettingsUpdate{OIDCSettings: rows.NoOIDC()}); err != nil {
		t.Fatal(err)
	}
	if sec, _ := st.OIDCClientSecret(ctx); sec != "" {
		t.Fatal("the secret outlived single sign-on being switched off")
	}
}

// TestSSOUsersAreMatchedByAccountNotName: a provider account becomes a
// user at first sign-in and is found again by issuer and subject; its role
// follows the groups; a local user's name is never taken over; ending
// access ends the sessions and tokens.
func TestSSOUsersAreMatchedByAccountNotName(t *testing.T) {
	st, _ := storetest.New(t)
	ctx := context.Background()
	storetest.Must[int64](t)(st.CreateUser(ctx, "root", "password-for-tests", store.RoleAdmin))
	iss := "https://sso.example.com"
	u, created, err := st.SaveSSOUser(ctx, rows.SSOAccount{Issuer: iss, Subject: "s-1", Username: "ada", Role: store.RoleAdmin})
	if err != nil || !created || u.Role != store.RoleAdmin {
		t.Fatalf("first sign-in: %+v %v %v", u, created, err)
	}
	again, created, err := st.SaveSSOUser(ctx, rows.SSOAccount{Issuer: iss, Subject: "s-1", Username: "ada-renamed", Role: store.RoleViewer})
	if err != nil || created || again.ID != u.ID || again.Role != store.RoleViewer {
		t.Fatalf("second sign-in: %+v %v %v", again, created, err)
	}
	if _, _, err := st.SaveSSOUser(ctx, rows.SSOAccount{Issuer: iss, Subject: "s-2", Username: "root", Role: store.RoleAdmin}); !errors.Is(err, rows.ErrNameTaken) {
		t.Fatalf("a provider account took over the local root: %v", err)
	}
	if _, err := st.Login(ctx, "ada", ""); !errors.Is(err, store.ErrBadLogin) {
		t.Fatalf("a single-sign-on user signed in with an empty password: %v", err)
	}
	if _, err := st.UserByIdentity(ctx, iss, "s-1"); err != nil {
		t.Fatal(err)
	}

	exp := time.Now().Add(time.Hour)
	if _, err := st.DB().ExecContext(ctx, `INSERT INTO sessions (token, data, expiry) VALUES ('sso-sess', 'x', $1)`, exp); err != nil {
		t.Fatal(err)
	}
	if err := st.RecordSSOSession(ctx, u.ID, "sso-sess", exp, "refresh-1"); err != nil {
		t.Fatal(err)
	}
	if due, err := st.ClaimSSOSessionsDue(ctx, time.Hour, 10); err != nil || len(due) != 0 {
		t.Fatalf("a session refreshed just now is due: %v %v", due, err)
	}
	if _, err := st.DB().ExecContext(ctx, `UPDATE user_sessions SET refreshed_at = now() - interval '2 hours'`); err != nil {
		t.Fatal(err)
	}
	due, err := st.ClaimSSOSessionsDue(ctx, time.Hour, 10)
	if err != nil || len(due) != 1 || due[0].RefreshToken != "refresh-1" || due[0].UserID != u.ID {
		t.Fatalf("due %+v, %v", due, err)
	}
	if again, _ := st.ClaimSSOSessionsDue(ctx, time.Hour, 10); len(again) != 0 {
		t.Fatal("a claimed session was handed out twice")
	}
	if err := st.EndUserAccess(ctx, u.ID, rows.AccessEndRefreshRefused); err != nil {
		t.Fatal(err)
	}
	var n int
	_ = st.DB().QueryRowContext(ctx, `SELECT count(*) FROM sessions WHERE token='sso-sess'`).Scan(&n)
	if n != 0 {
		t.Fatal("the session outlived EndUserAccess")
	}
}
