package store

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/jmoiron/sqlx"

	"switchyard/routing/config"
)

// Headers toward a vendor (config/headers.go). The provider row keeps both
// lists as JSON; a secret header's value is sealed in
// provider_header_secrets, one immutable row per value, and the row's id is
// all the configuration holds.

// headerAD binds a sealed header value to its row.
func headerAD(id int64) []byte { return []byte("provider_header:" + strconv.FormatInt(id, 10)) }

// saveHeaders seals the new secret values of p's headers and stores both
// lists on provider id. cur is the provider's stored headers: a secret
// header without a new value keeps the one stored under its name.
func (s *Store) saveHeaders(ctx context.Context, tx *sqlx.Tx, id int64, p config.Provider, cur []config.ProviderHeader) error {
	headers := make([]config.ProviderHeader, 0, len(p.Headers))
	for _, h := range p.Headers {
		h.Name = http.CanonicalHeaderKey(strings.TrimSpace(h.Name))
		switch {
		case !h.Secret:
			h.SecretID = 0
		case h.KeepsSecret():
			h.SecretID = 0
			for _, c := range cur {
				if c.Secret && c.SecretID != 0 && strings.EqualFold(c.Name, h.Name) {
					h.SecretID = c.SecretID
				}
			}
			if h.SecretID == 0 {
				return (config.FieldErrors{"headers": h.Name + " is secret: enter its value"}).Err()
			}
		default:
			if err := tx.GetContext(ctx, &h.SecretID, `SELECT nextval(pg_get_serial_sequence('provider_header_secrets','id'))`); err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO provider_header_secrets (id, provider_id, name, secret) VALUES ($1,$2,$3,$4)`,
				h.SecretID, id, h.Name, s.sealer.Seal(h.Value, headerAD(h.SecretID))); err != nil {
				return err
			}
		}
		if h.Secret {
			h.Value = "" // the value is sealed, never in the configuration
		}
		headers = append(headers, h)
	}
	return storeHeaders(ctx, tx, id, headers, p.PassHeaders)
}

// storeHeaders writes the canonical header lists of provider id.
func storeHeaders(ctx context.Context, tx *sqlx.Tx, id int64, headers []config.ProviderHeader, pass []string) error {
	hj, pj, err := headersJSON(headers, pass)
	if err != nil {
		return err
	}
	_, err = tx.ExecContext(ctx, `UPDATE providers SET headers=$2, pass_headers=$3 WHERE id=$1`, id, hj, pj) // text: jsonb takes no binary JSON
	return err
}

// headersJSON is the canonical JSON of a provider's header lists, secret
// values left out.
func headersJSON(headers []config.ProviderHeader, pass []string) (string, string, error) {
	p := config.Provider{Headers: slices.Clone(headers), PassHeaders: slices.Clone(pass)}
	config.CanonicalHeaders(&p)
	for i := range p.Headers {
		if p.Headers[i].Secret {
			p.Headers[i].Value = ""
		}
	}
	hj, err := json.Marshal(nonNilSlice(p.Headers))
	if err != nil {
		return "", "", err
	}
	pj, err := json.Marshal(nonNilSlice(p.PassHeaders))
	if err != nil {
		return "", "", err
	}
	return string(hj), string(pj), nil
}

func nonNilSlice[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// headerSecretOwners returns, of the given secret header ids, which
// provider each belongs to (missing ids are left out).
func headerSecretOwners(ctx context.Context, q sqlx.QueryerContext, ids []int64) (map[int64]int64, error) {
	out := map[int64]int64{}
	if len(ids) == 0 {
		return out, nil
	}
	query, args, err := sqlx.In(`SELECT id, provider_id FROM provider_header_secrets WHERE id IN (?)`, ids)
	if err != nil {
		return nil, err
	}
	rows, err := q.QueryxContext(ctx, sqlx.Rebind(sqlx.DOLLAR, query), args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var id, pid int64
		if err := rows.Scan(&id, &pid); err != nil {
			return nil, err
		}
		out[id] = pid
	}
	return out, rows.Err()
}

// ProviderHeaderSecrets opens the sealed values of the given secret header
// ids, with the provider each was sealed for (rows of replaced values
// included: an older published version may still use them).
func (s *Store) ProviderHeaderSecrets(ctx context.Context, ids []int64) (map[int64]config.HeaderSecret, error) {
	out := make(map[int64]config.HeaderSecret, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	q, args, err := sqlx.In(`SELECT id, provider_id, secret FROM provider_header_secrets WHERE id IN (?)`, ids)
	if err != nil {
		return nil, err
	}
	rows, err := s.db.QueryxContext(ctx, s.db.Rebind(q), args...)
	if err != nil {
		return nil, fmt.Errorf("store: load header secrets: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id, pid int64
		var sealed []byte
		if err := rows.Scan(&id, &pid, &sealed); err != nil {
			return nil, err
		}
		plain, err := s.sealer.Open(sealed, headerAD(id))
		if err != nil {
			return nil, fmt.Errorf("store: header secret %d: %w", id, err)
		}
		out[id] = config.HeaderSecret{ProviderID: pid, Value: plain}
	}
	return out, rows.Err()
}
