package config

import (
	"crypto/sha256"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"switchyard/routing/reason"
)

// Runtime is one published version compiled for the data plane. It is
// immutable once built: the router reads it without locks, and a new version
// replaces it with an atomic pointer swap.
type Runtime struct {
	Version     int64
	Snapshot    *Snapshot
	Callers     map[int64]*RCaller
	Groups      map[string]*RGroup
	Models      map[string]*RModel
	Deployments map[int64]*RDeployment
	Providers   map[string]*RProvider

	callerKeys    LiveKeys
	callersByName map[string]*RCaller
}

// RProvider is a provider with its decrypted key pool.
type RProvider struct {
	ID       int64
	Name     string
	Protocol Protocol
	BaseURL  string
	Enabled  bool
	Timeout  time.Duration
	// APIVersion, Region, Project and AuthURL are the cloud vendors'
	// settings (Azure's api-version and Entra token endpoint, Bedrock's
	// region, Vertex AI's project, location and token endpoint).
	APIVersion, Region, Project, AuthURL string
	Keys                                 []RKey // configured keys, active and disabled
	ActiveKey                            []int64
	// Headers are the static extra headers, secret values opened; Pass the
	// caller headers let through (canonical names). See Outgoing.
	Headers http.Header
	Pass    []string
	// Quirks are the vendor's wire quirks the OpenAI adapter works around.
	Quirks Quirks
}

// RKey is a provider key with its secret. The secret lives only in memory.
type RKey struct {
	ID          int64
	Label       string
	Fingerprint string
	Status      string
	Secret      string
	// Bearer is the Authorization header value "Bearer <Secret>", built
	// once for the OpenAI protocol's every request.
	Bearer []string
}

// Key returns the key with that id.
func (p *RProvider) Key(id int64) *RKey {
	for i := range p.Keys {
		if p.Keys[i].ID == id {
			return &p.Keys[i]
		}
	}
	return nil
}

// RModel is a logic model with its deployments.
type RModel struct {
	ID                 int64
	Code               string
	Kind               Kind
	EmbeddingDimension int
	QueryPrefix        string
	DocumentPrefix     string
	Deployments        []*RDeployment // in canonical order
}

// RDeployment is one deployment ready to serve.
type RDeployment struct {
	ID                int64
	Model             *RModel
	Provider          *RProvider
	UpstreamModel     string
	Weight            int
	Enabled           bool
	Parked            bool // kept in the configuration but never chosen (reason parked)
	MaxConcurrency    int
	MaxInflightTokens int64 // 0: unlimited
	Prices            Prices
	Capabilities      Capabilities
	// StrictFields: a field the translation for this deployment would
	// drop is refused instead (Deployment.StrictFields).
	StrictFields        bool
	EmbeddingBatchLimit int
	Timeout             time.Duration // 0: the tier decides
	Breaker             BreakerSettings
	// StaticSkip is the configuration reason this deployment never serves
	// ("parked", "disabled", ...), or "".
	StaticSkip reason.Reason

	label string // Label, built once by Compile
}

// Label names the deployment for people: "qwen3-max on dashscope (qwen-max)".
func (d *RDeployment) Label() string {
	if d.label != "" {
		return d.label
	}
	return d.Model.Code + " on " + d.Provider.Name + " (" + d.UpstreamModel + ")"
}

// RGroup is a route group with its three tiers.
type RGroup struct {
	ID       int64
	Name     string
	Tenant   string
	Fallback *RGroup // a shared group, or nil for policy none
	Tiers    [3]*RTier
	// Budget is the retry budget of each tier; Ladder the degradation
	// ladder (nil: not opted in).
	Budget RBudget
	Ladder *RLadder
	// Aliases are the group's model aliases in their listed order (Alias
	// finds the one that applies to a name).
	Aliases []*RAlias
	aliases rAliases
	// TraceContent: the group's prompts and completions go on its spans.
	TraceContent bool
}

// Tier returns the group's tier by name.
func (g *RGroup) Tier(name TierName) *RTier {
	if i := tierIndex(name); i < len(g.Tiers) {
		return g.Tiers[i]
	}
	return nil
}

// RTier is a tier's compiled candidate chain.
type RTier struct {
	Name       TierName
	Timeout    time.Duration
	FirstChunk time.Duration
	// Levels group candidates by priority, lowest priority number first.
	Levels []Level
}

// Level is the candidates of one priority.
type Level struct {
	Priority   int
	Candidates []RCandidate
}

// RCandidate is one link of a chain.
type RCandidate struct {
	Model    *RModel
	Priority int
	Weight   int
	// Parked: kept in the chain but never chosen (reason candidate_parked).
	Parked bool
}

// RCaller is a caller ready for authentication and limits.
type RCaller struct {
	ID            int64
	Name          string
	BusinessLine  string
	Tenant        string
	Group         *RGroup
	PriorityClass PriorityClass
	Enabled       bool
	Limits        [3]TierLimit
	// BudgetMicros is the monthly budget in millionths of BudgetCurrency; 0 is unlimited.
	BudgetMicros   int64
	BudgetCurrency string
}

// Limit returns the caller's limits for a tier.
func (c *RCaller) Limit(t TierName) TierLimit {
	if i := tierIndex(t); i < len(c.Limits) {
		return c.Limits[i]
	}
	return TierLimit{Tier: t}
}

// Credentials are the secret parts of a configuration, loaded from their own
// tables and never part of snapshot text.
type Credentials struct {
	// ProviderKeySecrets maps provider key ids to decrypted secrets.
	ProviderKeySecrets map[int64]string
	// ProviderHeaderSecrets maps secret header ids to their opened values.
	ProviderHeaderSecrets map[int64]HeaderSecret
	// CallerKeys maps SHA-256 hashes of unrevoked caller API keys to the
	// keys: the names of the callers they belong to and their terms. A key
	// authenticates while the version has a caller of that name.
	CallerKeys LiveKeys
}

// HashCallerKey returns the hash under which a caller API key is stored.
func HashCallerKey(key string) [32]byte {
	var buf [96]byte // keys are ~45 bytes: hashed without a heap copy
	return sha256.Sum256(append(buf[:0], key...))
}

// Compile builds the runtime form of a published snapshot. It refuses a
// snapshot whose references do not resolve, so a broken version can never
// replace a working one.
func Compile(version int64, s Snapshot, creds Credentials) (*Runtime, error) {
	Canonicalize(&s)
	rt := &Runtime{
		Version:     version,
		Snapshot:    &s,
		Callers:     map[int64]*RCaller{},
		Groups:      map[string]*RGroup{},
		Models:      map[string]*RModel{},
		Deployments: map[int64]*RDeployment{},
		Providers:   map[string]*RProvider{},

		callersByName: map[string]*RCaller{},
	}
	for _, p := range s.Providers {
		rp, err := compileProvider(p, creds)
		if err != nil {
			return nil, err
		}
		rt.Providers[p.Name] = rp
	}
	for _, m := range s.LogicModels {
		if err := rt.compileModel(m); err != nil {
			return nil, err
		}
	}
	if err := rt.compileGroups(s.RouteGroups); err != nil {
		return nil, err
	}
	for _, c := range s.Callers {
		g := rt.Groups[c.RouteGroup]
		if g == nil {
			return nil, fmt.Errorf("config: caller %s: unknown route group %q", c.Name, c.RouteGroup)
		}
		rc := &RCaller{ID: c.ID, Name: c.Name, BusinessLine: c.BusinessLine, Tenant: c.Tenant, Group: g, PriorityClass: c.PriorityClass, Enabled: c.Enabled,
			BudgetMicros: int64(c.MonthlyBudgetMicros), BudgetCurrency: c.BudgetCurrency}
		for i, t := range TierNames {
			rc.Limits[i] = c.Limit(t)
		}
		rt.Callers[c.ID] = rc
		rt.callersByName[c.Name] = rc
	}
	rt.callerKeys = creds.CallerKeys
	return rt, nil
}

// compileProvider is p with its keys' and secret headers' values.
func compileProvider(p Provider, creds Credentials) (*RProvider, error) {
	rp := &RProvider{ID: p.ID, Name: p.Name, Protocol: p.Protocol, BaseURL: p.BaseURL, Enabled: p.Enabled, Timeout: ms(p.TimeoutMS),
		APIVersion: p.APIVersion, Region: p.Region, Project: p.Project, AuthURL: p.AuthURL, Quirks: slices.Clone(p.Quirks)}
	for _, k := range p.Keys {
		secret, ok := creds.ProviderKeySecrets[k.ID]
		if !ok {
			return nil, fmt.Errorf("config: provider %s: key %d (%s) has no stored secret", p.Name, k.ID, k.Fingerprint)
		}
		rp.Keys = append(rp.Keys, RKey{ID: k.ID, Label: k.Label, Fingerprint: k.Fingerprint, Status: k.Status, Secret: secret, Bearer: []string{"Bearer " + secret}})
		if k.Status == KeyActive {
			rp.ActiveKey = append(rp.ActiveKey, k.ID)
		}
	}
	for _, h := range p.Headers {
		if rp.Headers == nil {
			rp.Headers = http.Header{}
		}
		v := h.Value
		if h.Secret {
			hs, ok := creds.ProviderHeaderSecrets[h.SecretID]
			if !ok || hs.ProviderID != p.ID {
				return nil, fmt.Errorf("config: provider %s: secret header %s (%d) has no stored value for this provider", p.Name, h.Name, h.SecretID)
			}
			v = hs.Value
		}
		rp.Headers[http.CanonicalHeaderKey(h.Name)] = []string{v}
	}
	for _, n := range p.PassHeaders {
		rp.Pass = append(rp.Pass, http.CanonicalHeaderKey(n))
	}
	if len(rp.Pass) == 0 {
		rp.Pass = DefaultPassHeaders[p.Protocol]
	}
	return rp, nil
}

// compileModel adds the logic model m and its deployments.
func (rt *Runtime) compileModel(m LogicModel) error {
	rm := &RModel{ID: m.ID, Code: m.Code, Kind: m.Kind, EmbeddingDimension: m.EmbeddingDimension, QueryPrefix: m.QueryPrefix, DocumentPrefix: m.DocumentPrefix}
	for _, d := range m.Deployments {
		p := rt.Providers[d.Provider]
		if p == nil {
			return fmt.Errorf("config: deployment %d of %s: unknown provider %q", d.ID, m.Code, d.Provider)
		}
		if _, dup := rt.Deployments[d.ID]; dup {
			return fmt.Errorf("config: deployment id %d appears twice", d.ID)
		}
		rd := compileDeployment(rm, p, d)
		rm.Deployments = append(rm.Deployments, rd)
		rt.Deployments[d.ID] = rd
	}
	rt.Models[m.Code] = rm
	return nil
}

// compileDeployment is d of model rm on provider p, with the skip its
// settings alone decide.
func compileDeployment(rm *RModel, p *RProvider, d Deployment) *RDeployment {
	rd := &RDeployment{
		ID: d.ID, Model: rm, Provider: p, UpstreamModel: d.UpstreamModel, Weight: d.Weight, Enabled: d.Enabled, Parked: d.Parked,
		MaxConcurrency: d.MaxConcurrency, MaxInflightTokens: d.MaxInflightTokens, Prices: d.Prices, Capabilities: d.Capabilities,
		StrictFields: d.StrictFields, EmbeddingBatchLimit: d.EmbeddingBatchLimit, Timeout: ms(d.TimeoutMS),
	}
	rd.label = rd.Label() // every attempt of every request names it
	if d.Breaker != nil {
		rd.Breaker = *d.Breaker
	}
	switch {
	case !d.Enabled:
		rd.StaticSkip = reason.Of(reason.DisabledByOperator)
	case d.Parked:
		rd.StaticSkip = reason.Of(reason.Parked)
	case !p.Enabled:
		rd.StaticSkip = reason.Reason{Code: reason.ProviderDisabled, Provider: p.Name}
	case len(p.ActiveKey) == 0:
		rd.StaticSkip = reason.Reason{Code: reason.NoActiveKey, Provider: p.Name}
	}
	return rd
}

// compileGroups adds the route groups: every group first, so fallbacks
// resolve, then each one's fallback, aliases and tiers.
func (rt *Runtime) compileGroups(groups []RouteGroup) error {
	for _, g := range groups {
		rg := &RGroup{ID: g.ID, Name: g.Name, Tenant: g.Tenant, TraceContent: g.TraceContent}
		compileResilience(g, rg)
		rt.Groups[g.Name] = rg
	}
	for _, g := range groups {
		rg := rt.Groups[g.Name]
		if g.Fallback != "" && g.Fallback != FallbackNone {
			if rg.Fallback = rt.Groups[g.Fallback]; rg.Fallback == nil {
				return fmt.Errorf("config: route group %s: unknown fallback group %q", g.Name, g.Fallback)
			}
		}
		if err := compileAliases(g, rg, rt.Models); err != nil {
			return err
		}
		for i, name := range TierNames {
			rtier, err := rt.compileTier(g, name)
			if err != nil {
				return err
			}
			rg.Tiers[i] = rtier
		}
	}
	return nil
}

// compileTier is g's tier name, its candidates in levels of priority.
func (rt *Runtime) compileTier(g RouteGroup, name TierName) (*RTier, error) {
	rtier := &RTier{Name: name}
	t := g.Tier(name)
	if t == nil {
		return rtier, nil
	}
	rtier.Timeout, rtier.FirstChunk = ms(t.TimeoutMS), ms(t.FirstChunkTimeoutMS)
	for _, c := range t.Candidates {
		m := rt.Models[c.LogicModel]
		if m == nil {
			return nil, fmt.Errorf("config: route group %s tier %s: unknown logic model %q", g.Name, name, c.LogicModel)
		}
		rc := RCandidate{Model: m, Priority: c.Priority, Weight: c.Weight, Parked: c.Parked}
		if n := len(rtier.Levels); n > 0 && rtier.Levels[n-1].Priority == c.Priority {
			rtier.Levels[n-1].Candidates = append(rtier.Levels[n-1].Candidates, rc)
		} else {
			rtier.Levels = append(rtier.Levels, Level{Priority: c.Priority, Candidates: []RCandidate{rc}})
		}
	}
	return rtier, nil
}

// WithCallerKeys returns a copy of rt that authenticates with keys. Caller
// keys change without a publish (creating and revoking are immediate), so
// they are swapped independently of the compiled version.
func (rt *Runtime) WithCallerKeys(keys LiveKeys) *Runtime {
	c := *rt
	c.callerKeys = keys
	return &c
}

// Authenticate returns the caller owning an API key and the key. A key
// that is not known (never made, or revoked) returns nil and a zero key; a
// key whose caller this version does not contain (suspended until a
// version brings the caller back) returns nil and the key, whose Caller
// names the absent caller. The key's terms (expiry, rotation, scope) are
// the caller's to check.
func (rt *Runtime) Authenticate(key string) (*RCaller, LiveKey) {
	return rt.AuthenticateHashed(HashCallerKey(key))
}

// AuthenticateHashed is Authenticate given the key's HashCallerKey.
func (rt *Runtime) AuthenticateHashed(h [32]byte) (*RCaller, LiveKey) {
	k, ok := rt.callerKeys[h]
	if !ok {
		return nil, LiveKey{}
	}
	return rt.callersByName[k.Caller], k
}

// ModelCodes lists the logic model codes of a kind, sorted.
func (rt *Runtime) ModelCodes(kind Kind) []string {
	var out []string
	for code, m := range rt.Models {
		if m.Kind == kind {
			out = append(out, code)
		}
	}
	slices.Sort(out)
	return out
}

func ms(v int) time.Duration { return time.Duration(v) * time.Millisecond }

// Wire is the protocol whose request and answer shapes a deployment
// speaks, which decides the field policy and what passes natively: Azure
// OpenAI speaks OpenAI's; Bedrock speaks Converse, its own, for every
// model, and for a Claude model Anthropic's Messages too (WireBedrockAnthropic);
// Vertex AI speaks Anthropic's Messages for a Claude model and Gemini's
// for every other (VertexPublisher).
func (d *RDeployment) Wire() Protocol { return WireOf(d.Provider.Protocol, d.UpstreamModel) }

// WireOf is Wire for a provider protocol and an upstream model.
func WireOf(p Protocol, upstreamModel string) Protocol {
	switch {
	case p == ProtocolAzure:
		return ProtocolOpenAI
	case p == ProtocolBedrock && BedrockAnthropicModel(upstreamModel):
		return WireBedrockAnthropic
	case p == ProtocolVertex:
		if pub, _ := VertexPublisher(upstreamModel); pub == VertexAnthropic {
			return ProtocolAnthropic
		}
		return ProtocolGemini
	}
	return p
}

// Vertex AI publishers this build speaks to.
const (
	VertexGoogle    = "google"
	VertexAnthropic = "anthropic"
)

// VertexPublisher splits a Vertex AI upstream model into its publisher and
// the model's own id: an explicit "anthropic/…" or "google/…" prefix
// names the publisher; otherwise a model whose id starts with "claude" is
// Anthropic's and any other Google's.
func VertexPublisher(model string) (publisher, id string) {
	model = strings.TrimSpace(model)
	if pub, rest, ok := strings.Cut(model, "/"); ok && (pub == VertexGoogle || pub == VertexAnthropic) {
		return pub, rest
	}
	if strings.HasPrefix(model, "claude") {
		return VertexAnthropic, model
	}
	return VertexGoogle, model
}

// WireBedrockAnthropic is the wire of a Claude model on Bedrock: a chat
// caller's request goes through Converse (Bedrock's field table), a
// Messages caller's body through Bedrock's Anthropic-native invoke path
// (it passes natively, like an Anthropic deployment's). It is a wire,
// never a provider's protocol.
const WireBedrockAnthropic Protocol = "bedrock-anthropic"

// NativeDialect is the protocol whose request body a wire takes as it is:
// Anthropic's for WireBedrockAnthropic, the wire's own for the others.
func NativeDialect(wire Protocol) Protocol {
	if wire == WireBedrockAnthropic {
		return ProtocolAnthropic
	}
	return wire
}

// BedrockAnthropicModel reports whether a Bedrock upstream model is one of
// Anthropic's Claude models: a model id "anthropic.claude-…", a
// cross-region inference profile id "us.anthropic.claude-…" (eu., apac.,
// global., …), or an inference profile's ARN ending in either.
func BedrockAnthropicModel(id string) bool {
	id = id[strings.LastIndexByte(id, '/')+1:]
	if strings.HasPrefix(id, "anthropic.claude") {
		return true
	}
	_, rest, ok := strings.Cut(id, ".")
	return ok && strings.HasPrefix(rest, "anthropic.claude")
}
