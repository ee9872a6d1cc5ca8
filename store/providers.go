package store

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/jmoiron/sqlx"

	"switchyard/routing/config"
)

// CreateProvider inserts a provider and returns its id. Secret header
// values are sealed; the provider keeps only their ids.
func (s *Store) CreateProvider(ctx context.Context, p config.Provider) (int64, error) {
	if err := config.ValidateProvider(p).Err(); err != nil {
		return 0, err
	}
	var id int64
	err := s.inTx(ctx, func(tx *sqlx.Tx) error {
		err := tx.QueryRowxContext(ctx,
			`INSERT INTO providers (name, protocol, base_url, enabled, timeout_ms, notes, api_version, region, auth_url, project, quirks, sandbox) VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12) RETURNING id`,
			p.Name, p.Protocol, p.BaseURL, p.Enabled, p.TimeoutMS, p.Notes, p.APIVersion, p.Region, p.AuthURL, p.Project, quirksJSON(p.Quirks), p.Sandbox).Scan(&id)
		if err != nil {
			return uniqueField(err, "name", "provider name "+strconv.Quote(p.Name))
		}
		return s.saveHeaders(ctx, tx, id, p, nil)
	})
	if err != nil {
		return 0, fmt.Errorf("store: create provider: %w", err)
	}
	return id, nil
}

// UpdateProvider changes a provider's own fields and headers. A secret
// header sent without a new value (empty or config.SecretSet) keeps the
// value it has under that name.
func (s *Store) UpdateProvider(ctx context.Context, id int64, p config.Provider) error {
	if err := config.ValidateProvider(p).Err(); err != nil {
		return err
	}
	err := s.inTx(ctx, func(tx *sqlx.Tx) error {
		var raw []byte
		if err := tx.GetContext(ctx, &raw, `SELECT headers FROM providers WHERE id=$1 FOR UPDATE`, id); err != nil {
			return notFound(err)
		}
		var cur []config.ProviderHeader
		if err := json.Unmarshal(raw, &cur); err != nil {
			return fmt.Errorf("stored headers: %w", err)
		}
		res, err := tx.ExecContext(ctx,
			`UPDATE providers SET name=$2, protocol=$3, base_url=$4, enabled=$5, timeout_ms=$6, notes=$7, api_version=$8, region=$9, auth_url=$10, project=$11, quirks=$12 WHERE id=$1`,
			id, p.Name, p.Protocol, p.BaseURL, p.Enabled, p.TimeoutMS, p.Notes, p.APIVersion, p.Region, p.AuthURL, p.Project, quirksJSON(p.Quirks))
		if err := rowsAffected(res, err); err != nil {
			return uniqueField(err, "name", "provider name "+strconv.Quote(p.Name))
		}
		return s.saveHeaders(ctx, tx, id, p, cur)
	})
	if err != nil {
		return fmt.Errorf("store: update provider %d: %w", id, err)
	}
	return nil
}

// DeleteProvider deletes a provider and its keys, refusing while deployments use it.
func (s *Store) DeleteProvider(ctx context.Context, id int64) error {
	return s.inTx(ctx, func(tx *sqlx.Tx) error {
		var name string
		if err := tx.GetContext(ctx, &name, `SELECT name FROM providers WHERE id=$1 FOR UPDATE`, id); err != nil {
			return fmt.Errorf("store: delete provider %d: %w", id, notFound(err))
		}
		var users []string
		if err := tx.SelectContext(ctx, &users, `
			SELECT 'deployment ' || m.code || ' (' || d.upstream_model || ')'
			FROM deployments d JOIN logic_models m ON m.id = d.logic_model_id
			WHERE d.provider_id = $1 ORDER BY m.code, d.upstream_model`, id); err != nil {
			return fmt.Errorf("store: delete provider %d: %w", id, err)
		}
		if err := referenced("provider "+name, users); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `DELETE FROM providers WHERE id=$1`, id)
		return err
	})
}

// ProviderID resolves a provider name.
func (s *Store) ProviderID(ctx context.Context, name string) (int64, error) {
	var id int64
	if err := s.db.GetContext(ctx, &id, `SELECT id FROM providers WHERE name=$1`, name); err != nil {
		return 0, fmt.Errorf("store: provider %q: %w", name, notFound(err))
	}
	return id, nil
}

// keyAD binds a sealed secret to its key row.
func keyAD(id int64) []byte { return []byte("provider_key:" + strconv.FormatInt(id, 10)) }

// AddProviderKey stores a new key: sealed secret, fingerprint, label.
func (s *Store) AddProviderKey(ctx context.Context, providerID int64, label, secret string) (config.ProviderKey, error) {
	if err := config.ValidateProviderKey(label, secret, true).Err(); err != nil {
		return config.ProviderKey{}, err
	}
	k := config.ProviderKey{Label: label, Fingerprint: config.KeyFingerprint(secret), Status: config.KeyActive}
	err := s.inTx(ctx, func(tx *sqlx.Tx) error {
		// The id is taken first so the ciphertext can be bound to its row.
		if err := tx.GetContext(ctx, &k.ID, `SELECT nextval(pg_get_serial_sequence('provider_keys','id'))`); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx,
			`INSERT INTO provider_keys (id, provider_id, label, secret, fingerprint, status) VALUES ($1,$2,$3,$4,$5,'active')`,
			k.ID, providerID, label, s.sealer.Seal(secret, keyAD(k.ID)), k.Fingerprint)
		if isFK(err) {
			return fmt.Errorf("store: provider %d: %w", providerID, ErrNotFound)
		}
		return err
	})
	if err != nil {
		return config.ProviderKey{}, fmt.Errorf("store: add key to provider %d: %w", providerID, err)
	}
	return k, nil
}

// SetProviderKeyStatus enables or disables a key in the draft.
func (s *Store) SetProviderKeyStatus(ctx context.Context, keyID int64, status string) error {
	if status != config.KeyActive && status != config.KeyDisabled {
		return (config.FieldErrors{"status": "must be active or disabled"}).Err()
	}
	res, err := s.db.ExecContext(ctx, `UPDATE provider_keys SET status=$2 WHERE id=$1 AND deleted_at IS NULL`, keyID, status)
	if err := rowsAffected(res, err); err != nil {
		return fmt.Errorf("store: set key %d status: %w", keyID, err)
	}
	return nil
}

// RemoveProviderKey removes a key from the draft. The sealed secret is kept
// so that rolling back to a version that used the key restores it.
func (s *Store) RemoveProviderKey(ctx context.Context, keyID int64) error {
	res, err := s.db.ExecContext(ctx, `UPDATE provider_keys SET deleted_at=now() WHERE id=$1 AND deleted_at IS NULL`, keyID)
	if err := rowsAffected(res, err); err != nil {
		return fmt.Errorf("store: remove key %d: %w", keyID, err)
	}
	return nil
}

// ProviderKeyProvider returns the provider id a key belongs to.
func (s *Store) ProviderKeyProvider(ctx context.Context, keyID int64) (int64, error) {
	var pid int64
	if err := s.db.GetContext(ctx, &pid, `SELECT provider_id FROM provider_keys WHERE id=$1`, keyID); err != nil {
		return 0, fmt.Errorf("store: key %d: %w", keyID, notFound(err))
	}
	return pid, nil
}

// ProviderKeySecrets decrypts the secrets of the given key ids (deleted keys
// included: an older published version may still use them).
func (s *Store) ProviderKeySecrets(ctx context.Context, ids []int64) (map[int64]string, error) {
	out := make(map[int64]string, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	q, args, err := sqlx.In(`SELECT id, secret FROM provider_keys WHERE id IN (?)`, ids)
	if err != nil {
		return nil, err
	}
	rows, err := s.db.QueryxContext(ctx, s.db.Rebind(q), args...)
	if err != nil {
		return nil, fmt.Errorf("store: load key secrets: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		var sealed []byte
		if err := rows.Scan(&id, &sealed); err != nil {
			return nil, err
		}
		plain, err := s.sealer.Open(sealed, keyAD(id))
		if err != nil {
			return nil, fmt.Errorf("store: key %d: %w", id, err)
		}
		out[id] = plain
	}
	return out, rows.Err()
}

// ProviderKeySecret decrypts one key's secret (for a key verification call).
func (s *Store) ProviderKeySecret(ctx context.Context, id int64) (string, error) {
	m, err := s.ProviderKeySecrets(ctx, []int64{id})
	if err != nil {
		return "", err
	}
	v, ok := m[id]
	if !ok {
		return "", fmt.Errorf("store: key %d: %w", id, ErrNotFound)
	}
	return v, nil
}

// quirksJSON is a provider's quirks as the JSON text of its jsonb column
// (text: jsonb takes no binary JSON).
func quirksJSON(q config.Quirks) string {
	b, _ := json.Marshal(nonNilSlice(q))
	return string(b)
}
