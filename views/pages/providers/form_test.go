package providers

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"switchyard/routing/config"
)

// The form shows a cloud kind's own fields for a provider saved as that
// kind without waiting for the select to change, so a dry-run finding's
// link to #f-api_version, #f-region, #f-project or #f-location lands on a
// visible field.
func TestFormShowsTheSavedKindsFields(t *testing.T) {
	for _, tc := range []struct {
		protocol               config.Protocol
		azure, bedrock, vertex bool
	}{
		{config.ProtocolOpenAI, false, false, false},
		{config.ProtocolAzure, true, false, false},
		{config.ProtocolBedrock, false, true, false},
		{config.ProtocolVertex, false, false, true},
	} {
		var b bytes.Buffer
		if err := FormBody(Form{ID: 2, V: config.Provider{Name: "p", Protocol: tc.protocol, Region: "us-central1", Project: "acme"}}).Render(context.Background(), &b); err != nil {
			t.Fatal(err)
		}
		html := b.String()
		if got := strings.Contains(html, `class="grid2 kind-azure shown"`); got != tc.azure {
			t.Errorf("%s: azure fields shown = %v", tc.protocol, got)
		}
		if got := strings.Contains(html, `class="grid2 kind-bedrock shown"`); got != tc.bedrock {
			t.Errorf("%s: bedrock fields shown = %v", tc.protocol, got)
		}
		if got := strings.Contains(html, `class="grid2 kind-vertex shown"`); got != tc.vertex {
			t.Errorf("%s: vertex fields shown = %v", tc.protocol, got)
		}
		// A Vertex provider's location is its own field, filled only for it.
		if got := strings.Contains(html, `name="location" type="text" value="us-central1"`); got != tc.vertex {
			t.Errorf("%s: location filled = %v", tc.protocol, got)
		}
		if !strings.Contains(html, `name="api_version"`) || !strings.Contains(html, `name="region"`) || !strings.Contains(html, `name="project"`) {
			t.Errorf("%s: the form lacks a cloud field (the select reveals them as it changes)", tc.protocol)
		}
	}
}

// The list shows a cloud provider's settings and how its keys
// authenticate, read from the keys' fingerprints; other kinds show none.
func TestListShowsCloudSettings(t *testing.T) {
	fp := config.KeyFingerprint
	rows := []Row{
		{Provider: config.Provider{ID: 1, Name: "az", Protocol: config.ProtocolAzure, APIVersion: "2024-10-21", AuthURL: "https://login.microsoftonline.us",
			Keys: []config.ProviderKey{{ID: 1, Fingerprint: fp("azure-key-0000001")}, {ID: 2, Fingerprint: fp("entra:t:c:secret-000001")}}}},
		{Provider: config.Provider{ID: 2, Name: "br", Protocol: config.ProtocolBedrock,
			Keys: []config.ProviderKey{{ID: 3, Fingerprint: fp("default-chain")}}}},
		{Provider: config.Provider{ID: 3, Name: "oa", Protocol: config.ProtocolOpenAI, Keys: []config.ProviderKey{{ID: 4, Fingerprint: fp("sk-openai-000001")}}}},
	}
	var b bytes.Buffer
	if err := List(ListPage{Rows: rows}).Render(context.Background(), &b); err != nil {
		t.Fatal(err)
	}
	html := b.String()
	for _, want := range []string{
		"api-version 2024-10-21 · Entra authority https://login.microsoftonline.us · auth api-key and Entra ID client credentials",
		"region none (set one: requests cannot be signed) · auth AWS default credential chain",
	} {
		if !strings.Contains(html, want) {
			t.Errorf("the list lacks %q", want)
		}
	}
	if n := strings.Count(html, `data-testid="provider-cloud"`); n != 2 {
		t.Errorf("%d cloud settings lines, want 2 (none for OpenAI)", n)
	}
	if strings.Contains(html, "secret-000001") {
		t.Error("the list shows a secret")
	}
}
