package routing

import (
	"errors"
	"testing"

	"switchyard/routing/config"
)

// TestResolveAliases walks the order in which a model name is resolved:
// tiers, then logic-model codes the group reaches (never substituted),
// then the group's aliases — exact names before patterns, patterns in
// their listed order.
func TestResolveAliases(t *testing.T) {
	rt := world(t, func(s *config.Snapshot) {
		s.LogicModels = append(s.LogicModels, config.LogicModel{ID: 5, Code: "spare", Kind: "chat",
			Deployments: []config.Deployment{{ID: 501, Provider: "pa", UpstreamModel: "s-a", Weight: 100, Enabled: true}}})
		s.RouteGroups[0].Aliases = []config.ModelAlias{
			{Pattern: "deep", Tier: config.TierFast}, // never applies: a tier name
			{Pattern: "mai*", Tier: config.TierDeep}, // never applies to "main", a code the group reaches
			{Pattern: "claude-*", Tier: config.TierStandard},
			{Pattern: "claude-opus-*", Tier: config.TierDeep}, // after claude-*: never applies
			{Pattern: "claude-haiku-4-5", Tier: config.TierFast},
			{Pattern: "gpt-*-codex", LogicModel: "backup"},
			{Pattern: "gpt-5*", Tier: config.TierStandard},
			{Pattern: "o3*", LogicModel: "spare"}, // not in any tier of the group
			{Pattern: "text-embedding-*", Tier: config.TierFast},
		}
	})
	c := rt.Callers[1]
	cases := []struct {
		name      string
		model     string
		kind      config.Kind
		reasoning bool
		tier      config.TierName // for a tier target
		explicit  string          // for an explicit target
		forced    bool
		alias     string
		notFound  bool
	}{
		{name: "tier", model: "deep", kind: "chat", tier: "deep"},
		{name: "auto", model: "auto", kind: "chat", tier: "standard"},
		{name: "code never substituted", model: "main", kind: "chat", explicit: "main"},
		{name: "code with reasoning is not moved", model: "backup", kind: "chat", reasoning: true, explicit: "backup"},
		{name: "exact before a pattern", model: "claude-haiku-4-5", kind: "chat", tier: "fast", alias: "claude-haiku-4-5"},
		{name: "first pattern wins", model: "claude-opus-5-5", kind: "chat", tier: "standard", alias: "claude-*"},
		{name: "pattern", model: "gpt-5.5", kind: "chat", tier: "standard", alias: "gpt-5*"},
		{name: "earlier pattern to a logic model", model: "gpt-5.5-codex", kind: "chat", explicit: "backup", alias: "gpt-*-codex"},
		{name: "alias to a logic model is explicit: no reasoning move", model: "gpt-5.5-codex", kind: "chat", reasoning: true, explicit: "backup", alias: "gpt-*-codex"},
		{name: "reasoning forces deep through an alias", model: "claude-haiku-4-5", kind: "chat", reasoning: true, tier: "deep", forced: true, alias: "claude-haiku-4-5"},
		{name: "reasoning on a deep alias is not forced", model: "mainframe", kind: "chat", reasoning: true, tier: "deep", alias: "mai*"},
		{name: "alias to an unreachable logic model", model: "o3-pro", kind: "chat", notFound: true},
		{name: "alias to a chat model for embeddings", model: "gpt-5.5-codex", kind: "embedding", notFound: true},
		{name: "alias to a tier for embeddings", model: "text-embedding-3-small", kind: "embedding", tier: "fast", alias: "text-embedding-*"},
		{name: "no alias", model: "mistral-large", kind: "chat", notFound: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tg, err := Resolve(c, tc.model, tc.kind, tc.reasoning)
			if tc.notFound {
				var nf *ModelNotFoundError
				if !errors.As(err, &nf) || nf.Requested != tc.model {
					t.Fatalf("want model_not_found, got %+v, %v", tg, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case tc.explicit != "" && (tg.Explicit == nil || tg.Explicit.Code != tc.explicit):
				t.Errorf("target %+v, want explicit %s", tg, tc.explicit)
			case tc.explicit == "" && (tg.Explicit != nil || tg.Tier != tc.tier):
				t.Errorf("target %+v, want tier %s", tg, tc.tier)
			}
			if tg.Forced != tc.forced || tg.Alias != tc.alias {
				t.Errorf("forced %v alias %q, want %v %q", tg.Forced, tg.Alias, tc.forced, tc.alias)
			}
		})
	}
}

// A group's aliases are its own: a caller of another group (even one that
// falls back to it) does not get them.
func TestResolveAliasesBelongToTheirGroup(t *testing.T) {
	rt := world(t, func(s *config.Snapshot) {
		s.Tenants = []config.Tenant{{ID: 1, Name: "t"}}
		s.RouteGroups[0].Aliases = []config.ModelAlias{{Pattern: "claude-*", Tier: config.TierDeep}}
		s.RouteGroups = append(s.RouteGroups, config.RouteGroup{ID: 2, Name: "dedicated", Tenant: "t", Fallback: "g", Tiers: []config.Tier{
			{Name: "fast", TimeoutMS: 1000, FirstChunkTimeoutMS: 500, Candidates: []config.Candidate{{LogicModel: "canary", Priority: 1, Weight: 100}}},
		}})
		s.Callers = append(s.Callers, config.Caller{ID: 2, Name: "d", Tenant: "t", RouteGroup: "dedicated", PriorityClass: "normal", Enabled: true})
	})
	if tg, err := Resolve(rt.Callers[1], "claude-x", "chat", false); err != nil || tg.Alias != "claude-*" || tg.Tier != "deep" {
		t.Fatalf("own group: %+v %v", tg, err)
	}
	if _, err := Resolve(rt.Callers[2], "claude-x", "chat", false); err == nil {
		t.Fatal("a group used another group's alias")
	}
	// The fallback group's logic models are reachable by code, as before.
	if tg, err := Resolve(rt.Callers[2], "main", "chat", false); err != nil || tg.Explicit == nil {
		t.Fatalf("fallback code: %+v %v", tg, err)
	}
}
