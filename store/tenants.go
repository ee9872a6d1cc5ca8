package store

import (
	"context"
	"fmt"
	"strconv"

	"github.com/jmoiron/sqlx"

	"switchyard/routing/config"
)

// CreateTenant inserts a tenant.
func (s *Store) CreateTenant(ctx context.Context, t config.Tenant) (int64, error) {
	if err := config.ValidateTenant(t).Err(); err != nil {
		return 0, err
	}
	var id int64
	err := s.db.GetContext(ctx, &id, `INSERT INTO tenants (name, description) VALUES ($1,$2) RETURNING id`, t.Name, t.Description)
	if err != nil {
		return 0, fmt.Errorf("store: create tenant: %w", uniqueField(err, "name", "tenant name "+strconv.Quote(t.Name)))
	}
	return id, nil
}

// UpdateTenant changes a tenant.
func (s *Store) UpdateTenant(ctx context.Context, id int64, t config.Tenant) error {
	if err := config.ValidateTenant(t).Err(); err != nil {
		return err
	}
	res, err := s.db.ExecContext(ctx, `UPDATE tenants SET name=$2, description=$3 WHERE id=$1`, id, t.Name, t.Description)
	if err := rowsAffected(res, err); err != nil {
		return fmt.Errorf("store: update tenant %d: %w", id, uniqueField(err, "name", "tenant name "+strconv.Quote(t.Name)))
	}
	return nil
}

// DeleteTenant deletes a tenant no caller or route group belongs to.
func (s *Store) DeleteTenant(ctx context.Context, id int64) error {
	return s.inTx(ctx, func(tx *sqlx.Tx) error {
		var name string
		if err := tx.GetContext(ctx, &name, `SELECT name FROM tenants WHERE id=$1 FOR UPDATE`, id); err != nil {
			return fmt.Errorf("store: delete tenant %d: %w", id, notFound(err))
		}
		var users []string
		if err := tx.SelectContext(ctx, &users, `
			SELECT 'route group ' || name FROM route_groups WHERE tenant_id=$1
			UNION ALL SELECT 'caller ' || name FROM callers WHERE tenant_id=$1 ORDER BY 1`, id); err != nil {
			return err
		}
		if err := referenced("tenant "+name, users); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `DELETE FROM tenants WHERE id=$1`, id)
		return err
	})
}

func (s *Store) tenantID(ctx context.Context, q sqlx.QueryerContext, name string) (*int64, error) {
	if name == "" {
		return nil, nil
	}
	var id int64
	if err := sqlx.GetContext(ctx, q, &id, `SELECT id FROM tenants WHERE name=$1`, name); err != nil {
		return nil, (config.FieldErrors{"tenant": "tenant " + strconv.Quote(name) + " does not exist"}).Err()
	}
	return &id, nil
}
