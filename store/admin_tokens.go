package store

import (
	"context"
	"fmt"
	"strings"
	"time"

	"switchyard/routing/config"
)

// CreateAdminToken makes a token that never expires; the plaintext is
// returned once.
func (s *Store) CreateAdminToken(ctx context.Context, name, role, createdBy string) (string, AdminToken, error) {
	return s.CreateAdminTokenUntil(ctx, name, role, createdBy, nil)
}

// CreateAdminTokenUntil makes a token that stops working at expiresAt (nil:
// never); the plaintext is returned once.
func (s *Store) CreateAdminTokenUntil(ctx context.Context, name, role, createdBy string, expiresAt *time.Time) (string, AdminToken, error) {
	f := config.FieldErrors{}
	if expiresAt != nil && !expiresAt.After(time.Now()) {
		f.Add("expires_at", "must be in the future")
	}
	if n := strings.TrimSpace(name); n == "" || len(n) > 100 {
		f.Add("name", "is required (at most 100 characters)")
	}
	if !config.ValidRole(role) {
		f.Add("role", "must be admin or viewer")
	}
	if err := f.Err(); err != nil {
		return "", AdminToken{}, err
	}
	plain, prefix := newToken(AdminTokenPrefix)
	var t AdminToken
	// The owner is the console user of that name, if there is one: disabling
	// them revokes the token.
	err := s.db.GetContext(ctx, &t, `
		INSERT INTO admin_tokens (name, prefix, hash, role, created_by, owner_id, expires_at)
		VALUES ($1,$2,$3,$4,$5,(SELECT id FROM users WHERE username=$5),$6)
		RETURNING `+adminTokenCols,
		name, prefix, hashToken(plain), role, createdBy, expiresAt)
	if err != nil {
		return "", t, fmt.Errorf("store: create admin token: %w", err)
	}
	return plain, t, nil
}

const adminTokenCols = `id, name, prefix, role, created_by, created_at, last_used_at, last_used_addr, revoked_at, expires_at`

// AuthenticateAdminToken returns the token's record when it is live: not
// revoked, and its owner (if it has one) not disabled. DisableUser revokes
// the owner's tokens; the owner check is defence in depth. A token past its
// expiry returns its record and ErrTokenExpired. Nothing is written: the
// caller records the use (UseLog.AdminTokenUsed).
func (s *Store) AuthenticateAdminToken(ctx context.Context, token string) (AdminToken, error) {
	var t AdminToken
	if !validTokenText(token) {
		return t, ErrBadLogin
	}
	err := s.db.GetContext(ctx, &t, `
		SELECT `+adminTokenCols+` FROM admin_tokens
		WHERE hash=$1 AND revoked_at IS NULL
		  AND NOT EXISTS (SELECT 1 FROM users u WHERE u.id = admin_tokens.owner_id AND u.disabled_at IS NOT NULL)`, hashToken(token))
	if err != nil {
		return t, ErrBadLogin
	}
	if t.ExpiresAt != nil && !time.Now().Before(*t.ExpiresAt) {
		return t, ErrTokenExpired
	}
	return t, nil
}

// AdminTokens lists all tokens, revoked ones included.
func (s *Store) AdminTokens(ctx context.Context) ([]AdminToken, error) {
	var out []AdminToken
	err := s.db.SelectContext(ctx, &out, `SELECT `+adminTokenCols+` FROM admin_tokens ORDER BY id DESC`)
	return out, err
}

// RevokeAdminToken revokes a token.
func (s *Store) RevokeAdminToken(ctx context.Context, id int64) error {
	res, err := s.db.ExecContext(ctx, `UPDATE admin_tokens SET revoked_at=now() WHERE id=$1 AND revoked_at IS NULL`, id)
	return rowsAffected(res, err)
}
