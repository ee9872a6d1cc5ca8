package main

import (
	"context"
	"strings"
	"testing"

	"switchyard/store/storetest"
)

// The first admin with a generated password (shown once in the start
// message) must choose their own at the first sign-in; one whose password
// came from SWITCHYARD_ADMIN_PASSWORD chose it already.
func TestFirstAdminWithAGeneratedPasswordMustChangeIt(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		env        string
		mustChange bool
	}{{"", true}, {"chosen-by-the-operator", false}} {
		st, _ := storetest.New(t)
		msg, err := bootstrapAdmin(ctx, st, Config{AdminUser: "admin", AdminPassword: c.env})
		if err != nil {
			t.Fatal(err)
		}
		pw := c.env
		if pw == "" {
			if !strings.Contains(msg, "you choose your own at the first sign-in") {
				t.Fatalf("start message %q", msg)
			}
			pw = strings.Fields(msg[strings.Index(msg, "with password ")+len("with password "):])[0]
		}
		u, err := st.Login(ctx, "admin", pw)
		if err != nil || u.MustChangePassword != c.mustChange {
			t.Fatalf("SWITCHYARD_ADMIN_PASSWORD %q: %+v, %v; want must change %v", c.env, u, err, c.mustChange)
		}
	}
}
