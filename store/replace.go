package store

import (
	"context"
	"fmt"
	"strconv"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"switchyard/routing/config"
)

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

// The columns of each draft table as ReplaceDraft writes them. A new column
// is one line here (and one in loadSnapshot, which reads it back).
var (
	tenantCols = []column[config.Tenant]{
		{"id", "bigint", func(t *config.Tenant) any { return t.ID }},
		{"name", "text", func(t *config.Tenant) any { return t.Name }},
		{"description", "text", func(t *config.Tenant) any { return t.Description }},
	}
	providerCols = []column[providerRow]{
		{"id", "bigint", func(r *providerRow) any { return r.p.ID }},
		{"name", "text", func(r *providerRow) any { return r.p.Name }},
		{"protocol", "text", func(r *providerRow) any { return string(r.p.Protocol) }},
		{"base_url", "text", func(r *providerRow) any { return r.p.BaseURL }},
		{"enabled", "boolean", func(r *providerRow) any { return r.p.Enabled }},
		{"timeout_ms", "integer", func(r *providerRow) any { return r.p.TimeoutMS }},
		{"notes", "text", func(r *providerRow) any { return r.p.Notes }},
		{"api_version", "text", func(r *providerRow) any { return r.p.APIVersion }},
		{"region", "text", func(r *providerRow) any { return r.p.Region }},
		{"auth_url", "text", func(r *providerRow) any { return r.p.AuthURL }},
		{"project", "text", func(r *providerRow) any { return r.p.Project }},
		{"sandbox", "boolean", func(r *providerRow) any { return r.p.Sandbox }},
		{"headers", "jsonb", func(r *providerRow) any { return r.headers }},
		{"pass_headers", "jsonb", func(r *providerRow) any { return r.pass }},
		{"quirks", "jsonb", func(r *providerRow) any { return rawJSON(quirksJSON(r.p.Quirks)) }},
	}
	providerKeyCols = []column[providerKeyRow]{
		{"id", "bigint", func(r *providerKeyRow) any { return r.k.ID }},
		{"provider_id", "bigint", func(r *providerKeyRow) any { return r.providerID }},
		{"label", "text", func(r *providerKeyRow) any { return r.k.Label }},
		{"status", "text", func(r *providerKeyRow) any { return r.k.Status }},
	}
	logicModelCols = []column[config.LogicModel]{
		{"id", "bigint", func(m *config.LogicModel) any { return m.ID }},
		{"code", "text", func(m *config.LogicModel) any { return m.Code }},
		{"kind", "text", func(m *config.LogicModel) any { return string(m.Kind) }},
		{"embedding_dimension", "integer", func(m *config.LogicModel) any { return m.EmbeddingDimension }},
		{"query_prefix", "text", func(m *config.LogicModel) any { return m.QueryPrefix }},
		{"document_prefix", "text", func(m *config.LogicModel) any { return m.DocumentPrefix }},
		{"description", "text", func(m *config.LogicModel) any { return m.Description }},
	}
	deploymentCols = []column[deploymentRow]{
		{"id", "bigint", func(r *deploymentRow) any { return r.d.ID }},
		{"logic_model_id", "bigint", func(r *deploymentRow) any { return r.modelID }},
		{"provider_id", "bigint", func(r *deploymentRow) any { return r.providerID }},
		{"upstream_model", "text", func(r *deploymentRow) any { return r.d.UpstreamModel }},
		{"weight", "integer", func(r *deploymentRow) any { return r.d.Weight }},
		{"parked", "boolean", func(r *deploymentRow) any { return r.d.Parked }},
		{"enabled", "boolean", func(r *deploymentRow) any { return r.d.Enabled }},
		{"max_concurrency", "integer", func(r *deploymentRow) any { return r.d.MaxConcurrency }},
		{"price_input_micros", "bigint", func(r *deploymentRow) any { return int64(r.d.Prices.InputMicros) }},
		{"price_output_micros", "bigint", func(r *deploymentRow) any { return int64(r.d.Prices.OutputMicros) }},
		{"price_cached_micros", "bigint", func(r *deploymentRow) any { return int64(r.d.Prices.CachedMicros) }},
		{"currency", "text", func(r *deploymentRow) any { return currencyOr(r.d.Prices.Currency) }},
		{"cap_thinking", "boolean", func(r *deploymentRow) any { return r.d.Capabilities.Thinking }},
		{"cap_vision", "boolean", func(r *deploymentRow) any { return r.d.Capabilities.Vision }},
		{"cap_tools", "boolean", func(r *deploymentRow) any { return r.d.Capabilities.Tools }},
		{"cap_structured_output", "boolean", func(r *deploymentRow) any { return r.d.Capabilities.StructuredOutput }},
		{"cap_responses_api", "boolean", func(r *deploymentRow) any { return r.d.Capabilities.ResponsesAPI }},
		{"cap_web_search", "boolean", func(r *deploymentRow) any { return r.d.Capabilities.WebSearch }},
		{"strict_fields", "boolean", func(r *deploymentRow) any { return r.d.StrictFields }},
		{"embedding_batch_limit", "integer", func(r *deploymentRow) any { return r.d.EmbeddingBatchLimit }},
		{"timeout_ms", "integer", func(r *deploymentRow) any { return r.d.TimeoutMS }},
		{"breaker", "jsonb", func(r *deploymentRow) any { return rawJSON(breakerJSON(r.d.Breaker).String) }},
		{"max_inflight_tokens", "bigint", func(r *deploymentRow) any { return r.d.MaxInflightTokens }},
	}
	routeGroupCols = []column[routeGroupRow]{
		{"id", "bigint", func(r *routeGroupRow) any { return r.g.ID }},
		{"name", "text", func(r *routeGroupRow) any { return r.g.Name }},
		{"description", "text", func(r *routeGroupRow) any { return r.g.Description }},
		{"tenant_id", "bigint", func(r *routeGroupRow) any { return r.tenantID }},
		{"fallback_group_id", "bigint", func(r *routeGroupRow) any { return r.fallbackID }},
		{"retry_budget", "jsonb", func(r *routeGroupRow) any { return r.budget }},
		{"degradation", "jsonb", func(r *routeGroupRow) any { return r.ladder }},
		{"trace_content", "boolean", func(r *routeGroupRow) any { return r.g.TraceContent }},
	}
	tierCols = []column[tierRow]{
		{"id", "bigint", func(r *tierRow) any { return r.t.ID }},
		{"route_group_id", "bigint", func(r *tierRow) any { return r.groupID }},
		{"name", "text", func(r *tierRow) any { return string(r.t.Name) }},
		{"timeout_ms", "integer", func(r *tierRow) any { return r.t.TimeoutMS }},
		{"first_chunk_timeout_ms", "integer", func(r *tierRow) any { return r.t.FirstChunkTimeoutMS }},
	}
	candidateCols = []column[candidateRow]{
		{"id", "bigint", func(r *candidateRow) any { return r.c.ID }},
		{"tier_id", "bigint", func(r *candidateRow) any { return r.tierID }},
		{"logic_model_id", "bigint", func(r *candidateRow) any { return r.modelID }},
		{"priority", "integer", func(r *candidateRow) any { return r.c.Priority }},
		{"weight", "integer", func(r *candidateRow) any { return r.c.Weight }},
		{"parked", "boolean", func(r *candidateRow) any { return r.c.Parked }},
	}
	callerCols = []column[callerRow]{
		{"id", "bigint", func(r *callerRow) any { return r.c.ID }},
		{"name", "text", func(r *callerRow) any { return r.c.Name }},
		{"business_line", "text", func(r *callerRow) any { return r.c.BusinessLine }},
		{"tenant_id", "bigint", func(r *callerRow) any { return r.tenantID }},
		{"route_group_id", "bigint", func(r *callerRow) any { return r.groupID }},
		{"priority_class", "text", func(r *callerRow) any { return string(r.c.PriorityClass) }},
		{"enabled", "boolean", func(r *callerRow) any { return r.c.Enabled }},
		{"monthly_budget_micros", "bigint", func(r *callerRow) any { return int64(r.c.MonthlyBudgetMicros) }},
		{"budget_currency", "text", func(r *callerRow) any { return currencyOr(r.c.BudgetCurrency) }},
	}
	callerLimitCols = []column[callerLimitRow]{
		{"caller_id", "bigint", func(r *callerLimitRow) any { return r.callerID }},
		{"tier", "text", func(r *callerLimitRow) any { return string(r.l.Tier) }},
		{"rpm", "bigint", func(r *callerLimitRow) any { return r.l.RPM }},
		{"tpm", "bigint", func(r *callerLimitRow) any { return r.l.TPM }},
		{"daily_tokens", "bigint", func(r *callerLimitRow) any { return r.l.DailyTokens }},
	}
)

// Rows of the draft tables: the snapshot object and the ids it refers to.
type (
	providerRow struct {
		p             *config.Provider
		headers, pass rawJSON
	}
	providerKeyRow struct {
		k          *config.ProviderKey
		providerID int64
	}
	deploymentRow struct {
		d                   *config.Deployment
		modelID, providerID int64
	}
	routeGroupRow struct {
		g                    *config.RouteGroup
		tenantID, fallbackID *int64
		budget, ladder       rawJSON // the retry budget and degradation ladder (resilienceJSON)
	}
	tierRow struct {
		t       *config.Tier
		groupID int64
	}
	candidateRow struct {
		c               *config.Candidate
		tierID, modelID int64
	}
	callerRow struct {
		c        *config.Caller
		tenantID *int64
		groupID  int64
	}
	callerLimitRow struct {
		l        config.TierLimit
		callerID int64
	}
)

// replaceDraft writes snap over the draft tables with one statement per
// table (plus the id and name bookkeeping around them), whatever its size.
func replaceDraft(ctx context.Context, tx *sqlx.Tx, snap config.Snapshot) ([]ReplaceNote, error) {
	snap = config.Clone(snap)
	config.Canonicalize(&snap)
	if err := ValidateSnapshot(snap); err != nil {
		return nil, err
	}
	addMissingTiers(&snap)
	ids := snapshotIDs(&snap)
	if err := ids.assign(ctx, tx); err != nil {
		return nil, err
	}
	rows, notes, err := replaceRowsOf(ctx, tx, &snap)
	if err != nil {
		return nil, err
	}
	// Rows below the named objects go where the snapshot does not have them
	// as they are (same id, same unique key); what stays is updated in place.
	if err := rows.deleteStale(ctx, tx); err != nil {
		return nil, err
	}
	// Names are unique: a row holding a name the snapshot gives to another
	// object steps aside first.
	if err := rows.parkNames(ctx, tx, snap); err != nil {
		return nil, err
	}
	keyNotes, err := rows.write(ctx, tx, snap)
	if err != nil {
		return nil, err
	}
	// Remove what the snapshot no longer has, dependants first.
	if err := ids.deleteOthers(ctx, tx); err != nil {
		return nil, err
	}
	return append(notes, keyNotes...), nil
}

// addMissingTiers gives every route group each tier it lacks, with the
// defaults.
func addMissingTiers(snap *config.Snapshot) {
	for i := range snap.RouteGroups {
		g := &snap.RouteGroups[i]
		for _, name := range config.TierNames {
			if g.Tier(name) == nil {
				g.Tiers = append(g.Tiers, config.Tier{Name: name, TimeoutMS: config.DefaultTierTimeoutMS[name], FirstChunkTimeoutMS: config.DefaultFirstChunkTimeoutMS[name]})
			}
		}
	}
}

// replaceIDs points at the id of every object of a snapshot, per table.
type replaceIDs struct {
	tenants, providers, models, deployments, groups, tiers, candidates, callers []*int64
}

func snapshotIDs(snap *config.Snapshot) replaceIDs {
	var ids replaceIDs
	for i := range snap.Tenants {
		ids.tenants = append(ids.tenants, &snap.Tenants[i].ID)
	}
	for i := range snap.Providers {
		ids.providers = append(ids.providers, &snap.Providers[i].ID)
	}
	for i := range snap.LogicModels {
		m := &snap.LogicModels[i]
		ids.models = append(ids.models, &m.ID)
		for j := range m.Deployments {
			ids.deployments = append(ids.deployments, &m.Deployments[j].ID)
		}
	}
	for i := range snap.RouteGroups {
		g := &snap.RouteGroups[i]
		ids.groups = append(ids.groups, &g.ID)
		for j := range g.Tiers {
			t := &g.Tiers[j]
			ids.tiers = append(ids.tiers, &t.ID)
			for k := range t.Candidates {
				ids.candidates = append(ids.candidates, &t.Candidates[k].ID)
			}
		}
	}
	for i := range snap.Callers {
		ids.callers = append(ids.callers, &snap.Callers[i].ID)
	}
	return ids
}

// assign gives every object its id first (new objects a fresh one), so rows
// refer to each other by id in Go and each table is one statement.
func (ids replaceIDs) assign(ctx context.Context, tx *sqlx.Tx) error {
	for _, a := range []struct {
		table string
		ids   []*int64
	}{{"tenants", ids.tenants}, {"providers", ids.providers}, {"logic_models", ids.models}, {"deployments", ids.deployments},
		{"route_groups", ids.groups}, {"tiers", ids.tiers}, {"candidates", ids.candidates}, {"callers", ids.callers}} {
		if err := assignIDs(ctx, tx, a.table, a.ids); err != nil {
			return err
		}
	}
	return nil
}

// deleteOthers removes the named objects the snapshot no longer has,
// dependants first.
func (ids replaceIDs) deleteOthers(ctx context.Context, tx *sqlx.Tx) error {
	idOf := func(ids []*int64) []int64 {
		out := make([]int64, len(ids))
		for i, id := range ids {
			out[i] = *id
		}
		return out
	}
	for _, step := range []struct {
		table string
		keep  []int64
	}{{"callers", idOf(ids.callers)}, {"route_groups", idOf(ids.groups)}, {"logic_models", idOf(ids.models)}, {"providers", idOf(ids.providers)}, {"tenants", idOf(ids.tenants)}} {
		if err := deleteOthers(ctx, tx, step.table, step.keep); err != nil {
			return err
		}
	}
	return nil
}

// snapshotNames resolves a snapshot's references by name to ids.
type snapshotNames struct {
	tenant, provider, model, group map[string]int64
}

func namesOf(snap *config.Snapshot) snapshotNames {
	n := snapshotNames{tenant: map[string]int64{}, provider: map[string]int64{}, model: map[string]int64{}, group: map[string]int64{}}
	for _, t := range snap.Tenants {
		n.tenant[t.Name] = t.ID
	}
	for _, p := range snap.Providers {
		n.provider[p.Name] = p.ID
	}
	for _, m := range snap.LogicModels {
		n.model[m.Code] = m.ID
	}
	for _, g := range snap.RouteGroups {
		n.group[g.Name] = g.ID
	}
	return n
}

// tenantRef is the tenant's id, nil for no tenant.
func (n snapshotNames) tenantRef(name string) *int64 {
	if name == "" {
		return nil
	}
	id := n.tenant[name]
	return &id
}

// replaceRows are the rows of every draft table below or beside the
// snapshot's own objects (tenants and logic models are written as they are).
type replaceRows struct {
	providers   []providerRow
	keys        []providerKeyRow
	deployments []deploymentRow
	groups      []routeGroupRow
	tiers       []tierRow
	candidates  []candidateRow
	aliases     []aliasRow
	callers     []callerRow
	limits      []callerLimitRow
}

func replaceRowsOf(ctx context.Context, tx *sqlx.Tx, snap *config.Snapshot) (replaceRows, []ReplaceNote, error) {
	var rows replaceRows
	names := namesOf(snap)
	notes, err := rows.addProviders(ctx, tx, snap)
	if err != nil {
		return rows, nil, err
	}
	for i := range snap.LogicModels {
		m := &snap.LogicModels[i]
		for j := range m.Deployments {
			d := &m.Deployments[j]
			rows.deployments = append(rows.deployments, deploymentRow{d: d, modelID: m.ID, providerID: names.provider[d.Provider]})
		}
	}
	rows.addRouteGroups(snap, names)
	rows.addCallers(snap, names)
	return rows, notes, nil
}

// addProviders makes the provider and provider-key rows. A secret header
// whose value this installation does not hold for the provider is left out
// with a note.
func (rows *replaceRows) addProviders(ctx context.Context, tx *sqlx.Tx, snap *config.Snapshot) ([]ReplaceNote, error) {
	var secretIDs []int64
	for _, p := range snap.Providers {
		for _, h := range p.Headers {
			if h.Secret {
				secretIDs = append(secretIDs, h.SecretID)
			}
		}
	}
	owners, err := headerSecretOwners(ctx, tx, secretIDs)
	if err != nil {
		return nil, fmt.Errorf("store: provider header secrets: %w", err)
	}
	var notes []ReplaceNote
	rows.providers = make([]providerRow, len(snap.Providers))
	for i := range snap.Providers {
		p := &snap.Providers[i]
		headers := make([]config.ProviderHeader, 0, len(p.Headers))
		for _, h := range p.Headers {
			if h.Secret && (h.SecretID == 0 || owners[h.SecretID] != p.ID) {
				notes = append(notes, ReplaceNote{Object: "provider " + p.Name, Message: "secret header " + h.Name + " has no value stored for this provider in this installation and was left out; set it in the console"})
				continue
			}
			headers = append(headers, h)
		}
		hj, pj, err := headersJSON(headers, p.PassHeaders)
		if err != nil {
			return nil, fmt.Errorf("store: provider %s headers: %w", p.Name, err)
		}
		rows.providers[i] = providerRow{p: p, headers: rawJSON(hj), pass: rawJSON(pj)}
		for j := range p.Keys {
			rows.keys = append(rows.keys, providerKeyRow{k: &p.Keys[j], providerID: p.ID})
		}
	}
	return notes, nil
}

// addRouteGroups makes the route group, alias, tier and candidate rows.
func (rows *replaceRows) addRouteGroups(snap *config.Snapshot, names snapshotNames) {
	rows.groups = make([]routeGroupRow, len(snap.RouteGroups))
	for i := range snap.RouteGroups {
		g := &snap.RouteGroups[i]
		for j := range g.Aliases {
			r := aliasRow{groupID: g.ID, position: j + 1, a: &g.Aliases[j]}
			if code := g.Aliases[j].LogicModel; code != "" {
				id := names.model[code]
				r.modelID = &id
			}
			rows.aliases = append(rows.aliases, r)
		}
		budget, ladder := resilienceJSON(*g)
		rows.groups[i] = routeGroupRow{g: g, tenantID: names.tenantRef(g.Tenant), budget: rawJSON(budget.String), ladder: rawJSON(ladder.String)}
		if g.Fallback != "" && g.Fallback != config.FallbackNone {
			id := names.group[g.Fallback]
			rows.groups[i].fallbackID = &id
		}
		for j := range g.Tiers {
			t := &g.Tiers[j]
			rows.tiers = append(rows.tiers, tierRow{t: t, groupID: g.ID})
			for k := range t.Candidates {
				rows.candidates = append(rows.candidates, candidateRow{c: &t.Candidates[k], tierID: t.ID, modelID: names.model[t.Candidates[k].LogicModel]})
			}
		}
	}
}

// addCallers makes the caller and caller-limit rows; unlimited is the
// absence of a limit row.
func (rows *replaceRows) addCallers(snap *config.Snapshot, names snapshotNames) {
	rows.callers = make([]callerRow, len(snap.Callers))
	for i := range snap.Callers {
		c := &snap.Callers[i]
		rows.callers[i] = callerRow{c: c, tenantID: names.tenantRef(c.Tenant), groupID: names.group[c.RouteGroup]}
		for _, l := range c.Limits {
			if l.RPM != 0 || l.TPM != 0 || l.DailyTokens != 0 {
				rows.limits = append(rows.limits, callerLimitRow{l: l, callerID: c.ID})
			}
		}
	}
}

// deleteStale removes the rows below the named objects that the snapshot
// does not have as they are.
func (rows replaceRows) deleteStale(ctx context.Context, tx *sqlx.Tx) error {
	if err := deleteStale(ctx, tx, "candidates", candidateCols, rows.candidates, "id", "tier_id", "logic_model_id"); err != nil {
		return err
	}
	if err := deleteStale(ctx, tx, "tiers", tierCols, rows.tiers, "id", "route_group_id", "name"); err != nil {
		return err
	}
	if err := deleteStale(ctx, tx, "deployments", deploymentCols, rows.deployments, "id", "logic_model_id", "provider_id", "upstream_model"); err != nil {
		return err
	}
	if err := deleteStale(ctx, tx, "caller_limits", callerLimitCols, rows.limits, "caller_id", "tier"); err != nil {
		return err
	}
	return deleteStale(ctx, tx, "model_aliases", aliasCols, rows.aliases, "route_group_id", "position")
}

// parkNames moves aside every row holding a unique name the snapshot gives
// to another object.
func (rows replaceRows) parkNames(ctx context.Context, tx *sqlx.Tx, snap config.Snapshot) error {
	if err := parkNames(ctx, tx, "tenants", "name", tenantCols, snap.Tenants); err != nil {
		return err
	}
	if err := parkNames(ctx, tx, "providers", "name", providerCols, rows.providers); err != nil {
		return err
	}
	if err := parkNames(ctx, tx, "logic_models", "code", logicModelCols, snap.LogicModels); err != nil {
		return err
	}
	if err := parkNames(ctx, tx, "route_groups", "name", routeGroupCols, rows.groups); err != nil {
		return err
	}
	return parkNames(ctx, tx, "callers", "name", callerCols, rows.callers)
}

// write writes every table, referenced rows before the rows referring to
// them, and returns a note for each provider key it could not keep.
func (rows replaceRows) write(ctx context.Context, tx *sqlx.Tx, snap config.Snapshot) ([]ReplaceNote, error) {
	if err := writeRows(ctx, tx, "tenants", tenantCols, snap.Tenants, "id"); err != nil {
		return nil, err
	}
	if err := writeRows(ctx, tx, "providers", providerCols, rows.providers, "id"); err != nil {
		return nil, err
	}
	notes, err := replaceProviderKeys(ctx, tx, snap, rows.keys)
	if err != nil {
		return nil, err
	}
	if err := writeRows(ctx, tx, "logic_models", logicModelCols, snap.LogicModels, "id"); err != nil {
		return nil, err
	}
	if err := writeRows(ctx, tx, "deployments", deploymentCols, rows.deployments, "id"); err != nil {
		return nil, err
	}
	if err := writeRows(ctx, tx, "route_groups", routeGroupCols, rows.groups, "id"); err != nil {
		return nil, err
	}
	if err := writeRows(ctx, tx, "tiers", tierCols, rows.tiers, "id"); err != nil {
		return nil, err
	}
	if err := writeRows(ctx, tx, "candidates", candidateCols, rows.candidates, "id"); err != nil {
		return nil, err
	}
	if err := writeRows(ctx, tx, "model_aliases", aliasCols, rows.aliases, "route_group_id", "position"); err != nil {
		return nil, err
	}
	if err := writeRows(ctx, tx, "callers", callerCols, rows.callers, "id"); err != nil {
		return nil, err
	}
	if err := writeRows(ctx, tx, "caller_limits", callerLimitCols, rows.limits, "caller_id", "tier"); err != nil {
		return nil, err
	}
	return notes, nil
}

// replaceProviderKeys keeps the snapshot's provider keys this installation
// holds (with a note for each it does not) and removes the others from the
// draft, keeping their sealed secrets.
func replaceProviderKeys(ctx context.Context, tx *sqlx.Tx, snap config.Snapshot, keys []providerKeyRow) ([]ReplaceNote, error) {
	kept, err := updateProviderKeys(ctx, tx, keys)
	if err != nil {
		return nil, err
	}
	var notes []ReplaceNote
	keepKeys := []int64{}
	for _, k := range keys {
		if !kept[k.k.ID] {
			notes = append(notes, ReplaceNote{Object: "provider " + providerName(snap, k.providerID), Message: fmt.Sprintf("key %d (%s) is not stored in this installation and was left out; add its secret in the console", k.k.ID, k.k.Fingerprint)})
			continue
		}
		keepKeys = append(keepKeys, k.k.ID)
	}
	if _, err := tx.ExecContext(ctx, `UPDATE provider_keys SET deleted_at=now() WHERE deleted_at IS NULL AND id <> ALL($1::bigint[])`, pq.Array(keepKeys)); err != nil {
		return nil, fmt.Errorf("store: remove provider keys not in the snapshot: %w", err)
	}
	return notes, nil
}

// updateProviderKeys binds the listed keys to their providers, labels and
// statuses (undeleting them), in one statement, and reports which exist.
func updateProviderKeys(ctx context.Context, tx *sqlx.Tx, keys []providerKeyRow) (map[int64]bool, error) {
	kept := map[int64]bool{}
	if len(keys) == 0 {
		return kept, nil
	}
	data, err := rowsJSON(keys, providerKeyCols)
	if err != nil {
		return nil, err
	}
	var ids []int64
	if err := tx.SelectContext(ctx, &ids, `UPDATE provider_keys k SET provider_id = r.provider_id, label = r.label, status = r.status, deleted_at = NULL
		FROM `+recordset(providerKeyCols)+` WHERE k.id = r.id RETURNING k.id`, data); err != nil {
		return nil, fmt.Errorf("store: provider keys: %w", err)
	}
	for _, id := range ids {
		kept[id] = true
	}
	return kept, nil
}

func providerName(s config.Snapshot, id int64) string {
	for _, p := range s.Providers {
		if p.ID == id {
			return p.Name
		}
	}
	return strconv.FormatInt(id, 10)
}
