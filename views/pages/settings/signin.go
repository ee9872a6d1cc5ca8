package settings

import (
	"strings"

	"switchyard/routing/config"
	"switchyard/views/components"
)

// SignInPanel shows and edits single sign-on (OpenID Connect); it is
// swapped in place when saved.
//
// data-testid: settings-signin (the swapped panel), signin-form,
// signin-name, signin-issuer, signin-client-id, signin-client-secret,
// signin-secret-set, signin-scopes, signin-groups-claim,
// signin-admin-groups, signin-viewer-groups, signin-default-role,
// check-local_passwords, signin-save, signin-redirect, signin-notice,
// signin-summary.
type SignInPanel struct {
	Form SignInForm
	// RedirectURL is the callback to register at the identity provider.
	RedirectURL string
	// SecretSet is the stored client secret's fingerprint ("" when none).
	SecretSet string
	Notice    string
	CSRF      string
	CanEdit   bool
}

// SignInForm is the sign-in settings as typed.
type SignInForm struct {
	DisplayName, IssuerURL, ClientID string
	Scopes, GroupsClaim              string
	AdminGroups, ViewerGroups        string
	DefaultRole                      string
	LocalPasswords                   bool
	Errors                           config.FieldErrors
}

// Configured reports whether single sign-on is set up.
func (f SignInForm) Configured() bool { return f.IssuerURL != "" && f.ClientID != "" }

// JoinLines shows a list one item a line.
func JoinLines(items []string) string { return strings.Join(items, "\n") }

func defaultRoleOptions() []components.Option {
	return []components.Option{
		{Value: "", Label: "none: refuse the sign-in"},
		{Value: config.RoleViewer, Label: config.RoleViewer},
		{Value: config.RoleAdmin, Label: config.RoleAdmin},
	}
}

func defaultRoleLabel(role string) string {
	if role == "" {
		return "none (refused)"
	}
	return role
}
