package rows

import (
	"errors"
	"net"
	"net/url"
	"slices"
	"strings"

	"switchyard/routing/config"
)

// OIDCSettings is how operators sign in with the company's single sign-on
// (OpenID Connect). The client secret is never part of it: only its
// fingerprint.
type OIDCSettings struct {
	// DisplayName is the provider's name on the login page ("Sign in with
	// …"); empty reads "single sign-on".
	DisplayName       string
	IssuerURL         string
	ClientID          string
	SecretFingerprint string
	// Scopes are asked for at sign-in; openid is always among them.
	Scopes []string
	// GroupsClaim is the ID-token claim listing the user's groups.
	GroupsClaim string
	// AdminGroups and ViewerGroups map groups to roles: a member of an
	// admin group is an admin, else of a viewer group a viewer.
	AdminGroups, ViewerGroups []string
	// DefaultRole is the role of a user in none of the groups; empty
	// refuses them.
	DefaultRole string
	// LocalPasswords: console users may still sign in with a password.
	LocalPasswords bool
}

// DefaultOIDCScopes are the scopes asked for unless the operator chose.
var DefaultOIDCScopes = []string{"openid", "profile", "email", "groups"}

// NoOIDC are the settings of an instance without single sign-on.
func NoOIDC() OIDCSettings {
	return OIDCSettings{Scopes: DefaultOIDCScopes, GroupsClaim: "groups", LocalPasswords: true}
}

// Configured reports whether single sign-on is set up.
func (s OIDCSettings) Configured() bool { return s.IssuerURL != "" && s.ClientID != "" }

// RoleFor is the role of a member of groups: admin, viewer, or the default
// role ("" refuses the sign-in). It is recomputed at every sign-in.
func (s OIDCSettings) RoleFor(groups []string) string {
	for _, g := range groups {
		if slices.Contains(s.AdminGroups, g) {
			return RoleAdmin
		}
	}
	for _, g := range groups {
		if slices.Contains(s.ViewerGroups, g) {
			return RoleViewer
		}
	}
	return s.DefaultRole
}

// OIDCSettingsUpdate is a change of the settings. An empty ClientSecret
// keeps the stored one.
type OIDCSettingsUpdate struct {
	OIDCSettings
	ClientSecret string
}

// SplitList reads a list typed one item a line or separated by commas.
func SplitList(text string) []string {
	var out []string
	for _, f := range strings.FieldsFunc(text, func(r rune) bool { return r == ',' || r == '\n' || r == '\r' }) {
		if f = strings.TrimSpace(f); f != "" && !slices.Contains(out, f) {
			out = append(out, f)
		}
	}
	return out
}

// ValidateOIDCSettings checks a change of the sign-in settings (the console
// form and the store use it alike).
func ValidateOIDCSettings(u OIDCSettingsUpdate) config.FieldErrors {
	f := config.FieldErrors{}
	configured := u.IssuerURL != "" || u.ClientID != ""
	if configured {
		if err := checkIssuer(u.IssuerURL); err != nil {
			f.Add("issuer_url", err.Error())
		}
		if u.ClientID == "" || len(u.ClientID) > 512 {
			f.Add("client_id", "is required (at most 512 characters)")
		}
	}
	if !slices.Contains(u.Scopes, "openid") {
		f.Add("scopes", "must include openid")
	}
	if u.GroupsClaim == "" || len(u.GroupsClaim) > 128 || strings.ContainsAny(u.GroupsClaim, " \t") {
		f.Add("groups_claim", "is required: the claim name, such as groups or roles")
	}
	if u.DefaultRole != "" && !config.ValidRole(u.DefaultRole) {
		f.Add("default_role", "must be none, viewer or admin")
	}
	if !u.LocalPasswords && !configured {
		f.Add("local_passwords", "can be switched off only once single sign-on is set up")
	}
	if len(u.ClientSecret) > 4096 || len(u.DisplayName) > 64 {
		f.Add("_", "a field is too long")
	}
	return f
}

// checkIssuer accepts an https URL, or http on a loopback address (a
// provider on the same machine, for trials).
func checkIssuer(issuer string) error {
	u, err := url.Parse(issuer)
	if issuer == "" || err != nil || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return errors.New("must be the provider's issuer URL, such as https://login.example.com/realms/staff")
	}
	if u.Scheme == "https" {
		return nil
	}
	host := u.Hostname()
	if ip := net.ParseIP(host); u.Scheme == "http" && (host == "localhost" || ip != nil && ip.IsLoopback()) {
		return nil
	}
	return errors.New("must use https (http only for a provider on this machine)")
}

// SSOAccount is a user as the identity provider vouched for them at
// sign-in.
type SSOAccount struct {
	Issuer, Subject string
	// Username is the console name for a new user (the provider's
	// preferred_username, else the email).
	Username string
	Role     string
}

// ErrUserDisabled refuses a change to, or a sign-in of, a disabled user.
var ErrUserDisabled = errors.New("store: the user is disabled")

// ErrNameTaken refuses to create a single-sign-on user whose name belongs
// to another user (a local one, or another provider account).
var ErrNameTaken = errors.New("store: the username belongs to another user")

// SSOSession is a console session started by single sign-on, with the
// provider's refresh token, due for a check.
type SSOSession struct {
	Token        string
	UserID       int64
	RefreshToken string
}

// RoleRank orders roles: higher may do more; unknown is 0.
func RoleRank(role string) int {
	i := slices.Index(config.Roles, role)
	if i < 0 {
		return 0
	}
	return len(config.Roles) - i
}
