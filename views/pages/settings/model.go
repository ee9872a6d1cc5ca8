// Package settings renders the Users & tokens page: console users and admin
// API tokens.
//
// data-testid: settings-users (the swapped panel), user-<username> (row),
// user-disable-<id>, user-role-<id> (select), user-role-save-<id>,
// user-reset-<id> (details), user-reset-password-<id>,
// user-reset-submit-<id>, password-once, password-plaintext,
// password-copy, user-form, user-username, user-password, user-create,
// users-notice, users-error; settings-tokens (the swapped panel),
// token-<id> (row), token-revoke-<id>, token-form, token-name, token-create,
// tokens-empty, tokens-notice, tokens-error, token-once, token-plaintext,
// token-copy, token-example, token-example-copy; field-<name>/error-<name>
// (token fields are token_name and token_role); settings-lockouts (the
// swapped panel), lockout-<kind>-<subject> (row), lockout-clear-<kind>-<subject>,
// lockouts-empty, lockouts-notice, lockouts-error, lockouts-note,
// lockouts-policy.
package settings

import (
	"strconv"
	"time"

	"switchyard/routing/config"
	"switchyard/views/components"
	"switchyard/views/layout"
)

// Page is the Users & tokens page.
type Page struct {
	Page     layout.Page
	Users    UsersPanel
	Lockouts LockoutsPanel
	Tokens   TokensPanel
	SignIn   SignInPanel
}

// LockoutsPanel lists usernames and client addresses locked out after too
// many failed sign-ins; it is swapped in place by its Clear buttons.
type LockoutsPanel struct {
	// Enabled is false when this instance does not throttle sign-ins.
	Enabled bool
	Locks   []Lockout
	Policy  LockoutPolicy
	// Unshared: Redis is unreachable, so the list is this instance's own.
	Unshared bool
	Notice   string
	Error    string
	CSRF     string
	CanEdit  bool
}

// Lock kinds, as their codes.
const (
	LockUser = "user"
	LockIP   = "ip"
)

// Lockout is one locked-out username or client address.
type Lockout struct {
	// Kind is LockUser or LockIP.
	Kind    string
	Subject string
	Until   time.Time
	// Local: kept by this instance alone while Redis is unreachable.
	Local bool
}

// LockoutPolicy are the throttle's thresholds, for the panel's explanation.
type LockoutPolicy struct {
	UserBackoffAfter, UserLockoutAfter int
	IPBackoffAfter, IPLockoutAfter     int
	LockoutFor                         time.Duration
}

func lockKindWords(kind string) string {
	if kind == LockIP {
		return "address"
	}
	return "user"
}

func lockTestID(prefix string, l Lockout) string { return prefix + l.Kind + "-" + l.Subject }

func minutes(d time.Duration) string {
	if d < time.Minute {
		return strconv.FormatInt(int64(d/time.Second), 10) + " s"
	}
	return strconv.FormatInt(int64(d/time.Minute), 10) + " min"
}

// UsersPanel lists console users; it is swapped in place by its forms.
type UsersPanel struct {
	Users []User
	// Me is the signed-in user, who cannot disable themselves.
	Me     int64
	Form   UserForm
	Notice string
	// Error is a refused action (e.g. disabling yourself).
	Error string
	CSRF  string
	// CanEdit shows the create form and each other user's role, password
	// and disable controls.
	CanEdit bool
	// Reset is set only in the answer to a password reset.
	Reset *PasswordReset
}

// PasswordReset is a reset just done. Password is set only when the
// console generated it: shown exactly once, in this answer; a password the
// admin typed is never echoed.
type PasswordReset struct {
	Username      string
	Password      string
	SessionsEnded int64
	TokensRevoked int64 // admin API tokens the user created, revoked
}

// User is one console user.
type User struct {
	ID       int64
	Username string
	// Role is config.RoleAdmin or config.RoleViewer.
	Role      string
	CreatedAt time.Time
	// MustChangePassword: their password was generated or reset, and they
	// choose their own at their next sign-in.
	MustChangePassword bool
}

// Token is one admin API token as listed (never its secret).
type Token struct {
	ID     int64
	Name   string
	Prefix string
	// Role is config.RoleAdmin or config.RoleViewer.
	Role       string
	CreatedBy  string
	CreatedAt  time.Time
	LastUsedAt *time.Time
	// LastUsedAddr is the client address of the last use.
	LastUsedAddr string
	RevokedAt    *time.Time
	// ExpiresAt is when the token stops working (nil: never); Expired is
	// set once it has.
	ExpiresAt *time.Time
	Expired   bool
}

// UserForm is the create-user form.
type UserForm struct {
	Username string
	Role     string
	Errors   config.FieldErrors
}

// TokensPanel lists admin API tokens; it is swapped in place by its forms.
type TokensPanel struct {
	Tokens []Token
	// Created is set only in the response to the create-token post.
	Created *CreatedToken
	Form    TokenForm
	Notice  string
	Error   string
	CSRF    string
	CanEdit bool
}

// TokenForm is the create-token form. Its fields are named token_name and
// token_role so they do not clash with the user form on the same page.
type TokenForm struct {
	Name      string
	Role      string
	ExpiresAt string
	Errors    config.FieldErrors
}

// CreatedToken is a fresh token, shown exactly once.
type CreatedToken struct {
	Plaintext string
	Name      string
	// Example is a ready-to-run request with the token.
	Example string
}

func roleOptions() []components.Option {
	return []components.Option{
		{Value: config.RoleViewer, Label: "viewer (read only)"},
		{Value: config.RoleAdmin, Label: "admin (may change and publish)"},
	}
}

func roleBadge(role string) string {
	if role == config.RoleAdmin {
		return "info"
	}
	return ""
}

func whenPtr(t *time.Time, none string) string {
	if t == nil {
		return none
	}
	return components.When(*t)
}

func resetSessionsWords(n int64) string {
	switch n {
	case 0:
		return "They had no open session."
	case 1:
		return "Their open session was ended: they log in again with the new password, then choose their own."
	}
	return "Their " + strconv.FormatInt(n, 10) + " open sessions were ended: they log in again with the new password, then choose their own."
}

func resetTokensWords(n int64) string {
	switch n {
	case 0:
		return "They had created no live admin API token."
	case 1:
		return "The admin API token they created is revoked."
	}
	return "The " + strconv.FormatInt(n, 10) + " admin API tokens they created are revoked."
}
