package rows

import "time"

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
	RevokedAt  *time.Time `db:"revoked_at"`
}
