package config

import "testing"

func TestValidRole(t *testing.T) {
	for _, r := range Roles {
		if !ValidRole(r) {
			t.Errorf("ValidRole(%q) = false for a listed role", r)
		}
	}
	for _, r := range []string{"", "root", "Admin", " viewer"} {
		if ValidRole(r) {
			t.Errorf("ValidRole(%q) = true", r)
		}
	}
}
