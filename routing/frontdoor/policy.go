package frontdoor

import (
	"fmt"
	"strings"

	"switchyard/routing/adapter"
	"switchyard/routing/config"
)

// The front doors' field policies: what a translation — to a deployment
// that does not speak the door's protocol natively — does with each of the
// door's own fields. A row either hands the field to a canonical chat field
// (Chat), whose outcome per protocol is that protocol's table
// (adapter/policy_tables.go), or decides it for every translated protocol
// alike (Decision). The manual's Messages and Responses field tables
// (static/manual/fields.md) are these rows (DoorPolicyMarkdown);
// TestDoorPolicies parses every row's sample and checks the verdict each
// protocol gives it.

// DoorField is one row of a door's field policy.
type DoorField struct {
	// Field is the door's name for it, array positions as [] (a block or
	// tool type in parentheses); a dropped or refused field is recorded
	// under this name.
	Field string
	// Chat is the canonical chat field (or hint) the translation writes;
	// "" when the door decides alone.
	Chat string
	// Decision is the door's own outcome when Chat is "".
	Decision adapter.Decision
	// How says what the translation does, in words.
	How string
	// Native says what a deployment speaking the door's protocol gets ("":
	// the body as sent).
	Native string
	// Sample is request members that set the field, for the test; Header,
	// for a request header, "name: value".
	Sample string
	Header string
	// Stateless marks a field refused with 400 on every path (the gateway
	// stores nothing); Refusal words its cell ("": "400").
	Stateless bool
	Refusal   string
}

// outcome is the row's decision on a translated deployment of protocol p,
// with the protocol table's conditions ("translate, or refuse").
func (f DoorField) outcome(p config.Protocol) string {
	switch {
	case f.Stateless:
		if f.Refusal != "" {
			return f.Refusal
		}
		return "400"
	case f.Chat == "":
		return string(f.Decision)
	}
	rule, ok := adapter.FieldRuleOf(p, f.Chat)
	if !ok {
		return string(adapter.Refuse)
	}
	out := string(rule.Decision)
	if rule.DropIf != nil {
		out += ", or drop"
	}
	if rule.RefuseIf != nil {
		out += ", or refuse"
	}
	return out
}

// DoorPolicyMarkdown renders a door's rows as the manual shows them: the
// native path, the translation, and the outcome on each protocol that
// translates (the native protocol has its own column).
func DoorPolicyMarkdown(rows []DoorField, native config.Protocol, nativeTitle string) string {
	var protocols []config.Protocol
	names := map[config.Protocol]string{config.ProtocolOpenAI: "OpenAI chat", config.ProtocolAnthropic: "Anthropic", config.ProtocolGemini: "Gemini",
		config.ProtocolBedrock: "Bedrock Converse"}
	var b strings.Builder
	fmt.Fprintf(&b, "| field | %s | translated |", nativeTitle)
	for _, p := range adapter.Protocols {
		if p.Protocol != native {
			protocols = append(protocols, p.Protocol)
			fmt.Fprintf(&b, " %s |", names[p.Protocol])
		}
	}
	b.WriteString("\n| --- | --- | --- |" + strings.Repeat(" --- |", len(protocols)) + "\n")
	esc := func(s string) string { return strings.ReplaceAll(s, "|", `\|`) }
	for _, f := range rows {
		name := "`" + f.Field + "`"
		if f.Field == adapter.AnyOtherField {
			name = "any other field"
		}
		nat := f.Native
		if nat == "" {
			nat = "forwarded as sent"
		}
		how := f.How
		if f.Chat != "" && !strings.Contains(how, "`"+f.Chat+"`") {
			how = "→ `" + f.Chat + "`: " + how
		}
		fmt.Fprintf(&b, "| %s | %s | %s |", name, esc(nat), esc(how))
		for _, p := range protocols {
			fmt.Fprintf(&b, " %s |", f.outcome(p))
		}
		b.WriteString("\n")
	}
	return b.String()
}

// knownFields are the names a dropped field can have that the policies
// list: the doors' rows, the chat fields and the doors' names for them.
var knownFields = func() map[string]bool {
	m := map[string]bool{}
	for _, rows := range [][]DoorField{MessagesPolicy, ResponsesPolicy} {
		for _, f := range rows {
			m[f.Field] = true
		}
	}
	for _, f := range adapter.ChatFields {
		m[f] = true
	}
	for _, params := range []map[string]string{messagesParams, responsesParams} {
		for _, f := range params {
			m[f] = true
		}
	}
	return m
}()

// FieldLabel is a dropped field's name as a metric label: the name when a
// policy lists it, else "other" (a caller's own field names must not grow
// the series without bound).
func FieldLabel(name string) string {
	if knownFields[name] {
		return name
	}
	return "other"
}
