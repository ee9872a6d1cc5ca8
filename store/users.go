package store

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jmoiron/sqlx"
	"golang.org/x/crypto/bcrypt"

	"switchyard/routing/config"
	"switchyard/store/rows"
)

var dummyHash = sync.OnceValue(func() []byte {
	h, _ := bcrypt.GenerateFromPassword([]byte("switchyard-timing-equalizer"), bcrypt.DefaultCost)
	return h
})

// CreateUser adds a console user with a bcrypt-hashed password.
func (s *Store) CreateUser(ctx context.Context, username, password, role string) (int64, error) {
	if err := rows.ValidateUser(username, password, role).Err(); err != nil {
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

// ErrUserDisabled refuses a change to a disabled user.
var ErrUserDisabled = rows.ErrUserDisabled

// ResetPassword gives the enabled user with that id a new password and, in
// the same transaction, ends their console sessions and revokes the admin
// API tokens they created (whoever knew the old password is signed out, and
// cannot keep a token minted with it).
func (s *Store) ResetPassword(ctx context.Context, id int64, password string) (PasswordReset, error) {
	return s.resetPassword(ctx, `id=$1`, id, password)
}

// ResetPasswordByName is ResetPassword by username (the reset-password
// command of a locked-out admin). A disabled user is refused with
// ErrUserDisabled, an unknown one with ErrNotFound.
func (s *Store) ResetPasswordByName(ctx context.Context, username, password string) (PasswordReset, error) {
	return s.resetPassword(ctx, `username=$1`, username, password)
}

func (s *Store) resetPassword(ctx context.Context, where string, who any, password string) (PasswordReset, error) {
	var r PasswordReset
	if err := rows.ValidatePassword(password).Err(); err != nil {
		return r, err
	}
	hash, err := bcrypt.GenerateFromPassword([]byte(password), bcrypt.DefaultCost)
	if err != nil {
		return r, fmt.Errorf("store: hash password: %w", err)
	}
	err = s.inTx(ctx, func(tx *sqlx.Tx) error {
		var row struct {
			ID       int64      `db:"id"`
			Username string     `db:"username"`
			Disabled *time.Time `db:"disabled_at"`
		}
		if err := tx.GetContext(ctx, &row, `SELECT id, username, disabled_at FROM users WHERE `+where+` FOR UPDATE`, who); err != nil {
			return fmt.Errorf("store: reset password of %v: %w", who, notFound(err))
		}
		if row.Disabled != nil {
			return fmt.Errorf("store: reset password of %s: %w", row.Username, ErrUserDisabled)
		}
		r.UserID, r.Username = row.ID, row.Username
		if _, err := tx.ExecContext(ctx, `UPDATE users SET password_hash=$2 WHERE id=$1`, row.ID, string(hash)); err != nil {
			return fmt.Errorf("store: reset password of %s: %w", row.Username, err)
		}
		res, err := tx.ExecContext(ctx, `DELETE FROM sessions WHERE token IN (SELECT token FROM user_sessions WHERE user_id=$1)`, row.ID)
		if err != nil {
			return fmt.Errorf("store: reset password of %s: end sessions: %w", row.Username, err)
		}
		r.SessionsEnded, _ = res.RowsAffected()
		if _, err := tx.ExecContext(ctx, `DELETE FROM user_sessions WHERE user_id=$1`, row.ID); err != nil {
			return fmt.Errorf("store: reset password of %s: end sessions: %w", row.Username, err)
		}
		res, err = tx.ExecContext(ctx, `UPDATE admin_tokens SET revoked_at=now() WHERE owner_id=$1 AND revoked_at IS NULL`, row.ID)
		if err != nil {
			return fmt.Errorf("store: reset password of %s: revoke admin API tokens: %w", row.Username, err)
		}
		r.TokensRevoked, _ = res.RowsAffected()
		return nil
	})
	return r, err
}

// SetUserRole makes the enabled user with that id an admin or a viewer. A
// user who becomes a viewer loses, in the same transaction, the admin-role
// API tokens they created; their console sessions read the new role on
// their next request.
func (s *Store) SetUserRole(ctx context.Context, id int64, role string) (RoleChange, error) {
	c := RoleChange{To: role}
	if !config.ValidRole(role) {
		return c, (config.FieldErrors{"role": "must be admin or viewer"}).Err()
	}
	err := s.inTx(ctx, func(tx *sqlx.Tx) error {
		var row struct {
			Username string `db:"username"`
			Role     string `db:"role"`
		}
		if err := tx.GetContext(ctx, &row, `SELECT username, role FROM users WHERE id=$1 AND disabled_at IS NULL FOR UPDATE`, id); err != nil {
			return fmt.Errorf("store: set role of user %d: %w", id, notFound(err))
		}
		c.Username, c.From = row.Username, row.Role
		if _, err := tx.ExecContext(ctx, `UPDATE users SET role=$2 WHERE id=$1`, id, role); err != nil {
			return fmt.Errorf("store: set role of %s: %w", row.Username, err)
		}
		if role == RoleViewer {
			res, err := tx.ExecContext(ctx, `UPDATE admin_tokens SET revoked_at=now() WHERE owner_id=$1 AND role=$2 AND revoked_at IS NULL`, id, RoleAdmin)
			if err != nil {
				return fmt.Errorf("store: set role of %s: revoke tokens: %w", row.Username, err)
			}
			c.TokensRevoked, _ = res.RowsAffected()
		}
		return nil
	})
	return c, err
}
