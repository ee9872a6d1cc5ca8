package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/jmoiron/sqlx"

	"switchyard/routing/config"
)

// breakerJSON is the breaker column's value: NULL for the defaults, else
// the JSON as text (a []byte would travel in binary format, which jsonb
// does not accept as JSON text; see Connect).
func breakerJSON(b *config.BreakerSettings) sql.NullString {
	if b == nil || *b == (config.BreakerSettings{}) {
		return sql.NullString{}
	}
	out, _ := json.Marshal(b)
	return sql.NullString{String: string(out), Valid: true}
}

func (s *Store) deploymentProvider(ctx context.Context, q sqlx.QueryerContext, name string) (int64, error) {
	var id int64
	if err := sqlx.GetContext(ctx, q, &id, `SELECT id FROM providers WHERE name=$1`, name); err != nil {
		return 0, (config.FieldErrors{"provider": "provider " + strconv.Quote(name) + " does not exist"}).Err()
	}
	return id, nil
}

const deploymentDup = "this logic model already has a deployment of that upstream model on that provider"

// CreateDeployment adds a deployment to a logic model. d.Provider names the provider.
func (s *Store) CreateDeployment(ctx context.Context, logicModelID int64, d config.Deployment) (int64, error) {
	return s.createDeployment(ctx, s.db, logicModelID, d)
}

// CreateDeploymentRebalanced adds a deployment and, in the same
// transaction, sets the weights of other deployments of the same logic
// model (id → weight), so the weights rule holds at every moment.
func (s *Store) CreateDeploymentRebalanced(ctx context.Context, logicModelID int64, d config.Deployment, weights map[int64]int) (int64, error) {
	var id int64
	err := s.inTx(ctx, func(tx *sqlx.Tx) error {
		var err error
		if id, err = s.createDeployment(ctx, tx, logicModelID, d); err != nil {
			return err
		}
		for other, w := range weights {
			res, err := tx.ExecContext(ctx, `UPDATE deployments SET weight=$3 WHERE id=$1 AND logic_model_id=$2`, other, logicModelID, w)
			if err := rowsAffected(res, err); err != nil {
				return fmt.Errorf("store: rebalance deployment %d: %w", other, err)
			}
		}
		return nil
	})
	return id, err
}

func (s *Store) createDeployment(ctx context.Context, q sqlx.QueryerContext, logicModelID int64, d config.Deployment) (int64, error) {
	d.NormalizeParked()
	if err := config.ValidateDeployment(d).Err(); err != nil {
		return 0, err
	}
	pid, err := s.deploymentProvider(ctx, q, d.Provider)
	if err != nil {
		return 0, err
	}
	var id int64
	err = sqlx.GetContext(ctx, q, &id, `
		INSERT INTO deployments (logic_model_id, provider_id, upstream_model, weight, enabled, max_concurrency,
			price_input_micros, price_output_micros, price_cached_micros, currency, cap_thinking, cap_vision, cap_tools,
			embedding_batch_limit, timeout_ms, breaker, cap_structured_output, max_inflight_tokens, cap_responses_api,
			cap_web_search, strict_fields, parked)
		VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12,$13,$14,$15,$16,$17,$18,$19,$20,$21,$22) RETURNING id`,
		logicModelID, pid, d.UpstreamModel, d.Weight, d.Enabled, d.MaxConcurrency,
		d.Prices.InputMicros, d.Prices.OutputMicros, d.Prices.CachedMicros, currencyOr(d.Prices.Currency),
		d.Capabilities.Thinking, d.Capabilities.Vision, d.Capabilities.Tools,
		d.EmbeddingBatchLimit, d.TimeoutMS, breakerJSON(d.Breaker), d.Capabilities.StructuredOutput, d.MaxInflightTokens,
		d.Capabilities.ResponsesAPI, d.Capabilities.WebSearch, d.StrictFields, d.Parked)
	if isFK(err) {
		return 0, fmt.Errorf("store: create deployment: logic model %d: %w", logicModelID, ErrNotFound)
	}
	if err != nil {
		return 0, fmt.Errorf("store: create deployment: %w", uniqueField(err, "upstream_model", deploymentDup))
	}
	return id, nil
}

// UpdateDeployment changes a deployment.
func (s *Store) UpdateDeployment(ctx context.Context, id int64, d config.Deployment) error {
	d.NormalizeParked()
	if err := config.ValidateDeployment(d).Err(); err != nil {
		return err
	}
	pid, err := s.deploymentProvider(ctx, s.db, d.Provider)
	if err != nil {
		return err
	}
	res, err := s.db.ExecContext(ctx, `
		UPDATE deployments SET provider_id=$2, upstream_model=$3, weight=$4, enabled=$5, max_concurrency=$6,
			price_input_micros=$7, price_output_micros=$8, price_cached_micros=$9, currency=$10, cap_thinking=$11, cap_vision=$12,
			cap_tools=$13, embedding_batch_limit=$14, timeout_ms=$15, breaker=$16, cap_structured_output=$17, max_inflight_tokens=$18, cap_responses_api=$19,
			cap_web_search=$20, strict_fields=$21, parked=$22
		WHERE id=$1`,
		id, pid, d.UpstreamModel, d.Weight, d.Enabled, d.MaxConcurrency,
		d.Prices.InputMicros, d.Prices.OutputMicros, d.Prices.CachedMicros, currencyOr(d.Prices.Currency),
		d.Capabilities.Thinking, d.Capabilities.Vision, d.Capabilities.Tools,
		d.EmbeddingBatchLimit, d.TimeoutMS, breakerJSON(d.Breaker), d.Capabilities.StructuredOutput, d.MaxInflightTokens,
		d.Capabilities.ResponsesAPI, d.Capabilities.WebSearch, d.StrictFields, d.Parked)
	if err := rowsAffected(res, err); err != nil {
		return fmt.Errorf("store: update deployment %d: %w", id, uniqueField(err, "upstream_model", deploymentDup))
	}
	return nil
}

// DeleteDeployment removes a deployment. Nothing in the draft refers to one.
func (s *Store) DeleteDeployment(ctx context.Context, id int64) error {
	res, err := s.db.ExecContext(ctx, `DELETE FROM deployments WHERE id=$1`, id)
	if err := rowsAffected(res, err); err != nil {
		return fmt.Errorf("store: delete deployment %d: %w", id, err)
	}
	return nil
}

// DeploymentModel returns the logic model id of a deployment.
func (s *Store) DeploymentModel(ctx context.Context, id int64) (int64, error) {
	var mid int64
	if err := s.db.GetContext(ctx, &mid, `SELECT logic_model_id FROM deployments WHERE id=$1`, id); err != nil {
		return 0, fmt.Errorf("store: deployment %d: %w", id, notFound(err))
	}
	return mid, nil
}

func currencyOr(c string) string {
	if c == "" {
		return "USD"
	}
	return c
}

// SetDeploymentEnabled changes only a deployment's enabled flag, so a toggle
// never overwrites another operator's concurrent edit of other fields.
func (s *Store) SetDeploymentEnabled(ctx context.Context, id int64, enabled bool) error {
	res, err := s.db.ExecContext(ctx, `UPDATE deployments SET enabled=$2 WHERE id=$1`, id, enabled)
	if err := rowsAffected(res, err); err != nil {
		return fmt.Errorf("store: set deployment %d enabled: %w", id, err)
	}
	return nil
}

// SetDeploymentParked parks or unparks a deployment: its weight stays, so
// unparking gives it back its share.
func (s *Store) SetDeploymentParked(ctx context.Context, id int64, parked bool) error {
	res, err := s.db.ExecContext(ctx, `UPDATE deployments SET parked=$2, weight=CASE WHEN NOT $2 AND weight=0 THEN 1 ELSE weight END WHERE id=$1`, id, parked)
	if err := rowsAffected(res, err); err != nil {
		return fmt.Errorf("store: set deployment %d parked: %w", id, err)
	}
	return nil
}

// SetDeploymentWeight changes only a deployment's weight, a share of 1 to
// 10000 (parking is SetDeploymentParked).
func (s *Store) SetDeploymentWeight(ctx context.Context, id int64, weight int) error {
	if msg := config.ValidateWeight(weight, false); msg != "" {
		return (config.FieldErrors{"weight": msg}).Err()
	}
	res, err := s.db.ExecContext(ctx, `UPDATE deployments SET weight=$2 WHERE id=$1`, id, weight)
	if err := rowsAffected(res, err); err != nil {
		return fmt.Errorf("store: set deployment %d weight: %w", id, err)
	}
	return nil
}
