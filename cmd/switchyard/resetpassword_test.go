package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"switchyard/store"
	"switchyard/store/redis/loginguard"
	"switchyard/store/storetest"
)

// The reset-password command sets a new password (generated and printed
// once, to be changed at the next sign-in, or read from standard input), ends the user's sessions, revokes the
// admin API tokens they created, lifts their
// sign-in lockout in Redis, and names the users when the name is unknown.
func TestResetPasswordCommand(t *testing.T) {
	st, dsn := storetest.New(t)
	rdb, prefix := storetest.Redis(t, "resetpw")
	t.Setenv("SWITCHYARD_DATABASE_URL", dsn)
	t.Setenv("SWITCHYARD_REDIS_URL", "redis://"+storetest.RedisAddr()+"/0")
	t.Setenv("SWITCHYARD_REDIS_PREFIX", prefix)
	ctx := context.Background()
	if _, err := st.CreateUser(ctx, "admin", "forgotten-password", store.RoleAdmin); err != nil {
		t.Fatal(err)
	}
	// The admin locked themselves out.
	g := loginguard.New(rdb, loginguard.Options{Prefix: prefix})
	for range 12 {
		g.Fail(ctx, "admin", "10.0.0.1")
	}
	if v := g.Check(ctx, "admin", ""); !v.Blocked {
		t.Fatal("the admin is not locked out")
	}

	tok, _, err := st.CreateAdminToken(ctx, "ci", store.RoleAdmin, "admin")
	if err != nil {
		t.Fatal(err)
	}

	var out, diag bytes.Buffer
	if err := resetPassword(ctx, []string{"admin"}, nil, &out, &diag); err != nil {
		t.Fatalf("%v\n%s", err, diag.String())
	}
	if !strings.Contains(out.String(), "1 admin API token(s) revoked") {
		t.Errorf("the output should say the token was revoked: %q", out.String())
	}
	if _, err := st.AuthenticateAdminToken(ctx, tok); err == nil {
		t.Fatal("the admin API token created before the reset still works")
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	pw := lines[len(lines)-1]
	if !strings.Contains(out.String(), "shown once") || len(pw) != 23 {
		t.Fatalf("output %q", out.String())
	}
	if u, err := st.Login(ctx, "admin", pw); err != nil || !u.MustChangePassword {
		t.Fatalf("the printed password: %+v, %v; want a sign-in that must change it", u, err)
	}
	if v := g.Check(ctx, "admin", ""); v.Blocked {
		t.Fatalf("the lockout was not lifted: %+v (%s)", v, diag.String())
	}

	out.Reset()
	if err := resetPassword(ctx, []string{"-password-stdin", "admin"}, strings.NewReader("chosen-password-7\n"), &out, &diag); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), "chosen-password-7") {
		t.Fatal("a password read from stdin is printed")
	}
	if u, err := st.Login(ctx, "admin", "chosen-password-7"); err != nil || u.MustChangePassword {
		t.Fatalf("the password from stdin: %+v, %v; want a sign-in that need not change it", u, err)
	}
	if err := resetPassword(ctx, []string{"-password-stdin", "admin"}, strings.NewReader("short\n"), &out, &diag); err == nil || !strings.Contains(err.Error(), "at least 10") {
		t.Fatalf("short password: %v", err)
	}
	if err := resetPassword(ctx, []string{"root"}, nil, &out, &diag); err == nil || !strings.Contains(err.Error(), "admin (admin)") {
		t.Fatalf("unknown user: %v", err)
	}
	if err := resetPassword(ctx, nil, nil, &out, &diag); err == nil || !strings.Contains(diag.String(), "usage: switchyard reset-password") {
		t.Fatalf("no user: %v %q", err, diag.String())
	}
}

// On a database with users the start message says how to log in and how
// to reset a lost password.
func TestLoginHintOnAnExistingDatabase(t *testing.T) {
	admin := store.User{Username: "admin", Role: store.RoleAdmin}
	viewer := store.User{Username: "watcher", Role: store.RoleViewer}
	for _, c := range []struct {
		users    []store.User
		envWorks bool
		want     []string
	}{
		{[]store.User{admin, viewer}, true, []string{"Log in as admin with the password from SWITCHYARD_ADMIN_PASSWORD."}},
		{[]store.User{admin}, false, []string{"Log in as admin", "./bin/switchyard reset-password admin"}},
		{[]store.User{{Username: "ops", Role: store.RoleAdmin}, viewer}, false, []string{"admins: ops", "reset-password ops"}},
		{[]store.User{viewer}, false, []string{"none is an admin", "reset-password <user>"}},
	} {
		got := loginHint(c.users, "admin", c.envWorks, "./bin/switchyard")
		for _, w := range c.want {
			if !strings.Contains(got, w) {
				t.Errorf("users %v env %v: %q lacks %q", c.users, c.envWorks, got, w)
			}
		}
	}
}
