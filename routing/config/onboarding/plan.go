package onboarding

import (
	"fmt"
	"slices"
	"strings"

	"switchyard/routing/config"
)

// DefaultGroup and DefaultCaller name what a first onboarding creates.
const (
	DefaultGroup  = "default"
	DefaultCaller = "first-app"
)

// Choices are what the operator chose in the wizard.
type Choices struct {
	Template     string
	ProviderName string
	BaseURL      string
	// APIVersion, Region, AuthURL and Project are the cloud settings of
	// the template's protocol (Template.Settings); the others are ignored.
	// Region is Bedrock's AWS region or Vertex AI's location.
	APIVersion, Region, AuthURL, Project string
	Keys                                 []string // plaintext, held in memory only
	Models                               []Choice // ticked catalogue models, in catalogue order
	Custom                               []string // other upstream model names
	Group                                string   // an existing route group to extend; "" creates NewGroup
	NewGroup                             string
	Caller                               string // "" creates no caller
}

// Choice is one ticked model.
type Choice struct {
	Upstream string
	Tier     config.TierName // "" keeps the template's suggestion
	// Separate keeps a new logic model even when the draft already has one
	// with the model's family code (the default is a backup deployment).
	Separate bool
}

// Plan is every object one onboarding creates or changes. Nothing exists
// until the store applies its Batch in one transaction.
type Plan struct {
	Template  *Template
	Provider  config.Provider
	Keys      []PlannedKey
	Models    []PlannedModel
	Reweights []Reweight
	Group     PlannedGroup
	Caller    *config.Caller
	Notes     []string
}

// PlannedKey is a key about to enter the new provider's pool.
type PlannedKey struct {
	Label       string
	Fingerprint string
	Default     bool // the template's default key of a key-less server
	secret      string
}

// PlannedModel is one chosen model: a new logic model with its first
// deployment, or a backup deployment of an existing logic model.
type PlannedModel struct {
	Upstream   string
	Code       string
	Kind       config.Kind
	Tier       config.TierName
	Backup     bool
	LogicModel config.LogicModel // the new logic model (no deployments) when !Backup
	Deployment config.Deployment
	Price      *Price
	Why        string // why a family code was not shared, when it was not
}

// Reweight is a deployment weight the plan changes so a logic model's
// weights still sum to 100 with the new deployment.
type Reweight struct {
	Model        string
	DeploymentID int64 // 0 for the new deployment
	Provider     string
	Upstream     string
	From, To     int
}

// PlannedGroup is the route group the models are put in.
type PlannedGroup struct {
	Name       string
	New        bool
	Candidates []PlannedCandidate
	// Aliases are a new group's model aliases (AgentAliases); an existing
	// group keeps its own.
	Aliases []config.ModelAlias
}

// AgentAliases are the model aliases a new route group gets, so coding
// agents that name vendor models (Claude Code, Codex) reach its tiers
// without reconfiguring them: Claude's opus, sonnet and haiku families to
// deep, standard and fast; OpenAI's codex models and o3 to deep, o4-mini to
// fast, the rest of gpt-5 to standard. Patterns are tried in this order,
// so gpt-*-codex comes before gpt-5*.
func AgentAliases() []config.ModelAlias {
	return []config.ModelAlias{
		{Pattern: "claude-opus-*", Tier: config.TierDeep},
		{Pattern: "claude-sonnet-*", Tier: config.TierStandard},
		{Pattern: "claude-haiku-*", Tier: config.TierFast},
		{Pattern: "gpt-*-codex", Tier: config.TierDeep},
		{Pattern: "gpt-5*", Tier: config.TierStandard},
		{Pattern: "o3*", Tier: config.TierDeep},
		{Pattern: "o4-mini*", Tier: config.TierFast},
	}
}

// PlannedCandidate is one candidate the plan adds to a tier.
type PlannedCandidate struct {
	Tier       config.TierName
	LogicModel string
	Kind       config.Kind
	Priority   int
	Weight     int
	// From is set when the tier had no suggested model and borrowed this
	// one from the nearest tier, so that no tier is empty.
	From config.TierName
}

// nearest lists, per tier, the tiers to borrow from when it has no model.
var nearest = map[config.TierName][]config.TierName{
	config.TierFast:     {config.TierStandard, config.TierDeep},
	config.TierStandard: {config.TierFast, config.TierDeep},
	config.TierDeep:     {config.TierStandard, config.TierFast},
}

// Build plans an onboarding of ch against the current draft. Field errors
// use the wizard's field names.
func Build(cat *Catalog, ch Choices, draft config.Snapshot) (*Plan, config.FieldErrors) {
	errs := config.FieldErrors{}
	t, ok := cat.Template(ch.Template)
	if !ok {
		errs.Add("template", "choose a provider template")
		return nil, errs
	}
	p := &Plan{Template: t}
	p.planProvider(ch, draft, errs)
	p.planKeys(ch, errs)
	chosen := chooseModels(t, ch, errs)
	models := map[string]*config.LogicModel{}
	for i := range draft.LogicModels {
		models[draft.LogicModels[i].Code] = &draft.LogicModels[i]
	}
	for _, c := range chosen {
		p.planModel(c, models, errs)
	}
	p.rebalance(models)
	existing := p.planGroup(ch, draft, errs)
	p.planCandidates(existing)
	p.planCaller(ch, draft, errs)
	p.notes()
	if len(errs) > 0 {
		return p, errs
	}
	return p, nil
}

// planProvider plans the new provider.
func (p *Plan) planProvider(ch Choices, draft config.Snapshot, errs config.FieldErrors) {
	t := p.Template
	p.Provider = config.Provider{Name: strings.TrimSpace(ch.ProviderName), Protocol: t.Protocol, BaseURL: strings.TrimSpace(ch.BaseURL), Enabled: true, TimeoutMS: 60000, Notes: providerNotes(t),
		Quirks: t.ProviderQuirks(), Sandbox: t.Sandbox}
	if t.HasSetting("api_version") {
		p.Provider.APIVersion, p.Provider.AuthURL = strings.TrimSpace(ch.APIVersion), strings.TrimSpace(ch.AuthURL)
	}
	if t.HasSetting("region") {
		p.Provider.Region = strings.TrimSpace(ch.Region)
	}
	if t.HasSetting("project") {
		p.Provider.Project = strings.TrimSpace(ch.Project)
	}
	if field, msg := cloudSettingMissing(p.Provider); msg != "" {
		errs.Add(field, msg)
	}
	for field, msg := range config.ValidateProvider(p.Provider) {
		switch field {
		case "name":
			errs.Add("provider_name", "Provider name "+msg)
		case "base_url":
			errs.Add("base_url", "Base URL "+msg)
		default:
			errs.Add(field, msg)
		}
	}
	if slices.ContainsFunc(draft.Providers, func(x config.Provider) bool { return x.Name == p.Provider.Name }) {
		errs.Add("provider_name", fmt.Sprintf("Provider %q already exists; pick another name", p.Provider.Name))
	}
}

// planKeys plans the provider's keys: the pasted ones, once each, or the
// template's default when it needs none.
func (p *Plan) planKeys(ch Choices, errs config.FieldErrors) {
	seen := map[string]bool{}
	for _, k := range ch.Keys {
		k = strings.TrimSpace(k)
		if k == "" || seen[k] {
			continue
		}
		seen[k] = true
		if fe := config.ValidateProviderKey("", k, true); len(fe) > 0 {
			errs.Add("keys", "Key "+config.KeyFingerprint(k)+" "+fe["secret"])
			continue
		}
		p.Keys = append(p.Keys, PlannedKey{Label: fmt.Sprintf("onboarding key %d", len(p.Keys)+1), Fingerprint: config.KeyFingerprint(k), secret: k})
	}
	if len(p.Keys) == 0 && errs["keys"] == "" {
		if p.Template.KeyOptional {
			p.Keys = append(p.Keys, PlannedKey{Label: "no key needed", Fingerprint: config.KeyFingerprint(p.Template.DefaultKey), Default: true, secret: p.Template.DefaultKey})
		} else {
			errs.Add("keys", "Paste at least one API key")
		}
	}
}

// chosenModel is a model the operator ticked or named, with its tier.
type chosenModel struct {
	Model
	tier     config.TierName
	separate bool
}

// chooseModels gathers the ticked models and those named by hand (a name
// of the template's is its model, any other a chat model in the standard
// tier).
func chooseModels(t *Template, ch Choices, errs config.FieldErrors) []chosenModel {
	var chosen []chosenModel
	for _, c := range ch.Models {
		m, ok := t.Model(c.Upstream)
		if !ok {
			errs.Add("models", fmt.Sprintf("Model %q is not part of template %s", c.Upstream, t.Name))
			continue
		}
		tier := m.Tier
		if c.Tier != "" {
			if !config.ValidTier(string(c.Tier)) {
				errs.Add("models", fmt.Sprintf("Tier %q of %s is not fast, standard or deep", c.Tier, c.Upstream))
			}
			tier = c.Tier
		}
		chosen = append(chosen, chosenModel{Model: *m, tier: tier, separate: c.Separate})
	}
	for _, name := range ch.Custom {
		name = strings.TrimSpace(name)
		if name == "" || slices.ContainsFunc(chosen, func(m chosenModel) bool { return m.Upstream == name }) {
			continue
		}
		if m, ok := t.Model(name); ok {
			chosen = append(chosen, chosenModel{Model: *m, tier: m.Tier})
			continue
		}
		m := Model{Upstream: name, Kind: config.KindChat, Capabilities: &Capabilities{}, Tier: config.TierStandard, Price: &Price{}, Note: "named by the operator"}
		chosen = append(chosen, chosenModel{Model: m, tier: m.Tier})
	}
	if len(chosen) == 0 && errs["models"] == "" {
		errs.Add("models", "Tick at least one model")
	}
	return chosen
}

// planModel plans one chosen model: a backup deployment of the draft's
// logic model of the same code when it fits, else a logic model of its own.
func (p *Plan) planModel(c chosenModel, models map[string]*config.LogicModel, errs config.FieldErrors) {
	m := c.Model
	pm := PlannedModel{Upstream: m.Upstream, Code: m.Code(), Kind: m.Kind, Tier: c.tier, Price: m.Price}
	if err := config.ValidateDeployment(config.Deployment{Provider: "x", UpstreamModel: m.Upstream, Weight: 1}).Err(); err != nil {
		errs.Add("custom_models", fmt.Sprintf("%q is not a usable model name (no spaces)", m.Upstream))
		return
	}
	if slices.ContainsFunc(p.Models, func(x PlannedModel) bool { return x.Code == pm.Code && models[pm.Code] == nil }) {
		errs.Add("models", fmt.Sprintf("%s and another chosen model share logic model code %q; untick one", m.Upstream, pm.Code))
		return
	}
	if ex := models[pm.Code]; ex != nil {
		pm.Why = p.whyNotBackup(c, ex)
		pm.Backup = pm.Why == ""
		if !pm.Backup {
			taken := func(code string) bool {
				return models[code] != nil || slices.ContainsFunc(p.Models, func(pm PlannedModel) bool { return pm.Code == code })
			}
			base := CodeFor(pm.Code + "-" + p.Provider.Name)
			pm.Code = base
			for n := 2; taken(pm.Code); n++ {
				pm.Code = fmt.Sprintf("%s-%d", base, n)
			}
		}
	}
	pm.Deployment = config.Deployment{Provider: p.Provider.Name, UpstreamModel: m.Upstream, Weight: 100, Enabled: true,
		Prices: m.Price.Prices(), Capabilities: m.Caps(), EmbeddingBatchLimit: m.BatchLimit}
	if !pm.Backup {
		pm.LogicModel = config.LogicModel{Code: pm.Code, Kind: m.Kind, EmbeddingDimension: m.Dimension, Description: modelDescription(p.Template, m)}
		for field, msg := range config.ValidateLogicModel(pm.LogicModel) {
			errs.Add("models", fmt.Sprintf("%s: logic model %s %s", m.Upstream, field, msg))
		}
	}
	p.Models = append(p.Models, pm)
}

// whyNotBackup says why chosen model c does not back up the existing logic
// model ex of its code; "" is that it does.
func (p *Plan) whyNotBackup(c chosenModel, ex *config.LogicModel) string {
	switch {
	case c.separate:
		return "kept separate as you asked"
	case ex.Kind != c.Kind:
		return fmt.Sprintf("logic model %s exists but is a %s model", ex.Code, ex.Kind)
	case c.Kind == config.KindEmbedding && ex.EmbeddingDimension != c.Dimension:
		return fmt.Sprintf("logic model %s exists with dimension %d, this model has %d", ex.Code, ex.EmbeddingDimension, c.Dimension)
	case slices.ContainsFunc(p.Models, func(x PlannedModel) bool { return x.Backup && x.Code == ex.Code }):
		return fmt.Sprintf("another chosen model already backs up %s", ex.Code)
	}
	return ""
}

// planGroup plans the route group the models join, an existing one
// (returned) or a new one.
func (p *Plan) planGroup(ch Choices, draft config.Snapshot, errs config.FieldErrors) *config.RouteGroup {
	groupName := strings.TrimSpace(ch.Group)
	var existing *config.RouteGroup
	if groupName != "" {
		for i := range draft.RouteGroups {
			if draft.RouteGroups[i].Name == groupName {
				existing = &draft.RouteGroups[i]
			}
		}
		if existing == nil {
			errs.Add("group", fmt.Sprintf("Route group %q does not exist", groupName))
		}
	} else {
		groupName = strings.TrimSpace(ch.NewGroup)
		if fe := config.ValidateRouteGroup(config.RouteGroup{Name: groupName}); fe["name"] != "" {
			errs.Add("new_group", "Route group name "+fe["name"])
		}
		if slices.ContainsFunc(draft.RouteGroups, func(g config.RouteGroup) bool { return g.Name == groupName }) {
			errs.Add("new_group", fmt.Sprintf("Route group %q already exists; choose it above to add to it, or pick another name", groupName))
		}
		if !slices.ContainsFunc(p.Models, func(m PlannedModel) bool { return m.Kind == config.KindChat }) && errs["models"] == "" {
			errs.Add("models", "A new route group needs at least one chat model")
		}
	}
	p.Group = PlannedGroup{Name: groupName, New: existing == nil}
	if p.Group.New {
		p.Group.Aliases = AgentAliases()
	}
	return existing
}

// planCaller plans the caller, when the operator named one.
func (p *Plan) planCaller(ch Choices, draft config.Snapshot, errs config.FieldErrors) {
	name := strings.TrimSpace(ch.Caller)
	if name == "" {
		return
	}
	c := config.Caller{Name: name, RouteGroup: p.Group.Name, PriorityClass: config.DefaultClass, Enabled: true}
	if fe := config.ValidateCaller(c); fe["name"] != "" {
		errs.Add("caller", "Caller name "+fe["name"])
	}
	if slices.ContainsFunc(draft.Callers, func(x config.Caller) bool { return x.Name == name }) {
		errs.Add("caller", fmt.Sprintf("Caller %q already exists; pick another name or leave it empty", name))
	}
	p.Caller = &c
}

// rebalance splits each backed-up logic model's traffic evenly among its
// active (non-parked) deployments and the new one, so weights sum to 100.
func (p *Plan) rebalance(models map[string]*config.LogicModel) {
	for i := range p.Models {
		pm := &p.Models[i]
		if !pm.Backup {
			continue
		}
		ex := models[pm.Code]
		var active []config.Deployment
		for _, d := range ex.Deployments {
			if !d.Parked {
				active = append(active, d)
			}
		}
		shares := split(100, len(active)+1)
		for j, d := range active {
			p.Reweights = append(p.Reweights, Reweight{Model: pm.Code, DeploymentID: d.ID, Provider: d.Provider, Upstream: d.UpstreamModel, From: d.Weight, To: shares[j]})
		}
		pm.Deployment.Weight = shares[len(active)]
		p.Reweights = append(p.Reweights, Reweight{Model: pm.Code, Provider: pm.Deployment.Provider, Upstream: pm.Upstream, To: pm.Deployment.Weight})
	}
}

// split divides total into n near-equal parts, the larger ones first.
func split(total, n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = total / n
		if i < total%n {
			out[i]++
		}
	}
	return out
}

// planCandidates puts each model into its tier: in a new group in the
// chosen order; in an existing group after its current candidates (lower
// priority: they back up what is there). A tier left without a chat model
// borrows the nearest tier's.
func (p *Plan) planCandidates(existing *config.RouteGroup) {
	have := func(t config.TierName, code string) bool {
		if existing != nil {
			if et := existing.Tier(t); et != nil && slices.ContainsFunc(et.Candidates, func(c config.Candidate) bool { return c.LogicModel == code }) {
				return true
			}
		}
		return slices.ContainsFunc(p.Group.Candidates, func(c PlannedCandidate) bool { return c.Tier == t && c.LogicModel == code })
	}
	next := func(t config.TierName, kind config.Kind) int {
		prio := 0
		if existing != nil {
			if et := existing.Tier(t); et != nil {
				for _, c := range et.Candidates {
					prio = max(prio, c.Priority)
				}
			}
		}
		for _, c := range p.Group.Candidates {
			if c.Tier == t && (existing != nil || c.Kind == kind) {
				prio = max(prio, c.Priority)
			}
		}
		return prio + 1
	}
	for _, m := range p.Models {
		if !have(m.Tier, m.Code) {
			p.Group.Candidates = append(p.Group.Candidates, PlannedCandidate{Tier: m.Tier, LogicModel: m.Code, Kind: m.Kind, Priority: next(m.Tier, m.Kind), Weight: 100})
		}
	}
	hasChat := func(t config.TierName) bool {
		if existing != nil {
			if et := existing.Tier(t); et != nil && len(et.Candidates) > 0 {
				return true // an existing chain is the operator's; leave it
			}
		}
		return slices.ContainsFunc(p.Group.Candidates, func(c PlannedCandidate) bool { return c.Tier == t && c.Kind == config.KindChat })
	}
	var fills []PlannedCandidate
	for _, t := range config.TierNames {
		if hasChat(t) {
			continue
		}
		for _, src := range nearest[t] {
			var borrowed []PlannedCandidate
			for _, m := range p.Models {
				if m.Kind == config.KindChat && m.Tier == src {
					borrowed = append(borrowed, PlannedCandidate{Tier: t, LogicModel: m.Code, Kind: m.Kind, Priority: len(borrowed) + 1, Weight: 100, From: src})
				}
			}
			if len(borrowed) > 0 {
				fills = append(fills, borrowed...)
				break
			}
		}
	}
	p.Group.Candidates = append(p.Group.Candidates, fills...)
	slices.SortStableFunc(p.Group.Candidates, func(a, b PlannedCandidate) int {
		return slices.Index(config.TierNames, a.Tier) - slices.Index(config.TierNames, b.Tier)
	})
}

func (p *Plan) notes() {
	t := p.Template
	if t.Sandbox {
		p.Notes = append(p.Notes, "This is a local sandbox: the fake vendor answers with canned replies and costs nothing. Add a real provider when you are ready.")
	}
	for _, k := range p.Keys {
		if k.Default {
			p.Notes = append(p.Notes, "No key given: the pool gets the placeholder key "+k.Fingerprint+", which "+t.Name+" does not check.")
		}
	}
	var unknown, custom []string
	for _, m := range p.Models {
		if m.Price == nil || !m.Price.Known {
			unknown = append(unknown, m.Upstream)
		}
		if tm, ok := t.Model(m.Upstream); !ok || tm.Note == "named by the operator" {
			custom = append(custom, m.Upstream)
		}
	}
	if len(unknown) > 0 {
		p.Notes = append(p.Notes, "Prices unknown for "+strings.Join(unknown, ", ")+": their deployments are priced 0 until you enter the vendor's prices, so cost reports and budgets ignore them.")
	}
	if len(custom) > 0 {
		p.Notes = append(p.Notes, "Capabilities of "+strings.Join(custom, ", ")+" are unknown and set to none (requests needing tools, vision or thinking skip them); edit the deployments if the models have them.")
	}
	for _, r := range p.Reweights {
		if r.DeploymentID == 0 {
			p.Notes = append(p.Notes, fmt.Sprintf("%s gets a backup deployment on %s; its traffic is split %s so the weights still sum to 100.", r.Model, r.Provider, p.SplitText(r.Model)))
		}
	}
	for _, c := range p.Group.Candidates {
		if c.From != "" {
			p.Notes = append(p.Notes, fmt.Sprintf("No model is suggested for the %s tier: it uses %s from the %s tier so it is not empty.", c.Tier, c.LogicModel, c.From))
		}
	}
}

// SplitText describes a backed-up model's new weights, e.g. "50/50".
func (p *Plan) SplitText(code string) string {
	var parts []string
	for _, r := range p.Reweights {
		if r.Model == code {
			parts = append(parts, fmt.Sprint(r.To))
		}
	}
	return strings.Join(parts, "/")
}

func providerNotes(t *Template) string {
	if t.Sandbox {
		return "LOCAL SANDBOX: fake vendor (cmd/fakeupstream) with canned replies, not a real model. Onboarded from template " + t.Name + "."
	}
	return "Onboarded from template " + t.Name + "."
}

func modelDescription(t *Template, m Model) string {
	s := "Onboarded from " + t.Name + " (" + m.Upstream + ")."
	if m.Note != "" {
		s += " " + m.Note + "."
	}
	if t.Sandbox {
		s = "LOCAL SANDBOX model: canned replies. " + s
	}
	return s
}

// Apply returns draft as it will be once the plan is created, for the
// review step's dry-run. Keys and new objects have no ids yet.
func (p *Plan) Apply(draft config.Snapshot) config.Snapshot {
	s := config.Clone(draft)
	s.LogicModels = slices.Clone(s.LogicModels)
	for i := range s.LogicModels {
		s.LogicModels[i].Deployments = slices.Clone(s.LogicModels[i].Deployments)
	}
	prov := p.Provider
	for _, k := range p.Keys {
		prov.Keys = append(prov.Keys, config.ProviderKey{Label: k.Label, Fingerprint: k.Fingerprint, Status: config.KeyActive})
	}
	s.Providers = append(s.Providers, prov)
	weights := map[int64]int{}
	for _, r := range p.Reweights {
		if r.DeploymentID != 0 {
			weights[r.DeploymentID] = r.To
		}
	}
	for i := range s.LogicModels {
		for j := range s.LogicModels[i].Deployments {
			if w, ok := weights[s.LogicModels[i].Deployments[j].ID]; ok {
				s.LogicModels[i].Deployments[j].Weight = w
			}
		}
	}
	for _, m := range p.Models {
		if m.Backup {
			for i := range s.LogicModels {
				if s.LogicModels[i].Code == m.Code {
					s.LogicModels[i].Deployments = append(s.LogicModels[i].Deployments, m.Deployment)
				}
			}
			continue
		}
		lm := m.LogicModel
		lm.Deployments = []config.Deployment{m.Deployment}
		s.LogicModels = append(s.LogicModels, lm)
	}
	s.RouteGroups = slices.Clone(s.RouteGroups)
	gi := slices.IndexFunc(s.RouteGroups, func(g config.RouteGroup) bool { return g.Name == p.Group.Name })
	if p.Group.New || gi < 0 {
		g := config.RouteGroup{Name: p.Group.Name}
		for _, t := range config.TierNames {
			g.Tiers = append(g.Tiers, config.Tier{Name: t, TimeoutMS: config.DefaultTierTimeoutMS[t], FirstChunkTimeoutMS: config.DefaultFirstChunkTimeoutMS[t]})
		}
		g.Aliases = slices.Clone(p.Group.Aliases)
		s.RouteGroups = append(s.RouteGroups, g)
		gi = len(s.RouteGroups) - 1
	}
	g := &s.RouteGroups[gi]
	g.Tiers = slices.Clone(g.Tiers)
	for _, c := range p.Group.Candidates {
		t := g.Tier(c.Tier)
		if t == nil {
			g.Tiers = append(g.Tiers, config.Tier{Name: c.Tier, TimeoutMS: config.DefaultTierTimeoutMS[c.Tier], FirstChunkTimeoutMS: config.DefaultFirstChunkTimeoutMS[c.Tier]})
			t = &g.Tiers[len(g.Tiers)-1]
		}
		t.Candidates = append(slices.Clone(t.Candidates), config.Candidate{LogicModel: c.LogicModel, Priority: c.Priority, Weight: c.Weight})
	}
	if p.Caller != nil {
		s.Callers = append(slices.Clone(s.Callers), *p.Caller)
	}
	config.Canonicalize(&s)
	return s
}

// Secret is the key as pasted; only the store sees it, to seal it.
func (k PlannedKey) Secret() string { return k.secret }

// cloudSettingMissing names the first setting a cloud provider cannot do
// without, as the wizard's field, and says why; "" when none is missing.
func cloudSettingMissing(p config.Provider) (field, msg string) {
	blank := func(s string) bool { return strings.TrimSpace(s) == "" }
	switch {
	case p.Protocol == config.ProtocolAzure && blank(p.APIVersion):
		return "api_version", "Azure OpenAI needs an api-version (for example 2024-10-21)"
	case p.Protocol == config.ProtocolBedrock && blank(p.Region):
		return "region", "AWS Bedrock needs the region its requests are signed for (for example us-east-1)"
	case p.Protocol == config.ProtocolVertex && blank(p.Project):
		return "project", "Vertex AI needs the Google Cloud project its models are called under (for example acme-prod)"
	case p.Protocol == config.ProtocolVertex && blank(p.Region):
		return "region", "Vertex AI needs a location (for example us-central1, europe-west4 or global)"
	}
	return "", ""
}
