package rows

import (
	"errors"
	"time"
)

// AdminTokenPrefix starts every admin API token.
const AdminTokenPrefix = "sya-"

// AdminToken is an admin API token as listed.
type AdminToken struct {
	ID         int64      `db:"id"`
	Name       string     `db:"name"`
	Prefix     string     `db:"prefix"`
	Role       string     `db:"role"`
	CreatedBy  string     `db:"created_by"`
	CreatedAt  time.Time  `db:"created_at"`
	LastUsedAt *time.Time `db:"last_used_at"`
	// LastUsedAddr is the client address of the last use ("" never used).
	LastUsedAddr string     `db:"last_used_addr"`
	RevokedAt    *time.Time `db:"revoked_at"`
	// ExpiresAt is when the token stops working (nil: never).
	ExpiresAt *time.Time `db:"expires_at"`
}

// ErrTokenExpired is returned for an admin API token past its expiry.
var ErrTokenExpired = errors.New("store: admin API token expired")
