package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"switchyard/routing/config"
	"switchyard/store/rows"
)

// oidcSecretAD binds the sealed client secret to its row.
var oidcSecretAD = []byte("oidc_settings:client_secret")

// refreshAD binds a sealed refresh token to its console session.
func refreshAD(sessionToken string) []byte { return []byte("user_sessions:refresh:" + sessionToken) }

type oidcRow struct {
	DisplayName    string `db:"display_name"`
	IssuerURL      string `db:"issuer_url"`
	ClientID       string `db:"client_id"`
	Fingerprint    string `db:"secret_fingerprint"`
	Scopes         string `db:"scopes"`
	GroupsClaim    string `db:"groups_claim"`
	AdminGroups    string `db:"admin_groups"`
	ViewerGroups   string `db:"viewer_groups"`
	DefaultRole    string `db:"default_role"`
	LocalPasswords bool   `db:"local_passwords"`
}

// OIDCSettings returns the single-sign-on settings (rows.NoOIDC when none
// were saved).
func (s *Store) OIDCSettings(ctx context.Context) (rows.OIDCSettings, error) {
	var r oidcRow
	err := s.db.GetContext(ctx, &r, `SELECT display_name, issuer_url, client_id, secret_fingerprint, scopes, groups_claim,
		admin_groups, viewer_groups, default_role, local_passwords FROM oidc_settings WHERE id=1`)
	if errors.Is(err, sql.ErrNoRows) {
		return rows.NoOIDC(), nil
	}
	if err != nil {
		return rows.OIDCSettings{}, fmt.Errorf("store: sign-in settings: %w", err)
	}
	return rows.OIDCSettings{DisplayName: r.DisplayName, IssuerURL: r.IssuerURL, ClientID: r.ClientID, SecretFingerprint: r.Fingerprint,
		Scopes: strings.Fields(r.Scopes), GroupsClaim: r.GroupsClaim, AdminGroups: rows.SplitList(r.AdminGroups),
		ViewerGroups: rows.SplitList(r.ViewerGroups), DefaultRole: r.DefaultRole, LocalPasswords: r.LocalPasswords}, nil
}

// OIDCClientSecret opens the stored client secret ("" when none).
func (s *Store) OIDCClientSecret(ctx context.Context) (string, error) {
	var sealed []byte
	err := s.db.GetContext(ctx, &sealed, `SELECT client_secret FROM oidc_settings WHERE id=1 AND client_secret IS NOT NULL`)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("store: sign-in client secret: %w", err)
	}
	plain, err := s.sealer.Open(sealed, oidcSecretAD)
	if err != nil {
		return "", fmt.Errorf("store: sign-in client secret: %w", err)
	}
	return plain, nil
}

// SaveOIDCSettings validates and stores the single-sign-on settings. The
// client secret is sealed; an empty one keeps the stored secret, and
// clearing the issuer and client id forgets it.
func (s *Store) SaveOIDCSettings(ctx context.Context, u rows.OIDCSettingsUpdate) error {
	if err := rows.ValidateOIDCSettings(u).Err(); err != nil {
		return err
	}
	var sealed []byte
	fp := ""
	if u.ClientSecret != "" {
		sealed, fp = s.sealer.Seal(u.ClientSecret, oidcSecretAD), secretFingerprint(u.ClientSecret)
	}
	forget := !u.Configured()
	_, err := s.db.ExecContext(ctx, `INSERT INTO oidc_settings (id, display_name, issuer_url, client_id, client_secret, secret_fingerprint,
		scopes, groups_claim, admin_groups, viewer_groups, default_role, local_passwords, updated_at)
		VALUES (1,$1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,now())
		ON CONFLICT (id) DO UPDATE SET display_name=EXCLUDED.display_name, issuer_url=EXCLUDED.issuer_url, client_id=EXCLUDED.client_id,
		client_secret=CASE WHEN $12 THEN NULL ELSE COALESCE(EXCLUDED.client_secret, oidc_settings.client_secret) END,
		secret_fingerprint=CASE WHEN $12 THEN '' WHEN EXCLUDED.client_secret IS NULL THEN oidc_settings.secret_fingerprint ELSE EXCLUDED.secret_fingerprint END,
		scopes=EXCLUDED.scopes, groups_claim=EXCLUDED.groups_claim, admin_groups=EXCLUDED.admin_groups, viewer_groups=EXCLUDED.viewer_groups,
		default_role=EXCLUDED.default_role, local_passwords=EXCLUDED.local_passwords, updated_at=now()`,
		u.DisplayName, u.IssuerURL, u.ClientID, sealed, fp, strings.Join(u.Scopes, " "), u.GroupsClaim,
		strings.Join(u.AdminGroups, "\n"), strings.Join(u.ViewerGroups, "\n"), u.DefaultRole, u.LocalPasswords, forget)
	if err != nil {
		return fmt.Errorf("store: save sign-in settings: %w", err)
	}
	return nil
}

// secretFingerprint shows a secret as set, with its last four characters
// to tell a rotated one apart.
func secretFingerprint(secret string) string {
	if len(secret) < 12 {
		return config.SecretSet
	}
	return config.SecretSet + " …" + secret[len(secret)-4:]
}

// EnableLocalPasswords lets console users sign in with passwords again (the
// break-glass of reset-password).
func (s *Store) EnableLocalPasswords(ctx context.Context) (bool, error) {
	res, err := s.db.ExecContext(ctx, `UPDATE oidc_settings SET local_passwords=true, updated_at=now() WHERE id=1 AND NOT local_passwords`)
	if err != nil {
		return false, fmt.Errorf("store: enable local passwords: %w", err)
	}
	n, _ := res.RowsAffected()
	return n > 0, nil
}

// UserByIdentity loads the user created for an identity-provider account.
// Unknown: ErrNotFound; disabled: ErrUserDisabled.
func (s *Store) UserByIdentity(ctx context.Context, issuer, subject string) (User, error) {
	var row struct {
		User
		Disabled *time.Time `db:"disabled_at"`
	}
	err := s.db.GetContext(ctx, &row, `SELECT `+userColumns+`, disabled_at FROM users WHERE idp_issuer=$1 AND idp_subject=$2`, issuer, subject)
	if err != nil {
		return User{}, fmt.Errorf("store: user of %s: %w", subject, notFound(err))
	}
	if row.Disabled != nil {
		return User{}, fmt.Errorf("store: user %s: %w", row.Username, ErrUserDisabled)
	}
	return row.User, nil
}

// SaveSSOUser creates the user of an identity-provider account at their
// first sign-in, or gives the existing one the role their groups map to
// now. A name held by another user is refused with rows.ErrNameTaken:
// a local user is never taken over by a provider account.
func (s *Store) SaveSSOUser(ctx context.Context, a rows.SSOAccount) (u User, created bool, err error) {
	if !config.ValidRole(a.Role) {
		return User{}, false, fmt.Errorf("store: single-sign-on user %s: role %q", a.Subject, a.Role)
	}
	err = s.db.GetContext(ctx, &u, `UPDATE users SET role=$3 WHERE idp_issuer=$1 AND idp_subject=$2 AND disabled_at IS NULL
		RETURNING `+userColumns, a.Issuer, a.Subject, a.Role)
	if err == nil {
		return u, false, nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return User{}, false, fmt.Errorf("store: update single-sign-on user %s: %w", a.Subject, err)
	}
	err = s.db.GetContext(ctx, &u, `INSERT INTO users (username, password_hash, role, idp_issuer, idp_subject) VALUES ($1,'',$2,$3,$4)
		RETURNING `+userColumns, a.Username, a.Role, a.Issuer, a.Subject)
	if fe := uniqueField(err, "username", a.Username); fe != err {
		return User{}, false, fmt.Errorf("store: create single-sign-on user %s: %w", a.Username, rows.ErrNameTaken)
	}
	if err != nil {
		return User{}, false, fmt.Errorf("store: create single-sign-on user %s: %w", a.Username, err)
	}
	return u, true, nil
}

// RecordSSOSession is RecordSession for a session started by single
// sign-on, keeping the provider's refresh token (sealed) so the session
// ends when the provider refuses to refresh it.
func (s *Store) RecordSSOSession(ctx context.Context, userID int64, token string, expiry time.Time, refreshToken string) error {
	if err := s.RecordSession(ctx, userID, token, expiry); err != nil {
		return err
	}
	if refreshToken == "" {
		return nil
	}
	_, err := s.db.ExecContext(ctx, `UPDATE user_sessions SET refresh_sealed=$2, refreshed_at=now() WHERE token=$1`,
		token, s.sealer.Seal(refreshToken, refreshAD(token)))
	if err != nil {
		return fmt.Errorf("store: record session refresh token: %w", err)
	}
	return nil
}

// ClaimSSOSessionsDue returns up to limit live single-sign-on sessions not
// refreshed for every, marking them refreshed now so that another
// instance checking at the same time skips them (two refreshes of one
// token would make a rotating provider refuse the second).
func (s *Store) ClaimSSOSessionsDue(ctx context.Context, every time.Duration, limit int) ([]rows.SSOSession, error) {
	var found []struct {
		Token  string `db:"token"`
		UserID int64  `db:"user_id"`
		Sealed []byte `db:"refresh_sealed"`
	}
	err := s.db.SelectContext(ctx, &found, `UPDATE user_sessions SET refreshed_at=now() WHERE token IN (
		SELECT token FROM user_sessions WHERE refresh_sealed IS NOT NULL AND expiry > now() AND refreshed_at < now() - make_interval(secs => $1)
		ORDER BY refreshed_at LIMIT $2 FOR UPDATE SKIP LOCKED) RETURNING token, user_id, refresh_sealed`, every.Seconds(), limit)
	if err != nil {
		return nil, fmt.Errorf("store: single-sign-on sessions due: %w", err)
	}
	out := make([]rows.SSOSession, 0, len(found))
	for _, f := range found {
		rt, err := s.sealer.Open(f.Sealed, refreshAD(f.Token))
		if err != nil {
			return nil, fmt.Errorf("store: single-sign-on session of user %d: %w", f.UserID, err)
		}
		out = append(out, rows.SSOSession{Token: f.Token, UserID: f.UserID, RefreshToken: rt})
	}
	return out, nil
}

// SSOSessionRefreshed keeps the refresh token the provider issued in
// exchange (providers that rotate them invalidate the old one).
func (s *Store) SSOSessionRefreshed(ctx context.Context, token, refreshToken string) error {
	if refreshToken == "" {
		return nil
	}
	_, err := s.db.ExecContext(ctx, `UPDATE user_sessions SET refresh_sealed=$2, refreshed_at=now() WHERE token=$1`,
		token, s.sealer.Seal(refreshToken, refreshAD(token)))
	if err != nil {
		return fmt.Errorf("store: session refresh token: %w", err)
	}
	return nil
}
