package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"switchyard/routing/config"
	"switchyard/routing/live"
)

// Caller API keys are credentials, not configuration. A key belongs to a
// caller's name, lives outside the versioned draft (making or revoking one
// never moves the draft revision) and takes effect at once on every
// instance. It authenticates while the live version contains a caller of
// that name: a version that removes the caller suspends its keys, one that
// brings the caller back restores them. Who made and who revoked a key is
// recorded on its row.

// CreateCallerKey makes a new API key for the caller named callerName, by
// actor. The plaintext is returned once and never stored; it works on every
// instance within the reload bound while the live version has the caller.
func (s *Store) CreateCallerKey(ctx context.Context, callerName, name, actor string) (plaintext string, k config.CallerKey, err error) {
	return s.CreateCallerKeyWith(ctx, callerName, NewCallerKey{Name: name}, actor)
}

// CreateCallerKeyWith is CreateCallerKey with an owner, an expiry and a
// scope.
func (s *Store) CreateCallerKeyWith(ctx context.Context, callerName string, in NewCallerKey, actor string) (plaintext string, k config.CallerKey, err error) {
	if err := ValidateNewCallerKey(in, time.Now()); err != nil {
		return "", k, err
	}
	plaintext, k, err = insertCallerKey(ctx, s.db, callerName, in, nil, actor)
	if err != nil {
		return "", k, fmt.Errorf("store: create caller key: %w", err)
	}
	return plaintext, k, s.notify(ctx, live.KeysNotice)
}

// ValidateNewCallerKey checks a new key's fields, for the console form and
// the admin API alike.
func ValidateNewCallerKey(in NewCallerKey, now time.Time) error {
	f := config.FieldErrors{}
	if len(in.Name) > 100 {
		f.Add("name", "must be at most 100 characters")
	}
	if len(in.Owner) > 100 {
		f.Add("owner", "must be at most 100 characters")
	}
	if in.ExpiresAt != nil && !in.ExpiresAt.After(now) {
		f.Add("expires_at", "must be in the future")
	}
	config.ValidateKeyScope(in.Scope, f)
	return f.Err()
}

func insertCallerKey(ctx context.Context, q sqlx.QueryerContext, callerName string, in NewCallerKey, rotatedFrom *int64, actor string) (string, config.CallerKey, error) {
	plaintext, prefix := newToken(CallerKeyPrefix)
	k := config.CallerKey{Name: in.Name, Prefix: prefix}
	err := sqlx.GetContext(ctx, q, &k.ID, `INSERT INTO caller_keys (caller_name, name, prefix, hash, created_by, owner, expires_at, scope_tiers, scope_models, scope_doors, rotated_from)
		VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11) RETURNING id`,
		callerName, in.Name, prefix, hashToken(plaintext), actor, in.Owner, in.ExpiresAt,
		pq.Array(nonNilStrings(in.Scope.Tiers)), pq.Array(nonNilStrings(in.Scope.Models)), pq.Array(nonNilStrings(in.Scope.Doors)), rotatedFrom)
	return plaintext, k, err
}

func nonNilStrings[T ~string](xs []T) []string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = string(x)
	}
	return out
}

// RevokeCallerKey revokes a key for good, by actor: no rollback or import
// brings it back.
func (s *Store) RevokeCallerKey(ctx context.Context, keyID int64, actor string) error {
	res, err := s.db.ExecContext(ctx, `UPDATE caller_keys SET revoked_at=now(), revoked_by=$2 WHERE id=$1 AND revoked_at IS NULL`, keyID, actor)
	if err := rowsAffected(res, err); err != nil {
		return fmt.Errorf("store: revoke caller key %d: %w", keyID, err)
	}
	return s.notify(ctx, live.KeysNotice)
}

// CallerKeyCaller returns the name of the caller a key belongs to.
func (s *Store) CallerKeyCaller(ctx context.Context, keyID int64) (string, error) {
	var name string
	if err := s.db.GetContext(ctx, &name, `SELECT caller_name FROM caller_keys WHERE id=$1`, keyID); err != nil {
		return "", fmt.Errorf("store: caller key %d: %w", keyID, notFound(err))
	}
	return name, nil
}

const callerKeyCols = `k.id, k.caller_name, k.name, k.prefix, k.created_at, k.created_by, k.revoked_at, k.revoked_by, k.hash,
	k.expires_at, k.owner, k.scope_tiers, k.scope_models, k.scope_doors, k.rotated_from, k.revoke_at, u.last_used_at, u.last_used_addr`

const callerKeyFrom = ` FROM caller_keys k LEFT JOIN caller_key_usage u ON u.key_id = k.id`

// CallerKeys lists the keys of the callers named, revoked ones included.
func (s *Store) CallerKeys(ctx context.Context, callerNames ...string) ([]CallerKeyInfo, error) {
	var out []CallerKeyInfo
	err := s.db.SelectContext(ctx, &out, `SELECT `+callerKeyCols+callerKeyFrom+` WHERE k.caller_name = ANY($1) ORDER BY k.id`, pq.Array(callerNames))
	return out, err
}

// CallerKeysExpiringWithin lists the unrevoked keys that expire within d
// from now (not those already expired), soonest first.
func (s *Store) CallerKeysExpiringWithin(ctx context.Context, d time.Duration) ([]CallerKeyInfo, error) {
	var out []CallerKeyInfo
	err := s.db.SelectContext(ctx, &out, `SELECT `+callerKeyCols+callerKeyFrom+`
		WHERE k.revoked_at IS NULL AND k.expires_at > now() AND k.expires_at <= now() + $1 * interval '1 microsecond'
		ORDER BY k.expires_at, k.id`, d.Microseconds())
	if err != nil {
		return nil, fmt.Errorf("store: caller keys expiring: %w", err)
	}
	return out, nil
}

// LiveCallerKeys maps hashes of unrevoked caller keys to the keys: their
// callers' names and terms. The data plane accepts one while the live
// version has that caller and the terms allow it.
func (s *Store) LiveCallerKeys(ctx context.Context) (config.LiveKeys, error) {
	var rs []CallerKeyInfo
	err := s.db.SelectContext(ctx, &rs, `SELECT `+callerKeyCols+callerKeyFrom+` WHERE k.revoked_at IS NULL`)
	if err != nil {
		return nil, fmt.Errorf("store: load caller keys: %w", err)
	}
	out := make(config.LiveKeys, len(rs))
	for _, r := range rs {
		if len(r.Hash) != 32 {
			continue // not one of ours
		}
		k := config.LiveKey{ID: r.ID, Caller: r.CallerName}
		if r.ExpiresAt != nil {
			k.ExpiresAt = *r.ExpiresAt
		}
		if r.RevokeAt != nil {
			k.RevokeAt = *r.RevokeAt
		}
		if sc := r.Scope(); !sc.Empty() {
			k.Scope = sc
		}
		out[[32]byte(r.Hash)] = k
	}
	return out, nil
}

// CallerKeysState is a cheap fingerprint of the caller key table: it changes
// whenever a key is created, revoked or deleted. Keys that follow a renamed
// caller move with a publish, and a new version reloads every key anyway.
func (s *Store) CallerKeysState(ctx context.Context) (string, error) {
	var n, maxID, revoked int64
	err := s.db.QueryRowxContext(ctx, `SELECT count(*), coalesce(max(id),0), count(revoked_at) FROM caller_keys`).Scan(&n, &maxID, &revoked)
	return fmt.Sprintf("%d/%d/%d", n, maxID, revoked), err
}

// followRenames moves the keys of callers a publish renames (same id, new
// name) to their new names, in the publish's transaction, so a rename never
// suspends a caller's keys. Swapped names move at once.
func followRenames(ctx context.Context, tx *sqlx.Tx, before, after config.Snapshot) error {
	was := map[int64]string{}
	for _, c := range before.Callers {
		was[c.ID] = c.Name
	}
	var from, to []string
	for _, c := range after.Callers {
		if old, ok := was[c.ID]; ok && old != c.Name && c.ID != 0 {
			from, to = append(from, old), append(to, c.Name)
		}
	}
	if len(from) == 0 {
		return nil
	}
	_, err := tx.ExecContext(ctx, `UPDATE caller_keys k SET caller_name = r.to_name
		FROM unnest($1::text[], $2::text[]) AS r(from_name, to_name) WHERE k.caller_name = r.from_name`, pq.Array(from), pq.Array(to))
	if err != nil {
		return fmt.Errorf("store: keys follow renamed callers: %w", err)
	}
	return nil
}

// UnrevokedKeyCounts counts the unrevoked keys of each caller name.
func (s *Store) UnrevokedKeyCounts(ctx context.Context) (map[string]int, error) {
	var rows []struct {
		Name string `db:"caller_name"`
		N    int    `db:"n"`
	}
	if err := s.db.SelectContext(ctx, &rows, `SELECT caller_name, count(*) AS n FROM caller_keys WHERE revoked_at IS NULL GROUP BY caller_name`); err != nil {
		return nil, fmt.Errorf("store: count caller keys: %w", err)
	}
	out := make(map[string]int, len(rows))
	for _, r := range rows {
		out[r.Name] = r.N
	}
	return out, nil
}
