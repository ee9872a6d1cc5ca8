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
	// TokensRevoked counts the admin-role API tokens the user created,
	// revoked when they became a viewer.
	TokensRevoked int64
}
