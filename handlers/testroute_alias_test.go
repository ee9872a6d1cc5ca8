package handlers_test

import (
	"context"
	"net/url"
	"strings"
	"testing"

	"switchyard/handlers"
	"switchyard/routing"
	"switchyard/routing/breaker"
	"switchyard/routing/config"
	"switchyard/store"
	"switchyard/store/redis/keypool"
	"switchyard/store/redis/limits"
	"switchyard/web/webtest"
)

// liveOps is a data plane that serves one compiled version and has no
// runtime state (no breaker, load or key state, every limit open).
type liveOps struct{ rt *config.Runtime }

func (o liveOps) Runtime() *config.Runtime { return o.rt }
func (liveOps) State() *routing.State      { return &routing.State{} }
func (liveOps) Breakers(context.Context) (map[string]map[int64]breaker.Status, error) {
	return nil, nil
}
func (liveOps) Loads(context.Context) (map[int64]int64, error)                { return nil, nil }
func (liveOps) KeyStates(context.Context) (map[int64]keypool.KeyState, error) { return nil, nil }
func (liveOps) PeekLimits(context.Context, limits.Request) (limits.Decision, error) {
	return limits.Decision{Allowed: true}, nil
}
func (liveOps) LimitUsage(context.Context, int64, string) (limits.Usage, error) {
	return limits.Usage{}, nil
}
func (liveOps) TestRequest(context.Context, int64, string, []byte) handlers.TestResult {
	return handlers.TestResult{}
}
func (liveOps) SLA() routing.SLAWatch { return nil }
func (liveOps) Resilience(context.Context, *config.RGroup, config.TierName) handlers.ResilienceState {
	return handlers.ResilienceState{}
}

// Test route takes any model name a client sends and says when it was
// resolved through an alias, and to what.
func TestTestRouteExplainsAnAlias(t *testing.T) {
	s := aliasSnapshotForRoute()
	rt, err := config.Compile(1, s, config.Credentials{ProviderKeySecrets: map[int64]string{1: "sk-test-secret-1"}})
	if err != nil {
		t.Fatal(err)
	}
	env := webtest.New(t, func(h *handlers.Handler) { h.Ops = liveOps{rt} })
	admin := env.Login(t, "ops", store.RoleAdmin)
	explain := func(model string, thinking bool) (alias, target, problem string) {
		v := url.Values{"caller": {"1"}, "model": {model}}
		if thinking {
			v.Set("thinking", "on")
		}
		_, doc := admin.Get("/test-route?" + v.Encode())
		return strings.Join(strings.Fields(webtest.TestID(doc, "testroute-alias").Text()), " "),
			strings.Join(strings.Fields(webtest.TestID(doc, "testroute-target").Text()), " "),
			webtest.TestID(doc, "testroute-problem").Text()
	}
	_, doc := admin.Get("/test-route")
	if in := webtest.TestID(doc, "testroute-model"); in.Is("select") || in.AttrOr("list", "") != "tr-models" {
		t.Fatal("the model field is not free text with suggestions")
	}
	if webtest.TestID(doc, "testroute-model-choices").Find(`option[value="claude-haiku-4-5"]`).Length() != 1 {
		t.Fatal("the suggestions lack the exact alias")
	}
	cases := []struct {
		model    string
		thinking bool
		alias    string // the alias line, "" when there is none
		target   string // a fragment of the resolved target
		notFound bool
	}{
		{model: "claude-opus-5-5", alias: "Requested claude-opus-5-5 → alias claude-opus-* of route group default → tier deep", target: "tier deep"},
		{model: "claude-haiku-4-5", thinking: true, alias: "→ alias claude-haiku-4-5 of route group default → tier fast", target: "tier deep"},
		{model: "gpt-5.5-codex", alias: "→ alias gpt-*-codex of route group default → logic model big (an explicit request for it)", target: "explicit logic model big"},
		{model: "big", target: "explicit logic model big"},
		{model: "standard", target: "tier standard"},
		{model: "mistral-large", notFound: true},
	}
	for _, c := range cases {
		alias, target, problem := explain(c.model, c.thinking)
		switch {
		case c.notFound:
			if !strings.Contains(problem, "404 model_not_found") {
				t.Errorf("%s: problem %q", c.model, problem)
			}
		case c.alias == "" && alias != "":
			t.Errorf("%s: an alias line %q", c.model, alias)
		case !strings.Contains(alias, c.alias) || !strings.Contains(target, c.target):
			t.Errorf("%s: alias %q target %q; want %q and %q", c.model, alias, target, c.alias, c.target)
		}
	}
}

// aliasSnapshotForRoute is a published version with one caller whose
// group maps agent model names.
func aliasSnapshotForRoute() config.Snapshot {
	tier := func(name config.TierName, code string) config.Tier {
		return config.Tier{Name: name, TimeoutMS: 1000, FirstChunkTimeoutMS: 500, Candidates: []config.Candidate{{LogicModel: code, Priority: 1, Weight: 100}}}
	}
	return config.Snapshot{
		Format: config.FormatV1,
		Providers: []config.Provider{{ID: 1, Name: "p", Protocol: config.ProtocolOpenAI, BaseURL: "http://127.0.0.1:1/v1", Enabled: true, TimeoutMS: 1000,
			Keys: []config.ProviderKey{{ID: 1, Fingerprint: "sk-…cret", Status: config.KeyActive}}}},
		LogicModels: []config.LogicModel{
			{ID: 1, Code: "small", Kind: config.KindChat, Deployments: []config.Deployment{{ID: 1, Provider: "p", UpstreamModel: "s", Weight: 100, Enabled: true}}},
			{ID: 2, Code: "big", Kind: config.KindChat, Deployments: []config.Deployment{{ID: 2, Provider: "p", UpstreamModel: "b", Weight: 100, Enabled: true,
				Capabilities: config.Capabilities{Thinking: true}}}},
		},
		RouteGroups: []config.RouteGroup{{ID: 1, Name: "default",
			Tiers: []config.Tier{tier(config.TierFast, "small"), tier(config.TierStandard, "small"), tier(config.TierDeep, "big")},
			Aliases: []config.ModelAlias{
				{Pattern: "claude-opus-*", Tier: config.TierDeep},
				{Pattern: "claude-haiku-4-5", Tier: config.TierFast},
				{Pattern: "gpt-*-codex", LogicModel: "big"},
			}}},
		Callers: []config.Caller{{ID: 1, Name: "agents", RouteGroup: "default", PriorityClass: config.ClassNormal, Enabled: true}},
	}
}
