package rows

import (
	"crypto/rand"
	"errors"
	"math/big"
	"strings"
	"time"

	"switchyard/routing/config"
)

// Roles of console users and admin tokens: the names of config's, which
// defines them.
const (
	RoleAdmin  = config.RoleAdmin
	RoleViewer = config.RoleViewer
)

// ErrBadLogin is returned for an unknown user or a wrong password alike.
var ErrBadLogin = errors.New("store: wrong username or password")

// User is a console user.
type User struct {
	ID        int64     `db:"id"`
	Username  string    `db:"username"`
	Role      string    `db:"role"`
	CreatedAt time.Time `db:"created_at"`
	// MustChangePassword: the password was generated or set by an admin,
	// and the console shows the user only the change-password page until
	// they choose their own.
	MustChangePassword bool `db:"must_change_password"`
	// AccessEpoch counts the times the user's access was ended
	// (EndUserAccess); a console session signed in under an older one is
	// refused.
	AccessEpoch int64 `db:"access_epoch"`
}

// ValidateUser checks a new user's fields.
func ValidateUser(username, password, role string) config.FieldErrors {
	f := config.FieldErrors{}
	if u := strings.TrimSpace(username); u == "" || len(u) > 64 || strings.ContainsAny(u, " \t\r\n") {
		f.Add("username", "use 1–64 characters without spaces")
	}
	for k, v := range ValidatePassword(password) {
		f.Add(k, v)
	}
	if !config.ValidRole(role) {
		f.Add("role", "must be admin or viewer")
	}
	return f
}

// Disabled is what disabling a user revoked.
type Disabled struct {
	Username      string
	SessionsEnded int64
	TokensRevoked int64
}

// ValidatePassword checks a new password: 10 to 72 bytes (bcrypt reads no
// further).
func ValidatePassword(password string) config.FieldErrors {
	f := config.FieldErrors{}
	if len(password) < 10 {
		f.Add("password", "must be at least 10 characters")
	} else if len(password) > 72 {
		f.Add("password", "must be at most 72 bytes")
	}
	return f
}

// RandomPassword is a new password for a reset or the first admin: 20
// unambiguous letters and digits in groups of five (about 117 bits).
func RandomPassword() string {
	const alphabet = "abcdefghijkmnopqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789"
	var b strings.Builder
	for i := 0; i < 20; i++ {
		v, err := rand.Int(rand.Reader, big.NewInt(int64(len(alphabet))))
		if err != nil {
			panic("store: no randomness: " + err.Error())
		}
		b.WriteByte(alphabet[v.Int64()])
		if i%5 == 4 && i < 19 {
			b.WriteByte('-')
		}
	}
	return b.String()
}

// AccessEndCause says why a user's console sessions and admin API tokens
// end. Every cause ends the same things, in one transaction
// (store.EndUserAccess); the cause is told in logs and errors.
type AccessEndCause string

// The causes that end a user's access.
const (
	// AccessEndDisabled: an admin disabled the user.
	AccessEndDisabled AccessEndCause = "disabled"
	// AccessEndDemoted: the user's role was lowered (admin to viewer).
	AccessEndDemoted AccessEndCause = "demoted"
	// AccessEndPasswordReset: an admin, or the reset-password command,
	// gave the user a new password.
	AccessEndPasswordReset AccessEndCause = "password_reset"
	// AccessEndRemovedByIdentityProvider: the identity provider no longer
	// puts the user in a group that grants their role.
	AccessEndRemovedByIdentityProvider AccessEndCause = "removed_by_identity_provider"
	// AccessEndRefreshRefused: the identity provider refused to refresh a
	// single-sign-on session (the account was disabled or its grant
	// revoked there).
	AccessEndRefreshRefused AccessEndCause = "identity_provider_refused_refresh"
)

// Valid reports whether c is one of the causes above.
func (c AccessEndCause) Valid() bool {
	switch c {
	case AccessEndDisabled, AccessEndDemoted, AccessEndPasswordReset, AccessEndRemovedByIdentityProvider, AccessEndRefreshRefused:
		return true
	}
	return false
}

// AccessEnded is what ending a user's access did.
type AccessEnded struct {
	SessionsEnded int64
	TokensRevoked int64
}

// RoleLowered reports whether going from one role to another takes
// permissions away (admin to viewer); an unknown role counts as the
// lowest.
func RoleLowered(from, to string) bool {
	rank := func(role string) int {
		for i, r := range config.Roles {
			if r == role {
				return i
			}
		}
		return len(config.Roles)
	}
	return rank(to) > rank(from)
}

// ValidateNewPassword checks the password a user chooses for themselves:
// ValidatePassword's rules, the two entries equal, and not the current
// password (matchesCurrent says whether it is).
func ValidateNewPassword(password, again string, matchesCurrent bool) config.FieldErrors {
	f := ValidatePassword(password)
	switch {
	case len(f) > 0:
	case again != password:
		f.Add("password_again", "does not match the new password")
	case matchesCurrent:
		f.Add("password", "must differ from the current password")
	}
	return f
}

// PasswordReset is what a password reset did.
type PasswordReset struct {
	UserID        int64
	Username      string
	SessionsEnded int64
	// TokensRevoked counts the admin API tokens the user created, revoked
	// with the reset.
	TokensRevoked int64
}

// RoleChange is what changing a user's role did.
type RoleChange struct {
	Username string
	From, To string
	// SessionsEnded and TokensRevoked count the console sessions ended and
	// the admin API tokens the user created revoked, when the role was
	// lowered.
	SessionsEnded int64
	TokensRevoked int64
}
