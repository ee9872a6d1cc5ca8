package config

import (
	"fmt"
	"slices"
	"strings"
)

// Severity of a dry-run finding: what it does to a publish.
type Severity string

const (
	// SeverityError always blocks publishing: the configuration is broken.
	SeverityError Severity = "error"
	// SeverityAcknowledge blocks publishing unless the operator
	// acknowledges the finding's Ack by name: the configuration is valid
	// but would leave a bound caller's tier (or a logic model it names)
	// answering 503, which an operator may mean to do.
	SeverityAcknowledge Severity = "acknowledge"
	// SeverityWarning never blocks.
	SeverityWarning Severity = "warning"
)

// ObjectRef names the configuration object a finding is about, precisely
// enough for the console to link to its edit page.
type ObjectRef struct {
	Kind  string   `json:"kind"` // provider | logic_model | deployment | route_group | tier | candidate | caller | model_alias
	ID    int64    `json:"id,omitempty"`
	Name  string   `json:"name"`            // human name: "default / fast", "qwen3-max on dashscope"
	Group string   `json:"group,omitempty"` // route group of a tier or candidate
	Tier  TierName `json:"tier,omitempty"`
	Model string   `json:"model,omitempty"` // logic model code of a deployment or candidate
	// ModelID is the id of that logic model (a candidate's or deployment's).
	ModelID int64 `json:"model_id,omitempty"`
	// Field is the object's field at fault, when one is (e.g. route_group
	// of a caller that names a missing group): the control that fixes it.
	Field string `json:"field,omitempty"`
}

// Finding is one problem the dry-run found.
type Finding struct {
	Check    string    `json:"check"`
	Severity Severity  `json:"severity"`
	Object   ObjectRef `json:"object"`
	Message  string    `json:"message"`
	// Params are the finding's facts by name (codes, names, currencies), for
	// a view that words the finding itself.
	Params map[string]string `json:"params,omitempty"`
	// Ack is what an operator must acknowledge to publish anyway; set on
	// every finding of severity acknowledge.
	Ack *Ack `json:"ack,omitempty"`
	// Callers are the enabled callers the finding takes service from.
	Callers []string `json:"callers,omitempty"`
}

// Check is one named static check over a snapshot.
type Check struct {
	ID       string
	Title    string
	Severity Severity
	Run      func(s *Snapshot, env Env) []Finding
}

// Env is what the checks need to know about the running binary.
type Env struct {
	// Implemented lists the protocols this binary has adapters for, and
	// whether each supports embeddings.
	Implemented map[Protocol]ProtocolSupport
}

// ProtocolSupport says what an implemented protocol can serve.
type ProtocolSupport struct {
	Chat       bool
	Embeddings bool
}

// Checks are the dry-run checks in the order they run. The first eight are
// the config lifecycle's dry-run checks; their ids are stable and appear in API answers and version
// records.
var Checks = []Check{
	{ID: "tier_timeout", Title: "Every tier has a positive timeout", Severity: SeverityError, Run: checkTierTimeout},
	{ID: "tier_empty", Title: "Every tier has candidates", Severity: SeverityError, Run: checkTierEmpty},
	{ID: "no_usable_deployment", Title: "Every candidate's logic model has a usable deployment", Severity: SeverityError, Run: checkNoUsableDeployment},
	{ID: "weights_sum", Title: "Deployment weights of a logic model sum to 100", Severity: SeverityError, Run: checkWeightsSum},
	{ID: "unknown_provider", Title: "Every deployment's provider exists", Severity: SeverityError, Run: checkUnknownProvider},
	{ID: "protocol_unimplemented", Title: "Every provider's protocol is implemented", Severity: SeverityError, Run: checkProtocolUnimplemented},
	{ID: "embedding_dimension_missing", Title: "Every embedding logic model has a dimension", Severity: SeverityError, Run: checkEmbeddingDimensionMissing},
	{ID: "embedding_dimension_mismatch", Title: "Embedding candidates of a tier share one dimension", Severity: SeverityError, Run: checkEmbeddingDimensionMismatch},
	{ID: "unknown_reference", Title: "Every reference names an existing object", Severity: SeverityError, Run: checkUnknownReference},
	{ID: CheckBudgetCurrencyMismatch, Title: "A caller's budget currency matches the prices of every deployment it can reach", Severity: SeverityError, Run: checkBudgetCurrencyMismatch},
	{ID: "same_model_all_tiers", Title: "Tiers of a group differ", Severity: SeverityWarning, Run: checkSameModelAllTiers},
	{ID: "unused_logic_model", Title: "Every logic model is used by a candidate", Severity: SeverityWarning, Run: checkUnusedLogicModel},
	{ID: CheckTierUnservable, Title: "Every tier a caller is bound to can serve", Severity: SeverityAcknowledge, Run: checkTierUnservable},
	{ID: "mixed_kinds", Title: "A tier does not mix chat and embedding models", Severity: SeverityWarning, Run: checkMixedKinds},
	{ID: CheckStepDownTarget, Title: "A tier steps down to a lighter tier that can serve", Severity: SeverityError, Run: checkStepDownTarget},
	{ID: CheckAliasTarget, Title: "Every model alias names a tier or a logic model its group reaches", Severity: SeverityError, Run: checkAliasTarget},
	{ID: CheckAliasDuplicate, Title: "An exact model alias is listed once per group", Severity: SeverityError, Run: checkAliasDuplicate},
	{ID: CheckAliasShadowed, Title: "No model alias pattern is hidden by an earlier one", Severity: SeverityWarning, Run: checkAliasShadowed},
	{ID: CheckCloudSettings, Title: "Every cloud provider names its api-version, region or project and location", Severity: SeverityError, Run: checkCloudSettings},
	{ID: CheckAliasOverridden, Title: "No model alias is for a name that resolves before aliases", Severity: SeverityWarning, Run: checkAliasOverridden},
}

// CheckStepDownTarget is the id of the step-down target check.
const CheckStepDownTarget = "step_down_target"

// Result is the outcome of a dry-run.
type Result struct {
	Findings []Finding     `json:"findings"`
	Checks   []CheckResult `json:"checks"`
	// Acknowledged lists what the operator accepted when publishing (set
	// on a published version's result only).
	Acknowledged []Acknowledgement `json:"acknowledged,omitempty"`
}

// CheckResult records one check's outcome for the version history.
type CheckResult struct {
	ID       string   `json:"id"`
	Severity Severity `json:"severity"`
	Findings int      `json:"findings"`
}

// Blocking reports whether publishing with no acknowledgement is refused:
// an error, or a finding that needs acknowledging.
func (r Result) Blocking() bool { return len(r.Unacknowledged(nil)) > 0 }

// Errors returns the findings that always block (severity error).
func (r Result) Errors() []Finding { return r.bySeverity(SeverityError) }

// NeedAck returns the findings that block unless acknowledged.
func (r Result) NeedAck() []Finding { return r.bySeverity(SeverityAcknowledge) }

// Warnings returns the findings that never block.
func (r Result) Warnings() []Finding { return r.bySeverity(SeverityWarning) }

func (r Result) bySeverity(sev Severity) []Finding {
	var out []Finding
	for _, f := range r.Findings {
		if f.Severity == sev {
			out = append(out, f)
		}
	}
	return out
}

// Unacknowledged returns the findings that block a publish with these
// acknowledgements: every error, and every finding whose Ack is not among
// acks.
func (r Result) Unacknowledged(acks []Ack) []Finding {
	var out []Finding
	for _, f := range r.Findings {
		switch f.Severity {
		case SeverityError:
			out = append(out, f)
		case SeverityAcknowledge:
			if f.Ack == nil || !slices.Contains(acks, *f.Ack) {
				out = append(out, f)
			}
		}
	}
	return out
}

// Acknowledge checks acks against the findings and returns what they
// acknowledge, one entry per acknowledged finding. An ack that names
// nothing needing acknowledgement is refused (field "acknowledge"): a
// stale or mistyped acknowledgement must not be recorded on a version.
func (r Result) Acknowledge(acks []Ack) ([]Acknowledgement, error) {
	var out []Acknowledgement
	for _, a := range acks {
		n := 0
		for _, f := range r.Findings {
			if f.Severity == SeverityAcknowledge && f.Ack != nil && *f.Ack == a {
				out = append(out, Acknowledgement{Ack: a, Check: f.Check, Callers: f.Callers, Message: f.Message})
				n++
			}
		}
		if n == 0 {
			return nil, (FieldErrors{"acknowledge": a.String() + " needs no acknowledgement: no finding of this dry-run names it"}).Err()
		}
	}
	return out, nil
}

// Carry returns the acknowledgements standing on the live version that
// this result still needs and acks does not give again: recorded anew on
// the version about to be published, one entry per finding, with the
// finding's current callers and message and the version and author the
// operator gave them on.
func (r Result) Carry(standing []Standing, acks []Ack) []Acknowledgement {
	var out []Acknowledgement
	for _, f := range r.NeedAck() {
		if f.Ack == nil || slices.Contains(acks, *f.Ack) {
			continue
		}
		if s, ok := FindStanding(standing, *f.Ack); ok {
			out = append(out, Acknowledgement{Ack: *f.Ack, Check: f.Check, Callers: f.Callers, Message: f.Message, CarriedFrom: s.Version, By: s.Author})
		}
	}
	return out
}

// StandingKeys is the acks of standing.
func StandingKeys(standing []Standing) []Ack {
	out := make([]Ack, len(standing))
	for i, s := range standing {
		out[i] = s.Ack
	}
	return out
}

// Add appends findings of checks run outside DryRun (the impact preview),
// with their check's outcome.
func (r *Result) Add(check string, sev Severity, fs []Finding) {
	for i := range fs {
		fs[i].Check, fs[i].Severity = check, sev
	}
	r.Findings = append(r.Findings, fs...)
	r.Checks = append(r.Checks, CheckResult{ID: check, Severity: sev, Findings: len(fs)})
}

// DryRun runs every check over s.
func DryRun(s Snapshot, env Env) Result {
	c := Clone(s)
	Canonicalize(&c)
	r := Result{Findings: []Finding{}}
	for _, ch := range Checks {
		r.Add(ch.ID, ch.Severity, ch.Run(&c, env))
	}
	return r
}

func tierRef(g *RouteGroup, t *Tier) ObjectRef {
	return ObjectRef{Kind: "tier", ID: t.ID, Name: g.Name + " / " + string(t.Name), Group: g.Name, Tier: t.Name}
}

func tierField(g *RouteGroup, t *Tier, field string) ObjectRef {
	r := tierRef(g, t)
	r.Field = field
	return r
}

func deploymentRef(m *LogicModel, d *Deployment) ObjectRef {
	return ObjectRef{Kind: "deployment", ID: d.ID, Name: m.Code + " on " + d.Provider + " (" + d.UpstreamModel + ")", Model: m.Code, ModelID: m.ID}
}

func modelRef(m *LogicModel) ObjectRef {
	return ObjectRef{Kind: "logic_model", ID: m.ID, Name: m.Code, Model: m.Code, ModelID: m.ID}
}

func providerRef(p *Provider) ObjectRef {
	return ObjectRef{Kind: "provider", ID: p.ID, Name: p.Name}
}

// eachTier visits every tier of every group, including tiers a group lacks
// (visited as a zero Tier with only its name set), so a missing tier is
// reported rather than ignored.
func eachTier(s *Snapshot, fn func(g *RouteGroup, t *Tier)) {
	for gi := range s.RouteGroups {
		g := &s.RouteGroups[gi]
		for _, name := range TierNames {
			if t := g.Tier(name); t != nil {
				fn(g, t)
			} else {
				fn(g, &Tier{Name: name})
			}
		}
	}
}

func checkTierTimeout(s *Snapshot, _ Env) []Finding {
	var out []Finding
	eachTier(s, func(g *RouteGroup, t *Tier) {
		switch {
		case t.TimeoutMS <= 0:
			out = append(out, Finding{Object: tierField(g, t, "timeout_ms"), Message: fmt.Sprintf("tier %s of route group %s has timeout %d ms; it must be positive", t.Name, g.Name, t.TimeoutMS)})
		case t.FirstChunkTimeoutMS <= 0:
			out = append(out, Finding{Object: tierField(g, t, "first_chunk_timeout_ms"), Message: fmt.Sprintf("tier %s of route group %s has first-chunk timeout %d ms; it must be positive", t.Name, g.Name, t.FirstChunkTimeoutMS)})
		}
	})
	return out
}

func checkTierEmpty(s *Snapshot, _ Env) []Finding {
	var out []Finding
	eachTier(s, func(g *RouteGroup, t *Tier) {
		if len(t.Candidates) == 0 {
			out = append(out, Finding{Object: tierRef(g, t), Message: fmt.Sprintf("tier %s of route group %s has no candidates; requests for %s would fail", t.Name, g.Name, t.Name)})
		}
	})
	return out
}

// Unusable explains why a deployment cannot serve, or returns "" when it can.
// Runtime states (breaker, keys cooling, load) are not considered here.
func Unusable(d *Deployment, providers map[string]*Provider) string {
	p := providers[d.Provider]
	switch {
	case !d.Enabled:
		return "disabled"
	case d.Parked:
		return "parked"
	case p == nil:
		return "provider " + d.Provider + " does not exist"
	case !p.Enabled:
		return "provider " + p.Name + " is disabled"
	}
	for _, k := range p.Keys {
		if k.Status == KeyActive {
			return ""
		}
	}
	return "provider " + p.Name + " has no active key"
}

func (s *Snapshot) providerIndex() map[string]*Provider {
	m := make(map[string]*Provider, len(s.Providers))
	for i := range s.Providers {
		m[s.Providers[i].Name] = &s.Providers[i]
	}
	return m
}

func (s *Snapshot) modelIndex() map[string]*LogicModel {
	m := make(map[string]*LogicModel, len(s.LogicModels))
	for i := range s.LogicModels {
		m[s.LogicModels[i].Code] = &s.LogicModels[i]
	}
	return m
}

// TakenOutOfService reports whether an operator took every deployment of
// m out of service (disabled or parked, each a deliberate choice), as
// opposed to deployments that cannot serve because something is broken
// (a missing or disabled provider, no active key). The first is no error:
// the dry-run asks to acknowledge it where it costs a bound caller service
// (tier_unservable), the same choice as parking the candidate itself.
func TakenOutOfService(m *LogicModel) bool {
	if len(m.Deployments) == 0 {
		return false
	}
	for i := range m.Deployments {
		if m.Deployments[i].InService() {
			return false
		}
	}
	return true
}

func checkNoUsableDeployment(s *Snapshot, _ Env) []Finding {
	providers, models := s.providerIndex(), s.modelIndex()
	var out []Finding
	eachTier(s, func(g *RouteGroup, t *Tier) {
		for _, c := range t.Candidates {
			m := models[c.LogicModel]
			if m == nil {
				continue // unknown_reference reports it
			}
			ref := ObjectRef{Kind: "candidate", ID: c.ID, Name: fmt.Sprintf("%s in %s / %s", c.LogicModel, g.Name, t.Name), Group: g.Name, Tier: t.Name, Model: c.LogicModel, ModelID: m.ID}
			if len(m.Deployments) == 0 {
				out = append(out, Finding{Object: ref, Message: fmt.Sprintf("logic model %s (candidate in %s / %s) has no deployments", m.Code, g.Name, t.Name)})
				continue
			}
			if TakenOutOfService(m) {
				continue // the operator's choice: tier_unservable asks to acknowledge it when it costs service
			}
			var why []string
			for i := range m.Deployments {
				d := &m.Deployments[i]
				r := Unusable(d, providers)
				if r == "" {
					why = nil
					break
				}
				why = append(why, d.Provider+"/"+d.UpstreamModel+": "+r)
			}
			if why != nil {
				out = append(out, Finding{Object: ref, Message: fmt.Sprintf("logic model %s (candidate in %s / %s) has no usable deployment: %s", m.Code, g.Name, t.Name, strings.Join(why, "; "))})
			}
		}
	})
	return out
}

func checkWeightsSum(s *Snapshot, _ Env) []Finding {
	var out []Finding
	for i := range s.LogicModels {
		m := &s.LogicModels[i]
		w := SumWeights(m.Deployments)
		if w.Balanced() {
			continue
		}
		msg := fmt.Sprintf("deployment weights of logic model %s sum to %d over the %d deployment(s) in service (disabled and parked ones excluded); they must sum to 100", m.Code, w.InService, w.Active)
		if w.OutOfService > 0 {
			msg += fmt.Sprintf(", alone or with the %d taken out of service", w.OutOfService)
		}
		ref := modelRef(m)
		ref.Field = "weight"
		out = append(out, Finding{Object: ref, Message: msg,
			Params: map[string]string{"in_service": fmt.Sprint(w.InService), "out_of_service": fmt.Sprint(w.OutOfService)}})
	}
	return out
}

func checkUnknownProvider(s *Snapshot, _ Env) []Finding {
	providers := s.providerIndex()
	var out []Finding
	for i := range s.LogicModels {
		m := &s.LogicModels[i]
		for j := range m.Deployments {
			d := &m.Deployments[j]
			if providers[d.Provider] == nil {
				ref := deploymentRef(m, d)
				ref.Field = "provider"
				out = append(out, Finding{Object: ref, Message: fmt.Sprintf("deployment %s/%s of logic model %s references provider %q, which does not exist", d.Provider, d.UpstreamModel, m.Code, d.Provider)})
			}
		}
	}
	return out
}

// CheckCloudSettings is the id of the check that an Azure provider has an
// api-version, a Bedrock provider a region and a Vertex AI provider a
// project and a location: without them no request can be addressed
// (Azure, Vertex) or signed (Bedrock).
const CheckCloudSettings = "cloud_settings_missing"

func checkCloudSettings(s *Snapshot, _ Env) []Finding {
	var out []Finding
	for i := range s.Providers {
		p := &s.Providers[i]
		ref := providerRef(p)
		switch {
		case p.Protocol == ProtocolAzure && strings.TrimSpace(p.APIVersion) == "":
			ref.Field = "api_version"
			out = append(out, Finding{Object: ref, Message: fmt.Sprintf("Azure OpenAI provider %s has no api-version; its deployments cannot be called", p.Name)})
		case p.Protocol == ProtocolBedrock && strings.TrimSpace(p.Region) == "":
			ref.Field = "region"
			out = append(out, Finding{Object: ref, Message: fmt.Sprintf("AWS Bedrock provider %s has no region; its requests cannot be signed", p.Name)})
		case p.Protocol == ProtocolVertex && strings.TrimSpace(p.Project) == "":
			ref.Field = "project"
			out = append(out, Finding{Object: ref, Message: fmt.Sprintf("Vertex AI provider %s has no project; its models cannot be addressed", p.Name)})
		case p.Protocol == ProtocolVertex && strings.TrimSpace(p.Region) == "":
			ref.Field = "location" // the form's name of a Vertex provider's region
			out = append(out, Finding{Object: ref, Message: fmt.Sprintf("Vertex AI provider %s has no location; its models cannot be addressed", p.Name)})
		}
	}
	return out
}

func checkProtocolUnimplemented(s *Snapshot, env Env) []Finding {
	providers := s.providerIndex()
	var out []Finding
	for i := range s.Providers {
		p := &s.Providers[i]
		if sup, ok := env.Implemented[p.Protocol]; !ok || !sup.Chat {
			ref := providerRef(p)
			ref.Field = "protocol"
			out = append(out, Finding{Object: ref, Message: fmt.Sprintf("provider %s uses protocol %q, which this build does not implement", p.Name, p.Protocol)})
		}
	}
	for i := range s.LogicModels {
		m := &s.LogicModels[i]
		if m.Kind != KindEmbedding {
			continue
		}
		for j := range m.Deployments {
			d := &m.Deployments[j]
			p := providers[d.Provider]
			if p == nil {
				continue
			}
			if sup, ok := env.Implemented[p.Protocol]; ok && !sup.Embeddings {
				ref := deploymentRef(m, d)
				ref.Field = "provider"
				out = append(out, Finding{Object: ref, Message: fmt.Sprintf("embedding model %s is deployed on provider %s, whose protocol %s has no embeddings API", m.Code, p.Name, p.Protocol)})
			}
		}
	}
	return out
}

func checkEmbeddingDimensionMissing(s *Snapshot, _ Env) []Finding {
	var out []Finding
	for i := range s.LogicModels {
		m := &s.LogicModels[i]
		if m.Kind == KindEmbedding && m.EmbeddingDimension <= 0 {
			ref := modelRef(m)
			ref.Field = "embedding_dimension"
			out = append(out, Finding{Object: ref, Message: fmt.Sprintf("embedding logic model %s has no dimension set; returned vectors could not be checked", m.Code)})
		}
	}
	return out
}

func checkEmbeddingDimensionMismatch(s *Snapshot, _ Env) []Finding {
	models := s.modelIndex()
	var out []Finding
	eachTier(s, func(g *RouteGroup, t *Tier) {
		dims := map[int][]string{}
		for _, c := range t.Candidates {
			if m := models[c.LogicModel]; m != nil && m.Kind == KindEmbedding && m.EmbeddingDimension > 0 {
				dims[m.EmbeddingDimension] = append(dims[m.EmbeddingDimension], fmt.Sprintf("%s (%d)", m.Code, m.EmbeddingDimension))
			}
		}
		if len(dims) > 1 {
			var all []string
			for _, v := range dims {
				all = append(all, v...)
			}
			slices.Sort(all)
			out = append(out, Finding{Object: tierRef(g, t), Message: fmt.Sprintf("embedding candidates of %s / %s have different dimensions: %s; a failover would return incompatible vectors", g.Name, t.Name, strings.Join(all, ", "))})
		}
	})
	return out
}

func checkUnknownReference(s *Snapshot, _ Env) []Finding {
	models := s.modelIndex()
	groups := map[string]*RouteGroup{}
	for i := range s.RouteGroups {
		groups[s.RouteGroups[i].Name] = &s.RouteGroups[i]
	}
	tenants := map[string]bool{}
	for _, t := range s.Tenants {
		tenants[t.Name] = true
	}
	var out []Finding
	eachTier(s, func(g *RouteGroup, t *Tier) {
		for _, c := range t.Candidates {
			if models[c.LogicModel] == nil {
				out = append(out, Finding{Object: tierRef(g, t), Message: fmt.Sprintf("a candidate of %s / %s names logic model %q, which does not exist", g.Name, t.Name, c.LogicModel)})
			}
		}
	})
	for i := range s.RouteGroups {
		g := &s.RouteGroups[i]
		ref := ObjectRef{Kind: "route_group", ID: g.ID, Name: g.Name, Field: "tenant"}
		if g.Tenant != "" && !tenants[g.Tenant] {
			out = append(out, Finding{Object: ref, Message: fmt.Sprintf("route group %s is dedicated to tenant %q, which does not exist", g.Name, g.Tenant)})
		}
		ref.Field = "fallback"
		if g.Fallback != "" && g.Fallback != FallbackNone {
			fb := groups[g.Fallback]
			switch {
			case fb == nil:
				out = append(out, Finding{Object: ref, Message: fmt.Sprintf("route group %s falls back to group %q, which does not exist", g.Name, g.Fallback)})
			case fb.Tenant != "":
				out = append(out, Finding{Object: ref, Message: fmt.Sprintf("route group %s falls back to group %s, which is dedicated to tenant %s; a fallback must be a shared group", g.Name, fb.Name, fb.Tenant)})
			}
		}
	}
	for i := range s.Callers {
		c := &s.Callers[i]
		ref := ObjectRef{Kind: "caller", ID: c.ID, Name: c.Name, Field: "route_group"}
		g := groups[c.RouteGroup]
		switch {
		case g == nil:
			out = append(out, Finding{Object: ref, Message: fmt.Sprintf("caller %s is bound to route group %q, which does not exist", c.Name, c.RouteGroup)})
		case g.Tenant != "" && g.Tenant != c.Tenant:
			out = append(out, Finding{Object: ref, Message: fmt.Sprintf("caller %s is bound to route group %s, which is dedicated to tenant %s; the caller belongs to %s", c.Name, g.Name, g.Tenant, orNone(c.Tenant))})
		}
		if c.Tenant != "" && !tenants[c.Tenant] {
			ref.Field = "tenant"
			out = append(out, Finding{Object: ref, Message: fmt.Sprintf("caller %s belongs to tenant %q, which does not exist", c.Name, c.Tenant)})
		}
	}
	return out
}

func orNone(s string) string {
	if s == "" {
		return "no tenant"
	}
	return "tenant " + s
}

func checkSameModelAllTiers(s *Snapshot, _ Env) []Finding {
	var out []Finding
	for i := range s.RouteGroups {
		g := &s.RouteGroups[i]
		var first []string
		same := len(g.Tiers) == len(TierNames)
		for j, t := range g.Tiers {
			var codes []string
			for _, c := range t.Candidates {
				codes = append(codes, c.LogicModel)
			}
			if j == 0 {
				first = codes
			} else if !slices.Equal(first, codes) {
				same = false
			}
		}
		if same && len(first) > 0 {
			out = append(out, Finding{Object: ObjectRef{Kind: "route_group", ID: g.ID, Name: g.Name}, Message: fmt.Sprintf("all three tiers of route group %s use the same candidates (%s); fast, standard and deep serve identically", g.Name, strings.Join(first, ", "))})
		}
	}
	return out
}

func checkUnusedLogicModel(s *Snapshot, _ Env) []Finding {
	used := map[string]bool{}
	eachTier(s, func(_ *RouteGroup, t *Tier) {
		for _, c := range t.Candidates {
			used[c.LogicModel] = true
		}
	})
	var out []Finding
	for i := range s.LogicModels {
		m := &s.LogicModels[i]
		if !used[m.Code] {
			out = append(out, Finding{Object: modelRef(m), Message: fmt.Sprintf("logic model %s is not a candidate in any tier, so no caller can reach it (explicit requests are limited to the models of the caller's route group)", m.Code)})
		}
	}
	return out
}

// CheckTierUnservable is the id of the check that every tier of a route
// group with enabled callers can serve: at least one candidate (of the
// group, or of its fallback group) is unparked and has a usable
// deployment. A tier that cannot answers every request with 503
// no_available_model; publishing it needs the operator's acknowledgement.
const CheckTierUnservable = "tier_unservable"

// Causes of an unservable tier (Params["cause"]).
const (
	CauseAllParked    = "all_parked"     // every candidate is parked
	CauseOutOfService = "out_of_service" // every candidate is parked or its deployments are all disabled or parked
	CauseNoDeployment = "no_deployment"  // some unparked candidate has no usable deployment for another reason
)

// tierServable reports whether a tier has a candidate that can take
// traffic and, when not, the cause and why each candidate cannot, in words.
func tierServable(t *Tier, models map[string]*LogicModel, providers map[string]*Provider) (bool, string, []string) {
	if t == nil || len(t.Candidates) == 0 {
		return false, "", nil
	}
	var why []string
	parked, out := 0, 0
	for _, c := range t.Candidates {
		m := models[c.LogicModel]
		switch {
		case c.Parked:
			parked++
			why = append(why, "candidate "+c.LogicModel+" is parked")
			continue
		case m == nil:
			why = append(why, c.LogicModel+" does not exist")
			continue
		case TakenOutOfService(m):
			out++
			why = append(why, "every deployment of "+c.LogicModel+" is disabled or parked")
			continue
		}
		for i := range m.Deployments {
			if Unusable(&m.Deployments[i], providers) == "" {
				return true, "", nil
			}
		}
		why = append(why, c.LogicModel+" has no usable deployment")
	}
	switch {
	case parked == len(t.Candidates):
		return false, CauseAllParked, why
	case parked+out == len(t.Candidates):
		return false, CauseOutOfService, why
	}
	return false, CauseNoDeployment, why
}

func checkTierUnservable(s *Snapshot, _ Env) []Finding {
	providers, models := s.providerIndex(), s.modelIndex()
	groups := map[string]*RouteGroup{}
	for i := range s.RouteGroups {
		groups[s.RouteGroups[i].Name] = &s.RouteGroups[i]
	}
	callersOf := map[string][]string{}
	for _, c := range s.Callers {
		if c.Enabled {
			callersOf[c.RouteGroup] = append(callersOf[c.RouteGroup], c.Name)
		}
	}
	var out []Finding
	eachTier(s, func(g *RouteGroup, t *Tier) {
		callers := callersOf[g.Name]
		if len(callers) == 0 || len(t.Candidates) == 0 {
			return // no one to serve, or tier_empty says it
		}
		ok, cause, why := tierServable(t, models, providers)
		if ok {
			return
		}
		if g.Tenant != "" && g.Fallback != "" && g.Fallback != FallbackNone {
			if fb := groups[g.Fallback]; fb != nil {
				if fok, _, _ := tierServable(fb.Tier(t.Name), models, providers); fok {
					return // the fallback group serves it
				}
			}
		}
		out = append(out, Finding{
			Object:  tierRef(g, t),
			Ack:     &Ack{RouteGroup: g.Name, Tier: t.Name},
			Callers: callers,
			Params:  map[string]string{"route_group": g.Name, "tier": string(t.Name), "cause": cause},
			Message: fmt.Sprintf("%s / %s would have nothing to serve with (%s): publishing this answers every %s request of callers %s with 503 no_available_model until a candidate is back in service",
				g.Name, t.Name, strings.Join(why, "; "), t.Name, strings.Join(callers, ", ")),
		})
	})
	return out
}

func checkMixedKinds(s *Snapshot, _ Env) []Finding {
	models := s.modelIndex()
	var out []Finding
	eachTier(s, func(g *RouteGroup, t *Tier) {
		kinds := map[Kind]bool{}
		for _, c := range t.Candidates {
			if m := models[c.LogicModel]; m != nil {
				kinds[m.Kind] = true
			}
		}
		if len(kinds) > 1 {
			out = append(out, Finding{Object: tierRef(g, t), Message: fmt.Sprintf("%s / %s mixes chat and embedding logic models; each request uses only the candidates of its kind", g.Name, t.Name)})
		}
	})
	return out
}

// CheckBudgetCurrencyMismatch is the id of the check that a caller with a
// monthly budget reaches only deployments priced in the budget's currency: a
// call priced in another currency could not be charged to the budget.
const CheckBudgetCurrencyMismatch = "budget_currency_mismatch"

// DefaultCurrency is the currency of a price or budget that names none (the
// store's default).
const DefaultCurrency = "USD"

func currencyOrDefault(c string) string {
	if c == "" {
		return DefaultCurrency
	}
	return c
}

// checkBudgetCurrencyMismatch reports, once per caller and deployment, each
// deployment a budgeted caller can be served by (its group's tiers and the
// group's fallback) whose prices are in another currency. Parked and
// disabled deployments are included: enabling one needs no publish of the
// caller, so the mismatch would otherwise surface only at run time.
func checkBudgetCurrencyMismatch(s *Snapshot, _ Env) []Finding {
	models := s.modelIndex()
	groups := map[string]*RouteGroup{}
	for i := range s.RouteGroups {
		groups[s.RouteGroups[i].Name] = &s.RouteGroups[i]
	}
	var out []Finding
	for i := range s.Callers {
		c := &s.Callers[i]
		if c.MonthlyBudgetMicros <= 0 {
			continue
		}
		budgetCur := currencyOrDefault(c.BudgetCurrency)
		reach := []*RouteGroup{groups[c.RouteGroup]}
		if g := reach[0]; g != nil && g.Fallback != "" && g.Fallback != FallbackNone {
			reach = append(reach, groups[g.Fallback])
		}
		seen := map[string]bool{}
		for _, g := range reach {
			if g == nil {
				continue // unknown_reference reports it
			}
			for _, t := range g.Tiers {
				for _, cand := range t.Candidates {
					m := models[cand.LogicModel]
					if m == nil {
						continue
					}
					for j := range m.Deployments {
						d := &m.Deployments[j]
						priceCur := currencyOrDefault(d.Prices.Currency)
						key := m.Code + "\x00" + d.Provider + "\x00" + d.UpstreamModel + fmt.Sprint(d.ID)
						if priceCur == budgetCur || seen[key] {
							continue
						}
						seen[key] = true
						out = append(out, Finding{
							Object: ObjectRef{Kind: "caller", ID: c.ID, Name: c.Name, Field: "budget_currency"},
							Message: fmt.Sprintf("caller %s has a monthly budget in %s but can be served by %s, priced in %s; its calls could not be charged to the budget",
								c.Name, budgetCur, deploymentRef(m, d).Name, priceCur),
							Params: map[string]string{
								"caller": c.Name, "budget_currency": budgetCur, "route_group": g.Name, "tier": string(t.Name),
								"logic_model": m.Code, "provider": d.Provider, "upstream_model": d.UpstreamModel, "price_currency": priceCur,
							},
						})
					}
				}
			}
		}
	}
	return out
}
