// Package onboarding renders the onboarding wizard: choose a template →
// keys and models → review → done (the caller key, shown once).
//
// The wizard's state travels in the form itself, step to step: provider keys
// only as sealed tokens (AES-GCM with the store's key, bound to the user and
// expiring), never as plaintext, so nothing is stored before the operator
// confirms and no page ever shows a provider key.
package onboarding

import (
	"fmt"
	"strings"

	"switchyard/routing/adapter"
	"switchyard/routing/config"
	"switchyard/routing/config/onboarding"
	"switchyard/views/components"
	"switchyard/views/layout"
)

// Steps of the wizard, for the step bar.
var Steps = []string{"Template", "Keys & models", "Review", "Done"}

// StartPage lists the templates.
type StartPage struct {
	Page      layout.Page
	Templates []onboarding.Template
	// CatalogError says why the operator's catalogue file was not used.
	CatalogError string
	// Providers already in the draft (a second onboarding offers backups).
	Providers []string
}

// SealedKey is a provider key carried between steps as a sealed token.
type SealedKey struct {
	Token       string
	Fingerprint string
	Verdict     *onboarding.Verdict
}

// Rejected reports a key the vendor refused (auth or billing): the form
// offers it for removal, pre-ticked.
func (k SealedKey) Rejected() bool {
	return k.Verdict != nil && !k.Verdict.OK && (k.Verdict.Class == adapter.ClassAuth || k.Verdict.Class == adapter.ClassBilling)
}

// ModelRow is one model the form offers.
type ModelRow struct {
	Model   onboarding.Model
	Checked bool
	Tier    config.TierName
	// Existing is the logic model this model would back up (same family
	// code already in the draft), "" when it would be new.
	Existing string
	Separate bool
}

// Form is the keys-and-models step; Verify re-renders it in place.
type Form struct {
	CSRF         string
	Template     onboarding.Template
	ProviderName string
	BaseURL      string
	// APIVersion, AuthURL (Azure) and Region (Bedrock) are the cloud
	// settings the template's protocol asks for (Template.Settings).
	APIVersion, AuthURL, Region string
	// Project is Vertex AI's Google Cloud project (Region its location).
	Project string
	Keys    []SealedKey
	// DefaultVerdict is the verification of a key-less template's
	// placeholder key, when no key was given.
	DefaultVerdict *onboarding.Verdict
	Models         []ModelRow
	Custom         string
	// Listed are models the endpoint listed when verified, for templates
	// whose models the operator names.
	Listed       []string
	ListedPicked map[string]bool
	Groups       []string // existing route groups
	Group        string   // "" = new group
	NewGroup     string
	Caller       string
	// Pending is true when the draft already has unpublished changes that
	// a publish would include.
	Pending bool
	Errors  config.FieldErrors
}

// KeySlots is how many empty key inputs to offer.
func (f Form) KeySlots() int {
	if len(f.Keys) == 0 {
		return 2
	}
	return 1
}

// FormPage is the keys-and-models step as a page.
type FormPage struct {
	Page layout.Page
	Form Form
}

// TierView is one tier of the group as it will be after onboarding.
type TierView struct {
	Name       config.TierName
	Candidates []CandidateView
}

// CandidateView is one candidate tag of the review.
type CandidateView struct {
	LogicModel string
	Priority   int
	Weight     int
	New        bool
	From       config.TierName // borrowed from that tier
}

// ReviewPage shows everything about to be created.
type ReviewPage struct {
	Page     layout.Page
	Form     Form // carried in hidden fields
	Plan     *onboarding.Plan
	Tiers    []TierView
	Result   config.Result
	Revision int64
	Error    string // a refused create (the draft changed meanwhile)
}

// DonePage shows the caller key once, with snippets.
type DonePage struct {
	Page         layout.Page
	Plan         *onboarding.Plan
	CallerKey    string
	APIBase      string // this instance's base URL + "/v1"
	Published    int64  // version number, 0 when kept as a draft
	PublishError string
	Embedding    string // an embedding logic model, for the embeddings snippet
}

func tierLabel(t config.TierName) string {
	switch t {
	case config.TierFast:
		return "fast"
	case config.TierDeep:
		return "deep"
	}
	return "standard"
}

func caps(m onboarding.Model) string {
	c := m.Caps()
	var out []string
	if c.Thinking {
		out = append(out, "thinking")
	}
	if c.Vision {
		out = append(out, "vision")
	}
	if c.Tools {
		out = append(out, "tools")
	}
	if len(out) == 0 {
		return "no tools, vision or thinking"
	}
	return strings.Join(out, ", ")
}

func modelMeta(m onboarding.Model) string {
	if m.Kind == config.KindEmbedding {
		s := fmt.Sprintf("embedding, %d dimensions", m.Dimension)
		if m.BatchLimit > 0 {
			s += fmt.Sprintf(", batches of %d", m.BatchLimit)
		}
		return s
	}
	return caps(m)
}

func verdictKind(v *onboarding.Verdict) string {
	switch {
	case v == nil:
		return ""
	case v.OK && v.Class == "":
		return "ok"
	case v.OK:
		return "warn"
	}
	return "bad"
}

// Snippets returns the copy-paste snippets for the new caller key.
func (d DonePage) Snippets() []components.Snippet {
	out := components.CallSnippets(d.APIBase, d.CallerKey)
	if d.Embedding != "" {
		out = append(out, components.Snippet{ID: "curl-embeddings", Title: "curl (embeddings)", Text: "curl " + d.APIBase + "/embeddings \\\n" +
			"  -H \"Authorization: Bearer " + d.CallerKey + "\" \\\n" +
			"  -H \"Content-Type: application/json\" \\\n" +
			"  -d '{\"model\": \"" + d.Embedding + "\", \"input\": [\"Hello!\"]}'"})
	}
	return out
}

func joinComma(xs []string) string { return strings.Join(xs, ", ") }

func templateSummary(t onboarding.Template) string {
	if t.CustomModels && len(t.Models) == 0 {
		return "You name the models it serves."
	}
	var rec []string
	for _, m := range t.Models {
		if m.Recommended {
			rec = append(rec, m.Upstream)
		}
	}
	return "Recommended: " + strings.Join(rec, ", ") + "."
}

func protocolHint(p config.Protocol) string {
	switch p {
	case config.ProtocolAnthropic:
		return "Anthropic Messages API"
	case config.ProtocolGemini:
		return "Gemini API"
	case config.ProtocolAzure:
		return "your Azure OpenAI resource's endpoint"
	case config.ProtocolBedrock:
		return "bedrock-runtime endpoint of the region"
	}
	return "OpenAI-compatible; include the /v1 path"
}

// aliasWords lists aliases as "claude-opus-* → deep, gpt-5* → standard".
func aliasWords(as []config.ModelAlias) string {
	parts := make([]string, len(as))
	for i, a := range as {
		target := string(a.Tier)
		if a.LogicModel != "" {
			target = "logic model " + a.LogicModel
		}
		parts[i] = a.Pattern + " → " + target
	}
	return strings.Join(parts, ", ")
}
