package rows

import (
	"time"

	"switchyard/routing/config"
)

// CallerKeyInfo is a caller key as the console lists it, with its audit.
type CallerKeyInfo struct {
	ID         int64      `db:"id"`
	CallerName string     `db:"caller_name"`
	Name       string     `db:"name"`
	Prefix     string     `db:"prefix"`
	CreatedAt  time.Time  `db:"created_at"`
	CreatedBy  string     `db:"created_by"`
	RevokedAt  *time.Time `db:"revoked_at"`
	RevokedBy  *string    `db:"revoked_by"`
	Hash       []byte     `db:"hash"`
}

// Fingerprint is what a call log records of the key when a request
// presents it (config.PresentedKeyFingerprint): search Call logs by it to
// find the calls that used this key, revoked or not.
func (k CallerKeyInfo) Fingerprint() string { return config.CallerKeyFingerprint(k.Prefix, k.Hash) }
