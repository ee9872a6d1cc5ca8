package store

import (
	"context"
	"fmt"
	"strconv"

	"github.com/jmoiron/sqlx"

	"switchyard/routing/config"
)

// A route group's model aliases (table model_aliases) in their listed
// order, position 1, 2, …: the first pattern that matches wins. The
// snapshot lists them without ids, so the console addresses an alias by
// its group and position, and names the pattern it saw there: an edit of
// a list that changed meanwhile is refused with ErrAliasesChanged.

// aliasRow is one row of model_aliases as ReplaceDraft writes it.
type aliasRow struct {
	groupID  int64
	position int
	a        *config.ModelAlias
	modelID  *int64
}

var aliasCols = []column[aliasRow]{
	{"route_group_id", "bigint", func(r *aliasRow) any { return r.groupID }},
	{"position", "integer", func(r *aliasRow) any { return r.position }},
	{"pattern", "text", func(r *aliasRow) any { return r.a.Pattern }},
	{"tier", "text", func(r *aliasRow) any { return nullText(string(r.a.Tier)) }},
	{"logic_model_id", "bigint", func(r *aliasRow) any { return r.modelID }},
}

func nullText(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// loadAliases adds every group's aliases to s (its groups at groupIdx).
func loadAliases(ctx context.Context, q sqlx.QueryerContext, s *config.Snapshot, groupIdx map[int64]int) error {
	var rows []struct {
		GroupID int64   `db:"route_group_id"`
		Pattern string  `db:"pattern"`
		Tier    *string `db:"tier"`
		Code    *string `db:"code"`
	}
	if err := sqlx.SelectContext(ctx, q, &rows, `
		SELECT a.route_group_id, a.pattern, a.tier, m.code FROM model_aliases a LEFT JOIN logic_models m ON m.id = a.logic_model_id
		ORDER BY a.route_group_id, a.position`); err != nil {
		return err
	}
	for _, r := range rows {
		a := config.ModelAlias{Pattern: r.Pattern}
		if r.Tier != nil {
			a.Tier = config.TierName(*r.Tier)
		}
		if r.Code != nil {
			a.LogicModel = *r.Code
		}
		g := &s.RouteGroups[groupIdx[r.GroupID]]
		g.Aliases = append(g.Aliases, a)
	}
	return nil
}

// aliasModelID resolves the logic model an alias names (nil for a tier).
func aliasModelID(ctx context.Context, q sqlx.QueryerContext, a config.ModelAlias, field string) (*int64, error) {
	if a.LogicModel == "" {
		return nil, nil
	}
	var id int64
	if err := sqlx.GetContext(ctx, q, &id, `SELECT id FROM logic_models WHERE code=$1`, a.LogicModel); err != nil {
		return nil, (config.FieldErrors{field: "logic model " + strconv.Quote(a.LogicModel) + " does not exist"}).Err()
	}
	return &id, nil
}

// setAliases replaces a group's whole alias list (create, update).
func setAliases(ctx context.Context, tx *sqlx.Tx, groupID int64, as []config.ModelAlias) error {
	if _, err := tx.ExecContext(ctx, `DELETE FROM model_aliases WHERE route_group_id=$1`, groupID); err != nil {
		return err
	}
	for i, a := range as {
		mid, err := aliasModelID(ctx, tx, a, fmt.Sprintf("aliases[%d].logic_model", i))
		if err != nil {
			return err
		}
		if err := insertAlias(ctx, tx, groupID, i+1, a, mid); err != nil {
			return err
		}
	}
	return nil
}

func insertAlias(ctx context.Context, tx *sqlx.Tx, groupID int64, position int, a config.ModelAlias, modelID *int64) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO model_aliases (route_group_id, position, pattern, tier, logic_model_id) VALUES ($1,$2,$3,$4,$5)`,
		groupID, position, a.Pattern, nullText(string(a.Tier)), modelID)
	if isFK(err) {
		return fmt.Errorf("route group %d: %w", groupID, ErrNotFound)
	}
	return err
}

// lockAliases locks a group's alias list and returns its patterns in
// order; ErrNotFound for an unknown group.
func lockAliases(ctx context.Context, tx *sqlx.Tx, groupID int64) ([]string, error) {
	var one int
	if err := tx.GetContext(ctx, &one, `SELECT 1 FROM route_groups WHERE id=$1 FOR UPDATE`, groupID); err != nil {
		return nil, fmt.Errorf("route group %d: %w", groupID, notFound(err))
	}
	var patterns []string
	err := tx.SelectContext(ctx, &patterns, `SELECT pattern FROM model_aliases WHERE route_group_id=$1 ORDER BY position`, groupID)
	return patterns, err
}

// checkAt refuses an edit of the alias at position unless it still holds
// the pattern the operator saw there.
func checkAt(patterns []string, position int, was string) error {
	if position < 1 || position > len(patterns) || patterns[position-1] != was {
		return ErrAliasesChanged
	}
	return nil
}

// checkUnique refuses a pattern the list holds elsewhere than at skip.
func checkUnique(patterns []string, pattern string, skip int) error {
	for i, p := range patterns {
		if p == pattern && i+1 != skip {
			return (config.FieldErrors{"pattern": fmt.Sprintf("%s is already alias %d of this route group", pattern, i+1)}).Err()
		}
	}
	return nil
}

// AddModelAlias appends an alias to a group's list and returns its position.
func (s *Store) AddModelAlias(ctx context.Context, groupID int64, a config.ModelAlias) (int, error) {
	if err := config.ValidateModelAlias(a).Err(); err != nil {
		return 0, err
	}
	var position int
	err := s.inTx(ctx, func(tx *sqlx.Tx) error {
		patterns, err := lockAliases(ctx, tx, groupID)
		if err != nil {
			return err
		}
		if err := checkUnique(patterns, a.Pattern, 0); err != nil {
			return err
		}
		mid, err := aliasModelID(ctx, tx, a, "logic_model")
		if err != nil {
			return err
		}
		position = len(patterns) + 1
		return insertAlias(ctx, tx, groupID, position, a, mid)
	})
	if err != nil {
		return 0, fmt.Errorf("store: add model alias: %w", err)
	}
	return position, nil
}

// UpdateModelAlias changes the alias at position of a group, which must
// still be the pattern was.
func (s *Store) UpdateModelAlias(ctx context.Context, groupID int64, position int, was string, a config.ModelAlias) error {
	if err := config.ValidateModelAlias(a).Err(); err != nil {
		return err
	}
	err := s.inTx(ctx, func(tx *sqlx.Tx) error {
		patterns, err := lockAliases(ctx, tx, groupID)
		if err != nil {
			return err
		}
		if err := checkAt(patterns, position, was); err != nil {
			return err
		}
		if err := checkUnique(patterns, a.Pattern, position); err != nil {
			return err
		}
		mid, err := aliasModelID(ctx, tx, a, "logic_model")
		if err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `UPDATE model_aliases SET pattern=$3, tier=$4, logic_model_id=$5 WHERE route_group_id=$1 AND position=$2`,
			groupID, position, a.Pattern, nullText(string(a.Tier)), mid)
		return err
	})
	if err != nil {
		return fmt.Errorf("store: update model alias %d of route group %d: %w", position, groupID, err)
	}
	return nil
}

// RemoveModelAlias deletes the alias at position (which must still be the
// pattern was); the ones after it move up one place.
func (s *Store) RemoveModelAlias(ctx context.Context, groupID int64, position int, was string) error {
	err := s.inTx(ctx, func(tx *sqlx.Tx) error {
		patterns, err := lockAliases(ctx, tx, groupID)
		if err != nil {
			return err
		}
		if err := checkAt(patterns, position, was); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM model_aliases WHERE route_group_id=$1 AND position=$2`, groupID, position); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `UPDATE model_aliases SET position = position - 1 WHERE route_group_id=$1 AND position > $2`, groupID, position)
		return err
	})
	if err != nil {
		return fmt.Errorf("store: remove model alias %d of route group %d: %w", position, groupID, err)
	}
	return nil
}

// MoveModelAlias swaps the alias at position (which must still be the
// pattern was) with the one before it (up) or after it; at either end
// nothing moves.
func (s *Store) MoveModelAlias(ctx context.Context, groupID int64, position int, was string, up bool) error {
	err := s.inTx(ctx, func(tx *sqlx.Tx) error {
		patterns, err := lockAliases(ctx, tx, groupID)
		if err != nil {
			return err
		}
		if err := checkAt(patterns, position, was); err != nil {
			return err
		}
		other := position + 1
		if up {
			other = position - 1
		}
		if other < 1 || other > len(patterns) {
			return nil
		}
		// The key (route_group_id, position) is checked at commit.
		_, err = tx.ExecContext(ctx, `UPDATE model_aliases SET position = CASE WHEN position=$2 THEN $3 ELSE $2 END
			WHERE route_group_id=$1 AND position IN ($2, $3)`, groupID, position, other)
		return err
	})
	if err != nil {
		return fmt.Errorf("store: move model alias %d of route group %d: %w", position, groupID, err)
	}
	return nil
}
