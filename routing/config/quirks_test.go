package config_test

import (
	"reflect"
	"strings"
	"switchyard/routing/config"
	"switchyard/routing/config/configtest"
	"testing"
)

// Quirks travel through the canonical text (writer and library agree, the
// item reader takes them), show in the change list, and are validated.
func TestProviderQuirks(t *testing.T) {
	s := configtest.Generate(configtest.Small, "http://127.0.0.1:9/v1")
	if s.Providers[0].Protocol != config.ProtocolOpenAI {
		t.Fatalf("provider 0 speaks %s", s.Providers[0].Protocol)
	}
	before := config.Clone(s)
	s.Providers[0].Quirks = config.Quirks{config.QuirkNoStreamOptions, config.QuirkMaxTokens, config.QuirkMaxTokens}
	text, err := config.Encode(s)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(text), "    quirks:\n      - max_tokens\n      - no_stream_options\n") {
		t.Fatalf("canonical text:\n%s", text)
	}
	lib, err := config.EncodeWithLibrary(s)
	if err != nil || string(lib) != string(text) {
		t.Fatalf("the writer and the library disagree (%v):\n%s", err, lib)
	}
	got, ok := config.DecodeByItem(text)
	if !ok {
		t.Fatal("canonical text did not take the item-by-item path")
	}
	want, err := config.DecodeWithLibrary(text)
	if err != nil || !reflect.DeepEqual(got, want) || !reflect.DeepEqual(got.Providers[0].Quirks, config.Quirks{config.QuirkMaxTokens, config.QuirkNoStreamOptions}) {
		t.Fatalf("decoded %v, library %v (%v)", got.Providers[0].Quirks, want.Providers[0].Quirks, err)
	}
	var seen bool
	for _, c := range config.Changes(before, s) {
		if c.Object.Kind == "provider" && c.Field == "quirks" && c.From == "" && c.To == "max_tokens, no_stream_options" {
			seen = true
		}
	}
	if !seen {
		t.Errorf("no quirks change in %+v", config.Changes(before, s))
	}

	for _, tc := range []struct {
		name   string
		p      config.Provider
		errors bool
	}{
		{"openai with all", config.Provider{Protocol: config.ProtocolOpenAI, Quirks: config.ProviderQuirks}, false},
		{"unknown", config.Provider{Protocol: config.ProtocolOpenAI, Quirks: config.Quirks{"no_temperature"}}, true},
		{"declaration only", config.Provider{Protocol: config.ProtocolOpenAI, Quirks: config.Quirks{config.QuirkReasoningContent}}, true},
		{"twice", config.Provider{Protocol: config.ProtocolOpenAI, Quirks: config.Quirks{config.QuirkMaxTokens, config.QuirkMaxTokens}}, true},
		{"anthropic", config.Provider{Protocol: config.ProtocolAnthropic, Quirks: config.Quirks{config.QuirkMaxTokens}}, true},
	} {
		tc.p.Name, tc.p.BaseURL, tc.p.TimeoutMS = "p", "https://x.example/v1", 1000
		if msg := config.ValidateProvider(tc.p)["quirks"]; (msg != "") != tc.errors {
			t.Errorf("%s: quirks error %q", tc.name, msg)
		}
	}
}
