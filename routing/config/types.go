// Package config holds the domain types of one Switchyard configuration
// (the five layers), its canonical text form, the dry-run checks and the compilation
// into the immutable runtime form the data plane reads.
//
// It imports neither HTTP frameworks nor database drivers: the store fills a
// Snapshot from the draft tables, publish stores its canonical text, and every
// gateway instance decodes and compiles that text.
package config

// FormatV1 identifies the canonical snapshot format written by this package.
const FormatV1 = "switchyard/v1"

// Protocol is the wire protocol a provider speaks.
type Protocol string

const (
	ProtocolOpenAI    Protocol = "openai"
	ProtocolAnthropic Protocol = "anthropic"
	ProtocolGemini    Protocol = "gemini"
	// ProtocolAzure is Azure OpenAI: OpenAI's wire under per-deployment
	// paths with an api-version, an api-key header or Entra ID tokens.
	ProtocolAzure Protocol = "azure"
	// ProtocolBedrock is AWS Bedrock: Converse for any model, Anthropic's
	// native invoke for Claude, requests signed with SigV4.
	ProtocolBedrock Protocol = "bedrock"
	// ProtocolVertex is Google Vertex AI: Gemini's wire for Google's
	// models and Anthropic's Messages for Claude (rawPredict), under a
	// project and location, with service-account OAuth2 tokens.
	ProtocolVertex Protocol = "vertex"
)

// Protocols lists every protocol the console offers, in display order.
var Protocols = []Protocol{ProtocolOpenAI, ProtocolAnthropic, ProtocolGemini, ProtocolAzure, ProtocolBedrock, ProtocolVertex}

// Kind is what a logic model does.
type Kind string

const (
	KindChat      Kind = "chat"
	KindEmbedding Kind = "embedding"
)

// TierName is one of the three business tiers.
type TierName string

const (
	TierFast     TierName = "fast"
	TierStandard TierName = "standard"
	TierDeep     TierName = "deep"
)

// TierNames lists the tiers in their fixed display order.
var TierNames = []TierName{TierFast, TierStandard, TierDeep}

// DefaultTierTimeoutMS gives each tier's default attempt timeout.
var DefaultTierTimeoutMS = map[TierName]int{TierFast: 15000, TierStandard: 60000, TierDeep: 180000}

// DefaultFirstChunkTimeoutMS gives each tier's default first-chunk timeout for streams.
var DefaultFirstChunkTimeoutMS = map[TierName]int{TierFast: 5000, TierStandard: 15000, TierDeep: 60000}

// ValidTier reports whether s names a tier.
func ValidTier(s string) bool {
	switch TierName(s) {
	case TierFast, TierStandard, TierDeep:
		return true
	}
	return false
}

// PriorityClass decides the order in which requests waiting for capacity
// are let in (10:3:1), and who is shed first when the queues are full.
type PriorityClass string

const (
	ClassInteractive PriorityClass = "interactive"
	ClassNormal      PriorityClass = "normal"
	ClassBatch       PriorityClass = "batch"
)

// Classes are the priority classes, highest first.
var Classes = []PriorityClass{ClassInteractive, ClassNormal, ClassBatch}

// DefaultClass is the class of a new caller that names none: a caller must
// claim interactive on purpose, or every caller would be first in line.
const DefaultClass = ClassNormal

// ValidClass reports whether c names a priority class.
func ValidClass(c PriorityClass) bool {
	switch c {
	case ClassInteractive, ClassNormal, ClassBatch:
		return true
	}
	return false
}

// Key statuses of a provider key in the configuration. Cooling and quarantine
// are runtime states kept outside the configuration.
const (
	KeyActive   = "active"
	KeyDisabled = "disabled"
)

// Snapshot is the whole configuration: the draft, or one published version.
// Slices are kept in canonical order (see Canonicalize).
type Snapshot struct {
	Format      string       `yaml:"format" json:"format"`
	Tenants     []Tenant     `yaml:"tenants" json:"tenants"`
	Providers   []Provider   `yaml:"providers" json:"providers"`
	LogicModels []LogicModel `yaml:"logic_models" json:"logic_models"`
	RouteGroups []RouteGroup `yaml:"route_groups" json:"route_groups"`
	Callers     []Caller     `yaml:"callers" json:"callers"`
}

// Tenant owns callers and dedicated route groups (tenancy and pools).
type Tenant struct {
	ID          int64  `yaml:"id" json:"id"`
	Name        string `yaml:"name" json:"name"`
	Description string `yaml:"description,omitempty" json:"description,omitempty"`
}

// Provider is a vendor endpoint with its key pool.
type Provider struct {
	ID        int64    `yaml:"id" json:"id"`
	Name      string   `yaml:"name" json:"name"`
	Protocol  Protocol `yaml:"protocol" json:"protocol"`
	BaseURL   string   `yaml:"base_url" json:"base_url"`
	Enabled   bool     `yaml:"enabled" json:"enabled"`
	TimeoutMS int      `yaml:"timeout_ms" json:"timeout_ms"`
	Notes     string   `yaml:"notes,omitempty" json:"notes,omitempty"`
	// APIVersion is Azure OpenAI's api-version query value.
	APIVersion string `yaml:"api_version,omitempty" json:"api_version,omitempty"`
	// Region is the AWS region a Bedrock provider signs for, or the
	// location of a Vertex AI provider (us-central1, europe-west4, global).
	Region string `yaml:"region,omitempty" json:"region,omitempty"`
	// Project is the Google Cloud project id of a Vertex AI provider.
	Project string `yaml:"project,omitempty" json:"project,omitempty"`
	// AuthURL is the Entra ID token endpoint of an Azure provider whose
	// keys are client credentials (empty: Microsoft's public cloud), or the
	// OAuth2 token endpoint of a Vertex AI provider (empty: Google's).
	AuthURL string `yaml:"auth_url,omitempty" json:"auth_url,omitempty"`
	// Sandbox marks the local fake vendor (onboarding's sandbox template):
	// canned replies, not a real model. The console badges it.
	Sandbox bool          `yaml:"sandbox,omitempty" json:"sandbox,omitempty"`
	Keys    []ProviderKey `yaml:"keys" json:"keys"`
	// Headers are sent with every request to the vendor (see headers.go).
	Headers []ProviderHeader `yaml:"headers,omitempty" json:"headers,omitempty"`
	// PassHeaders names the caller headers passed through to the vendor;
	// no other caller header ever reaches it.
	PassHeaders []string `yaml:"pass_headers,omitempty" json:"pass_headers,omitempty"`
	// Quirks are the OpenAI-compatible vendor's known departures from
	// OpenAI's wire that the adapter works around (see quirks.go).
	Quirks Quirks `yaml:"quirks,omitempty" json:"quirks,omitempty"`
}

// ProviderKey references a secret by id; the secret itself never leaves the
// encrypted provider_keys table.
type ProviderKey struct {
	ID          int64  `yaml:"id" json:"id"`
	Label       string `yaml:"label" json:"label"`
	Fingerprint string `yaml:"fingerprint" json:"fingerprint"`
	Status      string `yaml:"status" json:"status"`
}

// LogicModel is a "model number" that callers may name explicitly and
// candidates reference; it expands into its deployments at run time.
type LogicModel struct {
	ID                 int64        `yaml:"id" json:"id"`
	Code               string       `yaml:"code" json:"code"`
	Kind               Kind         `yaml:"kind" json:"kind"`
	EmbeddingDimension int          `yaml:"embedding_dimension,omitempty" json:"embedding_dimension,omitempty"`
	QueryPrefix        string       `yaml:"query_prefix,omitempty" json:"query_prefix,omitempty"`
	DocumentPrefix     string       `yaml:"document_prefix,omitempty" json:"document_prefix,omitempty"`
	Description        string       `yaml:"description,omitempty" json:"description,omitempty"`
	Deployments        []Deployment `yaml:"deployments" json:"deployments"`
}

// Deployment is a logic model served by one provider.
type Deployment struct {
	ID            int64  `yaml:"id" json:"id"`
	Provider      string `yaml:"provider" json:"provider"`
	UpstreamModel string `yaml:"upstream_model" json:"upstream_model"`
	Weight        int    `yaml:"weight" json:"weight"`
	// Parked keeps the deployment in the configuration, its weight
	// remembered, but gives it no traffic (see Normalize for the old
	// encoding, a weight of 0 or less).
	Parked         bool `yaml:"parked,omitempty" json:"parked,omitempty"`
	Enabled        bool `yaml:"enabled" json:"enabled"`
	MaxConcurrency int  `yaml:"max_concurrency,omitempty" json:"max_concurrency,omitempty"`
	// MaxInflightTokens caps the estimated tokens (prompt + expected
	// output) of the requests in flight on this deployment across
	// instances; 0 is unlimited.
	MaxInflightTokens int64        `yaml:"max_inflight_tokens,omitempty" json:"max_inflight_tokens,omitempty"`
	Prices            Prices       `yaml:"prices" json:"prices"`
	Capabilities      Capabilities `yaml:"capabilities" json:"capabilities"`
	// StrictFields is the strict field policy: a request field the gateway
	// would drop when translating a request for this deployment is refused
	// instead, for compliance (a request must reach the vendor whole or not
	// at all). Off by default: a dropped field is recorded on the call log.
	StrictFields        bool             `yaml:"strict_fields,omitempty" json:"strict_fields,omitempty"`
	EmbeddingBatchLimit int              `yaml:"embedding_batch_limit,omitempty" json:"embedding_batch_limit,omitempty"`
	TimeoutMS           int              `yaml:"timeout_ms,omitempty" json:"timeout_ms,omitempty"`
	Breaker             *BreakerSettings `yaml:"breaker,omitempty" json:"breaker,omitempty"`
}

// Prices are per one million tokens, in micro-units of Currency. The text
// forms keep the old field names and decimal values ("input: 2.5").
type Prices struct {
	InputMicros  Micros `yaml:"input" json:"input"`
	OutputMicros Micros `yaml:"output" json:"output"`
	CachedMicros Micros `yaml:"cached" json:"cached"`
	Currency     string `yaml:"currency" json:"currency"`
}

// Capabilities a request may require of a deployment.
type Capabilities struct {
	Thinking bool `yaml:"thinking" json:"thinking"`
	Vision   bool `yaml:"vision" json:"vision"`
	Tools    bool `yaml:"tools" json:"tools"`
	// StructuredOutput: the vendor enforces a JSON Schema on the answer
	// natively (Anthropic's output_config.format). Without it an Anthropic
	// deployment serves response_format through a forced tool call.
	StructuredOutput bool `yaml:"structured_output,omitempty" json:"structured_output,omitempty"`
	// ResponsesAPI: the vendor serves OpenAI's Responses API
	// (POST {base}/responses). Requests through the gateway's /v1/responses
	// then pass to an OpenAI-protocol deployment natively; without it they
	// are translated into chat completions. Most OpenAI-compatible vendors
	// serve only chat completions, so it is off by default.
	ResponsesAPI bool `yaml:"responses_api,omitempty" json:"responses_api,omitempty"`
	// WebSearch: the vendor runs a hosted web search tool for this model
	// (Anthropic's web search server tool, Gemini's google_search,
	// OpenAI's web_search_options and the Responses API's web_search).
	// Off by default.
	WebSearch bool `yaml:"web_search,omitempty" json:"web_search,omitempty"`
}

// BreakerSettings override the default circuit-breaker settings for one deployment.
// A zero field keeps the default.
type BreakerSettings struct {
	Window         int `yaml:"window,omitempty" json:"window,omitempty"`
	MinCalls       int `yaml:"min_calls,omitempty" json:"min_calls,omitempty"`
	FailurePercent int `yaml:"failure_percent,omitempty" json:"failure_percent,omitempty"`
	OpenMS         int `yaml:"open_ms,omitempty" json:"open_ms,omitempty"`
	HalfOpenProbes int `yaml:"half_open_probes,omitempty" json:"half_open_probes,omitempty"`
}

// Fallback policies of a dedicated route group.
const FallbackNone = "none"

// RouteGroup binds callers to three tiers. A group with a Tenant is a
// dedicated pool; its Fallback is "none" or the name of a shared group.
type RouteGroup struct {
	ID          int64  `yaml:"id" json:"id"`
	Name        string `yaml:"name" json:"name"`
	Description string `yaml:"description,omitempty" json:"description,omitempty"`
	Tenant      string `yaml:"tenant,omitempty" json:"tenant,omitempty"`
	Fallback    string `yaml:"fallback,omitempty" json:"fallback,omitempty"`
	// TraceContent exports the prompt and completion content of the
	// group's requests on their trace spans (gen_ai.input.messages,
	// gen_ai.output.messages); off, no content leaves in a trace.
	TraceContent bool   `yaml:"trace_content,omitempty" json:"trace_content,omitempty"`
	Tiers        []Tier `yaml:"tiers" json:"tiers"`
	// Aliases map other model names clients send (a coding agent's vendor
	// model ids) to a tier or a logic model; see aliases.go for the order
	// in which a name is resolved.
	Aliases []ModelAlias `yaml:"aliases,omitempty" json:"aliases,omitempty"`
	// RetryBudget caps failover retries per tier (nil: the defaults, see
	// resilience.go); Degradation is the opt-in degradation ladder.
	RetryBudget *RetryBudget `yaml:"retry_budget,omitempty" json:"retry_budget,omitempty"`
	Degradation *Degradation `yaml:"degradation,omitempty" json:"degradation,omitempty"`
}

// Tier returns the group's tier with that name, or nil.
func (g *RouteGroup) Tier(name TierName) *Tier {
	for i := range g.Tiers {
		if g.Tiers[i].Name == name {
			return &g.Tiers[i]
		}
	}
	return nil
}

// Tier is one of a group's fast/standard/deep chains.
type Tier struct {
	ID                  int64       `yaml:"id" json:"id"`
	Name                TierName    `yaml:"name" json:"name"`
	TimeoutMS           int         `yaml:"timeout_ms" json:"timeout_ms"`
	FirstChunkTimeoutMS int         `yaml:"first_chunk_timeout_ms" json:"first_chunk_timeout_ms"`
	Candidates          []Candidate `yaml:"candidates" json:"candidates"`
}

// Candidate is one link of a tier's chain. Priority orders failover (lower
// first); Weight splits traffic among candidates of equal priority.
type Candidate struct {
	ID         int64  `yaml:"id" json:"id"`
	LogicModel string `yaml:"logic_model" json:"logic_model"`
	Priority   int    `yaml:"priority" json:"priority"`
	Weight     int    `yaml:"weight" json:"weight"`
	// Parked keeps the candidate in its tier's chain, its weight
	// remembered, but gives it no traffic.
	Parked bool `yaml:"parked,omitempty" json:"parked,omitempty"`
}

// Caller is a business unit calling the data plane.
type Caller struct {
	ID            int64         `yaml:"id" json:"id"`
	Name          string        `yaml:"name" json:"name"`
	BusinessLine  string        `yaml:"business_line,omitempty" json:"business_line,omitempty"`
	Tenant        string        `yaml:"tenant,omitempty" json:"tenant,omitempty"`
	RouteGroup    string        `yaml:"route_group" json:"route_group"`
	PriorityClass PriorityClass `yaml:"priority_class" json:"priority_class"`
	Enabled       bool          `yaml:"enabled" json:"enabled"`
	Limits        []TierLimit   `yaml:"limits" json:"limits"`
	// MonthlyBudgetMicros is the monthly budget in micro-units of
	// BudgetCurrency; 0 is unlimited. Its text form is a decimal amount.
	MonthlyBudgetMicros Micros      `yaml:"monthly_budget,omitempty" json:"monthly_budget,omitempty"`
	BudgetCurrency      string      `yaml:"budget_currency,omitempty" json:"budget_currency,omitempty"`
	Keys                []CallerKey `yaml:"keys" json:"keys"`
}

// Limit returns the caller's limits for a tier (zero values mean unlimited).
func (c *Caller) Limit(t TierName) TierLimit {
	for _, l := range c.Limits {
		if l.Tier == t {
			return l
		}
	}
	return TierLimit{Tier: t}
}

// TierLimit holds a caller's per-tier limits; 0 means unlimited.
type TierLimit struct {
	Tier        TierName `yaml:"tier" json:"tier"`
	RPM         int64    `yaml:"rpm" json:"rpm"`
	TPM         int64    `yaml:"tpm" json:"tpm"`
	DailyTokens int64    `yaml:"daily_tokens" json:"daily_tokens"`
}

// CallerKey references a caller API key by id and its public prefix; the hash
// is never part of a snapshot.
type CallerKey struct {
	ID     int64  `yaml:"id" json:"id"`
	Name   string `yaml:"name,omitempty" json:"name,omitempty"`
	Prefix string `yaml:"prefix" json:"prefix"`
}
