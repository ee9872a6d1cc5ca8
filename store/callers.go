package store

import (
	"context"
	"fmt"
	"strconv"

	"github.com/jmoiron/sqlx"

	"switchyard/routing/config"
)

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

// DeleteCaller deletes a caller from the draft. Its keys are kept: they
// belong to the caller's name and work while the live version has it.
func (s *Store) DeleteCaller(ctx context.Context, id int64) error {
	res, err := s.db.ExecContext(ctx, `DELETE FROM callers WHERE id=$1`, id)
	if err := rowsAffected(res, err); err != nil {
		return fmt.Errorf("store: delete caller %d: %w", id, err)
	}
	return nil
}
