package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/jmoiron/sqlx"
	"golang.org/x/crypto/bcrypt"

	"switchyard/routing/config"
)

// Roles of console users and admin tokens.
const (
	RoleAdmin  = "admin"
	RoleViewer = "viewer"
)

// ErrBadLogin is returned for an unknown user or a wrong password alike.
var ErrBadLogin = errors.New("store: wrong username or password")

var dummyHash = sync.OnceValue(func() []byte {
	h, _ := bcrypt.GenerateFromPassword([]byte("switchyard-timing-equalizer"), bcrypt.DefaultCost)
	return h
})

// User is a console user.
type User struct {
	ID        int64     `db:"id"`
	Username  string    `db:"username"`
	Role      string    `db:"role"`
	CreatedAt time.Time `db:"created_at"`
}

// ValidateUser checks a new user's fields.
func ValidateUser(username, password, role string) config.FieldErrors {
	f := config.FieldErrors{}
	if u := strings.TrimSpace(username); u == "" || len(u) > 64 || strings.ContainsAny(u, " \t\r\n") {
		f.Add("username", "use 1–64 characters without spaces")
	}
	if len(password) < 10 {
		f.Add("password", "must be at least 10 characters")
	} else if len(password) > 72 {
		f.Add("password", "must be at most 72 bytes")
	}
	if role != RoleAdmin && role != RoleViewer {
		f.Add("role", "must be admin or viewer")
	}
	return f
}

// CreateUser adds a console user with a bcrypt-hashed password.
func (s *Store) CreateUser(ctx context.Context, username, password, role string) (int64, error) {
	if err := ValidateUser(username, password, role).Err(); err != nil {
		return 0, err
	}
	hash, err := bcrypt.GenerateFromPassword([]byte(password), bcrypt.DefaultCost)
	if err != nil {
		return 0, fmt.Errorf("store: hash password: %w", err)
	}
	var id int64
	err = s.db.GetContext(ctx, &id, `INSERT INTO users (username, password_hash, role) VALUES ($1,$2,$3) RETURNING id`, username, string(hash), role)
	if err != nil {
		return 0, fmt.Errorf("store: create user: %w", uniqueField(err, "username", "username "+username))
	}
	return id, nil
}

// SetPassword replaces a user's password.
func (s *Store) SetPassword(ctx context.Context, username, password string) error {
	if len(password) < 10 || len(password) > 72 {
		return (config.FieldErrors{"password": "must be 10–72 characters"}).Err()
	}
	hash, err := bcrypt.GenerateFromPassword([]byte(password), bcrypt.DefaultCost)
	if err != nil {
		return err
	}
	res, err := s.db.ExecContext(ctx, `UPDATE users SET password_hash=$2 WHERE username=$1`, username, string(hash))
	return rowsAffected(res, err)
}

// Login checks a username and password.
func (s *Store) Login(ctx context.Context, username, password string) (User, error) {
	var row struct {
		User
		Hash     string     `db:"password_hash"`
		Disabled *time.Time `db:"disabled_at"`
	}
	err := s.db.GetContext(ctx, &row, `SELECT id, username, role, created_at, password_hash, disabled_at FROM users WHERE username=$1`, username)
	if err != nil {
		// Spend the same time as a real check so usernames cannot be probed.
		_ = bcrypt.CompareHashAndPassword(dummyHash(), []byte(password))
		return User{}, ErrBadLogin
	}
	if row.Disabled != nil || bcrypt.CompareHashAndPassword([]byte(row.Hash), []byte(password)) != nil {
		return User{}, ErrBadLogin
	}
	return row.User, nil
}

// UserByID loads an enabled user.
func (s *Store) UserByID(ctx context.Context, id int64) (User, error) {
	var u User
	err := s.db.GetContext(ctx, &u, `SELECT id, username, role, created_at FROM users WHERE id=$1 AND disabled_at IS NULL`, id)
	if err != nil {
		return u, fmt.Errorf("store: user %d: %w", id, notFound(err))
	}
	return u, nil
}

// Users lists enabled users.
func (s *Store) Users(ctx context.Context) ([]User, error) {
	var out []User
	err := s.db.SelectContext(ctx, &out, `SELECT id, username, role, created_at FROM users WHERE disabled_at IS NULL ORDER BY username`)
	return out, err
}

// Disabled is what disabling a user revoked.
type Disabled struct {
	Username      string
	SessionsEnded int64
	TokensRevoked int64
}

// DisableUser disables a user and, in the same transaction, deletes their
// console sessions and revokes the admin API tokens they own. (A session
// still being served when this commits may be written back by its request;
// requireUser refuses it on the next one, as it refuses any session of a
// disabled user.)
func (s *Store) DisableUser(ctx context.Context, id int64) (Disabled, error) {
	var d Disabled
	err := s.inTx(ctx, func(tx *sqlx.Tx) error {
		err := tx.GetContext(ctx, &d.Username, `UPDATE users SET disabled_at=now() WHERE id=$1 AND disabled_at IS NULL RETURNING username`, id)
		if err != nil {
			return fmt.Errorf("store: disable user %d: %w", id, notFound(err))
		}
		res, err := tx.ExecContext(ctx, `DELETE FROM sessions WHERE token IN (SELECT token FROM user_sessions WHERE user_id=$1)`, id)
		if err != nil {
			return fmt.Errorf("store: disable user %d: end sessions: %w", id, err)
		}
		d.SessionsEnded, _ = res.RowsAffected()
		if _, err := tx.ExecContext(ctx, `DELETE FROM user_sessions WHERE user_id=$1`, id); err != nil {
			return fmt.Errorf("store: disable user %d: end sessions: %w", id, err)
		}
		res, err = tx.ExecContext(ctx, `UPDATE admin_tokens SET revoked_at=now() WHERE owner_id=$1 AND revoked_at IS NULL`, id)
		if err != nil {
			return fmt.Errorf("store: disable user %d: revoke tokens: %w", id, err)
		}
		d.TokensRevoked, _ = res.RowsAffected()
		return nil
	})
	return d, err
}

// RecordSession remembers that the console session token belongs to user
// (so DisableUser can end it) and forgets expired ones. Call it at login,
// after the session token was renewed.
func (s *Store) RecordSession(ctx context.Context, userID int64, token string, expiry time.Time) error {
	if token == "" {
		return errors.New("store: record session: empty token")
	}
	if _, err := s.db.ExecContext(ctx, `DELETE FROM user_sessions WHERE expiry < now()`); err != nil {
		return fmt.Errorf("store: record session: %w", err)
	}
	_, err := s.db.ExecContext(ctx, `INSERT INTO user_sessions (token, user_id, expiry) VALUES ($1,$2,$3)
		ON CONFLICT (token) DO UPDATE SET user_id=EXCLUDED.user_id, expiry=EXCLUDED.expiry`, token, userID, expiry)
	if err != nil {
		return fmt.Errorf("store: record session: %w", err)
	}
	return nil
}

// ForgetSession drops a session token's owner record (at logout).
func (s *Store) ForgetSession(ctx context.Context, token string) error {
	_, err := s.db.ExecContext(ctx, `DELETE FROM user_sessions WHERE token=$1`, token)
	return err
}

// CountUsers counts enabled users.
func (s *Store) CountUsers(ctx context.Context) (int, error) {
	var n int
	err := s.db.GetContext(ctx, &n, `SELECT count(*) FROM users WHERE disabled_at IS NULL`)
	return n, err
}
