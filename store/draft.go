package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"

	"github.com/jmoiron/sqlx"

	"switchyard/routing/config"
)

// Draft loads the whole draft configuration as one consistent snapshot, with
// the draft revision it corresponds to.
func (s *Store) Draft(ctx context.Context) (config.Snapshot, int64, error) {
	tx, err := s.db.BeginTxx(ctx, &sql.TxOptions{Isolation: sql.LevelRepeatableRead, ReadOnly: true})
	if err != nil {
		return config.Snapshot{}, 0, fmt.Errorf("store: load draft: %w", err)
	}
	defer tx.Rollback() //nolint:errcheck // read-only
	var rev int64
	if err := tx.GetContext(ctx, &rev, `SELECT revision FROM draft_meta`); err != nil {
		return config.Snapshot{}, 0, fmt.Errorf("store: load draft: %w", err)
	}
	snap, err := loadSnapshot(ctx, tx)
	return snap, rev, err
}

// DraftRevision returns the draft's current revision.
func (s *Store) DraftRevision(ctx context.Context) (int64, error) {
	var rev int64
	err := s.db.GetContext(ctx, &rev, `SELECT revision FROM draft_meta`)
	return rev, err
}

func loadSnapshot(ctx context.Context, q sqlx.QueryerContext) (config.Snapshot, error) {
	s := config.Snapshot{Format: config.FormatV1}
	if err := sqlx.SelectContext(ctx, q, &s.Tenants, `SELECT id, name, description FROM tenants`); err != nil {
		return config.Snapshot{}, loadFail("tenants", err)
	}
	for _, load := range []func(context.Context, sqlx.QueryerContext, *config.Snapshot) error{
		loadProviders, loadLogicModels, loadDeployments, loadRouteGroups, loadTiers, loadCallers,
	} {
		if err := load(ctx, q, &s); err != nil {
			return config.Snapshot{}, err
		}
	}
	// Caller keys are not configuration: they live outside the draft.
	config.Canonicalize(&s)
	return s, nil
}

// loadFail wraps a failure to read one table of the draft.
func loadFail(what string, err error) error {
	return fmt.Errorf("store: load draft %s: %w", what, err)
}

// loadProviders reads the providers with their keys.
func loadProviders(ctx context.Context, q sqlx.QueryerContext, s *config.Snapshot) error {
	var providers []struct {
		config.Provider
		Base        string `db:"base_url"`
		TMS         int    `db:"timeout_ms"`
		HeadersJSON []byte `db:"headers"`
		PassJSON    []byte `db:"pass_headers"`
		APIV        string `db:"api_version"`
		Region      string `db:"region"`
		AuthURL     string `db:"auth_url"`
		Project     string `db:"project"`
		QuirksJSON  []byte `db:"quirks"`
	}
	if err := sqlx.SelectContext(ctx, q, &providers, `SELECT id, name, protocol, base_url, enabled, timeout_ms, notes, headers, pass_headers, api_version, region, auth_url, project, quirks, sandbox FROM providers`); err != nil {
		return loadFail("providers", err)
	}
	provIdx := map[int64]int{}
	for i, p := range providers {
		p.Provider.BaseURL, p.Provider.TimeoutMS = p.Base, p.TMS
		p.Provider.APIVersion, p.Provider.Region, p.Provider.AuthURL, p.Provider.Project = p.APIV, p.Region, p.AuthURL, p.Project
		if err := json.Unmarshal(p.HeadersJSON, &p.Provider.Headers); err != nil {
			return loadFail("provider headers", err)
		}
		if err := json.Unmarshal(p.PassJSON, &p.Provider.PassHeaders); err != nil {
			return loadFail("provider passthrough headers", err)
		}
		if err := json.Unmarshal(p.QuirksJSON, &p.Provider.Quirks); err != nil {
			return loadFail("provider quirks", err)
		}
		config.CanonicalHeaders(&p.Provider) // a secret header reads "••• set"
		config.CanonicalQuirks(&p.Provider)
		provIdx[p.ID] = i
		s.Providers = append(s.Providers, p.Provider)
	}
	var keys []struct {
		config.ProviderKey
		ProviderID int64 `db:"provider_id"`
	}
	if err := sqlx.SelectContext(ctx, q, &keys, `SELECT id, provider_id, label, fingerprint, status FROM provider_keys WHERE deleted_at IS NULL`); err != nil {
		return loadFail("provider keys", err)
	}
	for _, k := range keys {
		p := &s.Providers[provIdx[k.ProviderID]]
		p.Keys = append(p.Keys, k.ProviderKey)
	}
	return nil
}

// loadLogicModels reads the logic models, without their deployments.
func loadLogicModels(ctx context.Context, q sqlx.QueryerContext, s *config.Snapshot) error {
	var models []struct {
		config.LogicModel
		Dim int    `db:"embedding_dimension"`
		QP  string `db:"query_prefix"`
		DP  string `db:"document_prefix"`
	}
	if err := sqlx.SelectContext(ctx, q, &models, `SELECT id, code, kind, embedding_dimension, query_prefix, document_prefix, description FROM logic_models`); err != nil {
		return loadFail("logic models", err)
	}
	for _, m := range models {
		m.LogicModel.EmbeddingDimension, m.LogicModel.QueryPrefix, m.LogicModel.DocumentPrefix = m.Dim, m.QP, m.DP
		s.LogicModels = append(s.LogicModels, m.LogicModel)
	}
	return nil
}

// loadDeployments reads every deployment into its logic model.
func loadDeployments(ctx context.Context, q sqlx.QueryerContext, s *config.Snapshot) error {
	modelIdx := map[int64]int{}
	for i, m := range s.LogicModels {
		modelIdx[m.ID] = i
	}
	var deps []struct {
		ID             int64         `db:"id"`
		ModelID        int64         `db:"logic_model_id"`
		Provider       string        `db:"provider"`
		Upstream       string        `db:"upstream_model"`
		Weight         int           `db:"weight"`
		Parked         bool          `db:"parked"`
		Enabled        bool          `db:"enabled"`
		MaxConcurrency int           `db:"max_concurrency"`
		PIn            config.Micros `db:"price_input_micros"`
		POut           config.Micros `db:"price_output_micros"`
		PCached        config.Micros `db:"price_cached_micros"`
		Currency       string        `db:"currency"`
		Thinking       bool          `db:"cap_thinking"`
		Vision         bool          `db:"cap_vision"`
		Tools          bool          `db:"cap_tools"`
		Structured     bool          `db:"cap_structured_output"`
		ResponsesAPI   bool          `db:"cap_responses_api"`
		WebSearch      bool          `db:"cap_web_search"`
		StrictFields   bool          `db:"strict_fields"`
		Batch          int           `db:"embedding_batch_limit"`
		TimeoutMS      int           `db:"timeout_ms"`
		Breaker        []byte        `db:"breaker"`
		MaxTokens      int64         `db:"max_inflight_tokens"`
	}
	if err := sqlx.SelectContext(ctx, q, &deps, `
		SELECT d.id, d.logic_model_id, p.name AS provider, d.upstream_model, d.weight, d.parked, d.enabled, d.max_concurrency,
			d.price_input_micros, d.price_output_micros, d.price_cached_micros, d.currency, d.cap_thinking, d.cap_vision, d.cap_tools, d.cap_structured_output, d.cap_responses_api,
			d.cap_web_search, d.strict_fields, d.embedding_batch_limit, d.timeout_ms, d.breaker, d.max_inflight_tokens
		FROM deployments d JOIN providers p ON p.id = d.provider_id`); err != nil {
		return loadFail("deployments", err)
	}
	for _, d := range deps {
		cd := config.Deployment{
			ID: d.ID, Provider: d.Provider, UpstreamModel: d.Upstream, Weight: d.Weight, Parked: d.Parked, Enabled: d.Enabled,
			MaxConcurrency: d.MaxConcurrency, Prices: config.Prices{InputMicros: d.PIn, OutputMicros: d.POut, CachedMicros: d.PCached, Currency: d.Currency},
			Capabilities: config.Capabilities{Thinking: d.Thinking, Vision: d.Vision, Tools: d.Tools, StructuredOutput: d.Structured,
				ResponsesAPI: d.ResponsesAPI, WebSearch: d.WebSearch},
			StrictFields: d.StrictFields, EmbeddingBatchLimit: d.Batch, TimeoutMS: d.TimeoutMS, MaxInflightTokens: d.MaxTokens,
		}
		if len(d.Breaker) > 0 {
			var b config.BreakerSettings
			if err := json.Unmarshal(d.Breaker, &b); err != nil {
				return loadFail("deployment breaker", err)
			}
			cd.Breaker = &b
		}
		m := &s.LogicModels[modelIdx[d.ModelID]]
		m.Deployments = append(m.Deployments, cd)
	}
	return nil
}

// loadRouteGroups reads the route groups with their aliases, without tiers.
func loadRouteGroups(ctx context.Context, q sqlx.QueryerContext, s *config.Snapshot) error {
	var groups []struct {
		ID          int64   `db:"id"`
		Name        string  `db:"name"`
		Description string  `db:"description"`
		Tenant      *string `db:"tenant"`
		Fallback    *string `db:"fallback"`
		Budget      []byte  `db:"retry_budget"`
		Ladder      []byte  `db:"degradation"`
		Content     bool    `db:"trace_content"`
	}
	if err := sqlx.SelectContext(ctx, q, &groups, `
		SELECT g.id, g.name, g.description, t.name AS tenant, fb.name AS fallback, g.retry_budget, g.degradation, g.trace_content
		FROM route_groups g LEFT JOIN tenants t ON t.id = g.tenant_id LEFT JOIN route_groups fb ON fb.id = g.fallback_group_id`); err != nil {
		return loadFail("route groups", err)
	}
	groupIdx := map[int64]int{}
	for i, g := range groups {
		rg := config.RouteGroup{ID: g.ID, Name: g.Name, Description: g.Description, TraceContent: g.Content}
		if err := readResilience(&rg, g.Budget, g.Ladder); err != nil {
			return loadFail("route groups", err)
		}
		if g.Tenant != nil {
			rg.Tenant, rg.Fallback = *g.Tenant, config.FallbackNone
			if g.Fallback != nil {
				rg.Fallback = *g.Fallback
			}
		}
		groupIdx[g.ID] = i
		s.RouteGroups = append(s.RouteGroups, rg)
	}
	if err := loadAliases(ctx, q, s, groupIdx); err != nil {
		return loadFail("model aliases", err)
	}
	return nil
}

// loadTiers reads every tier with its candidates into its route group.
func loadTiers(ctx context.Context, q sqlx.QueryerContext, s *config.Snapshot) error {
	groupIdx := map[int64]int{}
	for i, g := range s.RouteGroups {
		groupIdx[g.ID] = i
	}
	var tiers []struct {
		config.Tier
		GroupID int64 `db:"route_group_id"`
		TMS     int   `db:"timeout_ms"`
		FCMS    int   `db:"first_chunk_timeout_ms"`
	}
	if err := sqlx.SelectContext(ctx, q, &tiers, `SELECT id, route_group_id, name, timeout_ms, first_chunk_timeout_ms FROM tiers ORDER BY id`); err != nil {
		return loadFail("tiers", err)
	}
	type tierPos struct{ g, t int }
	tierIdx := map[int64]tierPos{}
	for _, t := range tiers {
		t.Tier.TimeoutMS, t.Tier.FirstChunkTimeoutMS = t.TMS, t.FCMS
		gi := groupIdx[t.GroupID]
		g := &s.RouteGroups[gi]
		tierIdx[t.ID] = tierPos{gi, len(g.Tiers)}
		g.Tiers = append(g.Tiers, t.Tier)
	}
	var cands []struct {
		config.Candidate
		TierID int64  `db:"tier_id"`
		Code   string `db:"code"`
	}
	if err := sqlx.SelectContext(ctx, q, &cands, `
		SELECT c.id, c.tier_id, m.code, c.priority, c.weight, c.parked FROM candidates c JOIN logic_models m ON m.id = c.logic_model_id`); err != nil {
		return loadFail("candidates", err)
	}
	for _, c := range cands {
		c.Candidate.LogicModel = c.Code
		pos := tierIdx[c.TierID]
		t := &s.RouteGroups[pos.g].Tiers[pos.t]
		t.Candidates = append(t.Candidates, c.Candidate)
	}
	return nil
}

// loadCallers reads the callers with their limits.
func loadCallers(ctx context.Context, q sqlx.QueryerContext, s *config.Snapshot) error {
	var callers []struct {
		ID       int64         `db:"id"`
		Name     string        `db:"name"`
		Business string        `db:"business_line"`
		Tenant   *string       `db:"tenant"`
		Group    string        `db:"route_group"`
		Class    string        `db:"priority_class"`
		Enabled  bool          `db:"enabled"`
		Budget   config.Micros `db:"monthly_budget_micros"`
		Currency string        `db:"budget_currency"`
	}
	if err := sqlx.SelectContext(ctx, q, &callers, `
		SELECT c.id, c.name, c.business_line, t.name AS tenant, g.name AS route_group, c.priority_class, c.enabled,
			c.monthly_budget_micros, c.budget_currency
		FROM callers c JOIN route_groups g ON g.id = c.route_group_id LEFT JOIN tenants t ON t.id = c.tenant_id`); err != nil {
		return loadFail("callers", err)
	}
	callerIdx := map[int64]int{}
	for i, c := range callers {
		cc := config.Caller{ID: c.ID, Name: c.Name, BusinessLine: c.Business, RouteGroup: c.Group,
			PriorityClass: config.PriorityClass(c.Class), Enabled: c.Enabled, MonthlyBudgetMicros: c.Budget, BudgetCurrency: c.Currency}
		if c.Tenant != nil {
			cc.Tenant = *c.Tenant
		}
		callerIdx[c.ID] = i
		s.Callers = append(s.Callers, cc)
	}
	var limits []struct {
		config.TierLimit
		CallerID int64 `db:"caller_id"`
		Daily    int64 `db:"daily_tokens"`
	}
	if err := sqlx.SelectContext(ctx, q, &limits, `SELECT caller_id, tier, rpm, tpm, daily_tokens FROM caller_limits`); err != nil {
		return loadFail("caller limits", err)
	}
	for _, l := range limits {
		l.TierLimit.DailyTokens = l.Daily
		c := &s.Callers[callerIdx[l.CallerID]]
		c.Limits = append(c.Limits, l.TierLimit)
	}
	return nil
}
