package store

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/jmoiron/sqlx"

	"switchyard/routing/config"
)

// CallerKeyPrefix starts every caller API key.
const CallerKeyPrefix = "sy-"

func (s *Store) callerRefs(ctx context.Context, q sqlx.QueryerContext, c config.Caller) (groupID int64, tenant *int64, err error) {
	if err := sqlx.GetContext(ctx, q, &groupID, `SELECT id FROM route_groups WHERE name=$1`, c.RouteGroup); err != nil {
		return 0, nil, (config.FieldErrors{"route_group": "route group " + strconv.Quote(c.RouteGroup) + " does not exist"}).Err()
	}
	tenant, err = s.tenantID(ctx, q, c.Tenant)
	return groupID, tenant, err
}

func writeLimits(ctx context.Context, tx *sqlx.Tx, callerID int64, limits []config.TierLimit) error {
	if _, err := tx.ExecContext(ctx, `DELETE FROM caller_limits WHERE caller_id=$1`, callerID); err != nil {
		return err
	}
	for _, l := range limits {
		if l.RPM == 0 && l.TPM == 0 && l.DailyTokens == 0 {
			continue // unlimited is the absence of a row
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO caller_limits (caller_id, tier, rpm, tpm, daily_tokens) VALUES ($1,$2,$3,$4,$5)`,
			callerID, l.Tier, l.RPM, l.TPM, l.DailyTokens); err != nil {
			return err
		}
	}
	return nil
}

// CreateCaller inserts a caller with its limits.
func (s *Store) CreateCaller(ctx context.Context, c config.Caller) (int64, error) {
	if err := config.ValidateCaller(c).Err(); err != nil {
		return 0, err
	}
	var id int64
	err := s.inTx(ctx, func(tx *sqlx.Tx) error {
		gid, tenant, err := s.callerRefs(ctx, tx, c)
		if err != nil {
			return err
		}
		if err := tx.GetContext(ctx, &id, `
			INSERT INTO callers (name, business_line, tenant_id, route_group_id, priority_class, enabled, monthly_budget_micros, budget_currency)
			VALUES ($1,$2,$3,$4,$5,$6,$7,$8) RETURNING id`,
			c.Name, c.BusinessLine, tenant, gid, c.PriorityClass, c.Enabled, c.MonthlyBudgetMicros, currencyOr(c.BudgetCurrency)); err != nil {
			return uniqueField(err, "name", "caller name "+strconv.Quote(c.Name))
		}
		return writeLimits(ctx, tx, id, c.Limits)
	})
	if err != nil {
		return 0, fmt.Errorf("store: create caller: %w", err)
	}
	return id, nil
}

// UpdateCaller changes a caller and replaces its limits.
func (s *Store) UpdateCaller(ctx context.Context, id int64, c config.Caller) error {
	if err := config.ValidateCaller(c).Err(); err != nil {
		return err
	}
	return s.inTx(ctx, func(tx *sqlx.Tx) error {
		gid, tenant, err := s.callerRefs(ctx, tx, c)
		if err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, `
			UPDATE callers SET name=$2, business_line=$3, tenant_id=$4, route_group_id=$5, priority_class=$6, enabled=$7,
				monthly_budget_micros=$8, budget_currency=$9 WHERE id=$1`,
			id, c.Name, c.BusinessLine, tenant, gid, c.PriorityClass, c.Enabled, c.MonthlyBudgetMicros, currencyOr(c.BudgetCurrency))
		if err := rowsAffected(res, err); err != nil {
			return fmt.Errorf("store: update caller %d: %w", id, uniqueField(err, "name", "caller name "+strconv.Quote(c.Name)))
		}
		return writeLimits(ctx, tx, id, c.Limits)
	})
}

// DeleteCaller deletes a caller and its keys.
func (s *Store) DeleteCaller(ctx context.Context, id int64) error {
	res, err := s.db.ExecContext(ctx, `DELETE FROM callers WHERE id=$1`, id)
	if err := rowsAffected(res, err); err != nil {
		return fmt.Errorf("store: delete caller %d: %w", id, err)
	}
	return s.notify(ctx, "keys")
}

// CreateCallerKey makes a new API key for a caller. The plaintext is returned
// once and never stored; it works on every instance within the reload bound.
func (s *Store) CreateCallerKey(ctx context.Context, callerID int64, name string) (plaintext string, k config.CallerKey, err error) {
	if len(name) > 100 {
		return "", k, (config.FieldErrors{"name": "must be at most 100 characters"}).Err()
	}
	plaintext, prefix := newToken(CallerKeyPrefix)
	k = config.CallerKey{Name: name, Prefix: prefix}
	err = s.db.GetContext(ctx, &k.ID, `INSERT INTO caller_keys (caller_id, name, prefix, hash) VALUES ($1,$2,$3,$4) RETURNING id`,
		callerID, name, prefix, hashToken(plaintext))
	if isFK(err) {
		return "", k, fmt.Errorf("store: caller %d: %w", callerID, ErrNotFound)
	}
	if err != nil {
		return "", k, fmt.Errorf("store: create caller key: %w", err)
	}
	return plaintext, k, s.notify(ctx, "keys")
}

// RevokeCallerKey revokes a key for good: no rollback or import brings it back.
func (s *Store) RevokeCallerKey(ctx context.Context, keyID int64) error {
	res, err := s.db.ExecContext(ctx, `UPDATE caller_keys SET revoked_at=now() WHERE id=$1 AND revoked_at IS NULL`, keyID)
	if err := rowsAffected(res, err); err != nil {
		return fmt.Errorf("store: revoke caller key %d: %w", keyID, err)
	}
	return s.notify(ctx, "keys")
}

// CallerKeyCaller returns the caller id of a key.
func (s *Store) CallerKeyCaller(ctx context.Context, keyID int64) (int64, error) {
	var cid int64
	if err := s.db.GetContext(ctx, &cid, `SELECT caller_id FROM caller_keys WHERE id=$1`, keyID); err != nil {
		return 0, fmt.Errorf("store: caller key %d: %w", keyID, notFound(err))
	}
	return cid, nil
}

// CallerKeyInfo is a caller key as the console lists it.
type CallerKeyInfo struct {
	ID        int64      `db:"id"`
	CallerID  int64      `db:"caller_id"`
	Name      string     `db:"name"`
	Prefix    string     `db:"prefix"`
	CreatedAt time.Time  `db:"created_at"`
	RevokedAt *time.Time `db:"revoked_at"`
	Hash      []byte     `db:"hash"`
}

// Fingerprint is what a call log records of the key when a request
// presents it (config.PresentedKeyFingerprint): search Call logs by it to
// find the calls that used this key, revoked or not.
func (k CallerKeyInfo) Fingerprint() string { return config.CallerKeyFingerprint(k.Prefix, k.Hash) }

// CallerKeys lists a caller's keys, revoked ones included.
func (s *Store) CallerKeys(ctx context.Context, callerID int64) ([]CallerKeyInfo, error) {
	var out []CallerKeyInfo
	err := s.db.SelectContext(ctx, &out, `SELECT id, caller_id, name, prefix, created_at, revoked_at, hash FROM caller_keys WHERE caller_id=$1 ORDER BY id`, callerID)
	return out, err
}

// LiveCallerKeys maps hashes of unrevoked caller keys to caller ids.
func (s *Store) LiveCallerKeys(ctx context.Context) (map[[32]byte]int64, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT hash, caller_id FROM caller_keys WHERE revoked_at IS NULL`)
	if err != nil {
		return nil, fmt.Errorf("store: load caller keys: %w", err)
	}
	defer rows.Close()
	out := map[[32]byte]int64{}
	for rows.Next() {
		var h []byte
		var id int64
		if err := rows.Scan(&h, &id); err != nil {
			return nil, err
		}
		var k [32]byte
		copy(k[:], h)
		out[k] = id
	}
	return out, rows.Err()
}

// CallerKeysState is a cheap fingerprint of the caller key table: it changes
// whenever a key is created, revoked or deleted.
func (s *Store) CallerKeysState(ctx context.Context) (string, error) {
	var n, maxID, revoked int64
	err := s.db.QueryRowxContext(ctx, `SELECT count(*), coalesce(max(id),0), count(revoked_at) FROM caller_keys`).Scan(&n, &maxID, &revoked)
	return fmt.Sprintf("%d/%d/%d", n, maxID, revoked), err
}
