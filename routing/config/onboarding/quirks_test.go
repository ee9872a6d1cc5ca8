package onboarding_test

import (
	"os"
	"path/filepath"
	"strings"
	"switchyard/routing/adapter"
	"switchyard/routing/config"
	"switchyard/routing/config/onboarding"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// A template's provider quirks reach the provider the wizard creates, and
// through it the canonical text; answer traits are declared only.
func TestPlanCarriesQuirks(t *testing.T) {
	cat := catalog(t)
	for _, tc := range []struct {
		code, base string
		want       config.Quirks
	}{
		{"deepseek", "https://api.deepseek.com/v1", config.Quirks{config.QuirkNoDeveloperRole}},
		{"mistral", "https://api.mistral.ai/v1", config.Quirks{config.QuirkMaxTokens, config.QuirkNoStreamOptions}},
		{"zhipu", "https://open.bigmodel.cn/api/paas/v4", nil},
		{"openai", "https://api.openai.com/v1", nil},
	} {
		t.Run(tc.code, func(t *testing.T) {
			p := mustPlan(t, cat, onboarding.Choices{Template: tc.code, ProviderName: tc.code, BaseURL: tc.base, Keys: []string{"sk-" + tc.code + "-key-0001"},
				Models: recommended(cat, tc.code), NewGroup: "default", Caller: "app"}, config.Snapshot{})
			s := p.Apply(config.Snapshot{})
			blocking(t, s)
			if d := cmp.Diff(tc.want, s.Providers[0].Quirks); d != "" {
				t.Fatalf("quirks (-want +got):\n%s", d)
			}
			text, err := config.Encode(s)
			if err != nil {
				t.Fatal(err)
			}
			back, err := config.Decode(text)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tc.want, back.Providers[0].Quirks); d != "" {
				t.Fatalf("quirks after the canonical text (-want +got):\n%s\n%s", d, text)
			}
		})
	}
	if tpl, _ := cat.Template("zhipu"); !strings.Contains(string(tpl.Quirks[0]), "reasoning_content") {
		t.Errorf("zhipu declares %v", tpl.Quirks)
	}
}

func TestCatalogRejectsBadQuirks(t *testing.T) {
	for name, line := range map[string]string{
		"unknown":      "protocol: openai\n    quirks: [no_temperature]",
		"twice":        "protocol: openai\n    quirks: [max_tokens, max_tokens]",
		"not openai":   "protocol: anthropic\n    quirks: [max_tokens]",
		"not a string": "protocol: openai\n    quirks: {max_tokens: true}",
	} {
		t.Run(name, func(t *testing.T) {
			text := "format: switchyard-catalog/v1\ntemplates:\n  - code: x\n    name: X\n    " + line + "\n    base_url: https://x.example/v1\n    provider: x\n    custom_models: true\n    models: []\n"
			file := filepath.Join(t.TempDir(), "c.yaml")
			if err := os.WriteFile(file, []byte(text), 0o600); err != nil {
				t.Fatal(err)
			}
			if _, err := onboarding.Load(onboarding.LoadOptions{File: file, Env: adapter.Support()}); err == nil {
				t.Fatal("accepted")
			}
		})
	}
}
