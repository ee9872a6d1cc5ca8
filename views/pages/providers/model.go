// Package providers renders the Providers pages: providers and their key pools.
package providers

import (
	"slices"
	"strconv"
	"strings"
	"time"

	"switchyard/routing/config"
	"switchyard/views/components"
	"switchyard/views/layout"
)

// KeyRuntime is a key's live state, shared by every gateway instance.
type KeyRuntime struct {
	Status   string // active | cooling | quarantined
	Reason   string
	Since    time.Time
	Until    time.Time
	LastUsed time.Time
}

// Row is one provider on the list page.
type Row struct {
	config.Provider
	Deployments []string
	Keys        map[int64]KeyRuntime
}

// ListPage is the Providers page.
type ListPage struct {
	Page layout.Page
	Rows []Row
}

// Form is the create/edit form.
type Form struct {
	ID     int64
	V      config.Provider
	Errors config.FieldErrors
	CSRF   string
}

// HeaderRow is one static-header row of the form. A secret row never shows
// its value: Set says a value is stored (leave the field blank to keep it).
type HeaderRow struct {
	Index  int
	Name   string
	Value  string
	Secret bool
	Set    bool
}

// BlankHeaderRows is how many empty header rows the form offers.
const BlankHeaderRows = 2

// HeaderRows are the form's header rows: the provider's headers, then
// BlankHeaderRows empty ones.
func (f Form) HeaderRows() []HeaderRow {
	rows := make([]HeaderRow, 0, len(f.V.Headers)+BlankHeaderRows)
	for _, h := range f.V.Headers {
		r := HeaderRow{Index: len(rows), Name: h.Name, Secret: h.Secret}
		if h.Secret {
			r.Set = h.Value == config.SecretSet
		} else {
			r.Value = h.Value
		}
		rows = append(rows, r)
	}
	for range BlankHeaderRows {
		rows = append(rows, HeaderRow{Index: len(rows)})
	}
	return rows
}

// PassText is the passthrough allowlist as the form edits it.
func (f Form) PassText() string { return strings.Join(f.V.PassHeaders, ", ") }

// HeaderSummary describes a provider's headers for the list: names with
// plain values, secret ones as "••• set".
func HeaderSummary(p config.Provider) string {
	parts := make([]string, len(p.Headers))
	for i, h := range p.Headers {
		v := h.Value
		if h.Secret {
			v = config.SecretSet
		}
		parts[i] = h.Name + ": " + v
	}
	return strings.Join(parts, "; ")
}

func secretPlaceholder(set bool) string {
	if set {
		return config.SecretSet + " — leave blank to keep"
	}
	return "secret value"
}

// Action is where the form posts.
func (f Form) Action() string {
	if f.ID == 0 {
		return "/providers"
	}
	return "/providers/" + strconv.FormatInt(f.ID, 10)
}

// KeyForm is the add-key form inside a key pool.
type KeyForm struct {
	Label  string
	Errors config.FieldErrors
}

// Pool is the key pool fragment of one provider.
type Pool struct {
	Provider config.Provider
	Keys     map[int64]KeyRuntime
	Form     KeyForm
	CSRF     string
	CanEdit  bool
}

func protocolOptions() []components.Option {
	return []components.Option{
		{Value: "openai", Label: "OpenAI-compatible"},
		{Value: "anthropic", Label: "Anthropic Messages"},
		{Value: "gemini", Label: "Google Gemini"},
		{Value: "azure", Label: "Azure OpenAI"},
		{Value: "bedrock", Label: "AWS Bedrock"},
		{Value: "vertex", Label: "Google Vertex AI"},
	}
}

// keyLabel names what a provider's key pool holds.
func keyLabel(p config.Protocol) string {
	if p == config.ProtocolVertex {
		return "Service-account key file"
	}
	return "API key"
}

// keyHint says how to enter a key of p.
func keyHint(p config.Protocol) string {
	if p == config.ProtocolVertex {
		return "write-only; paste the whole JSON key file"
	}
	return "write-only"
}

// vertexValue is v for a Vertex AI provider's own fields (its location and
// token endpoint live in the columns Bedrock and Azure use), empty for any
// other kind.
func vertexValue(p config.Provider, v string) string {
	if p.Protocol == config.ProtocolVertex {
		return v
	}
	return ""
}

func keyBadge(status, cfg string) (kind, text string) {
	if cfg == config.KeyDisabled {
		return "", "disabled"
	}
	switch status {
	case "cooling":
		return "warn", "cooling"
	case "quarantined":
		return "bad", "quarantined"
	}
	return "ok", "active"
}

// QuirkOption is one wire-quirk checkbox of the provider form.
type QuirkOption struct {
	Quirk       config.Quirk
	Label, Hint string
	On          bool
}

// QuirkOptions are the form's quirk checkboxes, in the console's order.
func QuirkOptions(p config.Provider) []QuirkOption {
	out := make([]QuirkOption, 0, len(config.ProviderQuirks))
	for _, q := range config.ProviderQuirks {
		out = append(out, QuirkOption{Quirk: q, Label: components.QuirkLabel(q), Hint: components.QuirkHint(q), On: p.Quirks.Has(q)})
	}
	return out
}

// QuirkSummary lists a provider's quirks for the Providers page.
func QuirkSummary(p config.Provider) string {
	parts := make([]string, 0, len(p.Quirks))
	for _, q := range p.Quirks {
		l := components.QuirkLabel(q)
		parts = append(parts, strings.ToLower(l[:1])+l[1:])
	}
	return strings.Join(parts, "; ")
}

// credentialWords name the credential kinds (config.CredentialKind).
var credentialWords = map[string]string{
	"api_key": "api-key", "entra": "Entra ID client credentials",
	"aws_access_key": "AWS access keys", "aws_default_chain": "AWS default credential chain",
}

// CloudSettings describes a cloud provider's own settings for the list:
// Azure's api-version and Entra authority, Bedrock's region, and how its
// keys authenticate ("" for the other protocols).
func CloudSettings(p config.Provider) string {
	var parts []string
	switch p.Protocol {
	case config.ProtocolAzure:
		v := p.APIVersion
		if v == "" {
			v = "none (set one: calls cannot be made)"
		}
		parts = append(parts, "api-version "+v)
		if p.AuthURL != "" {
			parts = append(parts, "Entra authority "+p.AuthURL)
		}
	case config.ProtocolBedrock:
		r := p.Region
		if r == "" {
			r = "none (set one: requests cannot be signed)"
		}
		parts = append(parts, "region "+r)
	default:
		return ""
	}
	var kinds []string
	for _, k := range p.Keys {
		if w := credentialWords[config.CredentialKind(p.Protocol, k.Fingerprint)]; w != "" && !slices.Contains(kinds, w) {
			kinds = append(kinds, w)
		}
	}
	if len(kinds) > 0 {
		parts = append(parts, "auth "+strings.Join(kinds, " and "))
	}
	return strings.Join(parts, " · ")
}
