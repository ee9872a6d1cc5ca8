package config

import (
	"strings"
	"testing"
	"time"
)

func ladderSnapshot() Snapshot {
	s := validSnapshot()
	s.RouteGroups[0].RetryBudget = &RetryBudget{Percent: 35, WindowMS: 2000}
	s.RouteGroups[0].Degradation = &Degradation{
		StepDown: []StepDown{
			{Tier: TierDeep, To: TierStandard, P95MS: 8000, ErrorPercent: 30},
			{Tier: TierStandard, To: TierFast, ErrorPercent: 50, WindowMS: 1000, MinCalls: 5, HoldMS: 2000},
		},
		Cache:        &Cache{Scope: CacheScopeGroup, TTLMS: 60000},
		StaticAnswer: "The assistant is resting; try again in a few minutes.",
	}
	return s
}

// The settings survive the canonical text and compile with their defaults
// filled in.
func TestResilienceRoundTripsAndCompiles(t *testing.T) {
	s := ladderSnapshot()
	text, err := Encode(s)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"retry_budget:", "percent: 35", "window_ms: 2000", "degradation:", "step_down:", "to: fast", "scope: group", "static_answer:"} {
		if !strings.Contains(string(text), want) {
			t.Errorf("canonical text lacks %q:\n%s", want, text)
		}
	}
	back, err := Decode(text)
	if err != nil {
		t.Fatal(err)
	}
	// Canonical order: standard's rule before deep's.
	if sd := back.RouteGroups[0].Degradation.StepDown; sd[0].Tier != TierStandard || sd[1].Tier != TierDeep {
		t.Fatalf("step-down rules not in tier order: %+v", sd)
	}
	again, _ := Encode(back)
	if string(again) != string(text) {
		t.Fatalf("not canonical:\n%s\nvs\n%s", text, again)
	}
	rt, err := Compile(1, back, Credentials{ProviderKeySecrets: map[int64]string{11: "a", 21: "b"}})
	if err != nil {
		t.Fatal(err)
	}
	g := rt.Groups["default"]
	if g.Budget != (RBudget{Percent: 35, MinPerS: DefaultRetryBudgetMinPerS, Window: 2 * time.Second}) {
		t.Fatalf("budget %+v", g.Budget)
	}
	deep := g.Ladder.StepDownFor(TierDeep)
	if deep == nil || deep.To != TierStandard || deep.P95 != 8*time.Second || deep.Window != time.Minute || deep.MinCalls != DefaultStepDownMinCalls || deep.Hold != 30*time.Second {
		t.Fatalf("deep rule %+v", deep)
	}
	if g.Ladder.StepDownFor(TierFast) != nil || g.Ladder.Cache == nil || !g.Ladder.Cache.GroupScope || g.Ladder.Cache.MaxEntries != DefaultCacheMaxEntries || g.Ladder.Static == "" {
		t.Fatalf("ladder %+v cache %+v", g.Ladder, g.Ladder.Cache)
	}

	// Without settings: the default budget, no ladder, nothing in the text.
	plain := validSnapshot()
	plain.RouteGroups[0].RetryBudget = &RetryBudget{}
	plain.RouteGroups[0].Degradation = &Degradation{}
	text, _ = Encode(plain)
	if strings.Contains(string(text), "retry_budget") || strings.Contains(string(text), "degradation") {
		t.Fatalf("empty settings printed:\n%s", text)
	}
	rt, _ = Compile(1, plain, Credentials{ProviderKeySecrets: map[int64]string{11: "a", 21: "b"}})
	if g := rt.Groups["default"]; g.Ladder != nil || g.Budget.Percent != 20 || g.Budget.MinPerS != 3 || g.Budget.Window != 10*time.Second || g.Budget.Off {
		t.Fatalf("defaults: %+v %+v", g.Budget, g.Ladder)
	}
}

func TestResilienceValidation(t *testing.T) {
	cases := []struct {
		field  string
		mutate func(g *RouteGroup)
	}{
		{"retry_budget.percent", func(g *RouteGroup) { g.RetryBudget.Percent = -1 }},
		{"retry_budget.window_ms", func(g *RouteGroup) { g.RetryBudget.WindowMS = 100 }},
		{"retry_budget.min_per_s", func(g *RouteGroup) { g.RetryBudget.MinPerS = -3 }},
		{"degradation.step_down[0].to", func(g *RouteGroup) { g.Degradation.StepDown[0].To = TierDeep }},
		{"degradation.step_down[0].to", func(g *RouteGroup) { g.Degradation.StepDown[0].To = "tiny" }},
		{"degradation.step_down[1].tier", func(g *RouteGroup) { g.Degradation.StepDown[1].Tier = TierDeep }},
		{"degradation.step_down[0].p95_ms", func(g *RouteGroup) { g.Degradation.StepDown[0].P95MS, g.Degradation.StepDown[0].ErrorPercent = 0, 0 }},
		{"degradation.step_down[0].error_percent", func(g *RouteGroup) { g.Degradation.StepDown[0].ErrorPercent = 101 }},
		{"degradation.cache.scope", func(g *RouteGroup) { g.Degradation.Cache.Scope = "everyone" }},
		{"degradation.static_answer", func(g *RouteGroup) { g.Degradation.StaticAnswer = strings.Repeat("x", MaxStaticAnswer+1) }},
	}
	if f := ValidateRouteGroup(ladderSnapshot().RouteGroups[0]); len(f) > 0 {
		t.Fatalf("valid settings refused: %v", f)
	}
	for _, c := range cases {
		g := Clone(ladderSnapshot()).RouteGroups[0]
		c.mutate(&g)
		f := ValidateRouteGroup(g)
		if f[c.field] == "" {
			t.Errorf("%s: no error (got %v)", c.field, f)
		}
	}
}

// The dry-run refuses a step-down to a tier nobody can serve.
func TestStepDownTargetCheck(t *testing.T) {
	s := ladderSnapshot()
	if got := findings(DryRun(s, testEnv), CheckStepDownTarget); len(got) != 0 {
		t.Fatalf("valid ladder flagged: %+v", got)
	}
	s.RouteGroups[0].Tiers[0].Candidates = nil // fast has no candidate
	got := findings(DryRun(s, testEnv), CheckStepDownTarget)
	if len(got) != 1 || got[0].Severity != SeverityError || got[0].Object.Tier != TierStandard || !strings.Contains(got[0].Message, "tier fast") {
		t.Fatalf("want one blocking finding on standard → fast, got %+v", got)
	}
	if r := DryRun(s, testEnv); !r.Blocking() {
		t.Fatal("the finding does not block publishing")
	}
}
