package rows

import (
	"time"

	"github.com/lib/pq"

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
	// ExpiresAt is when the key stops working (nil: never).
	ExpiresAt *time.Time `db:"expires_at"`
	// Owner is a free label: who holds the key.
	Owner string `db:"owner"`
	// The scope: empty lists limit nothing (config.KeyScope).
	ScopeTiers  pq.StringArray `db:"scope_tiers"`
	ScopeModels pq.StringArray `db:"scope_models"`
	ScopeDoors  pq.StringArray `db:"scope_doors"`
	// RotatedFrom is the key this one replaced.
	RotatedFrom *int64 `db:"rotated_from"`
	// RevokeAt is the end of a rotated key's grace period.
	RevokeAt *time.Time `db:"revoke_at"`
	// LastUsedAt and LastUsedAddr are the key's last use, as flushed by
	// the instances (a minute late at most).
	LastUsedAt   *time.Time `db:"last_used_at"`
	LastUsedAddr *string    `db:"last_used_addr"`
}

// Scope is the key's scope.
func (k CallerKeyInfo) Scope() config.KeyScope {
	s := config.KeyScope{Models: k.ScopeModels}
	for _, t := range k.ScopeTiers {
		s.Tiers = append(s.Tiers, config.TierName(t))
	}
	for _, d := range k.ScopeDoors {
		s.Doors = append(s.Doors, config.Door(d))
	}
	return s
}

// NewCallerKey is what making a caller key takes besides its caller.
type NewCallerKey struct {
	Name  string
	Owner string
	// ExpiresAt is when the key stops working (nil: never).
	ExpiresAt *time.Time
	Scope     config.KeyScope
}

// Fingerprint is what a call log records of the key when a request
// presents it (config.PresentedKeyFingerprint): search Call logs by it to
// find the calls that used this key, revoked or not.
func (k CallerKeyInfo) Fingerprint() string { return config.CallerKeyFingerprint(k.Prefix, k.Hash) }

// Rotation is what rotating a key made: the new key (its plaintext shown
// once) and the instant the old key stops working.
type Rotation struct {
	Plaintext string
	New       config.CallerKey
	OldID     int64
	RevokeAt  time.Time
}
