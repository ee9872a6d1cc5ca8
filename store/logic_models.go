package store

import (
	"context"
	"fmt"
	"strconv"

	"github.com/jmoiron/sqlx"

	"switchyard/routing/config"
)

// CreateLogicModel inserts a logic model (without deployments).
func (s *Store) CreateLogicModel(ctx context.Context, m config.LogicModel) (int64, error) {
	if err := config.ValidateLogicModel(m).Err(); err != nil {
		return 0, err
	}
	var id int64
	err := s.db.GetContext(ctx, &id, `
		INSERT INTO logic_models (code, kind, embedding_dimension, query_prefix, document_prefix, description)
		VALUES ($1,$2,$3,$4,$5,$6) RETURNING id`,
		m.Code, m.Kind, m.EmbeddingDimension, m.QueryPrefix, m.DocumentPrefix, m.Description)
	if err != nil {
		return 0, fmt.Errorf("store: create logic model: %w", uniqueField(err, "code", "logic model code "+strconv.Quote(m.Code)))
	}
	return id, nil
}

// UpdateLogicModel changes a logic model's own fields.
func (s *Store) UpdateLogicModel(ctx context.Context, id int64, m config.LogicModel) error {
	if err := config.ValidateLogicModel(m).Err(); err != nil {
		return err
	}
	res, err := s.db.ExecContext(ctx, `
		UPDATE logic_models SET code=$2, kind=$3, embedding_dimension=$4, query_prefix=$5, document_prefix=$6, description=$7
		WHERE id=$1`, id, m.Code, m.Kind, m.EmbeddingDimension, m.QueryPrefix, m.DocumentPrefix, m.Description)
	if err := rowsAffected(res, err); err != nil {
		return fmt.Errorf("store: update logic model %d: %w", id, uniqueField(err, "code", "logic model code "+strconv.Quote(m.Code)))
	}
	return nil
}

// DeleteLogicModel deletes a logic model and its deployments, refusing while
// a candidate or a model alias uses it.
func (s *Store) DeleteLogicModel(ctx context.Context, id int64) error {
	return s.inTx(ctx, func(tx *sqlx.Tx) error {
		var code string
		if err := tx.GetContext(ctx, &code, `SELECT code FROM logic_models WHERE id=$1 FOR UPDATE`, id); err != nil {
			return fmt.Errorf("store: delete logic model %d: %w", id, notFound(err))
		}
		var users []string
		if err := tx.SelectContext(ctx, &users, `
			SELECT 'candidate in ' || g.name || ' / ' || t.name
			FROM candidates c JOIN tiers t ON t.id = c.tier_id JOIN route_groups g ON g.id = t.route_group_id
			WHERE c.logic_model_id = $1
			UNION ALL SELECT 'model alias ' || a.pattern || ' of ' || g.name
			FROM model_aliases a JOIN route_groups g ON g.id = a.route_group_id
			WHERE a.logic_model_id = $1 ORDER BY 1`, id); err != nil {
			return err
		}
		if err := referenced("logic model "+code, users); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM deployments WHERE logic_model_id=$1`, id); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `DELETE FROM logic_models WHERE id=$1`, id)
		return err
	})
}

// LogicModelID resolves a logic model code.
func (s *Store) LogicModelID(ctx context.Context, code string) (int64, error) {
	var id int64
	if err := s.db.GetContext(ctx, &id, `SELECT id FROM logic_models WHERE code=$1`, code); err != nil {
		return 0, fmt.Errorf("store: logic model %q: %w", code, notFound(err))
	}
	return id, nil
}
