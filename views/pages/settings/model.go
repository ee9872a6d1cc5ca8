// Package settings renders the Users & tokens page: console users and admin
// API tokens.
//
// data-testid: settings-users (the swapped panel), user-<username> (row),
// user-disable-<id>, user-form, user-username, user-password, user-create,
// users-notice, users-error; settings-tokens (the swapped panel),
// token-<id> (row), token-revoke-<id>, token-form, token-name, token-create,
// tokens-empty, tokens-notice, tokens-error, token-once, token-plaintext,
// token-copy, token-example, token-example-copy; field-<name>/error-<name>
// (token fields are token_name and token_role).
package settings

import (
	"time"

	"switchyard/routing/config"
	"switchyard/views/components"
	"switchyard/views/layout"
)

// Page is the Users & tokens page.
type Page struct {
	Page   layout.Page
	Users  UsersPanel
	Tokens TokensPanel
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
	// CanEdit shows the create form and the disable buttons.
	CanEdit bool
}

// Roles of console users and admin tokens, as their codes.
const (
	RoleAdmin  = "admin"
	RoleViewer = "viewer"
)

// User is one console user.
type User struct {
	ID       int64
	Username string
	// Role is RoleAdmin or RoleViewer.
	Role      string
	CreatedAt time.Time
}

// Token is one admin API token as listed (never its secret).
type Token struct {
	ID     int64
	Name   string
	Prefix string
	// Role is RoleAdmin or RoleViewer.
	Role       string
	CreatedBy  string
	CreatedAt  time.Time
	LastUsedAt *time.Time
	RevokedAt  *time.Time
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
	Name   string
	Role   string
	Errors config.FieldErrors
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
		{Value: RoleViewer, Label: "viewer (read only)"},
		{Value: RoleAdmin, Label: "admin (may change and publish)"},
	}
}

func roleBadge(role string) string {
	if role == RoleAdmin {
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
