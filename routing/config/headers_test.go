package config

import (
	"net/http"
	"strings"
	"testing"
)

func headerSnapshot() Snapshot {
	return Snapshot{Format: FormatV1, Providers: []Provider{
		{ID: 1, Name: "pa", Protocol: ProtocolOpenAI, BaseURL: "http://a", Enabled: true, TimeoutMS: 1000,
			Headers:     []ProviderHeader{{Name: "openai-organization", Value: "org-1"}, {Name: "x-token", Secret: true, SecretID: 7, Value: SecretSet}},
			PassHeaders: []string{"anthropic-beta"}},
		{ID: 2, Name: "pb", Protocol: ProtocolOpenAI, BaseURL: "http://b", Enabled: true, TimeoutMS: 1000},
	}}
}

// TestOutgoingHeaders: a provider sends its static headers (secret values
// opened) and the caller headers on its allowlist — nothing else; a provider
// with neither adds nothing.
func TestOutgoingHeaders(t *testing.T) {
	rt, err := Compile(1, headerSnapshot(), Credentials{ProviderHeaderSecrets: map[int64]HeaderSecret{7: {ProviderID: 1, Value: "tok"}}})
	if err != nil {
		t.Fatal(err)
	}
	caller := http.Header{"Anthropic-Beta": {"b1", "b2"}, "Authorization": {"Bearer sy-caller"}, "Cookie": {"c=1"}, "X-Other": {"o"}, "Openai-Organization": {"caller-org"}}
	got := rt.Providers["pa"].Outgoing(caller)
	want := http.Header{"Openai-Organization": {"org-1"}, "X-Token": {"tok"}, "Anthropic-Beta": {"b1", "b2"}}
	if len(got) != len(want) {
		t.Fatalf("outgoing %v, want %v", got, want)
	}
	for k, v := range want {
		if strings.Join(got[k], ",") != strings.Join(v, ",") {
			t.Errorf("%s = %v, want %v", k, got[k], v)
		}
	}
	if h := rt.Providers["pb"].Outgoing(caller); h != nil {
		t.Fatalf("a provider without headers sends %v", h)
	}
	if h := rt.Providers["pa"].Outgoing(nil); len(h) != 2 {
		t.Fatalf("without a caller (probes): %v", h)
	}
}

// TestCompileRefusesAnotherProvidersSecret: a secret header value sealed for
// one provider is never sent to another's vendor.
func TestCompileRefusesAnotherProvidersSecret(t *testing.T) {
	for name, creds := range map[string]map[int64]HeaderSecret{
		"missing":        {},
		"other provider": {7: {ProviderID: 2, Value: "tok"}},
	} {
		if _, err := Compile(1, headerSnapshot(), Credentials{ProviderHeaderSecrets: creds}); err == nil || strings.Contains(err.Error(), "tok") {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestValidateProviderHeaders(t *testing.T) {
	base := headerSnapshot().Providers[1]
	ok := base
	ok.Headers = []ProviderHeader{{Name: "OpenAI-Beta", Value: "assistants=v2"}, {Name: "X-Secret", Value: "s", Secret: true}, {Name: "X-Kept", Secret: true}}
	ok.PassHeaders = []string{"anthropic-beta", "X-Request-Tag"}
	if f := ValidateProvider(ok); len(f) != 0 {
		t.Fatalf("valid headers refused: %v", f)
	}
	for _, tc := range []struct {
		headers []ProviderHeader
		pass    []string
		field   string
	}{
		{[]ProviderHeader{{Name: "Proxy-Authorization", Value: "x"}}, nil, "headers"},
		{[]ProviderHeader{{Name: "Set-Cookie", Value: "x"}}, nil, "headers"},
		{[]ProviderHeader{{Name: "Content-Length", Value: "1"}}, nil, "headers"},
		{[]ProviderHeader{{Name: "X:Y", Value: "1"}}, nil, "headers"},
		{[]ProviderHeader{{Name: "X-A", Value: ""}}, nil, "headers"},
		{[]ProviderHeader{{Name: "X-A", Value: "a\r\nX-Injected: 1"}}, nil, "headers"},
		{nil, []string{"x-goog-api-key"}, "pass_headers"},
		{nil, []string{"Host"}, "pass_headers"},
		{nil, []string{"a b"}, "pass_headers"},
		{nil, []string{"X-A", "x-a"}, "pass_headers"},
	} {
		p := base
		p.Headers, p.PassHeaders = tc.headers, tc.pass
		if f := ValidateProvider(p); f[tc.field] == "" {
			t.Errorf("%+v %v: no %s error (%v)", tc.headers, tc.pass, tc.field, f)
		}
	}
}
