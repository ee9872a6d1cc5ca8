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
	return s.createUser(ctx, username, password, role, false)
}

// CreateUserToChangePassword is CreateUser for a password the user did not
// choose (the first admin's generated one): they must change it at their
// first sign-in.
func (s *Store) CreateUserToChangePassword(ctx context.Context, username, password, role string) (int64, error) {
	return s.createUser(ctx, username, password, role, true)
}

func (s *Store) createUser(ctx context.Context, username, password, role string, mustChange bool) (int64, error) {
	if err := rows.ValidateUser(username, password, role).Err(); err != nil {
		return 0, err
	}
	hash, err := bcrypt.GenerateFromPassword([]byte(password), bcrypt.DefaultCost)
	if err != nil {
		return 0, fmt.Errorf("store: hash password: %w", err)
	}
	var id int64
	err = s.db.GetContext(ctx, &id, `INSERT INTO users (username, password_hash, role, must_change_password) VALUES ($1,$2,$3,$4) RETURNING id`,
		username, string(hash), role, mustChange)
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

// userColumns are the columns of a User.
const userColumns = `id, username, role, created_at, must_change_password, access_epoch`

// Login checks a username and password.
func (s *Store) Login(ctx context.Context, username, password string) (User, error) {
	var row struct {
		User
		Hash     string     `db:"password_hash"`
		Disabled *time.Time `db:"disabled_at"`
	}
	err := s.db.GetContext(ctx, &row, `SELECT `+userColumns+`, password_hash, disabled_at FROM users WHERE username=$1`, username)
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
	err := s.db.GetContext(ctx, &u, `SELECT `+userColumns+` FROM users WHERE id=$1 AND disabled_at IS NULL`, id)
	if err != nil {
		return u, fmt.Errorf("store: user %d: %w", id, notFound(err))
	}
	return u, nil
}

// Users lists enabled users.
func (s *Store) Users(ctx context.Context) ([]User, error) {
	var out []User
	err := s.db.SelectContext(ctx, &out, `SELECT `+userColumns+` FROM users WHERE disabled_at IS NULL ORDER BY username`)
	return out, err
}

// DisableUser disables a user and, in the same transaction, ends their
// access (EndUserAccess, AccessEndDisabled).
func (s *Store) DisableUser(ctx context.Context, id int64) (Disabled, error) {
	var d Disabled
	err := s.inTx(ctx, func(tx *sqlx.Tx) error {
		err := tx.GetContext(ctx, &d.Username, `UPDATE users SET disabled_at=now() WHERE id=$1 AND disabled_at IS NULL RETURNING username`, id)
		if err != nil {
			return fmt.Errorf("store: disable user %d: %w", id, notFound(err))
		}
		e, err := endUserAccess(ctx, tx, id, rows.AccessEndDisabled)
		d.SessionsEnded, d.TokensRevoked = e.SessionsEnded, e.TokensRevoked
		return err
	})
	return d, err
}

// EndUserAccess is the one rule that ends what acts for a console user: in
// one transaction it ends all their console sessions (deleted, and refused
// by their access epoch should a request in flight write one back) and
// revokes every admin API token they created, whatever its role. Disabling
// a user, lowering their role and resetting their password call it inside
// their own transaction; sign-in through an identity provider calls it
// when the provider no longer puts the user in a group that grants their
// role (AccessEndRemovedByIdentityProvider). The user may be disabled
// already; an unknown user is ErrNotFound.
func (s *Store) EndUserAccess(ctx context.Context, userID int64, cause AccessEndCause) error {
	return s.inTx(ctx, func(tx *sqlx.Tx) error {
		_, err := endUserAccess(ctx, tx, userID, cause)
		return err
	})
}

// endUserAccess is EndUserAccess inside the caller's transaction.
func endUserAccess(ctx context.Context, tx *sqlx.Tx, userID int64, cause AccessEndCause) (AccessEnded, error) {
	var e AccessEnded
	if !cause.Valid() {
		return e, fmt.Errorf("store: end access of user %d: unknown cause %q", userID, cause)
	}
	res, err := tx.ExecContext(ctx, `UPDATE users SET access_epoch=access_epoch+1 WHERE id=$1`, userID)
	if err := rowsAffected(res, err); err != nil {
		return e, fmt.Errorf("store: end access of user %d (%s): %w", userID, cause, err)
	}
	res, err = tx.ExecContext(ctx, `DELETE FROM sessions WHERE token IN (SELECT token FROM user_sessions WHERE user_id=$1)`, userID)
	if err != nil {
		return e, fmt.Errorf("store: end access of user %d (%s): end sessions: %w", userID, cause, err)
	}
	e.SessionsEnded, _ = res.RowsAffected()
	if _, err := tx.ExecContext(ctx, `DELETE FROM user_sessions WHERE user_id=$1`, userID); err != nil {
		return e, fmt.Errorf("store: end access of user %d (%s): end sessions: %w", userID, cause, err)
	}
	res, err = tx.ExecContext(ctx, `UPDATE admin_tokens SET revoked_at=now() WHERE owner_id=$1 AND revoked_at IS NULL`, userID)
	if err != nil {
		return e, fmt.Errorf("store: end access of user %d (%s): revoke admin API tokens: %w", userID, cause, err)
	}
	e.TokensRevoked, _ = res.RowsAffected()
	return e, nil
}

// RecordSession remembers that the console session token belongs to user
// (so EndUserAccess can end it) and forgets expired ones. Call it at login,
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

// ResetPassword gives the enabled user with that id a new password, which
// they must change at their next sign-in (an admin chose or saw it), and in
// the same transaction ends their access (EndUserAccess,
// AccessEndPasswordReset): whoever knew the old password is signed out and
// cannot keep a token minted with it.
func (s *Store) ResetPassword(ctx context.Context, id int64, password string) (PasswordReset, error) {
	return s.resetPassword(ctx, `id=$1`, id, password, true)
}

// ResetPasswordByName is ResetPassword by username (the reset-password
// command of a locked-out admin); mustChange says whether the user must
// change the new password at their next sign-in (the command's generated
// password, not one its operator typed). A disabled user is refused with
// ErrUserDisabled, an unknown one with ErrNotFound.
func (s *Store) ResetPasswordByName(ctx context.Context, username, password string, mustChange bool) (PasswordReset, error) {
	return s.resetPassword(ctx, `username=$1`, username, password, mustChange)
}

func (s *Store) resetPassword(ctx context.Context, where string, who any, password string, mustChange bool) (PasswordReset, error) {
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
		if _, err := tx.ExecContext(ctx, `UPDATE users SET password_hash=$2, must_change_password=$3 WHERE id=$1`, row.ID, string(hash), mustChange); err != nil {
			return fmt.Errorf("store: reset password of %s: %w", row.Username, err)
		}
		e, err := endUserAccess(ctx, tx, row.ID, rows.AccessEndPasswordReset)
		r.SessionsEnded, r.TokensRevoked = e.SessionsEnded, e.TokensRevoked
		return err
	})
	return r, err
}

// ChangePassword sets the password an enabled user chose for themselves
// (password typed twice: again) and clears MustChangePassword. It is
// refused with field errors when the password breaks rows.ValidatePassword,
// the two differ, or it is the current password. Their sessions and tokens
// stay: it is the user's own act.
func (s *Store) ChangePassword(ctx context.Context, id int64, password, again string) error {
	if err := rows.ValidateNewPassword(password, again, false).Err(); err != nil {
		return err
	}
	hash, err := bcrypt.GenerateFromPassword([]byte(password), bcrypt.DefaultCost)
	if err != nil {
		return fmt.Errorf("store: hash password: %w", err)
	}
	return s.inTx(ctx, func(tx *sqlx.Tx) error {
		var current string
		if err := tx.GetContext(ctx, &current, `SELECT password_hash FROM users WHERE id=$1 AND disabled_at IS NULL FOR UPDATE`, id); err != nil {
			return fmt.Errorf("store: change password of user %d: %w", id, notFound(err))
		}
		same := bcrypt.CompareHashAndPassword([]byte(current), []byte(password)) == nil
		if err := rows.ValidateNewPassword(password, again, same).Err(); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE users SET password_hash=$2, must_change_password=false WHERE id=$1`, id, string(hash)); err != nil {
			return fmt.Errorf("store: change password of user %d: %w", id, err)
		}
		return nil
	})
}

// SetUserRole makes the enabled user with that id an admin or a viewer. A
// user whose role is lowered loses, in the same transaction, their access
// (EndUserAccess, AccessEndDemoted): their sessions end and every admin API
// token they created is revoked, so nothing keeps acting with the role
// they had. A raise or no change ends nothing.
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
		if !rows.RoleLowered(row.Role, role) {
			return nil
		}
		e, err := endUserAccess(ctx, tx, id, rows.AccessEndDemoted)
		c.SessionsEnded, c.TokensRevoked = e.SessionsEnded, e.TokensRevoked
		return err
	})
	return c, err
}
