package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jmoiron/sqlx"

	"switchyard/routing/config"
	"switchyard/routing/live"
)

// RevokedByRotation is the revoked_by of a key whose rotation grace ended.
const RevokedByRotation = "rotation"

// MaxRotationGrace bounds a rotation's grace period.
const MaxRotationGrace = 90 * 24 * time.Hour

// RotateCallerKey replaces a key, by actor: it makes a new key for the same
// caller with the old one's name, owner and scope (and, when the old key
// had a lifetime, the same lifetime from now), and sets the old key to stop
// working grace from now. Every instance refuses the old key from that
// instant by itself; SweepRotatedKeys later marks it revoked. A grace of 0
// revokes the old key at once. A key already rotated, or revoked, is not
// rotated again.
func (s *Store) RotateCallerKey(ctx context.Context, keyID int64, grace time.Duration, actor string) (Rotation, error) {
	if grace < 0 || grace > MaxRotationGrace {
		return Rotation{}, (config.FieldErrors{"grace": "must be between 0 and 90 days"}).Err()
	}
	r := Rotation{OldID: keyID}
	err := s.inTx(ctx, func(tx *sqlx.Tx) error {
		var old CallerKeyInfo
		err := tx.GetContext(ctx, &old, `SELECT `+callerKeyCols+callerKeyFrom+` WHERE k.id=$1 AND k.revoked_at IS NULL FOR UPDATE OF k`, keyID)
		if err != nil {
			return notFound(err)
		}
		if old.RevokeAt != nil {
			return (config.FieldErrors{"grace": "this key was rotated already; it stops working at " + old.RevokeAt.UTC().Format(time.RFC3339)}).Err()
		}
		in := NewCallerKey{Name: old.Name, Owner: old.Owner, Scope: old.Scope()}
		if old.ExpiresAt != nil {
			at := time.Now().Add(old.ExpiresAt.Sub(old.CreatedAt))
			in.ExpiresAt = &at
		}
		if r.Plaintext, r.New, err = insertCallerKey(ctx, tx, old.CallerName, in, &keyID, actor); err != nil {
			return err
		}
		if grace == 0 {
			return tx.GetContext(ctx, &r.RevokeAt, `UPDATE caller_keys SET revoke_at=now(), revoked_at=now(), revoked_by=$2 WHERE id=$1 RETURNING revoke_at`, keyID, actor)
		}
		return tx.GetContext(ctx, &r.RevokeAt, `UPDATE caller_keys SET revoke_at=now() + $2 * interval '1 microsecond' WHERE id=$1 RETURNING revoke_at`, keyID, grace.Microseconds())
	})
	if err != nil {
		return Rotation{}, fmt.Errorf("store: rotate caller key %d: %w", keyID, err)
	}
	return r, s.notify(ctx, live.KeysNotice)
}

// SweepRotatedKeys marks revoked (by "rotation", at the end of their grace)
// the rotated keys whose grace has ended, and returns how many. The data
// plane already refuses them; this makes the lists say so and takes them
// out of the instances' key sets.
func (s *Store) SweepRotatedKeys(ctx context.Context) (int64, error) {
	res, err := s.db.ExecContext(ctx, `UPDATE caller_keys SET revoked_at=revoke_at, revoked_by=$1
		WHERE revoked_at IS NULL AND revoke_at IS NOT NULL AND revoke_at <= now()`, RevokedByRotation)
	if err != nil {
		return 0, fmt.Errorf("store: sweep rotated caller keys: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil || n == 0 {
		return n, err
	}
	return n, s.notify(ctx, live.KeysNotice)
}
