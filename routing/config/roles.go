package config

import "slices"

// Roles of console users and admin API tokens, as stored and shown. This is
// their one definition: the store validates against it, the console's
// access table grants actions to it, and the views offer it.
const (
	RoleAdmin  = "admin"  // may change, publish and manage users
	RoleViewer = "viewer" // may only read
)

// Roles lists the roles, most powerful first.
var Roles = []string{RoleAdmin, RoleViewer}

// ValidRole reports whether role is one of Roles.
func ValidRole(role string) bool { return slices.Contains(Roles, role) }
