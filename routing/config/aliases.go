package config

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Model aliases let clients that name vendor models — coding agents such
// as Claude Code ("claude-opus-5-5") or Codex ("gpt-5.5-codex") — reach a
// route group's tiers without being reconfigured.
//
// The model field of a request is resolved in this order (routing.Resolve,
// the data-plane contract):
//
//  1. a tier name: fast, standard, deep, and auto (= standard);
//  2. a logic-model code the caller's route group reaches (through its
//     tiers or its fallback group's): an explicit request, which no alias
//     ever substitutes;
//  3. the group's aliases: exact names first, then patterns in their
//     listed order, the first that matches winning.
//
// An alias to a tier is a request for that tier (a request asking for
// reasoning still goes to deep); an alias to a logic model is an explicit
// request for that model, which the group must reach like a code.

// ModelAlias maps the model names a pattern matches to a tier or a logic
// model of its route group. Exactly one of Tier and LogicModel is set.
type ModelAlias struct {
	// Pattern is an exact name, or a glob whose only wildcards are '*'
	// (any run of characters, none included) and '?' (one character).
	Pattern    string   `yaml:"pattern" json:"pattern"`
	Tier       TierName `yaml:"tier,omitempty" json:"tier,omitempty"`
	LogicModel string   `yaml:"logic_model,omitempty" json:"logic_model,omitempty"`
}

// Exact reports whether the pattern has no wildcard: it matches only itself.
func (a ModelAlias) Exact() bool { return !strings.ContainsAny(a.Pattern, "*?") }

// MaxAliasPattern bounds an alias pattern in bytes (the data plane refuses
// longer model fields anyway).
const MaxAliasPattern = 256

// ValidateModelAlias checks one alias's own fields: the pattern's syntax
// and that it names a tier or a logic model (whether the logic model
// exists and is reachable is the dry-run's to say).
func ValidateModelAlias(a ModelAlias) FieldErrors {
	f := FieldErrors{}
	if msg := patternProblem(a.Pattern); msg != "" {
		f.Add("pattern", msg)
	}
	switch {
	case a.Tier == "" && strings.TrimSpace(a.LogicModel) == "":
		f.Add("tier", "must name a tier or a logic model")
	case a.Tier != "" && a.LogicModel != "":
		f.Add("logic_model", "must name a tier or a logic model, not both")
	case a.Tier != "" && !ValidTier(string(a.Tier)):
		f.Add("tier", "must be fast, standard or deep")
	}
	return f
}

// patternProblem says what is wrong with an alias pattern, or "".
func patternProblem(p string) string {
	switch {
	case p == "":
		return "is required"
	case len(p) > MaxAliasPattern:
		return fmt.Sprintf("must be at most %d characters", MaxAliasPattern)
	}
	for i := 0; i < len(p); i++ {
		switch c := p[i]; {
		case c <= ' ' || c >= 0x7f:
			return "must be printable ASCII without spaces, as model names are"
		case strings.IndexByte(`[]{}\`, c) >= 0:
			return "may use only * (any run of characters) and ? (one character) as wildcards; " + string(c) + " is not allowed"
		}
	}
	return ""
}

// validateAliases checks every alias of a group, its fields named
// aliases[i].pattern and so on.
func validateAliases(f FieldErrors, g RouteGroup) {
	for i, a := range g.Aliases {
		for field, msg := range ValidateModelAlias(a) {
			f.Add(fmt.Sprintf("aliases[%d].%s", i, field), msg)
		}
	}
}

// MatchPattern reports whether name matches an alias pattern: '*' matches
// any run of characters (none included), '?' exactly one character, any
// other byte itself.
func MatchPattern(pattern, name string) bool {
	p, n := 0, 0
	star, starN := -1, 0 // the last '*' seen, and where in name its run ends now
	for n < len(name) {
		if p < len(pattern) {
			switch c := pattern[p]; c {
			case '*':
				star, starN = p, n
				p++
				continue
			case '?':
				_, size := utf8.DecodeRuneInString(name[n:])
				p, n = p+1, n+size
				continue
			default:
				if name[n] == c {
					p, n = p+1, n+1
					continue
				}
			}
		}
		if star < 0 {
			return false
		}
		// Let the last '*' take one more character and try again from there.
		_, size := utf8.DecodeRuneInString(name[starN:])
		starN += size
		p, n = star+1, starN
	}
	for p < len(pattern) && pattern[p] == '*' {
		p++
	}
	return p == len(pattern)
}

// maxCoverStates bounds the search of PatternCovers. Patterns people write
// stay far below it; past it the answer is false (not shown to cover).
const maxCoverStates = 1 << 16

// posSet is a set of positions in a pattern of at most MaxAliasPattern bytes.
type posSet [(MaxAliasPattern + 64) / 64]uint64

func (s *posSet) add(i int)     { s[i/64] |= 1 << (i % 64) }
func (s posSet) has(i int) bool { return s[i/64]&(1<<(i%64)) != 0 }
func (s posSet) empty() bool    { return s == posSet{} }
func (s *posSet) addAll(o posSet) {
	for i := range s {
		s[i] |= o[i]
	}
}

// PatternCovers reports whether every name b matches is matched by a too,
// exactly, for patterns made of literals, '*' and '?' (at most
// MaxAliasPattern bytes each): b listed after a can never apply.
//
// It walks the product of b's pattern automaton with the subset automaton
// of a's, over one symbol per literal either pattern uses plus one for any
// other character (all others behave alike in both), looking for a name b
// accepts and a does not.
func PatternCovers(a, b string) bool {
	if len(a) > MaxAliasPattern || len(b) > MaxAliasPattern {
		return false
	}
	symbols := []byte{0} // 0 stands for every character neither pattern names
	for _, p := range []string{a, b} {
		for i := 0; i < len(p); i++ {
			if c := p[i]; c != '*' && c != '?' && !strings.ContainsRune(string(symbols), rune(c)) {
				symbols = append(symbols, c)
			}
		}
	}
	type state struct {
		j int // position in b
		s posSet
	}
	start := state{0, closure(a, single(0))}
	seen := map[state]bool{start: true}
	queue := []state{start}
	push := func(st state) {
		if !seen[st] {
			seen[st] = true
			queue = append(queue, st)
		}
	}
	for len(queue) > 0 {
		if len(seen) > maxCoverStates {
			return false
		}
		st := queue[0]
		queue = queue[1:]
		if st.s.empty() {
			return false // a matches nothing from here; b still matches some name
		}
		if st.j == len(b) {
			if !st.s.has(len(a)) {
				return false // a name b matches and a does not
			}
			continue
		}
		switch c := b[st.j]; c {
		case '*':
			push(state{st.j + 1, st.s})
			for _, x := range symbols {
				push(state{st.j, step(a, st.s, x)})
			}
		case '?':
			for _, x := range symbols {
				push(state{st.j + 1, step(a, st.s, x)})
			}
		default:
			push(state{st.j + 1, step(a, st.s, c)})
		}
	}
	return true
}

func single(i int) posSet {
	var s posSet
	s.add(i)
	return s
}

// closure adds to s the positions a '*' may skip to (it matches nothing).
func closure(p string, s posSet) posSet {
	for i := 0; i < len(p); i++ {
		if p[i] == '*' && s.has(i) {
			s.add(i + 1)
		}
	}
	return s
}

// step is where pattern p may be after reading character c from s.
func step(p string, s posSet, c byte) posSet {
	var out posSet
	for i := 0; i < len(p); i++ {
		if !s.has(i) {
			continue
		}
		switch p[i] {
		case '*':
			out.add(i)
		case '?':
			out.add(i + 1)
		case c:
			out.add(i + 1)
		}
	}
	return closure(p, out)
}

// RAlias is a compiled model alias: a tier, or the logic model it names.
type RAlias struct {
	Pattern string
	Exact   bool
	// Position is the alias's place in its group's list, from 1.
	Position int
	Tier     TierName // "" when the alias names a logic model
	Model    *RModel  // nil when it names a tier
}

// rAliases is a group's compiled aliases: exact names in a map, patterns
// in their listed order.
type rAliases struct {
	exact    map[string]*RAlias
	patterns []*RAlias
}

// Alias returns the alias that applies to a model name that is neither a
// tier nor a logic-model code the group reaches (routing.Resolve checks
// those first): an exact alias, else the first pattern that matches; nil
// when none does.
func (g *RGroup) Alias(name string) *RAlias {
	if a, ok := g.aliases.exact[name]; ok {
		return a
	}
	for _, a := range g.aliases.patterns {
		if MatchPattern(a.Pattern, name) {
			return a
		}
	}
	return nil
}

// compileAliases compiles g's aliases into rg. An alias naming an unknown
// tier or logic model refuses the version (the dry-run blocks it first).
func compileAliases(g RouteGroup, rg *RGroup, models map[string]*RModel) error {
	for i, a := range g.Aliases {
		ra := &RAlias{Pattern: a.Pattern, Exact: a.Exact(), Position: i + 1, Tier: a.Tier}
		switch {
		case a.LogicModel != "":
			if ra.Model = models[a.LogicModel]; ra.Model == nil {
				return fmt.Errorf("config: route group %s: alias %q names unknown logic model %q", g.Name, a.Pattern, a.LogicModel)
			}
		case !ValidTier(string(a.Tier)):
			return fmt.Errorf("config: route group %s: alias %q names unknown tier %q", g.Name, a.Pattern, a.Tier)
		}
		rg.Aliases = append(rg.Aliases, ra)
		if !ra.Exact {
			rg.aliases.patterns = append(rg.aliases.patterns, ra)
			continue
		}
		if rg.aliases.exact == nil {
			rg.aliases.exact = map[string]*RAlias{}
		}
		if _, dup := rg.aliases.exact[a.Pattern]; !dup { // the first one listed
			rg.aliases.exact[a.Pattern] = ra
		}
	}
	return nil
}
