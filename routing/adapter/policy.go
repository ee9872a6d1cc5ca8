package adapter

import (
	"fmt"
	"strings"
	"sync"

	"switchyard/routing/config"
)

// The field policy: what a deployment gets of a caller's request.
//
// On a native path — the caller's protocol is the deployment's (chat
// completions to an OpenAI-protocol deployment, Messages to Anthropic,
// Responses to an OpenAI deployment declaring responses_api) — the body
// reaches the vendor as sent, unknown fields, roles, block and tool types
// included: validating the vendor's schema is the vendor's job, and the
// gateway judges nothing (Judge returns a native verdict).
//
// On a translated path every field the request sets has one of four
// outcomes, decided by the front door for its own fields (the request's
// Drops and Untranslatable, door notation) and by the protocol's table for
// the canonical chat fields (this file's FieldTable, one per adapter):
//
//   - pass: forwarded as sent;
//   - translate: turned into the vendor's own form;
//   - drop: left out and recorded, because it tunes how a vendor works but
//     not the contract of the answer (a cache hint, an end-user id, a
//     verbosity hint, a field newer than this build, …);
//   - refuse: the deployment is skipped with unsupported_parameter, because
//     losing the field would change what the caller receives (a schema that
//     cannot be enforced, log probabilities, a hosted tool without an
//     equivalent, content it has no place for).
//
// A deployment with a strict field policy (config.Deployment.StrictFields)
// refuses what it would drop.

// ChatFields lists every top-level field of OpenAI's chat-completions request
// that the parser knows, plus the non-standard "thinking" switch and
// "top_k" (a sampling extension several vendors accept). A field's position
// is its bit in FieldSet, and call logs keep those bits, so new fields are
// only ever appended.
var ChatFields = [...]string{
	"model",
	"messages",
	"stream",
	"stream_options",
	"max_tokens",
	"max_completion_tokens",
	"temperature",
	"top_p",
	"stop",
	"tools",
	"tool_choice",
	"reasoning_effort",
	"thinking",
	"response_format",
	"user",
	"n",
	"seed",
	"frequency_penalty",
	"presence_penalty",
	"logit_bias",
	"logprobs",
	"top_logprobs",
	"parallel_tool_calls",
	"modalities",
	"audio",
	"prediction",
	"service_tier",
	"store",
	"metadata",
	"web_search_options",
	"functions",
	"function_call",
	"verbosity",
	"prompt_cache_key",
	"prompt_cache_retention",
	"safety_identifier",
	"top_k",
}

// AnyOtherField is the table row for a top-level field the parser does not
// know (a vendor extension, or a field newer than this build).
const AnyOtherField = "*"

var chatFieldIndex = func() map[string]int {
	m := make(map[string]int, len(ChatFields))
	for i, f := range ChatFields {
		m[f] = i
	}
	return m
}()

// FieldIndex is the position of an OpenAI chat field in ChatFields, or -1.
func FieldIndex(name string) int {
	if i, ok := chatFieldIndex[name]; ok {
		return i
	}
	return -1
}

// FieldSet is a set of ChatFields, by position.
type FieldSet uint64

// Has reports whether the set holds the field named name.
func (s FieldSet) Has(name string) bool {
	i := FieldIndex(name)
	return i >= 0 && s&(1<<i) != 0
}

// With returns the set plus the field named name (a known field).
func (s FieldSet) With(name string) FieldSet {
	if i := FieldIndex(name); i >= 0 {
		return s | 1<<i
	}
	return s
}

// Names lists the set's fields in ChatFields order.
func (s FieldSet) Names() []string {
	var out []string
	for i, f := range ChatFields {
		if s&(1<<i) != 0 {
			out = append(out, f)
		}
	}
	return out
}

// Decision is what a translated path does with a request field the caller
// set.
type Decision string

const (
	// Pass forwards the field as the caller sent it.
	Pass Decision = "pass"
	// Translate turns the field into the vendor's own form.
	Translate Decision = "translate"
	// Drop leaves the field out and records it on the call: it tunes how a
	// vendor works, not the contract of the answer.
	Drop Decision = "drop"
	// Refuse skips the deployment with unsupported_parameter; if no
	// deployment is left the caller gets 400 naming the field.
	Refuse Decision = "refuse"
)

// Decisions lists the four outcomes in the order the tables explain them.
var Decisions = []Decision{Pass, Translate, Drop, Refuse}

// FieldRule is one row of an adapter's field table.
type FieldRule struct {
	Decision Decision
	// How says in words what the adapter sends instead (Translate), why it
	// may leave the field out (Drop) or why it cannot carry it (Refuse);
	// the manual's field tables repeat it.
	How string
	// RefuseIf, on a Translate or Drop row, refuses the field for the
	// requests or deployments where it would change the answer (nil:
	// never).
	RefuseIf func(r *ChatRequest, caps config.Capabilities) bool
	// DropIf, on a Translate row, drops the field for the deployments that
	// have nothing to translate it into (nil: never).
	DropIf func(r *ChatRequest, caps config.Capabilities) bool
}

// decide is the rule's outcome for r on a deployment with caps.
func (f FieldRule) decide(r *ChatRequest, caps config.Capabilities) Decision {
	switch {
	case f.RefuseIf != nil && f.RefuseIf(r, caps):
		return Refuse
	case f.DropIf != nil && f.DropIf(r, caps):
		return Drop
	}
	return f.Decision
}

// Hints are canonical settings a front door may set that are no OpenAI
// chat field (they are not in the chat body): Anthropic's
// output_config.effort. Each table decides them like a field.
var Hints = [...]string{"effort"}

// hintSet reports whether r sets hint h.
func hintSet(r *ChatRequest, h string) bool {
	return h == "effort" && r.Effort != ""
}

// FieldTable is an adapter's decision for every entry of ChatFields and for
// AnyOtherField.
type FieldTable map[string]FieldRule

// Verdict is what a deployment gets of one request.
type Verdict struct {
	// Native: the deployment speaks the caller's protocol; the body passes
	// as sent and nothing below applies.
	Native bool
	// Refused is the first field the deployment cannot carry (door
	// notation), "" when it can carry the request.
	Refused string
	// Dropped lists the fields the deployment will not get (door notation,
	// array positions as []), in request order.
	Dropped []string
}

// Judge is the field policy's verdict for a deployment of protocol p with
// caps (strict: drops become refusals) on r. It allocates only when a
// translation drops something.
func Judge(p config.Protocol, r *ChatRequest, caps config.Capabilities, strict bool) Verdict {
	return judge(p, r, caps, strict, true)
}

// Refusal is Judge's Refused alone: the router asks it of every deployment
// of a plan, and it allocates nothing.
func Refusal(p config.Protocol, r *ChatRequest, caps config.Capabilities, strict bool) string {
	return judge(p, r, caps, strict, false).Refused
}

// judge decides; collect lists the drops (else it only counts them, for a
// strict deployment).
func judge(p config.Protocol, r *ChatRequest, caps config.Capabilities, strict, collect bool) Verdict {
	if r == nil {
		return Verdict{}
	}
	if r.Native == nil {
		if p == config.ProtocolOpenAI {
			return Verdict{Native: true} // chat completions to an OpenAI-protocol vendor
		}
	} else if r.Native.Passes(p, caps) {
		return Verdict{Native: true}
	}
	var v Verdict
	if r.Untranslatable != "" {
		v.Refused = r.Untranslatable
		return v
	}
	t, ok := fieldTables()[p]
	if !ok {
		return v // a protocol this build does not implement: the dry-run says so
	}
	d := drops{collect: collect, first: firstOf(r.Drops), n: len(r.Drops)}
	if collect {
		d.list = r.Drops[:len(r.Drops):len(r.Drops)]
	}
	for i, name := range ChatFields {
		if r.Set&(1<<i) == 0 {
			continue
		}
		switch t.rule(name).decide(r, caps) {
		case Refuse:
			v.Refused = r.Native.param(name)
			return v
		case Drop:
			d.add(r.Native.param(name))
		}
	}
	for _, h := range Hints {
		if !hintSet(r, h) {
			continue
		}
		switch t.rule(h).decide(r, caps) {
		case Refuse:
			v.Refused = r.Native.param(h)
			return v
		case Drop:
			d.add(r.Native.param(h))
		}
	}
	if len(r.Unknown) > 0 {
		switch t.rule(AnyOtherField).Decision {
		case Refuse:
			v.Refused = r.Unknown[0]
			return v
		case Drop:
			for _, u := range r.Unknown {
				d.add(u)
			}
		}
	}
	if strict && d.n > 0 {
		v.Refused = d.first
		return v
	}
	v.Dropped = d.list
	return v
}

// rule is the table's row for a field; a field without one is refused.
func (t FieldTable) rule(name string) FieldRule {
	if r, ok := t[name]; ok {
		return r
	}
	return FieldRule{Decision: Refuse}
}

// drops counts a verdict's drops, listing them when asked.
type drops struct {
	collect bool
	list    []string
	first   string
	n       int
}

func (d *drops) add(name string) {
	if d.n == 0 {
		d.first = name
	}
	d.n++
	if d.collect {
		d.list = append(d.list, name)
	}
}

func firstOf(s []string) string {
	if len(s) == 0 {
		return ""
	}
	return s[0]
}

// Fielded is an adapter that declares its field table; every adapter of
// All does.
type Fielded interface {
	Fields() FieldTable
}

// FieldRuleOf is protocol p's rule for the chat field named field.
func FieldRuleOf(p config.Protocol, field string) (FieldRule, bool) {
	r, ok := fieldTables()[p][field]
	return r, ok
}

// fieldTables are the tables of All, built once.
var fieldTables = sync.OnceValue(func() map[config.Protocol]FieldTable {
	out := map[config.Protocol]FieldTable{}
	for p, a := range All() {
		if f, ok := a.(Fielded); ok {
			out[p] = f.Fields()
		}
	}
	// A chat caller reaches a Claude model on Bedrock through Converse.
	out[config.WireBedrockAnthropic] = out[config.ProtocolBedrock]
	return out
})

// CodeUnsupportedParameter is the error code of a refused request field.
const CodeUnsupportedParameter = "unsupported_parameter"

// unsupportedField is an adapter's own refusal of a field, should a request
// reach it past the router's check.
func unsupportedField(field string) *Error {
	return &Error{Class: ClassBadRequest, Code: CodeUnsupportedParameter, Param: field,
		Message: fmt.Sprintf("parameter %s is not supported by this upstream protocol", field)}
}

// Protocols lists the protocols with a field table, in the order the
// manual's field tables show them, with their titles.
var Protocols = []struct {
	Protocol config.Protocol
	Title    string
}{
	{config.ProtocolOpenAI, "OpenAI protocol (OpenAI and compatible vendors)"},
	{config.ProtocolAnthropic, "Anthropic protocol (Messages API)"},
	{config.ProtocolGemini, "Gemini protocol (generateContent)"},
	{config.ProtocolBedrock, "Bedrock protocol (Converse, every model)"},
}

// FieldTablesMarkdown renders the chat fields' table as the manual
// (static/manual/fields.md) shows it: one row per field, one column per
// protocol (its decision and how).
func FieldTablesMarkdown() string {
	var b strings.Builder
	b.WriteString("| field |")
	for _, p := range Protocols {
		fmt.Fprintf(&b, " %s |", p.Title)
	}
	b.WriteString("\n| --- |")
	for range Protocols {
		b.WriteString(" --- |")
	}
	b.WriteString("\n")
	rows := append(append(ChatFields[:], Hints[:]...), AnyOtherField)
	for _, f := range rows {
		name := "`" + f + "`"
		switch f {
		case AnyOtherField:
			name = "any other field"
		case "effort":
			name = "effort (a hint: Messages' `output_config.effort`)"
		}
		fmt.Fprintf(&b, "| %s |", name)
		for _, p := range Protocols {
			rule := fieldTables()[p.Protocol][f]
			fmt.Fprintf(&b, " **%s**: %s |", rule.Decision, strings.ReplaceAll(rule.How, "|", `\|`))
		}
		b.WriteString("\n")
	}
	return b.String()
}
