package fakevendor

import (
	"bytes"
	"encoding/json"
	"strings"
)

// Scripted tool use, the same in every protocol (the package doc has the
// rules). Each protocol reads its request into turns and offered tools;
// decide picks the answer.

// resultEcho is how many characters of a tool result the answer repeats.
const resultEcho = 200

// offered is a tool the request offers the model.
type offered struct {
	name      string
	namespace string // Responses: the namespace tool it is in
	custom    bool   // Responses: a custom tool, called with free text
}

// label is the tool's name in the "offered:" list.
func (t offered) label() string {
	if t.namespace != "" {
		return t.namespace + "." + t.name
	}
	return t.name
}

// is reports whether a directive's NAME names t: its name, or its name
// qualified by its namespace (ns.name, or nsname as flat names are made).
func (t offered) is(name string) bool {
	return name == t.name || (t.namespace != "" && (name == t.namespace+"."+t.name || name == t.namespace+t.name))
}

// turn is one message of the conversation as the fake reads it. System and
// developer messages are instructions, not turns.
type turn struct {
	model   bool     // the model's turn (text, tool calls, reasoning)
	text    string   // the user's words, text parts joined by "\n"
	results []string // tool results it carries
}

// intent is what the fake answers: a tool call, a fixed text, or (the zero
// value) the usual greeting.
type intent struct {
	tool offered
	args string // the call's JSON arguments, or a custom tool's input
	say  string
}

// decide picks the answer to a conversation offering tools.
func decide(turns []turn, tools []offered) intent {
	last := len(turns)
	for last > 0 && !turns[last-1].model {
		last--
	}
	var results []string
	words := false
	for _, t := range turns[last:] {
		results = append(results, t.results...)
		words = words || t.text != ""
	}
	if len(results) > 0 && !words {
		return intent{say: "Tool result: " + firstChars(strings.Join(results, "\n"), resultEcho)}
	}
	text := ""
	for i := len(turns) - 1; i >= 0 && text == ""; i-- {
		if !turns[i].model {
			text = turns[i].text
		}
	}
	name, rest, ok := directive(text)
	switch {
	case !ok || (name == "" && len(tools) == 0):
		return intent{}
	case name == "":
		t := firstPlain(tools)
		if t.custom {
			return intent{tool: t}
		}
		return intent{tool: t, args: "{}"}
	}
	for _, t := range tools {
		if !t.is(name) {
			continue
		}
		if t.custom {
			return intent{tool: t, args: strings.TrimSpace(rest)}
		}
		args, err := directiveArgs(rest)
		if err != nil {
			return intent{say: "call tool " + name + ": the arguments are not a JSON object: " + err.Error()}
		}
		return intent{tool: t, args: args}
	}
	labels := make([]string, len(tools))
	for i, t := range tools {
		labels[i] = t.label()
	}
	if len(labels) == 0 {
		labels = []string{"(none)"}
	}
	return intent{say: "no tool " + name + " was offered; offered: " + strings.Join(labels, ", ")}
}

// firstPlain is the tool a bare "call tool" calls: the first one that is
// neither custom nor in a namespace, else the first.
func firstPlain(tools []offered) offered {
	for _, t := range tools {
		if !t.custom && t.namespace == "" {
			return t
		}
	}
	return tools[0]
}

// directive finds "call tool" (any case, as whole words) in text; name is
// the tool name written after it ("" for a bare one) and rest what follows
// the name.
func directive(text string) (name, rest string, ok bool) {
	const word = "call tool"
	i := 0
	for ; ; i++ {
		if i+len(word) > len(text) {
			return "", "", false
		}
		if foldsTo(text[i:i+len(word)], word) && (i == 0 || !wordByte(text[i-1])) &&
			(i+len(word) == len(text) || !wordByte(text[i+len(word)])) {
			break
		}
	}
	rest = strings.TrimLeft(text[i+len(word):], " \t")
	n := 0
	for n < len(rest) && (wordByte(rest[n]) || strings.IndexByte(".:-", rest[n]) >= 0) {
		n++
	}
	name = strings.TrimRight(rest[:n], ".:-")
	return name, rest[len(name):], true
}

// foldsTo reports whether s equals the lower-case ASCII lower, ignoring case.
func foldsTo(s, lower string) bool {
	for i := range len(lower) {
		c := s[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != lower[i] {
			return false
		}
	}
	return true
}

func wordByte(c byte) bool {
	return c == '_' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
}

// directiveArgs is the JSON object at the start of rest, compacted (the
// wire shapes embed it in one SSE line), or {} when rest starts with
// anything else.
func directiveArgs(rest string) (string, error) {
	rest = strings.TrimLeft(rest, " \t\r\n")
	if !strings.HasPrefix(rest, "{") {
		return "{}", nil
	}
	var raw json.RawMessage
	if err := json.NewDecoder(strings.NewReader(rest)).Decode(&raw); err != nil {
		return "", err
	}
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return "", err
	}
	return b.String(), nil
}

// firstChars is s cut to at most n characters.
func firstChars(s string, n int) string {
	for i := range s {
		if n == 0 {
			return s[:i]
		}
		n--
	}
	return s
}

// contentTexts is the texts of a message content that is a string or an
// array of parts with "text" fields.
func contentTexts(raw json.RawMessage) []string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return nil
	}
	switch raw[0] {
	case '"':
		var s string
		_ = json.Unmarshal(raw, &s)
		return []string{s}
	case '[':
		var parts []struct {
			Text string `json:"text"`
		}
		_ = json.Unmarshal(raw, &parts)
		out := make([]string, 0, len(parts))
		for _, p := range parts {
			if p.Text != "" {
				out = append(out, p.Text)
			}
		}
		return out
	}
	return nil
}

// userWords joins the texts of a user message that are the user's own
// words: not empty, and not wholly a <system-reminder>.
func userWords(texts []string) string {
	out := ""
	for _, t := range texts {
		switch {
		case t == "" || isReminder(t):
		case out == "":
			out = t
		default:
			out += "\n" + t
		}
	}
	return out
}

// userText is userWords for a message content (a string or text parts);
// plain is its textOf, used as is for a string.
func userText(content json.RawMessage, plain string) string {
	if c := bytes.TrimSpace(content); len(c) > 0 && c[0] == '"' {
		return userWords([]string{plain})
	}
	return userWords(contentTexts(content))
}

// isReminder reports whether t is wholly one of the <system-reminder>
// blocks Claude Code adds to user turns.
func isReminder(t string) bool {
	t = strings.TrimSpace(t)
	return strings.HasPrefix(t, "<system-reminder>") && strings.HasSuffix(t, "</system-reminder>")
}

// resultText is a tool result's content (a string or text parts) as text.
func resultText(raw json.RawMessage) string {
	return strings.Join(contentTexts(raw), "\n")
}
