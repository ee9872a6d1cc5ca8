package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"switchyard/store"
	"switchyard/store/rows"
	"switchyard/store/storetest"
)

// TestResetPasswordIsTheBreakGlass: with single sign-on on and local
// passwords off, reset-password switches local passwords back on and says
// so, so the new password can be used.
func TestResetPasswordIsTheBreakGlass(t *testing.T) {
	st, dsn := storetest.New(t)
	t.Setenv("SWITCHYARD_DATABASE_URL", dsn)
	t.Setenv("SWITCHYARD_REDIS_URL", "redis://"+storetest.RedisAddr()+"/0")
	ctx := context.Background()
	if _, err := st.CreateUser(ctx, "admin", "forgotten-password", store.RoleAdmin); err != nil {
		t.Fatal(err)
	}
	s := rows.NoOIDC()
	s.IssuerURL, s.ClientID, s.LocalPasswords = "https://sso.example.com", "switchyard", false
	if err := st.SaveOIDCSettings(ctx, rows.OIDCSettingsUpdate{OIDCSettings: s, ClientSecret: "a-client-secret"}); err != nil {
		t.Fatal(err)
	}
	var out, diag bytes.Buffer
	if err := resetPassword(ctx, []string{"admin"}, nil, &out, &diag); err != nil {
		t.Fatalf("%v\n%s", err, diag.String())
	}
	if !strings.Contains(diag.String(), "switched back on") {
		t.Errorf("the command does not say password sign-in is back: %q", diag.String())
	}
	if got, _ := st.OIDCSettings(ctx); !got.LocalPasswords || !got.Configured() {
		t.Fatalf("after the break-glass: %+v", got)
	}
}
