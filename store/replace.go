package store

import (
	"context"
	"fmt"
	"strconv"

	"github.com/jmoiron/sqlx"

	"switchyard/routing/config"
)

// ReplaceNote reports something ReplaceDraft adjusted rather than refused.
type ReplaceNote struct {
	Object  string `json:"object"`
	Message string `json:"message"`
}

// ReplaceDraft makes the draft equal to s (import and rollback). Objects are
// matched by id, so a rollback restores the very rows an older version had;
// objects without an id are created. Two kinds of row are credentials, not
// configuration, and are treated specially:
//   - provider keys are matched by id; a key the snapshot lists that this
//     installation does not hold cannot be recreated (its secret is not in
//     the text) and is dropped with a note; keys the snapshot does not list
//     are removed from the draft but their sealed secrets are kept;
//   - caller API keys are never created, restored or revoked by a replace:
//     revoking stays revoked, and keys made since stay valid;
//   - a secret provider header is matched by its value's id, which must
//     hold a value sealed for that provider; one that does not is dropped
//     with a note (its value is not in the text).
//
// References are resolved by name; an unresolvable one fails the whole
// replace and changes nothing.
func (s *Store) ReplaceDraft(ctx context.Context, snap config.Snapshot) ([]ReplaceNote, error) {
	var notes []ReplaceNote
	err := s.inTx(ctx, func(tx *sqlx.Tx) error {
		var err error
		notes, err = replaceDraft(ctx, tx, snap)
		return err
	})
	return notes, err
}

func replaceDraft(ctx context.Context, tx *sqlx.Tx, snap config.Snapshot) ([]ReplaceNote, error) {
	snap = config.Clone(snap)
	config.Canonicalize(&snap)
	if err := ValidateSnapshot(snap); err != nil {
		return nil, err
	}
	var notes []ReplaceNote
	exec := func(q string, args ...any) error {
		_, err := tx.ExecContext(ctx, q, args...)
		return err
	}
	// upsert inserts a row with its id (or a new one when id is 0) and
	// returns the id. cols excludes id.
	upsert := func(table, cols, placeholders, updates string, id int64, args ...any) (int64, error) {
		var out int64
		if id == 0 {
			err := tx.GetContext(ctx, &out, `INSERT INTO `+table+` (`+cols+`) VALUES (`+placeholders+`) RETURNING id`, args...)
			return out, err
		}
		n := len(args) + 1
		q := `INSERT INTO ` + table + ` (id, ` + cols + `) VALUES ($` + strconv.Itoa(n) + `, ` + placeholders + `)
			ON CONFLICT (id) DO UPDATE SET ` + updates + ` RETURNING id`
		err := tx.GetContext(ctx, &out, q, append(args, id)...)
		return out, err
	}

	// Rows nothing else refers to are rebuilt from scratch.
	for _, q := range []string{`DELETE FROM candidates`, `DELETE FROM deployments`, `DELETE FROM caller_limits`} {
		if err := exec(q); err != nil {
			return nil, err
		}
	}
	// Names are unique: park every existing name out of the way first so a
	// snapshot that swaps two names does not collide with itself.
	for _, t := range []struct{ table, col string }{{"tenants", "name"}, {"providers", "name"}, {"logic_models", "code"}, {"route_groups", "name"}, {"callers", "name"}} {
		if err := exec(`UPDATE ` + t.table + ` SET ` + t.col + ` = '~replacing~' || id`); err != nil {
			return nil, err
		}
	}

	tenantIDs := map[string]int64{}
	for _, t := range snap.Tenants {
		id, err := upsert("tenants", "name, description", "$1, $2", "name=EXCLUDED.name, description=EXCLUDED.description", t.ID, t.Name, t.Description)
		if err != nil {
			return nil, fmt.Errorf("store: tenant %s: %w", t.Name, err)
		}
		tenantIDs[t.Name] = id
	}

	providerIDs := map[string]int64{}
	var keepKeys []int64
	for _, p := range snap.Providers {
		id, err := upsert("providers", "name, protocol, base_url, enabled, timeout_ms, notes", "$1,$2,$3,$4,$5,$6",
			"name=EXCLUDED.name, protocol=EXCLUDED.protocol, base_url=EXCLUDED.base_url, enabled=EXCLUDED.enabled, timeout_ms=EXCLUDED.timeout_ms, notes=EXCLUDED.notes",
			p.ID, p.Name, p.Protocol, p.BaseURL, p.Enabled, p.TimeoutMS, p.Notes)
		if err != nil {
			return nil, fmt.Errorf("store: provider %s: %w", p.Name, err)
		}
		providerIDs[p.Name] = id
		headers := make([]config.ProviderHeader, 0, len(p.Headers))
		if len(p.Headers) > 0 {
			var ids []int64
			for _, h := range p.Headers {
				if h.Secret {
					ids = append(ids, h.SecretID)
				}
			}
			owners, err := headerSecretOwners(ctx, tx, ids)
			if err != nil {
				return nil, fmt.Errorf("store: provider %s headers: %w", p.Name, err)
			}
			for _, h := range p.Headers {
				if h.Secret && (h.SecretID == 0 || owners[h.SecretID] != id) {
					notes = append(notes, ReplaceNote{Object: "provider " + p.Name, Message: "secret header " + h.Name + " has no value stored for this provider in this installation and was left out; set it in the console"})
					continue
				}
				headers = append(headers, h)
			}
		}
		if err := storeHeaders(ctx, tx, id, headers, p.PassHeaders); err != nil {
			return nil, fmt.Errorf("store: provider %s headers: %w", p.Name, err)
		}
		for _, k := range p.Keys {
			res, err := tx.ExecContext(ctx, `UPDATE provider_keys SET provider_id=$2, label=$3, status=$4, deleted_at=NULL WHERE id=$1`, k.ID, id, k.Label, k.Status)
			if err != nil {
				return nil, fmt.Errorf("store: provider %s key %d: %w", p.Name, k.ID, err)
			}
			if n, _ := res.RowsAffected(); n == 0 {
				notes = append(notes, ReplaceNote{Object: "provider " + p.Name, Message: fmt.Sprintf("key %d (%s) is not stored in this installation and was left out; add its secret in the console", k.ID, k.Fingerprint)})
				continue
			}
			keepKeys = append(keepKeys, k.ID)
		}
	}
	q, args, err := sqlx.In(`UPDATE provider_keys SET deleted_at=now() WHERE deleted_at IS NULL AND id NOT IN (?)`, append(keepKeys, -1))
	if err != nil {
		return nil, err
	}
	if err := exec(tx.Rebind(q), args...); err != nil {
		return nil, err
	}

	modelIDs := map[string]int64{}
	for _, m := range snap.LogicModels {
		id, err := upsert("logic_models", "code, kind, embedding_dimension, query_prefix, document_prefix, description", "$1,$2,$3,$4,$5,$6",
			"code=EXCLUDED.code, kind=EXCLUDED.kind, embedding_dimension=EXCLUDED.embedding_dimension, query_prefix=EXCLUDED.query_prefix, document_prefix=EXCLUDED.document_prefix, description=EXCLUDED.description",
			m.ID, m.Code, m.Kind, m.EmbeddingDimension, m.QueryPrefix, m.DocumentPrefix, m.Description)
		if err != nil {
			return nil, fmt.Errorf("store: logic model %s: %w", m.Code, err)
		}
		modelIDs[m.Code] = id
	}
	for _, m := range snap.LogicModels {
		for _, d := range m.Deployments {
			pid, ok := providerIDs[d.Provider]
			if !ok {
				return nil, fmt.Errorf("store: deployment of %s: %w", m.Code, (config.FieldErrors{"provider": "provider " + strconv.Quote(d.Provider) + " does not exist"}).Err())
			}
			_, err := upsert("deployments", `logic_model_id, provider_id, upstream_model, weight, enabled, max_concurrency,
				price_input_micros, price_output_micros, price_cached_micros, currency, cap_thinking, cap_vision, cap_tools, embedding_batch_limit, timeout_ms, breaker, cap_structured_output,
				cap_responses_api`,
				"$1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12,$13,$14,$15,$16,$17,$18", "logic_model_id=EXCLUDED.logic_model_id",
				d.ID, modelIDs[m.Code], pid, d.UpstreamModel, d.Weight, d.Enabled, d.MaxConcurrency,
				d.Prices.InputMicros, d.Prices.OutputMicros, d.Prices.CachedMicros, currencyOr(d.Prices.Currency),
				d.Capabilities.Thinking, d.Capabilities.Vision, d.Capabilities.Tools, d.EmbeddingBatchLimit, d.TimeoutMS, breakerJSON(d.Breaker),
				d.Capabilities.StructuredOutput, d.Capabilities.ResponsesAPI)
			if err != nil {
				return nil, fmt.Errorf("store: deployment %s/%s of %s: %w", d.Provider, d.UpstreamModel, m.Code, err)
			}
		}
	}

	groupIDs := map[string]int64{}
	for _, g := range snap.RouteGroups {
		var tenant *int64
		if g.Tenant != "" {
			id := tenantIDs[g.Tenant]
			tenant = &id
		}
		id, err := upsert("route_groups", "name, description, tenant_id, fallback_group_id", "$1,$2,$3,NULL",
			"name=EXCLUDED.name, description=EXCLUDED.description, tenant_id=EXCLUDED.tenant_id, fallback_group_id=NULL",
			g.ID, g.Name, g.Description, tenant)
		if err != nil {
			return nil, fmt.Errorf("store: route group %s: %w", g.Name, err)
		}
		groupIDs[g.Name] = id
	}
	for _, g := range snap.RouteGroups {
		if g.Fallback != "" && g.Fallback != config.FallbackNone {
			if err := exec(`UPDATE route_groups SET fallback_group_id=$2 WHERE id=$1`, groupIDs[g.Name], groupIDs[g.Fallback]); err != nil {
				return nil, err
			}
		}
		for _, name := range config.TierNames {
			t := g.Tier(name)
			if t == nil {
				t = &config.Tier{Name: name, TimeoutMS: config.DefaultTierTimeoutMS[name], FirstChunkTimeoutMS: config.DefaultFirstChunkTimeoutMS[name]}
			}
			var tierID int64
			err := tx.GetContext(ctx, &tierID, `
				INSERT INTO tiers (route_group_id, name, timeout_ms, first_chunk_timeout_ms) VALUES ($1,$2,$3,$4)
				ON CONFLICT (route_group_id, name) DO UPDATE SET timeout_ms=EXCLUDED.timeout_ms, first_chunk_timeout_ms=EXCLUDED.first_chunk_timeout_ms
				RETURNING id`, groupIDs[g.Name], name, t.TimeoutMS, t.FirstChunkTimeoutMS)
			if err != nil {
				return nil, fmt.Errorf("store: tier %s/%s: %w", g.Name, name, err)
			}
			for _, c := range t.Candidates {
				if _, err := upsert("candidates", "tier_id, logic_model_id, priority, weight", "$1,$2,$3,$4", "tier_id=EXCLUDED.tier_id",
					c.ID, tierID, modelIDs[c.LogicModel], c.Priority, c.Weight); err != nil {
					return nil, fmt.Errorf("store: candidate %s in %s/%s: %w", c.LogicModel, g.Name, name, err)
				}
			}
		}
	}

	callerIDs := []int64{-1}
	for _, c := range snap.Callers {
		var tenant *int64
		if c.Tenant != "" {
			id := tenantIDs[c.Tenant]
			tenant = &id
		}
		id, err := upsert("callers", "name, business_line, tenant_id, route_group_id, priority_class, enabled, monthly_budget_micros, budget_currency", "$1,$2,$3,$4,$5,$6,$7,$8",
			"name=EXCLUDED.name, business_line=EXCLUDED.business_line, tenant_id=EXCLUDED.tenant_id, route_group_id=EXCLUDED.route_group_id, priority_class=EXCLUDED.priority_class, enabled=EXCLUDED.enabled, monthly_budget_micros=EXCLUDED.monthly_budget_micros, budget_currency=EXCLUDED.budget_currency",
			c.ID, c.Name, c.BusinessLine, tenant, groupIDs[c.RouteGroup], c.PriorityClass, c.Enabled, c.MonthlyBudgetMicros, currencyOr(c.BudgetCurrency))
		if err != nil {
			return nil, fmt.Errorf("store: caller %s: %w", c.Name, err)
		}
		callerIDs = append(callerIDs, id)
		for _, l := range c.Limits {
			if l.RPM == 0 && l.TPM == 0 && l.DailyTokens == 0 {
				continue
			}
			if err := exec(`INSERT INTO caller_limits (caller_id, tier, rpm, tpm, daily_tokens) VALUES ($1,$2,$3,$4,$5)`, id, l.Tier, l.RPM, l.TPM, l.DailyTokens); err != nil {
				return nil, err
			}
		}
	}

	// Remove what the snapshot no longer has, dependants first.
	deleteMissing := func(table string, keep []int64) error {
		q, args, err := sqlx.In(`DELETE FROM `+table+` WHERE id NOT IN (?)`, append(keep, -1))
		if err != nil {
			return err
		}
		return exec(tx.Rebind(q), args...)
	}
	ids := func(m map[string]int64) []int64 {
		out := make([]int64, 0, len(m))
		for _, v := range m {
			out = append(out, v)
		}
		return out
	}
	for _, step := range []struct {
		table string
		keep  []int64
	}{{"callers", callerIDs}, {"route_groups", ids(groupIDs)}, {"logic_models", ids(modelIDs)}, {"providers", ids(providerIDs)}, {"tenants", ids(tenantIDs)}} {
		if err := deleteMissing(step.table, step.keep); err != nil {
			return nil, fmt.Errorf("store: remove %s not in the snapshot: %w", step.table, err)
		}
	}
	for _, table := range []string{"tenants", "providers", "logic_models", "deployments", "route_groups", "tiers", "candidates", "callers"} {
		if err := exec(`SELECT setval(pg_get_serial_sequence('` + table + `','id'), GREATEST((SELECT max(id) FROM ` + table + `), 1))`); err != nil {
			return nil, err
		}
	}
	return notes, nil
}

// ValidateSnapshot runs the per-entity validators and the reference checks
// that a relational draft cannot represent otherwise.
func ValidateSnapshot(s config.Snapshot) error {
	f := config.FieldErrors{}
	add := func(obj string, fe config.FieldErrors) {
		for k, v := range fe {
			f.Add(obj+"."+k, v)
		}
	}
	providers, models, groups, tenants := map[string]bool{}, map[string]bool{}, map[string]bool{}, map[string]bool{}
	for _, t := range s.Tenants {
		add("tenant "+t.Name, config.ValidateTenant(t))
		tenants[t.Name] = true
	}
	for _, p := range s.Providers {
		add("provider "+p.Name, config.ValidateProvider(p))
		providers[p.Name] = true
		for _, k := range p.Keys {
			if k.Status != config.KeyActive && k.Status != config.KeyDisabled {
				f.Add("provider "+p.Name+".keys", "key status must be active or disabled")
			}
		}
		for _, h := range p.Headers {
			if h.Secret && !h.KeepsSecret() {
				f.Add("provider "+p.Name+".headers", "the value of secret header "+h.Name+" cannot be part of the configuration text; set it in the console or with PUT /admin/api/providers/{id}")
			}
		}
	}
	for _, m := range s.LogicModels {
		add("logic model "+m.Code, config.ValidateLogicModel(m))
		models[m.Code] = true
		for _, d := range m.Deployments {
			add("logic model "+m.Code+" deployment "+d.Provider+"/"+d.UpstreamModel, config.ValidateDeployment(d))
			if !providers[d.Provider] {
				f.Add("logic model "+m.Code+" deployment "+d.UpstreamModel+".provider", "provider "+strconv.Quote(d.Provider)+" does not exist")
			}
		}
	}
	for _, g := range s.RouteGroups {
		groups[g.Name] = true
	}
	for _, g := range s.RouteGroups {
		add("route group "+g.Name, config.ValidateRouteGroup(g))
		if g.Tenant != "" && !tenants[g.Tenant] {
			f.Add("route group "+g.Name+".tenant", "tenant "+strconv.Quote(g.Tenant)+" does not exist")
		}
		if g.Fallback != "" && g.Fallback != config.FallbackNone && !groups[g.Fallback] {
			f.Add("route group "+g.Name+".fallback", "route group "+strconv.Quote(g.Fallback)+" does not exist")
		}
		seen := map[config.TierName]bool{}
		for _, t := range g.Tiers {
			if seen[t.Name] {
				f.Add("route group "+g.Name+".tiers", "tier "+string(t.Name)+" appears twice")
			}
			seen[t.Name] = true
			if !config.ValidTier(string(t.Name)) {
				f.Add("route group "+g.Name+".tiers", "unknown tier "+strconv.Quote(string(t.Name)))
			}
			for _, c := range t.Candidates {
				add("route group "+g.Name+" "+string(t.Name)+" candidate "+c.LogicModel, config.ValidateCandidate(c))
				if !models[c.LogicModel] {
					f.Add("route group "+g.Name+" "+string(t.Name)+".candidates", "logic model "+strconv.Quote(c.LogicModel)+" does not exist")
				}
			}
		}
	}
	for _, c := range s.Callers {
		add("caller "+c.Name, config.ValidateCaller(c))
		if !groups[c.RouteGroup] {
			f.Add("caller "+c.Name+".route_group", "route group "+strconv.Quote(c.RouteGroup)+" does not exist")
		}
		if c.Tenant != "" && !tenants[c.Tenant] {
			f.Add("caller "+c.Name+".tenant", "tenant "+strconv.Quote(c.Tenant)+" does not exist")
		}
	}
	return f.Err()
}
