package onboarding_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"switchyard/routing/adapter"
	"switchyard/routing/config"
	"switchyard/routing/config/onboarding"
)

// The built-in catalogue must be usable by this very build: every protocol
// implemented, every model complete, codes unique, base URLs well-formed.
func TestBuiltinCatalogValid(t *testing.T) {
	env := adapter.Support()
	cat, err := onboarding.Load(onboarding.LoadOptions{Env: env})
	if err != nil {
		t.Fatalf("built-in catalogue: %v", err)
	}
	want := []string{"sandbox", "openai", "anthropic", "gemini", "deepseek", "dashscope", "ark", "moonshot", "zhipu",
		"siliconflow", "mistral", "groq", "openrouter", "vllm", "ollama", "openai-compatible"}
	codes := map[string]bool{}
	for _, tpl := range cat.Templates {
		t.Run(tpl.Code, func(t *testing.T) {
			if codes[tpl.Code] {
				t.Errorf("template code %q used twice", tpl.Code)
			}
			codes[tpl.Code] = true
			if sup, ok := env.Implemented[tpl.Protocol]; !ok || !sup.Chat {
				t.Errorf("protocol %q is not implemented (gateway.Implemented)", tpl.Protocol)
			}
			if msg := config.ValidateBaseURL(tpl.BaseURL); msg != "" {
				t.Errorf("base URL %q: %s", tpl.BaseURL, msg)
			}
			if tpl.Protocol == config.ProtocolOpenAI && !strings.Contains(tpl.BaseURL, "/v") {
				t.Errorf("OpenAI-compatible base URL %q lacks its version path", tpl.BaseURL)
			}
			if len(tpl.Models) == 0 && !tpl.CustomModels {
				t.Error("no models and no custom models")
			}
			modelCodes := map[string]bool{}
			recommendedChat := false
			for _, m := range tpl.Models {
				if m.Kind != config.KindChat && m.Kind != config.KindEmbedding {
					t.Errorf("%s: kind %q", m.Upstream, m.Kind)
				}
				if m.Capabilities == nil {
					t.Errorf("%s: no capabilities", m.Upstream)
				}
				if m.Price == nil {
					t.Errorf("%s: no price (write unknown)", m.Upstream)
				} else if m.Price.Known && (m.Price.AsOf == "" || m.Price.Currency == "" || m.Price.Source == "") {
					t.Errorf("%s: known price without date, currency or source", m.Upstream)
				}
				if !config.ValidTier(string(m.Tier)) {
					t.Errorf("%s: tier %q", m.Upstream, m.Tier)
				}
				if m.Kind == config.KindEmbedding && m.Dimension <= 0 {
					t.Errorf("%s: embedding model without dimension", m.Upstream)
				}
				if modelCodes[m.Code()] {
					t.Errorf("logic model code %q used twice", m.Code())
				}
				modelCodes[m.Code()] = true
				if fe := config.ValidateLogicModel(config.LogicModel{Code: m.Code(), Kind: m.Kind, EmbeddingDimension: m.Dimension}); len(fe) > 0 {
					t.Errorf("%s: logic model %v", m.Upstream, fe)
				}
				if m.Kind == config.KindChat && m.Recommended {
					recommendedChat = true
				}
			}
			if !tpl.CustomModels && !recommendedChat {
				t.Error("no recommended chat model to pre-tick")
			}
		})
	}
	for _, c := range want {
		if !codes[c] {
			t.Errorf("template %q is missing", c)
		}
	}
	sb, _ := cat.Template("sandbox")
	if !sb.Sandbox || !strings.Contains(sb.Name, "sandbox") || sb.BaseURL != "http://127.0.0.1:9090/v1" {
		t.Errorf("sandbox template = %+v", sb)
	}
}

func TestCatalogMergeAndSandboxURL(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "catalog.yaml")
	over := `format: switchyard-catalog/v1
templates:
  - code: openai
    name: OpenAI via our proxy
    protocol: openai
    base_url: https://llm-proxy.internal.example/v1
    provider: openai-proxy
    models:
      - {upstream: gpt-4.1-mini, kind: chat, tier: fast, recommended: true, capabilities: {thinking: false, vision: true, tools: true}, price: unknown}
  - code: groq
    hidden: true
  - code: inhouse
    name: In-house model server
    protocol: openai
    base_url: http://models.internal.example/v1
    provider: inhouse
    models:
      - {upstream: our-llm-7b, kind: chat, tier: standard, recommended: true, capabilities: {thinking: false, vision: false, tools: false}, price: unknown}
`
	if err := os.WriteFile(file, []byte(over), 0o600); err != nil {
		t.Fatal(err)
	}
	cat, err := onboarding.Load(onboarding.LoadOptions{File: file, SandboxURL: "http://127.0.0.1:19090/v1", Env: adapter.Support()})
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := cat.Template("openai"); o.BaseURL != "https://llm-proxy.internal.example/v1" || len(o.Models) != 1 {
		t.Errorf("override not applied: %+v", o)
	}
	if _, ok := cat.Template("groq"); ok {
		t.Error("hidden template still listed")
	}
	if _, ok := cat.Template("inhouse"); !ok || cat.Templates[len(cat.Templates)-1].Code != "inhouse" {
		t.Error("new template not appended")
	}
	if sb, _ := cat.Template("sandbox"); sb.BaseURL != "http://127.0.0.1:19090/v1" {
		t.Errorf("sandbox URL = %s", sb.BaseURL)
	}
}

func TestCatalogRejectsBadFiles(t *testing.T) {
	for name, body := range map[string]string{
		"unknown protocol":          `{upstream: m, kind: chat, tier: fast, capabilities: {thinking: false, vision: false, tools: false}, price: unknown}|protocol: grpc`,
		"no capabilities":           `{upstream: m, kind: chat, tier: fast, price: unknown}|protocol: openai`,
		"no dimension":              `{upstream: e, kind: embedding, tier: fast, capabilities: {thinking: false, vision: false, tools: false}, price: unknown}|protocol: openai`,
		"no price":                  `{upstream: m, kind: chat, tier: fast, capabilities: {thinking: false, vision: false, tools: false}}|protocol: openai`,
		"price no date":             `{upstream: m, kind: chat, tier: fast, capabilities: {thinking: false, vision: false, tools: false}, price: {input: 1, output: 2, currency: USD, source: x}}|protocol: openai`,
		"typo field":                `{upstream: m, kind: chat, tier: fast, capabilites: {thinking: false}, price: unknown}|protocol: openai`,
		"azure without api-version": `{upstream: m, kind: chat, tier: fast, capabilities: {thinking: false, vision: false, tools: false}, price: unknown}|protocol: azure`,
		"bedrock without region":    `{upstream: m, kind: chat, tier: fast, capabilities: {thinking: false, vision: false, tools: false}, price: unknown}|protocol: bedrock`,
		"region on openai":          `{upstream: m, kind: chat, tier: fast, capabilities: {thinking: false, vision: false, tools: false}, price: unknown}|protocol: openai;region: us-east-1`,
		"embedding on anthropic":    `{upstream: e, kind: embedding, tier: fast, dimension: 8, capabilities: {thinking: false, vision: false, tools: false}, price: unknown}|protocol: anthropic`,
	} {
		t.Run(name, func(t *testing.T) {
			model, proto, _ := strings.Cut(body, "|")
			proto = strings.ReplaceAll(proto, ";", "\n    ")
			text := "format: switchyard-catalog/v1\ntemplates:\n  - code: x\n    name: X\n    " + proto + "\n    base_url: https://x.example/v1\n    provider: x\n    models:\n      - " + model + "\n"
			file := filepath.Join(t.TempDir(), "c.yaml")
			if err := os.WriteFile(file, []byte(text), 0o600); err != nil {
				t.Fatal(err)
			}
			if _, err := onboarding.Load(onboarding.LoadOptions{File: file, Env: adapter.Support()}); err == nil {
				t.Fatal("accepted")
			} else {
				t.Log(err)
			}
		})
	}
	bad := filepath.Join(t.TempDir(), "bad-url.yaml")
	_ = os.WriteFile(bad, []byte("format: switchyard-catalog/v1\ntemplates:\n  - code: openai\n    name: O\n    protocol: openai\n    base_url: api.openai.com\n    provider: o\n    custom_models: true\n    models: []\n"), 0o600)
	if _, err := onboarding.Load(onboarding.LoadOptions{File: bad, Env: adapter.Support()}); err == nil || !strings.Contains(err.Error(), "base_url") {
		t.Errorf("relative base URL accepted: %v", err)
	}
}

func TestCodeFor(t *testing.T) {
	for in, want := range map[string]string{
		"deepseek-ai/DeepSeek-V3":  "deepseek-v3",
		"Qwen/Qwen2.5-7B-Instruct": "qwen2.5-7b-instruct",
		"llama3.2:latest":          "llama3.2:latest",
		"standard":                 "standard-model",
		"My Model!":                "my-model",
	} {
		if got := onboarding.CodeFor(in); got != want {
			t.Errorf("CodeFor(%q) = %q, want %q", in, got, want)
		}
	}
}
