// Package onboarding is the one-click onboarding of the console's first page: the
// provider catalogue (templates as data), the plan of objects a wizard run
// creates from a template, the chosen models and the existing draft, and key
// verification through the protocol adapters.
//
// It holds no HTTP handlers and no SQL: the console handlers render the
// plan and the store creates it in one transaction.
package onboarding

import (
	"bytes"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"switchyard/routing/config"
)

// CatalogFormat identifies the catalogue file format.
const CatalogFormat = "switchyard-catalog/v1"

//go:embed catalog.yaml
var builtin []byte

// Builtin returns the catalogue file compiled into this binary.
func Builtin() []byte { return slices.Clone(builtin) }

// Catalog is the list of provider templates, in display order.
type Catalog struct {
	Format    string     `yaml:"format"`
	Templates []Template `yaml:"templates"`
}

// Template pre-fills a provider: protocol, base URL and recommended models.
type Template struct {
	Code         string          `yaml:"code"`
	Name         string          `yaml:"name"`
	Description  string          `yaml:"description,omitempty"`
	Protocol     config.Protocol `yaml:"protocol"`
	BaseURL      string          `yaml:"base_url"`
	Provider     string          `yaml:"provider"`
	KeyURL       string          `yaml:"key_url,omitempty"`
	KeyOptional  bool            `yaml:"key_optional,omitempty"`
	DefaultKey   string          `yaml:"default_key,omitempty"`
	CustomModels bool            `yaml:"custom_models,omitempty"`
	Sandbox      bool            `yaml:"sandbox,omitempty"`
	Hidden       bool            `yaml:"hidden,omitempty"`
	// Quirks are the vendor's known departures from OpenAI's wire: the
	// provider ones are set on the provider the wizard creates; all are
	// shown to the operator (config.TemplateQuirks).
	Quirks []config.Quirk `yaml:"quirks,omitempty"`
	// APIVersion is an Azure OpenAI template's api-version; Region a
	// Bedrock template's AWS region; AuthURL an Azure template's Entra ID
	// token authority (empty: Microsoft's public cloud). The wizard shows
	// each for the protocol that has it, pre-filled from here.
	APIVersion string  `yaml:"api_version,omitempty"`
	Region     string  `yaml:"region,omitempty"`
	AuthURL    string  `yaml:"auth_url,omitempty"`
	Models     []Model `yaml:"models"`
}

// ProviderQuirks are the template's quirks a provider is set to.
func (t *Template) ProviderQuirks() config.Quirks {
	var out config.Quirks
	for _, q := range t.Quirks {
		if slices.Contains(config.ProviderQuirks, q) {
			out = append(out, q)
		}
	}
	return out
}

// Settings names the extra provider settings t's protocol has, as the
// wizard's field names: "api_version" and "auth_url" for Azure OpenAI,
// "region" for AWS Bedrock, "project" and "region" (the location) for
// Vertex AI.
func (t *Template) Settings() []string {
	switch t.Protocol {
	case config.ProtocolAzure:
		return []string{"api_version", "auth_url"}
	case config.ProtocolBedrock:
		return []string{"region"}
	case config.ProtocolVertex:
		return []string{"project", "region"}
	}
	return nil
}

// HasSetting reports whether the wizard asks for setting on t.
func (t *Template) HasSetting(setting string) bool { return slices.Contains(t.Settings(), setting) }

// Model is one model a template offers.
type Model struct {
	Upstream     string          `yaml:"upstream"`
	LogicModel   string          `yaml:"logic_model,omitempty"`
	Kind         config.Kind     `yaml:"kind"`
	Capabilities *Capabilities   `yaml:"capabilities"`
	Dimension    int             `yaml:"dimension,omitempty"`
	BatchLimit   int             `yaml:"batch_limit,omitempty"`
	Tier         config.TierName `yaml:"tier"`
	Recommended  bool            `yaml:"recommended,omitempty"`
	Price        *Price          `yaml:"price"`
	Note         string          `yaml:"note,omitempty"`
}

// Capabilities a model has; a pointer in Model so a missing block is an
// error rather than "none".
type Capabilities struct {
	Thinking bool `yaml:"thinking"`
	Vision   bool `yaml:"vision"`
	Tools    bool `yaml:"tools"`
	// WebSearch: the vendor runs a hosted web search for the model on a
	// translated request (Anthropic's server tool, Gemini's google_search).
	WebSearch bool `yaml:"web_search,omitempty"`
	// ResponsesAPI: the vendor serves OpenAI's Responses API for it, so
	// Responses callers (Codex) reach it natively.
	ResponsesAPI bool `yaml:"responses_api,omitempty"`
}

// Price is a list price per 1M tokens, or unknown ("price: unknown").
type Price struct {
	Known    bool
	Input    config.Micros
	Output   config.Micros
	Cached   *config.Micros // nil: not published, billed as input
	Currency string
	AsOf     string
	Source   string
}

type priceFields struct {
	Input    *config.Micros `yaml:"input"`
	Output   *config.Micros `yaml:"output"`
	Cached   *config.Micros `yaml:"cached"`
	Currency string         `yaml:"currency"`
	AsOf     string         `yaml:"as_of"`
	Source   string         `yaml:"source"`
}

// UnmarshalYAML reads either the scalar "unknown" or a price mapping.
func (p *Price) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		if n.Value != "unknown" {
			return fmt.Errorf("line %d: price must be a mapping or \"unknown\", not %q", n.Line, n.Value)
		}
		*p = Price{}
		return nil
	}
	var f priceFields
	if err := n.Decode(&f); err != nil {
		return err
	}
	if f.Input == nil || f.Output == nil {
		return fmt.Errorf("line %d: a known price needs input and output (or write price: unknown)", n.Line)
	}
	for _, v := range []*config.Micros{f.Input, f.Output, f.Cached} {
		if v != nil && *v < 0 {
			return fmt.Errorf("line %d: a price cannot be negative", n.Line)
		}
	}
	*p = Price{Known: true, Input: *f.Input, Output: *f.Output, Cached: f.Cached, Currency: f.Currency, AsOf: f.AsOf, Source: f.Source}
	return nil
}

// Prices converts a catalogue price into deployment prices. Unknown prices
// are zero (the console says so); a missing cached price is billed as input.
func (p *Price) Prices() config.Prices {
	if p == nil || !p.Known {
		return config.Prices{Currency: "USD"}
	}
	out := config.Prices{InputMicros: p.Input, OutputMicros: p.Output, CachedMicros: p.Input, Currency: p.Currency}
	if p.Cached != nil {
		out.CachedMicros = *p.Cached
	}
	return out
}

// String describes the price for the console.
func (p *Price) String() string {
	if p == nil || !p.Known {
		return "price unknown"
	}
	s := fmt.Sprintf("%s %s in / %s out", p.Currency, p.Input, p.Output)
	if p.Cached != nil {
		s += " / " + p.Cached.String() + " cached"
	}
	return s + " per 1M tokens (as of " + p.AsOf + ")"
}

// Code is the logic model code of m: its family code, or one derived from
// the upstream name.
func (m Model) Code() string {
	if m.LogicModel != "" {
		return m.LogicModel
	}
	return CodeFor(m.Upstream)
}

// Caps returns m's capabilities (none when the block is missing).
func (m Model) Caps() config.Capabilities {
	if m.Capabilities == nil {
		return config.Capabilities{}
	}
	c := m.Capabilities
	return config.Capabilities{Thinking: c.Thinking, Vision: c.Vision, Tools: c.Tools, WebSearch: c.WebSearch, ResponsesAPI: c.ResponsesAPI}
}

var codeJunk = regexp.MustCompile(`[^a-z0-9._:-]+`)

// CodeFor derives a logic model code from an upstream model name: the part
// after the last "/", lower-cased, other characters replaced by "-"; a tier
// name gets a "-model" suffix (tier names are reserved).
func CodeFor(upstream string) string {
	s := upstream
	if i := strings.LastIndexByte(s, '/'); i >= 0 && i < len(s)-1 {
		s = s[i+1:]
	}
	s = codeJunk.ReplaceAllString(strings.ToLower(strings.TrimSpace(s)), "-")
	if len(s) > 57 {
		s = s[:57]
	}
	s = strings.Trim(s, "._:-")
	if s == "" {
		s = "model"
	}
	if config.ValidTier(s) || s == "auto" {
		s += "-model"
	}
	return s
}

// Template returns the template with that code.
func (c *Catalog) Template(code string) (*Template, bool) {
	for i := range c.Templates {
		if c.Templates[i].Code == code {
			return &c.Templates[i], true
		}
	}
	return nil, false
}

// Model returns the template's model with that upstream name.
func (t *Template) Model(upstream string) (*Model, bool) {
	for i := range t.Models {
		if t.Models[i].Upstream == upstream {
			return &t.Models[i], true
		}
	}
	return nil, false
}

// LoadOptions say where the catalogue comes from.
type LoadOptions struct {
	// File is the operator's catalogue (SWITCHYARD_CATALOG_FILE), merged
	// over the built-in one; empty for none.
	File string
	// SandboxURL replaces the base URL of sandbox templates
	// (SWITCHYARD_SANDBOX_URL); empty keeps the catalogue's.
	SandboxURL string
	// Env is what this build implements; templates are validated against it.
	Env config.Env
}

// Load reads the built-in catalogue, merges the operator's file over it and
// validates the result.
func Load(o LoadOptions) (*Catalog, error) {
	cat, err := Parse(builtin)
	if err != nil {
		return nil, fmt.Errorf("onboarding: built-in catalogue: %w", err)
	}
	if o.File != "" {
		b, err := os.ReadFile(o.File)
		if err != nil {
			return nil, fmt.Errorf("onboarding: catalogue file: %w", err)
		}
		over, err := Parse(b)
		if err != nil {
			return nil, fmt.Errorf("onboarding: catalogue file %s: %w", o.File, err)
		}
		cat = Merge(cat, over)
	}
	if o.SandboxURL != "" {
		for i := range cat.Templates {
			if cat.Templates[i].Sandbox {
				cat.Templates[i].BaseURL = o.SandboxURL
			}
		}
	}
	if err := cat.Validate(o.Env); err != nil {
		return nil, fmt.Errorf("onboarding: catalogue: %w", err)
	}
	return cat, nil
}

// Parse decodes a catalogue file. Unknown fields are refused so a typo is an
// error rather than a silently ignored setting.
func Parse(b []byte) (*Catalog, error) {
	var c Catalog
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&c); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, errors.New("the file is empty")
		}
		return nil, err
	}
	if c.Format != CatalogFormat {
		return nil, fmt.Errorf("format %q is not %q", c.Format, CatalogFormat)
	}
	return &c, nil
}

// Merge lays over on top of base: a template with a known code replaces the
// built-in one (hidden: true removes it), new codes are appended.
func Merge(base, over *Catalog) *Catalog {
	out := &Catalog{Format: CatalogFormat, Templates: slices.Clone(base.Templates)}
	for _, t := range over.Templates {
		i := slices.IndexFunc(out.Templates, func(b Template) bool { return b.Code == t.Code })
		switch {
		case i >= 0 && t.Hidden:
			out.Templates = slices.Delete(out.Templates, i, i+1)
		case i >= 0:
			out.Templates[i] = t
		case !t.Hidden:
			out.Templates = append(out.Templates, t)
		}
	}
	return out
}

var (
	templateCodeRE = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,40}$`)
	asOfRE         = regexp.MustCompile(`^\d{4}-\d{2}(-\d{2})?$`)
)

// Validate checks every template against what this build implements: codes
// unique and well-formed, protocols implemented, base URLs well-formed, and
// every model complete (kind, capabilities, tier, price or "unknown",
// embedding dimension) and valid as a logic model and a deployment.
func (c *Catalog) Validate(env config.Env) error {
	var errs []error
	seen := map[string]bool{}
	for i := range c.Templates {
		t := &c.Templates[i]
		bad := func(format string, args ...any) {
			errs = append(errs, fmt.Errorf("template %q: %s", t.Code, fmt.Sprintf(format, args...)))
		}
		if !templateCodeRE.MatchString(t.Code) {
			bad("code must be 1–41 lower-case letters, digits or '-'")
		}
		if seen[t.Code] {
			bad("code is used twice")
		}
		seen[t.Code] = true
		t.validate(env, bad)
	}
	if len(c.Templates) == 0 {
		errs = append(errs, errors.New("no templates"))
	}
	return errors.Join(errs...)
}

// validate checks a template and its models, telling bad each problem.
func (t *Template) validate(env config.Env, bad func(format string, args ...any)) {
	if strings.TrimSpace(t.Name) == "" {
		bad("name is required")
	}
	sup, ok := env.Implemented[t.Protocol]
	if !ok || !sup.Chat {
		bad("protocol %q is not implemented by this build", t.Protocol)
	}
	if msg := config.ValidateBaseURL(t.BaseURL); msg != "" {
		bad("base_url %s", msg)
	}
	t.validateSettings(bad)
	if t.KeyOptional {
		if fe := config.ValidateProviderKey("", t.DefaultKey, true); len(fe) > 0 {
			bad("default_key %s", fe["secret"])
		}
	}
	if len(t.Models) == 0 && !t.CustomModels {
		bad("has no models; list some or set custom_models")
	}
	codes := map[string]string{}
	for _, m := range t.Models {
		if strings.TrimSpace(m.Upstream) == "" {
			bad("a model has no upstream name")
			continue
		}
		where := "model " + quoted(m.Upstream)
		if prev, dup := codes[m.Code()]; dup {
			bad("%s and %s share logic model code %q", where, quoted(prev), m.Code())
		}
		codes[m.Code()] = m.Upstream
		t.validateModel(m, sup, func(format string, args ...any) { bad("%s"+format, append([]any{where}, args...)...) })
	}
}

// validateSettings checks the provider the template creates: its name,
// its cloud settings and its wire quirks.
func (t *Template) validateSettings(bad func(format string, args ...any)) {
	fe := config.ValidateProvider(config.Provider{Name: t.Provider, Protocol: t.Protocol, BaseURL: t.BaseURL, TimeoutMS: 60000,
		APIVersion: t.APIVersion, Region: t.Region, AuthURL: t.AuthURL})
	if fe["name"] != "" {
		bad("provider name %q: %s", t.Provider, fe["name"])
	}
	for _, f := range []string{"api_version", "region", "auth_url"} {
		if fe[f] != "" {
			bad("%s %s", f, fe[f])
		}
	}
	// A template names no project: that is the operator's own.
	if field, msg := cloudSettingMissing(config.Provider{Protocol: t.Protocol, APIVersion: t.APIVersion, Region: t.Region}); msg != "" && field != "project" {
		bad("%s", msg)
	}
	azureOnly, regional := t.APIVersion != "" || t.AuthURL != "", t.Region != ""
	if (azureOnly && !t.HasSetting("api_version")) || (regional && !t.HasSetting("region")) {
		bad("api_version and auth_url are Azure settings, region a Bedrock or Vertex AI one")
	}
	seenQuirk := map[config.Quirk]bool{}
	for _, q := range t.Quirks {
		switch {
		case !slices.Contains(config.TemplateQuirks, q):
			bad("quirk %q is not known", q)
		case seenQuirk[q]:
			bad("quirk %q is listed twice", q)
		case t.Protocol != config.ProtocolOpenAI:
			bad("quirks are for OpenAI-compatible vendors only")
		}
		seenQuirk[q] = true
	}
}

// validateModel checks one model of the template; bad's messages follow
// the model's name.
func (t *Template) validateModel(m Model, sup config.ProtocolSupport, bad func(format string, args ...any)) {
	if m.Kind != config.KindChat && m.Kind != config.KindEmbedding {
		bad(": kind must be chat or embedding")
	}
	if m.Capabilities == nil {
		bad(": capabilities are missing (write thinking/vision/tools, even when false)")
	}
	if !config.ValidTier(string(m.Tier)) {
		bad(": tier must be fast, standard or deep")
	}
	if m.Kind == config.KindEmbedding {
		if m.Dimension <= 0 {
			bad(": an embedding model needs its dimension")
		}
		if !sup.Embeddings {
			bad(": protocol %s has no embeddings API in this build", t.Protocol)
		}
	} else if m.Dimension != 0 || m.BatchLimit != 0 {
		bad(": only embedding models have a dimension and batch limit")
	}
	if m.BatchLimit < 0 {
		bad(": batch_limit must be 0 (not published) or positive")
	}
	switch p := m.Price; {
	case p == nil:
		bad(": price is missing (write price: unknown when it is not published)")
	case p.Known:
		if !asOfRE.MatchString(p.AsOf) {
			bad(": a known price needs as_of (YYYY-MM or YYYY-MM-DD)")
		}
		if strings.TrimSpace(p.Source) == "" {
			bad(": a known price needs its source")
		}
	}
	lm := config.LogicModel{Code: m.Code(), Kind: m.Kind, EmbeddingDimension: m.Dimension}
	for field, msg := range config.ValidateLogicModel(lm) {
		bad(": logic model %s %s", field, msg)
	}
	d := config.Deployment{Provider: t.Provider, UpstreamModel: m.Upstream, Weight: 100, Enabled: true, Prices: m.Price.Prices(), Capabilities: m.Caps(), EmbeddingBatchLimit: m.BatchLimit}
	for field, msg := range config.ValidateDeployment(d) {
		bad(": deployment %s %s", field, msg)
	}
}

func quoted(s string) string { return `"` + s + `"` }
