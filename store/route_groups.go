package store

import (
	"context"
	"fmt"
	"slices"
	"strconv"

	"github.com/jmoiron/sqlx"

	"switchyard/routing/config"
)

// groupFallback resolves a group's fallback policy into the fallback group id.
func (s *Store) groupFallback(ctx context.Context, q sqlx.QueryerContext, g config.RouteGroup) (*int64, error) {
	if g.Fallback == "" || g.Fallback == config.FallbackNone {
		return nil, nil
	}
	var id int64
	var tenant *int64
	err := q.QueryRowxContext(ctx, `SELECT id, tenant_id FROM route_groups WHERE name=$1`, g.Fallback).Scan(&id, &tenant)
	if err != nil {
		return nil, (config.FieldErrors{"fallback": "route group " + strconv.Quote(g.Fallback) + " does not exist"}).Err()
	}
	if tenant != nil {
		return nil, (config.FieldErrors{"fallback": "a fallback must be a shared group; " + g.Fallback + " is dedicated to a tenant"}).Err()
	}
	return &id, nil
}

// CreateRouteGroup inserts a group with its three tiers at default timeouts
// and its model aliases.
func (s *Store) CreateRouteGroup(ctx context.Context, g config.RouteGroup) (int64, error) {
	if err := config.ValidateRouteGroup(g).Err(); err != nil {
		return 0, err
	}
	var id int64
	err := s.inTx(ctx, func(tx *sqlx.Tx) error {
		tenant, err := s.tenantID(ctx, tx, g.Tenant)
		if err != nil {
			return err
		}
		fb, err := s.groupFallback(ctx, tx, g)
		if err != nil {
			return err
		}
		budget, ladder := resilienceJSON(g)
		if err := tx.GetContext(ctx, &id, `INSERT INTO route_groups (name, description, tenant_id, fallback_group_id, retry_budget, degradation, trace_content) VALUES ($1,$2,$3,$4,$5,$6,$7) RETURNING id`,
			g.Name, g.Description, tenant, fb, budget, ladder, g.TraceContent); err != nil {
			return uniqueField(err, "name", "route group name "+strconv.Quote(g.Name))
		}
		for _, t := range config.TierNames {
			if _, err := tx.ExecContext(ctx, `INSERT INTO tiers (route_group_id, name, timeout_ms, first_chunk_timeout_ms) VALUES ($1,$2,$3,$4)`,
				id, t, config.DefaultTierTimeoutMS[t], config.DefaultFirstChunkTimeoutMS[t]); err != nil {
				return err
			}
		}
		return setAliases(ctx, tx, id, g.Aliases)
	})
	if err != nil {
		return 0, fmt.Errorf("store: create route group: %w", err)
	}
	return id, nil
}

// UpdateRouteGroup changes a group's name, description, tenant, fallback,
// retry budget and degradation ladder, and replaces its model aliases
// unless g.Aliases is nil (an empty list removes them; the console's group
// form leaves them to their own controls).
func (s *Store) UpdateRouteGroup(ctx context.Context, id int64, g config.RouteGroup) error {
	if err := config.ValidateRouteGroup(g).Err(); err != nil {
		return err
	}
	return s.inTx(ctx, func(tx *sqlx.Tx) error {
		tenant, err := s.tenantID(ctx, tx, g.Tenant)
		if err != nil {
			return err
		}
		fb, err := s.groupFallback(ctx, tx, g)
		if err != nil {
			return err
		}
		if fb != nil && *fb == id {
			return (config.FieldErrors{"fallback": "a group cannot fall back to itself"}).Err()
		}
		budget, ladder := resilienceJSON(g)
		res, err := tx.ExecContext(ctx, `UPDATE route_groups SET name=$2, description=$3, tenant_id=$4, fallback_group_id=$5, retry_budget=$6, degradation=$7, trace_content=$8 WHERE id=$1`,
			id, g.Name, g.Description, tenant, fb, budget, ladder, g.TraceContent)
		if err := rowsAffected(res, err); err != nil {
			return fmt.Errorf("store: update route group %d: %w", id, uniqueField(err, "name", "route group name "+strconv.Quote(g.Name)))
		}
		if g.Aliases == nil {
			return nil
		}
		if err := setAliases(ctx, tx, id, g.Aliases); err != nil {
			return fmt.Errorf("store: update route group %d: %w", id, err)
		}
		return nil
	})
}

// DeleteRouteGroup deletes a group and its tiers, refusing while callers are
// bound to it or another group falls back to it.
func (s *Store) DeleteRouteGroup(ctx context.Context, id int64) error {
	return s.inTx(ctx, func(tx *sqlx.Tx) error {
		var name string
		if err := tx.GetContext(ctx, &name, `SELECT name FROM route_groups WHERE id=$1 FOR UPDATE`, id); err != nil {
			return fmt.Errorf("store: delete route group %d: %w", id, notFound(err))
		}
		var users []string
		if err := tx.SelectContext(ctx, &users, `
			SELECT 'caller ' || name FROM callers WHERE route_group_id=$1
			UNION ALL SELECT 'route group ' || name || ' (fallback)' FROM route_groups WHERE fallback_group_id=$1 ORDER BY 1`, id); err != nil {
			return err
		}
		if err := referenced("route group "+name, users); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `DELETE FROM route_groups WHERE id=$1`, id)
		return err
	})
}

// Tier returns a tier's identity.
func (s *Store) Tier(ctx context.Context, id int64) (TierRef, error) {
	var t TierRef
	err := s.db.GetContext(ctx, &t, `SELECT t.id, t.route_group_id, g.name AS group_name, t.name FROM tiers t JOIN route_groups g ON g.id=t.route_group_id WHERE t.id=$1`, id)
	if err != nil {
		return t, fmt.Errorf("store: tier %d: %w", id, notFound(err))
	}
	return t, nil
}

// UpdateTier sets a tier's timeouts.
func (s *Store) UpdateTier(ctx context.Context, id int64, timeoutMS, firstChunkMS int) error {
	t, err := s.Tier(ctx, id)
	if err != nil {
		return err
	}
	if err := config.ValidateTier(config.Tier{Name: t.Name, TimeoutMS: timeoutMS, FirstChunkTimeoutMS: firstChunkMS}).Err(); err != nil {
		return err
	}
	_, err = s.db.ExecContext(ctx, `UPDATE tiers SET timeout_ms=$2, first_chunk_timeout_ms=$3 WHERE id=$1`, id, timeoutMS, firstChunkMS)
	return err
}

// AddCandidate appends a logic model to a tier. Priority 0 means "after the
// current last level".
func (s *Store) AddCandidate(ctx context.Context, tierID int64, c config.Candidate) (int64, error) {
	if c.Priority == 0 {
		var maxP *int
		if err := s.db.GetContext(ctx, &maxP, `SELECT max(priority) FROM candidates WHERE tier_id=$1`, tierID); err != nil {
			return 0, err
		}
		c.Priority = 1
		if maxP != nil {
			c.Priority = *maxP + 1
		}
	}
	c.NormalizeParked()
	if err := config.ValidateCandidate(c).Err(); err != nil {
		return 0, err
	}
	var mid int64
	if err := s.db.GetContext(ctx, &mid, `SELECT id FROM logic_models WHERE code=$1`, c.LogicModel); err != nil {
		return 0, (config.FieldErrors{"logic_model": "logic model " + strconv.Quote(c.LogicModel) + " does not exist"}).Err()
	}
	var id int64
	err := s.db.GetContext(ctx, &id, `INSERT INTO candidates (tier_id, logic_model_id, priority, weight, parked) VALUES ($1,$2,$3,$4,$5) RETURNING id`,
		tierID, mid, c.Priority, c.Weight, c.Parked)
	if isFK(err) {
		return 0, fmt.Errorf("store: tier %d: %w", tierID, ErrNotFound)
	}
	if err != nil {
		return 0, fmt.Errorf("store: add candidate: %w", uniqueField(err, "logic_model", "logic model "+strconv.Quote(c.LogicModel)+" in this tier"))
	}
	return id, nil
}

// CandidateTier returns the tier id of a candidate.
func (s *Store) CandidateTier(ctx context.Context, id int64) (int64, error) {
	var tid int64
	if err := s.db.GetContext(ctx, &tid, `SELECT tier_id FROM candidates WHERE id=$1`, id); err != nil {
		return 0, fmt.Errorf("store: candidate %d: %w", id, notFound(err))
	}
	return tid, nil
}

// SetCandidateParked parks or unparks a candidate: its weight stays, so
// unparking gives it back its share.
func (s *Store) SetCandidateParked(ctx context.Context, id int64, parked bool) error {
	res, err := s.db.ExecContext(ctx, `UPDATE candidates SET parked=$2, weight=CASE WHEN NOT $2 AND weight=0 THEN 1 ELSE weight END WHERE id=$1`, id, parked)
	if err := rowsAffected(res, err); err != nil {
		return fmt.Errorf("store: set candidate %d parked: %w", id, err)
	}
	return nil
}

// UpdateCandidate sets a candidate's priority and weight, a share of 1 to
// 10000 (parking is SetCandidateParked; a parked candidate stays parked).
func (s *Store) UpdateCandidate(ctx context.Context, id int64, priority, weight int) error {
	if err := config.ValidateCandidate(config.Candidate{LogicModel: "-", Priority: priority, Weight: weight}).Err(); err != nil {
		return err
	}
	res, err := s.db.ExecContext(ctx, `UPDATE candidates SET priority=$2, weight=$3 WHERE id=$1`, id, priority, weight)
	if err := rowsAffected(res, err); err != nil {
		return fmt.Errorf("store: update candidate %d: %w", id, err)
	}
	return nil
}

// RemoveCandidate deletes a candidate.
func (s *Store) RemoveCandidate(ctx context.Context, id int64) error {
	res, err := s.db.ExecContext(ctx, `DELETE FROM candidates WHERE id=$1`, id)
	if err := rowsAffected(res, err); err != nil {
		return fmt.Errorf("store: remove candidate %d: %w", id, err)
	}
	return nil
}

// MoveCandidate moves a candidate one place earlier (up) or later in its
// tier's failover order. A candidate sharing its priority with others is
// split out in front of (or behind) them; a candidate alone at its priority
// swaps places with the neighbouring level. Priorities are then renumbered
// 1, 2, 3… so the order stays easy to read. Weights are never touched.
func (s *Store) MoveCandidate(ctx context.Context, id int64, up bool) error {
	return s.inTx(ctx, func(tx *sqlx.Tx) error {
		var tierID int64
		if err := tx.GetContext(ctx, &tierID, `SELECT tier_id FROM candidates WHERE id=$1`, id); err != nil {
			return fmt.Errorf("store: move candidate %d: %w", id, notFound(err))
		}
		type row struct {
			ID       int64  `db:"id"`
			Priority int    `db:"priority"`
			Code     string `db:"code"`
		}
		var rows []row
		if err := tx.SelectContext(ctx, &rows, `
			SELECT c.id, c.priority, m.code FROM candidates c JOIN logic_models m ON m.id=c.logic_model_id
			WHERE c.tier_id=$1 ORDER BY c.priority, m.code FOR UPDATE OF c`, tierID); err != nil {
			return err
		}
		// Group into levels of equal priority.
		var levels [][]int64
		at := -1
		for i, r := range rows {
			if i == 0 || r.Priority != rows[i-1].Priority {
				levels = append(levels, nil)
			}
			levels[len(levels)-1] = append(levels[len(levels)-1], r.ID)
			if r.ID == id {
				at = len(levels) - 1
			}
		}
		lvl := levels[at]
		switch {
		case len(lvl) > 1:
			rest := slices.DeleteFunc(slices.Clone(lvl), func(x int64) bool { return x == id })
			if up {
				levels = slices.Replace(levels, at, at+1, []int64{id}, rest)
			} else {
				levels = slices.Replace(levels, at, at+1, rest, []int64{id})
			}
		case up && at > 0:
			levels[at-1], levels[at] = levels[at], levels[at-1]
		case !up && at < len(levels)-1:
			levels[at+1], levels[at] = levels[at], levels[at+1]
		default:
			return nil // already first / last
		}
		for i, l := range levels {
			for _, cid := range l {
				if _, err := tx.ExecContext(ctx, `UPDATE candidates SET priority=$2 WHERE id=$1 AND priority<>$2`, cid, i+1); err != nil {
					return err
				}
			}
		}
		return nil
	})
}
