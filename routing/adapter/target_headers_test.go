package adapter

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"switchyard/e2e/fakevendor"
	"switchyard/routing/config"
)

// TestTargetHeadersReachTheVendor: every protocol sends Target.Header with
// the request, but never a reserved name from it, and its own credentials
// and protocol headers win.
func TestTargetHeadersReachTheVendor(t *testing.T) {
	var got http.Header
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path == "/token" { // Vertex AI's token endpoint
			_, _ = w.Write([]byte(`{"access_token":"vendor-key","expires_in":3600,"token_type":"Bearer"}`))
			return
		}
		got = r.Header.Clone()
		_, _ = w.Write([]byte(`{"data":[],"models":[]}`))
	}))
	defer srv.Close()
	extra := http.Header{
		"Openai-Organization": {"org-1"},
		"Anthropic-Beta":      {"tools-2024-04-04"},
		"Anthropic-Version":   {"1999-01-01"},
		"Authorization":       {"Bearer caller-key"},
		"X-Api-Key":           {"caller-key"},
		"X-Goog-Api-Key":      {"caller-key"},
		"Cookie":              {"session=caller"},
	}
	serviceAccount, _, err := fakevendor.ServiceAccount("svc@p.iam.gserviceaccount.com", "p")
	if err != nil {
		t.Fatal(err)
	}
	for proto, ad := range All() {
		t.Run(string(proto), func(t *testing.T) {
			got = nil
			tg := Target{BaseURL: srv.URL, APIKey: "vendor-key", Header: extra, UpstreamModel: "m", Region: "us-east-1", APIVersion: "2024-10-21"}
			switch proto {
			case config.ProtocolBedrock:
				tg.APIKey = "vendor-key:vendor-secret"
			case config.ProtocolVertex:
				tg.APIKey, tg.Project, tg.AuthURL = serviceAccount, "p", srv.URL+"/token"
			}
			_, _ = ad.ListModels(context.Background(), tg)
			if got == nil {
				t.Fatal("no request")
			}
			if got.Get("Openai-Organization") != "org-1" || got.Get("Anthropic-Beta") != "tools-2024-04-04" {
				t.Errorf("extra headers missing: %v", got)
			}
			if got.Get("Cookie") != "" {
				t.Errorf("a cookie reached the vendor: %v", got)
			}
			for _, h := range []string{"Authorization", "X-Api-Key", "X-Goog-Api-Key"} {
				if v := got.Get(h); v != "" && v != "vendor-key" && v != "Bearer vendor-key" && !strings.HasPrefix(v, "AWS4-HMAC-SHA256 Credential=vendor-key/") {
					t.Errorf("%s = %q: a reserved header came from Target.Header", h, v)
				}
			}
			if proto == config.ProtocolAnthropic && got.Get("Anthropic-Version") == "1999-01-01" {
				t.Error("the protocol's own anthropic-version was overridden")
			}
		})
	}
}
