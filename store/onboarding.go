package store

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"

	"switchyard/routing/config"
	"switchyard/routing/live"
	"switchyard/store/secrets"
)

// Onboard creates an onboarding batch in one transaction. Any failure
// (a name taken meanwhile, a stale review, an invalid object) leaves the
// draft exactly as it was.
func (s *Store) Onboard(ctx context.Context, b OnboardingBatch) (OnboardingResult, error) {
	var out OnboardingResult
	if err := validateBatch(b); err != nil {
		return out, err
	}
	err := s.inTx(ctx, func(tx *sqlx.Tx) error {
		var rev int64
		if err := tx.GetContext(ctx, &rev, `SELECT revision FROM draft_meta FOR UPDATE`); err != nil {
			return err
		}
		if b.ExpectedRevision != nil && *b.ExpectedRevision != rev {
			return ErrDraftChanged
		}
		var err error
		if out.ProviderID, err = s.onboardProvider(ctx, tx, b); err != nil {
			return err
		}
		if err := onboardModels(ctx, tx, b); err != nil {
			return err
		}
		if err := onboardRoutes(ctx, tx, b); err != nil {
			return err
		}
		if err := s.onboardCaller(ctx, tx, b, &out); err != nil {
			return err
		}
		return tx.GetContext(ctx, &out.Revision, `SELECT revision FROM draft_meta`)
	})
	if err != nil {
		return OnboardingResult{}, fmt.Errorf("store: onboard: %w", err)
	}
	return out, nil
}

// onboardProvider inserts the provider and its sealed keys.
func (s *Store) onboardProvider(ctx context.Context, tx *sqlx.Tx, b OnboardingBatch) (int64, error) {
	var providerID int64
	p := b.Provider
	if err := tx.GetContext(ctx, &providerID,
		`INSERT INTO providers (name, protocol, base_url, enabled, timeout_ms, notes, api_version, region, auth_url, project, quirks, sandbox) VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12) RETURNING id`,
		p.Name, p.Protocol, p.BaseURL, p.Enabled, p.TimeoutMS, p.Notes, p.APIVersion, p.Region, p.AuthURL, p.Project, quirksJSON(p.Quirks), p.Sandbox); err != nil {
		return 0, uniqueField(err, "provider_name", "provider name "+strconv.Quote(p.Name))
	}
	for _, k := range b.Keys {
		var id int64
		if err := tx.GetContext(ctx, &id, `SELECT nextval(pg_get_serial_sequence('provider_keys','id'))`); err != nil {
			return 0, err
		}
		secret := strings.TrimSpace(k.Secret)
		if _, err := tx.ExecContext(ctx,
			`INSERT INTO provider_keys (id, provider_id, label, secret, fingerprint, status) VALUES ($1,$2,$3,$4,$5,'active')`,
			id, providerID, k.Label, s.sealer.Seal(secret, keyAD(id)), config.KeyFingerprint(secret)); err != nil {
			return 0, err
		}
	}
	return providerID, nil
}

// onboardModels inserts the new logic models with their deployments, the
// backup deployments of existing ones and the rebalanced weights.
func onboardModels(ctx context.Context, tx *sqlx.Tx, b OnboardingBatch) error {
	for _, m := range b.LogicModels {
		var id int64
		if err := tx.GetContext(ctx, &id, `
			INSERT INTO logic_models (code, kind, embedding_dimension, query_prefix, document_prefix, description)
			VALUES ($1,$2,$3,$4,$5,$6) RETURNING id`,
			m.Code, m.Kind, m.EmbeddingDimension, m.QueryPrefix, m.DocumentPrefix, m.Description); err != nil {
			return uniqueField(err, "models", "logic model code "+strconv.Quote(m.Code))
		}
		for _, d := range m.Deployments {
			if err := insertDeployment(ctx, tx, id, d); err != nil {
				return fmt.Errorf("deployment %s of %s: %w", d.UpstreamModel, m.Code, err)
			}
		}
	}
	for _, d := range b.Deployments {
		var mid int64
		if err := tx.GetContext(ctx, &mid, `SELECT id FROM logic_models WHERE code=$1`, d.LogicModel); err != nil {
			return (config.FieldErrors{"models": "logic model " + strconv.Quote(d.LogicModel) + " does not exist"}).Err()
		}
		if err := insertDeployment(ctx, tx, mid, d.Deployment); err != nil {
			return fmt.Errorf("deployment %s of %s: %w", d.UpstreamModel, d.LogicModel, err)
		}
	}
	for _, w := range b.Weights {
		res, err := tx.ExecContext(ctx, `UPDATE deployments SET weight=$2 WHERE id=$1`, w.ID, w.Weight)
		if err := rowsAffected(res, err); err != nil {
			return fmt.Errorf("re-weight deployment %d: %w", w.ID, err)
		}
	}
	return nil
}

// onboardRoutes inserts the new route group (with every tier and its
// aliases) and the candidates.
func onboardRoutes(ctx context.Context, tx *sqlx.Tx, b OnboardingBatch) error {
	if g := b.RouteGroup; g != nil {
		var gid int64
		if err := tx.GetContext(ctx, &gid, `INSERT INTO route_groups (name, description) VALUES ($1,$2) RETURNING id`, g.Name, g.Description); err != nil {
			return uniqueField(err, "new_group", "route group name "+strconv.Quote(g.Name))
		}
		for _, t := range config.TierNames {
			if _, err := tx.ExecContext(ctx, `INSERT INTO tiers (route_group_id, name, timeout_ms, first_chunk_timeout_ms) VALUES ($1,$2,$3,$4)`,
				gid, t, config.DefaultTierTimeoutMS[t], config.DefaultFirstChunkTimeoutMS[t]); err != nil {
				return err
			}
		}
		if err := setAliases(ctx, tx, gid, g.Aliases); err != nil {
			return err
		}
	}
	for _, c := range b.Candidates {
		var tierID, mid int64
		if err := tx.GetContext(ctx, &tierID, `SELECT t.id FROM tiers t JOIN route_groups g ON g.id=t.route_group_id WHERE g.name=$1 AND t.name=$2`, c.Group, c.Tier); err != nil {
			return (config.FieldErrors{"group": "route group " + strconv.Quote(c.Group) + " has no tier " + string(c.Tier)}).Err()
		}
		if err := tx.GetContext(ctx, &mid, `SELECT id FROM logic_models WHERE code=$1`, c.LogicModel); err != nil {
			return (config.FieldErrors{"models": "logic model " + strconv.Quote(c.LogicModel) + " does not exist"}).Err()
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO candidates (tier_id, logic_model_id, priority, weight) VALUES ($1,$2,$3,$4)`,
			tierID, mid, c.Priority, c.Weight); err != nil {
			return uniqueField(err, "group", "candidate "+strconv.Quote(c.LogicModel)+" in "+c.Group+" / "+string(c.Tier))
		}
	}
	return nil
}

// onboardCaller inserts the caller with its limits and first key.
func (s *Store) onboardCaller(ctx context.Context, tx *sqlx.Tx, b OnboardingBatch, out *OnboardingResult) error {
	c := b.Caller
	if c == nil {
		return nil
	}
	gid, tenant, err := s.callerRefs(ctx, tx, *c)
	if err != nil {
		return err
	}
	if err := tx.GetContext(ctx, &out.CallerID, `
		INSERT INTO callers (name, business_line, tenant_id, route_group_id, priority_class, enabled, monthly_budget_micros, budget_currency)
		VALUES ($1,$2,$3,$4,$5,$6,$7,$8) RETURNING id`,
		c.Name, c.BusinessLine, tenant, gid, c.PriorityClass, c.Enabled, c.MonthlyBudgetMicros, currencyOr(c.BudgetCurrency)); err != nil {
		return uniqueField(err, "caller", "caller name "+strconv.Quote(c.Name))
	}
	if err := writeLimits(ctx, tx, out.CallerID, c.Limits); err != nil {
		return err
	}
	plain, k, err := insertCallerKey(ctx, tx, c.Name, NewCallerKey{Name: b.CallerKeyName}, nil, b.Actor)
	if err != nil {
		return err
	}
	out.CallerKey, out.CallerKeyPrefix = plain, k.Prefix
	// Delivered on commit: every instance learns the new key at once.
	if _, err := tx.ExecContext(ctx, `SELECT pg_notify($1, $2)`, NotifyChannel, live.KeysNotice.Payload()); err != nil {
		return err
	}
	return nil
}

func insertDeployment(ctx context.Context, tx *sqlx.Tx, modelID int64, d config.Deployment) error {
	d.NormalizeParked()
	var pid int64
	if err := tx.GetContext(ctx, &pid, `SELECT id FROM providers WHERE name=$1`, d.Provider); err != nil {
		return (config.FieldErrors{"provider": "provider " + strconv.Quote(d.Provider) + " does not exist"}).Err()
	}
	_, err := tx.ExecContext(ctx, `
		INSERT INTO deployments (logic_model_id, provider_id, upstream_model, weight, enabled, max_concurrency,
			price_input_micros, price_output_micros, price_cached_micros, currency, cap_thinking, cap_vision, cap_tools,
			embedding_batch_limit, timeout_ms, breaker, cap_structured_output, max_inflight_tokens, cap_responses_api,
			cap_web_search, strict_fields, parked)
		VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12,$13,$14,$15,$16,$17,$18,$19,$20,$21,$22)`,
		modelID, pid, d.UpstreamModel, d.Weight, d.Enabled, d.MaxConcurrency,
		d.Prices.InputMicros, d.Prices.OutputMicros, d.Prices.CachedMicros, currencyOr(d.Prices.Currency),
		d.Capabilities.Thinking, d.Capabilities.Vision, d.Capabilities.Tools,
		d.EmbeddingBatchLimit, d.TimeoutMS, breakerJSON(d.Breaker), d.Capabilities.StructuredOutput, d.MaxInflightTokens,
		d.Capabilities.ResponsesAPI, d.Capabilities.WebSearch, d.StrictFields, d.Parked)
	return uniqueField(err, "models", deploymentDup)
}

// validateBatch runs the per-entity validators before anything is written.
func validateBatch(b OnboardingBatch) error {
	f := config.FieldErrors{}
	add := func(prefix string, fe config.FieldErrors) {
		for k, v := range fe {
			f.Add(prefix+k, v)
		}
	}
	add("provider.", config.ValidateProvider(b.Provider))
	if len(b.Keys) == 0 {
		f.Add("keys", "a provider needs at least one key")
	}
	for _, k := range b.Keys {
		add("keys.", config.ValidateProviderKey(k.Label, k.Secret, true))
	}
	for _, m := range b.LogicModels {
		add("logic model "+m.Code+".", config.ValidateLogicModel(m))
		for _, d := range m.Deployments {
			add("logic model "+m.Code+" deployment.", config.ValidateDeployment(d))
		}
	}
	for _, d := range b.Deployments {
		add("logic model "+d.LogicModel+" deployment.", config.ValidateDeployment(d.Deployment))
	}
	for _, w := range b.Weights {
		if w.Weight < 1 || w.Weight > config.MaxWeight {
			f.Add("weights", "must be between 1 and 10000")
		}
	}
	if b.RouteGroup != nil {
		add("route group.", config.ValidateRouteGroup(*b.RouteGroup))
	}
	for _, c := range b.Candidates {
		add("candidate "+c.LogicModel+".", config.ValidateCandidate(c.Candidate))
		if !config.ValidTier(string(c.Tier)) {
			f.Add("candidate "+c.LogicModel+".tier", "must be fast, standard or deep")
		}
	}
	if b.Caller != nil {
		add("caller.", config.ValidateCaller(*b.Caller))
	}
	return f.Err()
}

// ErrTransientExpired refuses a sealed form value that is too old.
var ErrTransientExpired = errors.New("store: the sealed value has expired")

// SealTransient encrypts a secret that must travel through the operator's
// browser between the steps of a form (the onboarding wizard's provider
// keys), so its plaintext is never sent back to the browser and never
// stored. purpose binds the token to its use (and user); it stops opening
// after ttl.
func (s *Store) SealTransient(plaintext, purpose string, ttl time.Duration) string {
	body := strconv.FormatInt(time.Now().Add(ttl).Unix(), 10) + "\n" + plaintext
	return base64.RawURLEncoding.EncodeToString(s.sealer.Seal(body, []byte("transient:"+purpose)))
}

// OpenTransient reverses SealTransient.
func (s *Store) OpenTransient(token, purpose string) (string, error) {
	raw, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil {
		return "", fmt.Errorf("store: open sealed value: %w", secrets.ErrOpen)
	}
	body, err := s.sealer.Open(raw, []byte("transient:"+purpose))
	if err != nil {
		return "", fmt.Errorf("store: open sealed value: %w", err)
	}
	exp, plain, ok := strings.Cut(body, "\n")
	n, perr := strconv.ParseInt(exp, 10, 64)
	if !ok || perr != nil {
		return "", fmt.Errorf("store: open sealed value: %w", secrets.ErrOpen)
	}
	if time.Now().Unix() > n {
		return "", ErrTransientExpired
	}
	return plain, nil
}
