package adapter

import (
	"fmt"
	"strings"
	"sync"

	"switchyard/routing/config"
)

// ChatFields lists every top-level field of OpenAI's chat-completions request
// that the parser knows, plus the non-standard "thinking" switch. A field's
// position is its bit in FieldSet. Each adapter's FieldTable holds one
// decision per entry (and one for AnyOtherField); the README's section
// "Request fields per upstream protocol" is these tables in words.
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
}

// AnyOtherField is the table row for a top-level field the parser does not
// know (a vendor extension such as top_k, or a field newer than this build).
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

// Decision is what an adapter does with a request field the caller set.
type Decision string

const (
	// Pass forwards the field as the caller sent it.
	Pass Decision = "pass"
	// Translate turns the field into the vendor's own form.
	Translate Decision = "translate"
	// Refuse answers 400 unsupported_parameter naming the field and the
	// deployment; the request never reaches the vendor.
	Refuse Decision = "refuse"
)

// FieldRule is one row of an adapter's field table.
type FieldRule struct {
	Decision Decision
	// How says in words what the adapter sends instead (Translate), or why it
	// cannot (Refuse); the README's table repeats it.
	How string
	// RefuseIf, on a Translate row, refuses the field for the requests or
	// deployments the translation cannot serve faithfully (nil: never).
	RefuseIf func(r *ChatRequest, caps config.Capabilities) bool
}

// FieldTable is an adapter's decision for every entry of ChatFields and for
// AnyOtherField.
type FieldTable map[string]FieldRule

// Refused is the first field of r that the table refuses for a deployment
// with caps, or "" when the adapter can carry the whole request. A field the
// table has no row for is refused: nothing is ever dropped silently.
func (t FieldTable) Refused(r *ChatRequest, caps config.Capabilities) string {
	if r == nil {
		return ""
	}
	for i, name := range ChatFields {
		if r.Set&(1<<i) == 0 {
			continue
		}
		rule, ok := t[name]
		if !ok || rule.Decision == Refuse || rule.RefuseIf != nil && rule.RefuseIf(r, caps) {
			return name
		}
	}
	if len(r.Unknown) > 0 {
		if rule, ok := t[AnyOtherField]; !ok || rule.Decision == Refuse {
			return r.Unknown[0]
		}
	}
	return ""
}

// Fielded is an adapter that declares its field table; every adapter of
// All does.
type Fielded interface {
	Fields() FieldTable
}

// Refused is the first field of r that protocol p's adapter refuses for a
// deployment with caps ("" when it carries the whole request, or when this
// build does not implement p).
//
// A front door's request (r.Native) is carried whole to a deployment that
// speaks the door natively; to any other it is refused for the first field
// its translation cannot carry, then for what p's table refuses, named in
// the door's notation.
func Refused(p config.Protocol, r *ChatRequest, caps config.Capabilities) string {
	if r != nil && r.Native != nil {
		if r.Native.Passes(p, caps) {
			return ""
		}
		if r.Native.Refuse != "" {
			return r.Native.Refuse
		}
	}
	if t, ok := fieldTables()[p]; ok {
		f := t.Refused(r, caps)
		if f != "" && r.Native != nil {
			f = r.Native.param(f)
		}
		return f
	}
	return ""
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

// fieldTableOrder is the order of the README's tables.
var fieldTableOrder = []struct {
	p     config.Protocol
	title string
}{
	{config.ProtocolOpenAI, "OpenAI protocol (OpenAI and compatible vendors)"},
	{config.ProtocolAnthropic, "Anthropic protocol (Messages API)"},
	{config.ProtocolGemini, "Gemini protocol (generateContent)"},
}

// FieldTablesMarkdown renders the field tables as the README shows them:
// one table per protocol, one row per field.
func FieldTablesMarkdown() string {
	var b strings.Builder
	for i, t := range fieldTableOrder {
		if i > 0 {
			b.WriteString("\n")
		}
		table := fieldTables()[t.p]
		fmt.Fprintf(&b, "#### %s\n\n| field | decision | how |\n| --- | --- | --- |\n", t.title)
		for _, f := range append(ChatFields[:], AnyOtherField) {
			rule := table[f]
			name := "`" + f + "`"
			if f == AnyOtherField {
				name = "any other field"
			}
			fmt.Fprintf(&b, "| %s | %s | %s |\n", name, rule.Decision, strings.ReplaceAll(rule.How, "|", `\|`))
		}
	}
	return b.String()
}
