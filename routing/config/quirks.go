package config

import (
	"slices"
	"strings"
)

// Quirk is one known way an OpenAI-compatible vendor departs from OpenAI's
// chat-completions wire. A provider's quirks make the OpenAI adapter send
// the older form the vendor accepts; the onboarding templates set them for
// the vendors known to need them.
type Quirk string

const (
	// QuirkNoStreamOptions: the vendor rejects stream_options, so a stream
	// goes without it and, when the vendor reports no usage, the gateway
	// counts the tokens itself (the call log marks them estimated).
	QuirkNoStreamOptions Quirk = "no_stream_options"
	// QuirkMaxTokens: the vendor rejects max_completion_tokens; the limit
	// is sent as max_tokens.
	QuirkMaxTokens Quirk = "max_tokens"
	// QuirkNoDeveloperRole: the vendor rejects the developer role; such
	// messages are sent as system messages.
	QuirkNoDeveloperRole Quirk = "no_developer_role"
	// QuirkReasoningContent is a template's declaration only, never a
	// provider's setting: the vendor's answers carry their reasoning in
	// reasoning_content, which the gateway always reads as reasoning
	// (Messages thinking blocks, Responses reasoning items), never content.
	QuirkReasoningContent Quirk = "reasoning_content"
)

// ProviderQuirks are the quirks a provider can be set to work around, in
// the order the console lists them.
var ProviderQuirks = []Quirk{QuirkNoStreamOptions, QuirkMaxTokens, QuirkNoDeveloperRole}

// TemplateQuirks are the quirks a catalogue template may declare: the
// provider's, and the answer traits handled whatever the setting.
var TemplateQuirks = append(slices.Clone(ProviderQuirks), QuirkReasoningContent)

// Quirks is a provider's set of quirks, sorted, each at most once.
type Quirks []Quirk

// Has reports whether q is in the set.
func (qs Quirks) Has(q Quirk) bool { return slices.Contains(qs, q) }

// String is the set as the canonical text and the diff show it.
func (qs Quirks) String() string {
	parts := make([]string, len(qs))
	for i, q := range qs {
		parts[i] = string(q)
	}
	return strings.Join(parts, ", ")
}

// CanonicalQuirks sorts p's quirks and drops repeats; an empty set is nil.
func CanonicalQuirks(p *Provider) {
	if len(p.Quirks) == 0 {
		p.Quirks = nil
		return
	}
	for i, q := range p.Quirks {
		p.Quirks[i] = Quirk(strings.TrimSpace(string(q)))
	}
	slices.Sort(p.Quirks)
	p.Quirks = slices.Compact(p.Quirks)
}

// checkQuirks: only the provider quirks, only on an OpenAI-compatible
// provider, each once.
func checkQuirks(f FieldErrors, p Provider) {
	seen := map[Quirk]bool{}
	for _, q := range p.Quirks {
		switch {
		case !slices.Contains(ProviderQuirks, q):
			f.Add("quirks", quoteName(string(q))+" is not a known quirk (no_stream_options, max_tokens, no_developer_role)")
		case seen[q]:
			f.Add("quirks", string(q)+" is listed twice")
		case p.Protocol != ProtocolOpenAI:
			f.Add("quirks", "only an OpenAI-compatible provider has wire quirks")
		}
		seen[q] = true
	}
}
