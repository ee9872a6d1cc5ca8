package onboarding_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"switchyard/routing/adapter"
	"switchyard/routing/config"
	"switchyard/routing/config/onboarding"
)

func catalog(t *testing.T) *onboarding.Catalog {
	t.Helper()
	cat, err := onboarding.Load(onboarding.LoadOptions{Env: adapter.Support()})
	if err != nil {
		t.Fatal(err)
	}
	return cat
}

// recommended ticks a template's recommended models, as the wizard does.
func recommended(cat *onboarding.Catalog, code string) []onboarding.Choice {
	tpl, _ := cat.Template(code)
	var out []onboarding.Choice
	for _, m := range tpl.Models {
		if m.Recommended {
			out = append(out, onboarding.Choice{Upstream: m.Upstream})
		}
	}
	return out
}

func mustPlan(t *testing.T, cat *onboarding.Catalog, ch onboarding.Choices, draft config.Snapshot) *onboarding.Plan {
	t.Helper()
	p, errs := onboarding.Build(cat, ch, draft)
	if errs != nil {
		t.Fatalf("plan: %v", errs)
	}
	return p
}

// tiers renders a group's chains as "fast: a(1), b(2)" lines.
func tiers(s config.Snapshot, group string) map[config.TierName]string {
	out := map[config.TierName]string{}
	for _, g := range s.RouteGroups {
		if g.Name != group {
			continue
		}
		for _, tr := range g.Tiers {
			var parts []string
			for _, c := range tr.Candidates {
				parts = append(parts, c.LogicModel+"("+itoa(c.Priority)+")")
			}
			out[tr.Name] = strings.Join(parts, ", ")
		}
	}
	return out
}

func itoa(i int) string { return strconv.Itoa(i) }

// withIDs gives every deployment an id, as the store would.
func withIDs(s config.Snapshot) config.Snapshot {
	id := int64(100)
	for i := range s.LogicModels {
		for j := range s.LogicModels[i].Deployments {
			id++
			s.LogicModels[i].Deployments[j].ID = id
		}
	}
	return s
}

func blocking(t *testing.T, s config.Snapshot) {
	t.Helper()
	r := config.DryRun(s, adapter.Support())
	if r.Blocking() {
		t.Fatalf("dry-run blocks: %+v", r.Errors())
	}
}

func TestPlanSandboxFirstInstall(t *testing.T) {
	cat := catalog(t)
	p := mustPlan(t, cat, onboarding.Choices{Template: "sandbox", ProviderName: "sandbox", BaseURL: "http://127.0.0.1:9090/v1",
		Models: recommended(cat, "sandbox"), NewGroup: onboarding.DefaultGroup, Caller: onboarding.DefaultCaller}, config.Snapshot{})
	if len(p.Keys) != 1 || !p.Keys[0].Default {
		t.Errorf("keys = %+v, want the sandbox's default key", p.Keys)
	}
	s := p.Apply(config.Snapshot{})
	blocking(t, s)
	want := map[config.TierName]string{config.TierFast: "fake-fast(1)", config.TierStandard: "fake-standard(1)", config.TierDeep: "fake-deep(1)"}
	if d := cmp.Diff(want, tiers(s, "default")); d != "" {
		t.Errorf("tiers (-want +got):\n%s", d)
	}
	if len(s.Callers) != 1 || s.Callers[0].RouteGroup != "default" {
		t.Errorf("callers = %+v", s.Callers)
	}
	if !strings.Contains(s.Providers[0].Notes, "LOCAL SANDBOX") {
		t.Errorf("provider notes %q do not label the sandbox", s.Providers[0].Notes)
	}
	if !s.Providers[0].Sandbox {
		t.Error("the sandbox template's provider is not marked Sandbox")
	}
}

func TestPlanFillsTierWithoutSuggestion(t *testing.T) {
	cat := catalog(t)
	p := mustPlan(t, cat, onboarding.Choices{Template: "deepseek", ProviderName: "deepseek", BaseURL: "https://api.deepseek.com/v1", Keys: []string{"sk-deepseek-key-0001"},
		Models: recommended(cat, "deepseek"), NewGroup: "default", Caller: "app"}, config.Snapshot{})
	s := p.Apply(config.Snapshot{})
	blocking(t, s)
	want := map[config.TierName]string{config.TierFast: "deepseek-chat(1)", config.TierStandard: "deepseek-chat(1)", config.TierDeep: "deepseek-reasoner(1)"}
	if d := cmp.Diff(want, tiers(s, "default")); d != "" {
		t.Errorf("tiers (-want +got):\n%s", d)
	}
	if !strings.Contains(strings.Join(p.Notes, " "), "fast tier: it uses deepseek-chat from the standard tier") {
		t.Errorf("notes do not explain the borrowed tier: %q", p.Notes)
	}
	// Only deep chosen: fast and standard both borrow it.
	p = mustPlan(t, cat, onboarding.Choices{Template: "deepseek", ProviderName: "deepseek", BaseURL: "https://api.deepseek.com/v1", Keys: []string{"sk-deepseek-key-0001"},
		Models: []onboarding.Choice{{Upstream: "deepseek-reasoner"}}, NewGroup: "default"}, config.Snapshot{})
	s = p.Apply(config.Snapshot{})
	blocking(t, s)
	want = map[config.TierName]string{config.TierFast: "deepseek-reasoner(1)", config.TierStandard: "deepseek-reasoner(1)", config.TierDeep: "deepseek-reasoner(1)"}
	if d := cmp.Diff(want, tiers(s, "default")); d != "" {
		t.Errorf("tiers (-want +got):\n%s", d)
	}
}

func TestPlanSecondProviderBacksUpExistingModels(t *testing.T) {
	cat := catalog(t)
	first := mustPlan(t, cat, onboarding.Choices{Template: "deepseek", ProviderName: "deepseek", BaseURL: "https://api.deepseek.com/v1", Keys: []string{"sk-deepseek-key-0001"},
		Models: recommended(cat, "deepseek"), NewGroup: "default", Caller: "app"}, config.Snapshot{})
	draft := withIDs(first.Apply(config.Snapshot{}))

	p := mustPlan(t, cat, onboarding.Choices{Template: "siliconflow", ProviderName: "siliconflow", BaseURL: "https://api.siliconflow.cn/v1", Keys: []string{"sk-siliconflow-0001"},
		Models: recommended(cat, "siliconflow"), Group: "default"}, draft)
	s := p.Apply(draft)
	blocking(t, s)
	for _, m := range s.LogicModels {
		switch m.Code {
		case "deepseek-chat", "deepseek-reasoner":
			if len(m.Deployments) != 2 {
				t.Fatalf("%s has %d deployments, want 2", m.Code, len(m.Deployments))
			}
			for _, d := range m.Deployments {
				if d.Weight != 50 {
					t.Errorf("%s on %s weight %d, want 50", m.Code, d.Provider, d.Weight)
				}
			}
		}
	}
	if n := len(s.LogicModels); n != 3 {
		t.Errorf("%d logic models, want 3 (two shared, qwen3-8b new)", n)
	}
	// The new model backs up the fast tier; existing chains are untouched.
	want := map[config.TierName]string{config.TierFast: "deepseek-chat(1), qwen3-8b(2)", config.TierStandard: "deepseek-chat(1)", config.TierDeep: "deepseek-reasoner(1)"}
	if d := cmp.Diff(want, tiers(s, "default")); d != "" {
		t.Errorf("tiers (-want +got):\n%s", d)
	}
	if p.SplitText("deepseek-chat") != "50/50" || !strings.Contains(strings.Join(p.Notes, " "), "split 50/50") {
		t.Errorf("split not explained: %q", p.Notes)
	}
	if p.Caller != nil {
		t.Error("no caller asked for, one planned")
	}

	// A third provider of the same family: 50/50 becomes 34/33/33.
	draft = withIDs(s)
	p = mustPlan(t, cat, onboarding.Choices{Template: "openrouter", ProviderName: "openrouter", BaseURL: "https://openrouter.ai/api/v1", Keys: []string{"sk-or-v1-000000001"},
		Models: []onboarding.Choice{{Upstream: "deepseek/deepseek-chat"}}, Group: "default"}, draft)
	if got := p.SplitText("deepseek-chat"); got != "34/33/33" {
		t.Errorf("split = %s, want 34/33/33", got)
	}
	blocking(t, p.Apply(draft))

	// Asking for a separate logic model keeps the family apart.
	p = mustPlan(t, cat, onboarding.Choices{Template: "openrouter", ProviderName: "openrouter", BaseURL: "https://openrouter.ai/api/v1", Keys: []string{"sk-or-v1-000000001"},
		Models: []onboarding.Choice{{Upstream: "deepseek/deepseek-chat", Separate: true}}, Group: "default"}, draft)
	if p.Models[0].Backup || p.Models[0].Code != "deepseek-chat-openrouter" || len(p.Reweights) != 0 {
		t.Errorf("separate model planned as %+v, reweights %+v", p.Models[0], p.Reweights)
	}
	blocking(t, p.Apply(draft))
}

// A new route group gets the agent aliases, so Claude Code and Codex reach
// its tiers as they are; a group that exists keeps its own.
func TestPlanGivesANewGroupAgentAliases(t *testing.T) {
	cat := catalog(t)
	p := mustPlan(t, cat, onboarding.Choices{Template: "sandbox", ProviderName: "sandbox", BaseURL: "http://127.0.0.1:9090/v1",
		Models: recommended(cat, "sandbox"), NewGroup: onboarding.DefaultGroup, Caller: onboarding.DefaultCaller}, config.Snapshot{})
	if d := cmp.Diff(onboarding.AgentAliases(), p.Group.Aliases); d != "" {
		t.Fatalf("planned aliases (-want +got):\n%s", d)
	}
	s := withIDs(p.Apply(config.Snapshot{}))
	r := config.DryRun(s, adapter.Support())
	for _, f := range r.Findings {
		if strings.HasPrefix(f.Check, "alias_") {
			t.Errorf("the default aliases are flagged: %+v", f)
		}
	}
	for i := range s.Providers {
		for j := range s.Providers[i].Keys {
			s.Providers[i].Keys[j].ID = int64(j + 1)
		}
	}
	rt, err := config.Compile(1, s, config.Credentials{ProviderKeySecrets: map[int64]string{1: "k"}})
	if err != nil {
		t.Fatal(err)
	}
	g := rt.Groups[onboarding.DefaultGroup]
	for name, want := range map[string]config.TierName{
		"claude-opus-5-5": config.TierDeep, "claude-sonnet-4-5": config.TierStandard, "claude-haiku-4-5": config.TierFast,
		"gpt-5.5-codex": config.TierDeep, "gpt-5-codex": config.TierDeep, "gpt-5.5": config.TierStandard, "gpt-5-mini": config.TierStandard,
		"o3": config.TierDeep, "o3-pro": config.TierDeep, "o4-mini": config.TierFast, "o4-mini-high": config.TierFast,
	} {
		if a := g.Alias(name); a == nil || a.Tier != want {
			t.Errorf("%s resolves through %+v, want tier %s", name, a, want)
		}
	}
	for _, name := range []string{"gpt-4.1", "o1", "claude-3-opus", "gemini-2.5-pro"} {
		if a := g.Alias(name); a != nil {
			t.Errorf("%s resolves through alias %s", name, a.Pattern)
		}
	}

	// Onboarding Anthropic: the aliases stand beside the logic models named
	// like Claude's models, which stay explicit (a warning, not a block).
	p = mustPlan(t, cat, onboarding.Choices{Template: "anthropic", ProviderName: "anthropic", BaseURL: "https://api.anthropic.com", Keys: []string{"sk-ant-key-000001"},
		Models: recommended(cat, "anthropic"), NewGroup: "agents"}, config.Snapshot{})
	s = p.Apply(config.Snapshot{})
	blocking(t, s)

	// Extending an existing group adds no aliases and keeps the group's.
	draft := withIDs(s)
	draft.RouteGroups[0].Aliases = []config.ModelAlias{{Pattern: "mine", Tier: config.TierFast}}
	p = mustPlan(t, cat, onboarding.Choices{Template: "deepseek", ProviderName: "deepseek", BaseURL: "https://api.deepseek.com/v1", Keys: []string{"sk-deepseek-key-0001"},
		Models: recommended(cat, "deepseek"), Group: "agents"}, draft)
	if p.Group.Aliases != nil {
		t.Errorf("an existing group is planned aliases: %+v", p.Group.Aliases)
	}
	if got := p.Apply(draft).RouteGroups[0].Aliases; len(got) != 1 || got[0].Pattern != "mine" {
		t.Errorf("the existing group's aliases became %+v", got)
	}
}

func TestPlanErrors(t *testing.T) {
	cat := catalog(t)
	draft := mustPlan(t, cat, onboarding.Choices{Template: "sandbox", ProviderName: "sandbox", BaseURL: "http://127.0.0.1:9090/v1",
		Models: recommended(cat, "sandbox"), NewGroup: "default", Caller: "first-app"}, config.Snapshot{}).Apply(config.Snapshot{})
	for name, tc := range map[string]struct {
		ch    onboarding.Choices
		field string
	}{
		"no key":         {onboarding.Choices{Template: "openai", ProviderName: "openai", BaseURL: "https://api.openai.com/v1", Models: recommended(cat, "openai"), NewGroup: "g2"}, "keys"},
		"short key":      {onboarding.Choices{Template: "openai", ProviderName: "openai", BaseURL: "https://api.openai.com/v1", Keys: []string{"sk-1"}, Models: recommended(cat, "openai"), NewGroup: "g2"}, "keys"},
		"name taken":     {onboarding.Choices{Template: "sandbox", ProviderName: "sandbox", BaseURL: "http://127.0.0.1:9090/v1", Models: recommended(cat, "sandbox"), NewGroup: "g2"}, "provider_name"},
		"group taken":    {onboarding.Choices{Template: "sandbox", ProviderName: "sandbox2", BaseURL: "http://127.0.0.1:9090/v1", Models: recommended(cat, "sandbox"), NewGroup: "default"}, "new_group"},
		"caller taken":   {onboarding.Choices{Template: "sandbox", ProviderName: "sandbox2", BaseURL: "http://127.0.0.1:9090/v1", Models: recommended(cat, "sandbox"), Group: "default", Caller: "first-app"}, "caller"},
		"no models":      {onboarding.Choices{Template: "sandbox", ProviderName: "sandbox2", BaseURL: "http://127.0.0.1:9090/v1", NewGroup: "g2"}, "models"},
		"bad url":        {onboarding.Choices{Template: "sandbox", ProviderName: "sandbox2", BaseURL: "localhost:9090", Models: recommended(cat, "sandbox"), NewGroup: "g2"}, "base_url"},
		"no such group":  {onboarding.Choices{Template: "sandbox", ProviderName: "sandbox2", BaseURL: "http://127.0.0.1:9090/v1", Models: recommended(cat, "sandbox"), Group: "nope"}, "group"},
		"custom spaces":  {onboarding.Choices{Template: "vllm", ProviderName: "vllm", BaseURL: "http://localhost:8000/v1", Custom: []string{"my model"}, NewGroup: "g2"}, "custom_models"},
		"no template":    {onboarding.Choices{Template: "nope"}, "template"},
		"only embedding": {onboarding.Choices{Template: "sandbox", ProviderName: "sandbox2", BaseURL: "http://127.0.0.1:9090/v1", Models: []onboarding.Choice{{Upstream: "fake-embed"}}, NewGroup: "g2"}, "models"},
	} {
		t.Run(name, func(t *testing.T) {
			_, errs := onboarding.Build(cat, tc.ch, draft)
			if errs[tc.field] == "" {
				t.Errorf("no error on %s: %v", tc.field, errs)
			}
		})
	}
}

func TestPlanCustomModels(t *testing.T) {
	cat := catalog(t)
	p := mustPlan(t, cat, onboarding.Choices{Template: "vllm", ProviderName: "vllm", BaseURL: "http://gpu-box:8000/v1",
		Custom: []string{"Qwen/Qwen2.5-7B-Instruct", " "}, NewGroup: "default", Caller: "app"}, config.Snapshot{})
	s := p.Apply(config.Snapshot{})
	blocking(t, s)
	if len(s.LogicModels) != 1 || s.LogicModels[0].Code != "qwen2.5-7b-instruct" || s.LogicModels[0].Deployments[0].UpstreamModel != "Qwen/Qwen2.5-7B-Instruct" {
		t.Errorf("logic models = %+v", s.LogicModels)
	}
	want := map[config.TierName]string{config.TierFast: "qwen2.5-7b-instruct(1)", config.TierStandard: "qwen2.5-7b-instruct(1)", config.TierDeep: "qwen2.5-7b-instruct(1)"}
	if d := cmp.Diff(want, tiers(s, "default")); d != "" {
		t.Errorf("tiers (-want +got):\n%s", d)
	}
	if !strings.Contains(strings.Join(p.Notes, " "), "Capabilities of Qwen/Qwen2.5-7B-Instruct are unknown") {
		t.Errorf("notes = %q", p.Notes)
	}
}

// The catalog's capabilities reach the deployments the wizard writes: a
// Claude deployment runs web search for translated callers, an OpenAI one
// takes Codex's /responses natively, and a DeepSeek one does neither.
func TestPlanCarriesCapabilities(t *testing.T) {
	cat := catalog(t)
	for _, tc := range []struct {
		template, baseURL       string
		webSearch, responsesAPI bool
	}{
		{"anthropic", "https://api.anthropic.com/v1", true, false},
		{"openai", "https://api.openai.com/v1", false, true},
		{"gemini", "https://generativelanguage.googleapis.com/v1beta", true, false},
		{"deepseek", "https://api.deepseek.com/v1", false, false},
	} {
		p := mustPlan(t, cat, onboarding.Choices{Template: tc.template, ProviderName: tc.template, BaseURL: tc.baseURL,
			Keys: []string{"sk-" + tc.template + "-key-0001"}, Models: recommended(cat, tc.template), NewGroup: "default", Caller: "app"}, config.Snapshot{})
		s := p.Apply(config.Snapshot{})
		n := 0
		for _, lm := range s.LogicModels {
			for _, d := range lm.Deployments {
				if lm.Kind == config.KindEmbedding {
					continue
				}
				n++
				if d.Capabilities.WebSearch != tc.webSearch || d.Capabilities.ResponsesAPI != tc.responsesAPI {
					t.Errorf("%s %s: web_search=%v responses_api=%v, want %v %v", tc.template, d.UpstreamModel,
						d.Capabilities.WebSearch, d.Capabilities.ResponsesAPI, tc.webSearch, tc.responsesAPI)
				}
			}
		}
		if n == 0 {
			t.Errorf("%s: no chat deployments planned", tc.template)
		}
	}
}

// The cloud templates carry their settings into the provider, and the plan
// refuses an Azure provider without an api-version or a Bedrock one without
// a region.
func TestPlanCloudSettings(t *testing.T) {
	cat := catalog(t)
	az := mustPlan(t, cat, onboarding.Choices{Template: "azure-openai", ProviderName: "azure", BaseURL: "https://contoso.openai.azure.com",
		APIVersion: " 2024-10-21 ", AuthURL: "https://login.microsoftonline.us", Region: "ignored", Keys: []string{"azure-key-0000001"}, Models: recommended(cat, "azure-openai"), NewGroup: "default"}, config.Snapshot{})
	if p := az.Provider; p.Protocol != config.ProtocolAzure || p.APIVersion != "2024-10-21" || p.AuthURL != "https://login.microsoftonline.us" || p.Region != "" {
		t.Errorf("azure provider %+v", p)
	}
	br := mustPlan(t, cat, onboarding.Choices{Template: "aws-bedrock", ProviderName: "bedrock", BaseURL: "https://bedrock-runtime.eu-west-1.amazonaws.com",
		Region: "eu-west-1", APIVersion: "ignored", Keys: []string{"AKIAEXAMPLE1:secret-example-1"}, Models: recommended(cat, "aws-bedrock"), NewGroup: "default"}, config.Snapshot{})
	if p := br.Provider; p.Protocol != config.ProtocolBedrock || p.Region != "eu-west-1" || p.APIVersion != "" {
		t.Errorf("bedrock provider %+v", p)
	}
	sa := "{\"type\": \"service_account\", \"private_key_id\": \"0123456789abcdef\", \"private_key\": \"-----BEGIN PRIVATE KEY-----\\nMIIE\\n-----END PRIVATE KEY-----\\n\", \"client_email\": \"svc@p1.iam.gserviceaccount.com\"}"
	vx := mustPlan(t, cat, onboarding.Choices{Template: "vertex", ProviderName: "vertex", BaseURL: "https://europe-west4-aiplatform.googleapis.com",
		Project: " acme-prod ", Region: "europe-west4", APIVersion: "ignored", Keys: []string{sa}, Models: recommended(cat, "vertex"), NewGroup: "default"}, config.Snapshot{})
	if p := vx.Provider; p.Protocol != config.ProtocolVertex || p.Project != "acme-prod" || p.Region != "europe-west4" || p.APIVersion != "" {
		t.Errorf("vertex provider %+v", p)
	}
	for _, c := range []struct {
		code, field     string
		project, region string
	}{
		{"azure-openai", "api_version", "", ""},
		{"aws-bedrock", "region", "", ""},
		{"vertex", "project", "", "us-central1"},
		{"vertex", "region", "acme-prod", ""},
	} {
		key := "key-000000000001"
		if c.code == "vertex" {
			key = sa
		}
		_, errs := onboarding.Build(cat, onboarding.Choices{Template: c.code, ProviderName: "p", BaseURL: "https://x.example", Keys: []string{key},
			Project: c.project, Region: c.region, Models: recommended(cat, c.code), NewGroup: "default"}, config.Snapshot{})
		if errs[c.field] == "" {
			t.Errorf("%s without %s: %v", c.code, c.field, errs)
		}
	}
}
