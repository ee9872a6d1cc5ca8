package config

import (
	"reflect"
	"strings"
	"testing"
)

func TestMatchPattern(t *testing.T) {
	cases := []struct {
		pattern, name string
		want          bool
	}{
		{"claude-opus-*", "claude-opus-5-5", true},
		{"claude-opus-*", "claude-opus-", true},
		{"claude-opus-*", "claude-sonnet-4-5", false},
		{"claude-opus-*", "xclaude-opus-5", false},
		{"gpt-*-codex", "gpt-5.5-codex", true},
		{"gpt-*-codex", "gpt-5.5-codex-mini", false},
		{"gpt-*-codex", "gpt--codex", true},
		{"gpt-5*", "gpt-5", true},
		{"gpt-5*", "gpt-4.1", false},
		{"o3*", "o3-pro", true},
		{"o4-mini*", "o4-mini-high", true},
		{"o?-mini", "o4-mini", true},
		{"o?-mini", "o-mini", false},
		{"o?-mini", "o44-mini", false},
		{"?", "é", true}, // one character, not one byte
		{"a?c", "aéc", true},
		{"*", "", true},
		{"*", "anything at all", true},
		{"**", "x", true},
		{"*a*a*", "banana", true},
		{"*a*a*", "bna", false},
		{"*ab", "aab", true},
		{"exact", "exact", true},
		{"exact", "exactly", false},
		{"", "", true},
		{"", "x", false},
	}
	for _, c := range cases {
		if got := MatchPattern(c.pattern, c.name); got != c.want {
			t.Errorf("MatchPattern(%q, %q) = %v, want %v", c.pattern, c.name, got, c.want)
		}
	}
}

func TestPatternCovers(t *testing.T) {
	cases := []struct {
		a, b string
		want bool // every name b matches is matched by a
	}{
		{"*", "claude-*", true},
		{"claude-*", "claude-opus-*", true},
		{"claude-opus-*", "claude-*", false},
		{"gpt-*", "gpt-5*", true},
		{"gpt-5*", "gpt-*-codex", false},
		{"gpt-*-codex", "gpt-5*", false},
		{"*-codex", "gpt-*-codex", true},
		{"gpt-*-codex", "*-codex", false},
		{"claude-opus-*", "claude-opus-*", true},
		{"a*", "a", true},
		{"a", "a*", false},
		{"a?c", "abc", true},
		{"abc", "a?c", false},
		{"?", "*", false},
		{"*", "", true},
		{"", "*", false},
		// Wildcards that trade places: the same language.
		{"?*", "*?", true},
		{"*?", "?*", true},
		// A literal where a has '?': b's names are a subset.
		{"*?", "*a", true},
		{"?*", "*a", true},
		{"*a*", "*a?a*", true},
		{"*a*b*", "*ab*", true},
		{"*ab*", "*a*b*", false},
		{"**", "*", true},
		{"o?-mini*", "o4-mini*", true},
		{"o4-mini*", "o?-mini*", false},
		{"*a*a*", "*aa*", true},
		{"*aa*", "*a*a*", false},
	}
	for _, c := range cases {
		if got := PatternCovers(c.a, c.b); got != c.want {
			t.Errorf("PatternCovers(%q, %q) = %v, want %v", c.a, c.b, got, c.want)
		}
	}
}

// TestPatternCoversAgreesWithEnumeration compares PatternCovers with the
// definition on every pair of patterns of up to three symbols over {a, b,
// *, ?}, checking every name of up to eight characters over {a, b, c}.
func TestPatternCoversAgreesWithEnumeration(t *testing.T) {
	var patterns []string
	var grow func(p string)
	grow = func(p string) {
		patterns = append(patterns, p)
		if len(p) == 3 {
			return
		}
		for _, c := range "ab*?" {
			grow(p + string(c))
		}
	}
	grow("")
	var names []string
	var names1 func(n string)
	names1 = func(n string) {
		names = append(names, n)
		if len(n) == 8 {
			return
		}
		for _, c := range "abc" {
			names1(n + string(c))
		}
	}
	names1("")
	match := make([][]bool, len(patterns))
	for i, p := range patterns {
		match[i] = make([]bool, len(names))
		for j, n := range names {
			match[i][j] = MatchPattern(p, n)
		}
	}
	for i, a := range patterns {
		for j, b := range patterns {
			want := true
			for k := range names {
				if match[j][k] && !match[i][k] {
					want = false
					break
				}
			}
			if got := PatternCovers(a, b); got != want {
				t.Errorf("PatternCovers(%q, %q) = %v, enumeration says %v", a, b, got, want)
			}
		}
	}
}

func TestValidateModelAlias(t *testing.T) {
	cases := []struct {
		a     ModelAlias
		field string // "" when valid
		want  string // a fragment of the message
	}{
		{ModelAlias{Pattern: "claude-opus-*", Tier: TierDeep}, "", ""},
		{ModelAlias{Pattern: "gpt-5.5-codex", LogicModel: "gpt-5"}, "", ""},
		{ModelAlias{Pattern: "o?-mini*", Tier: TierFast}, "", ""},
		{ModelAlias{Pattern: "", Tier: TierDeep}, "pattern", "required"},
		{ModelAlias{Pattern: "claude opus", Tier: TierDeep}, "pattern", "without spaces"},
		{ModelAlias{Pattern: "claude-\topus", Tier: TierDeep}, "pattern", "printable ASCII"},
		{ModelAlias{Pattern: "claude-ópus", Tier: TierDeep}, "pattern", "printable ASCII"},
		{ModelAlias{Pattern: "claude-[os]*", Tier: TierDeep}, "pattern", "[ is not allowed"},
		{ModelAlias{Pattern: "claude-{opus,sonnet}", Tier: TierDeep}, "pattern", "{ is not allowed"},
		{ModelAlias{Pattern: `claude-\*`, Tier: TierDeep}, "pattern", `\ is not allowed`},
		{ModelAlias{Pattern: strings.Repeat("a", MaxAliasPattern+1), Tier: TierDeep}, "pattern", "at most 256"},
		{ModelAlias{Pattern: strings.Repeat("a", MaxAliasPattern), Tier: TierDeep}, "", ""},
		{ModelAlias{Pattern: "x"}, "tier", "must name a tier or a logic model"},
		{ModelAlias{Pattern: "x", Tier: "ultra"}, "tier", "fast, standard or deep"},
		{ModelAlias{Pattern: "x", Tier: TierFast, LogicModel: "small"}, "logic_model", "not both"},
	}
	for _, c := range cases {
		f := ValidateModelAlias(c.a)
		switch {
		case c.field == "" && len(f) > 0:
			t.Errorf("%+v: refused: %v", c.a, f)
		case c.field != "" && !strings.Contains(f[c.field], c.want):
			t.Errorf("%+v: %s error %q, want one containing %q (all: %v)", c.a, c.field, f[c.field], c.want, f)
		}
	}
	g := validSnapshot().RouteGroups[0]
	g.Aliases = []ModelAlias{{Pattern: "ok-*", Tier: TierDeep}, {Pattern: "bad one", Tier: TierDeep}}
	if f := ValidateRouteGroup(g); f["aliases[1].pattern"] == "" || len(f) != 1 {
		t.Errorf("the group's validation names the bad alias by index: %v", f)
	}
}

// aliasSnapshot is validSnapshot with agent aliases on its group.
func aliasSnapshot() Snapshot {
	s := validSnapshot()
	s.RouteGroups[0].Aliases = []ModelAlias{
		{Pattern: "claude-opus-*", Tier: TierDeep},
		{Pattern: "claude-haiku-4-5", Tier: TierFast},
		{Pattern: "claude-*", Tier: TierStandard},
		{Pattern: "gpt-4o", LogicModel: "big"},
	}
	return s
}

func TestAliasesCompile(t *testing.T) {
	s := aliasSnapshot()
	rt, err := Compile(1, s, Credentials{ProviderKeySecrets: map[int64]string{11: "a", 21: "b"}})
	if err != nil {
		t.Fatal(err)
	}
	g := rt.Groups["default"]
	cases := []struct {
		name, pattern string
		tier          TierName
		model         string
	}{
		{"claude-opus-5-5", "claude-opus-*", TierDeep, ""},
		{"claude-haiku-4-5", "claude-haiku-4-5", TierFast, ""}, // exact, though claude-* is listed too
		{"claude-haiku-4-6", "claude-*", TierStandard, ""},
		{"claude-sonnet-4-5", "claude-*", TierStandard, ""},
		{"gpt-4o", "gpt-4o", "", "big"},
		{"gpt-4o-mini", "", "", ""},
	}
	for _, c := range cases {
		a := g.Alias(c.name)
		switch {
		case c.pattern == "":
			if a != nil {
				t.Errorf("%s: alias %q applies, want none", c.name, a.Pattern)
			}
		case a == nil:
			t.Errorf("%s: no alias, want %s", c.name, c.pattern)
		case a.Pattern != c.pattern || a.Tier != c.tier || (c.model == "") != (a.Model == nil) || a.Model != nil && a.Model.Code != c.model:
			t.Errorf("%s: alias %+v, want %s → %s%s", c.name, a, c.pattern, c.tier, c.model)
		}
	}
	if len(g.Aliases) != 4 || g.Aliases[2].Position != 3 || g.Aliases[2].Exact || !g.Aliases[1].Exact {
		t.Errorf("compiled list: %+v", g.Aliases)
	}
	for _, bad := range []ModelAlias{{Pattern: "x", LogicModel: "ghost"}, {Pattern: "x", Tier: "ultra"}} {
		s := aliasSnapshot()
		s.RouteGroups[0].Aliases = append(s.RouteGroups[0].Aliases, bad)
		if _, err := Compile(1, s, Credentials{ProviderKeySecrets: map[int64]string{11: "a", 21: "b"}}); err == nil {
			t.Errorf("%+v: a version naming nothing compiled", bad)
		}
	}
}

// The aliases, the web-search capability and the strict field policy
// survive the canonical text; the order of the aliases is kept.
func TestAgentSettingsRoundTrip(t *testing.T) {
	s := aliasSnapshot()
	s.LogicModels[1].Deployments[0].Capabilities.WebSearch = true
	s.LogicModels[1].Deployments[0].StrictFields = true
	text, err := Encode(s)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"    aliases:\n      - pattern: claude-opus-*\n        tier: deep\n      - pattern: claude-haiku-4-5\n",
		"      - pattern: gpt-4o\n        logic_model: big\n",
		"          web_search: true\n        strict_fields: true\n",
	} {
		if !strings.Contains(string(text), want) {
			t.Errorf("canonical text lacks %q:\n%s", want, text)
		}
	}
	back, err := Decode(text)
	if err != nil {
		t.Fatal(err)
	}
	c := Clone(s)
	Canonicalize(&c)
	if !reflect.DeepEqual(back, c) {
		t.Fatalf("round trip changed the snapshot:\n%+v\nvs\n%+v", back.RouteGroups[0].Aliases, c.RouteGroups[0].Aliases)
	}
	if again, _ := Encode(back); string(again) != string(text) {
		t.Fatal("the text is not canonical")
	}
	if _, ok := decodeByItem(text, readerOnly); !ok {
		t.Error("the canonical reader refused the new fields")
	}
	// No aliases, no key: a group without them keeps its text.
	s.RouteGroups[0].Aliases = []ModelAlias{}
	text, _ = Encode(s)
	if strings.Contains(string(text), "aliases") {
		t.Errorf("an empty alias list is written:\n%s", text)
	}
}

func TestAliasChanges(t *testing.T) {
	a := aliasSnapshot()
	b := Clone(a)
	g := &b.RouteGroups[0]
	g.Aliases[0].Tier = TierStandard                                              // claude-opus-*: deep → standard
	g.Aliases = append(g.Aliases[:3], ModelAlias{Pattern: "o3*", Tier: TierDeep}) // gpt-4o removed, o3* added
	g.Aliases[0], g.Aliases[2] = g.Aliases[2], g.Aliases[0]                       // claude-* before claude-opus-*
	var got []string
	for _, c := range Changes(a, b) {
		if c.Object.Kind == "model_alias" {
			got = append(got, c.Object.Group+" "+c.Object.Name+" "+string(c.Op)+" "+c.Field+" "+c.From+"→"+c.To)
		}
	}
	want := []string{
		"default claude-* changed order 2→1",
		"default claude-opus-* changed tier deep→standard",
		"default claude-opus-* changed order 1→2",
		"default o3* added  →",
		"default gpt-4o removed  →",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("changes:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestAliasChecks(t *testing.T) {
	base := DryRun(aliasSnapshot(), testEnv)
	for _, id := range []string{CheckAliasTarget, CheckAliasDuplicate, CheckAliasShadowed, CheckAliasOverridden} {
		if got := findings(base, id); len(got) != 0 {
			t.Fatalf("the valid aliases are flagged by %s: %+v", id, got)
		}
	}
	add := func(as ...ModelAlias) func(s *Snapshot) {
		return func(s *Snapshot) { s.RouteGroups[0].Aliases = append(s.RouteGroups[0].Aliases, as...) }
	}
	cases := []struct {
		name     string
		mutate   func(s *Snapshot)
		check    string
		severity Severity
		position string
		params   map[string]string
	}{
		{"unknown tier", add(ModelAlias{Pattern: "x", Tier: "ultra"}), CheckAliasTarget, SeverityError, "5", map[string]string{"cause": AliasUnknownTier, "tier": "ultra"}},
		{"names nothing", add(ModelAlias{Pattern: "x"}), CheckAliasTarget, SeverityError, "5", map[string]string{"cause": AliasUnknownTier}},
		{"unknown logic model", add(ModelAlias{Pattern: "x", LogicModel: "ghost"}), CheckAliasTarget, SeverityError, "5", map[string]string{"cause": AliasUnknownModel, "logic_model": "ghost"}},
		{"embedding model", add(ModelAlias{Pattern: "text-embedding-*", LogicModel: "embed"}), CheckAliasTarget, SeverityError, "5", map[string]string{"cause": AliasNotChat}},
		{"unreachable", func(s *Snapshot) {
			s.LogicModels = append(s.LogicModels, LogicModel{ID: 7, Code: "spare", Kind: KindChat})
			add(ModelAlias{Pattern: "x", LogicModel: "spare"})(s)
		}, CheckAliasTarget, SeverityError, "5", map[string]string{"cause": AliasUnreachable, "logic_model": "spare"}},
		{"exact listed twice", add(ModelAlias{Pattern: "claude-haiku-4-5", Tier: TierDeep}), CheckAliasDuplicate, SeverityError, "5", map[string]string{"first_position": "2"}},
		{"shadowed pattern", add(ModelAlias{Pattern: "claude-sonnet-*", Tier: TierDeep}), CheckAliasShadowed, SeverityWarning, "5", map[string]string{"earlier": "claude-*", "earlier_position": "3"}},
		{"same pattern twice", add(ModelAlias{Pattern: "claude-opus-*", Tier: TierFast}), CheckAliasShadowed, SeverityWarning, "5", map[string]string{"earlier": "claude-opus-*"}},
		{"tier name", add(ModelAlias{Pattern: "deep", Tier: TierFast}), CheckAliasOverridden, SeverityWarning, "5", map[string]string{"cause": AliasTierName}},
		{"auto", add(ModelAlias{Pattern: "auto", Tier: TierFast}), CheckAliasOverridden, SeverityWarning, "5", map[string]string{"cause": AliasTierName}},
		{"matches a reachable code", add(ModelAlias{Pattern: "b*", Tier: TierFast}), CheckAliasOverridden, SeverityWarning, "5", map[string]string{"cause": AliasModelCode, "codes": "big"}},
		{"exact reachable code", add(ModelAlias{Pattern: "small", Tier: TierDeep}), CheckAliasOverridden, SeverityWarning, "5", map[string]string{"cause": AliasModelCode, "codes": "small"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := aliasSnapshot()
			c.mutate(&s)
			r := DryRun(s, testEnv)
			got := findings(r, c.check)
			if len(got) != 1 {
				t.Fatalf("want one %s finding, got %+v", c.check, got)
			}
			f := got[0]
			if f.Severity != c.severity || f.Object.Kind != "model_alias" || f.Object.Group != "default" || f.Params["position"] != c.position {
				t.Fatalf("finding %+v", f)
			}
			for k, v := range c.params {
				if f.Params[k] != v {
					t.Errorf("param %s = %q, want %q (%+v)", k, f.Params[k], v, f.Params)
				}
			}
			if r.Blocking() != (c.severity == SeverityError) {
				t.Errorf("blocking %v for a %s", r.Blocking(), c.severity)
			}
		})
	}
	// A code the group does not reach may be aliased without a warning; one
	// its fallback group reaches is reachable.
	s := aliasSnapshot()
	s.LogicModels = append(s.LogicModels, LogicModel{ID: 7, Code: "spare", Kind: KindChat})
	add(ModelAlias{Pattern: "spare", Tier: TierFast})(&s)
	if got := findings(DryRun(s, testEnv), CheckAliasOverridden); len(got) != 0 {
		t.Errorf("a code the group does not reach: %+v", got)
	}
}
