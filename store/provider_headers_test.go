package store_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"switchyard/routing/config"
	"switchyard/store"
	"switchyard/store/storetest"
)

const headerSecret = "org-SEALED-HEADER-value-7781"

// TestProviderHeadersSealedNeverShown: a provider's extra headers and
// passthrough allowlist are configuration, but a secret header's value is
// sealed like a provider key — in no table, snapshot, version text or
// diff; it reads "••• set", an update without a value keeps it, a new value
// is a new sealed row, and a rollback restores the value the version used.
func TestProviderHeadersSealedNeverShown(t *testing.T) {
	st, _ := storetest.New(t)
	ctx := context.Background()
	s := seed(t, st)

	in := config.Provider{Name: "openai", Protocol: config.ProtocolOpenAI, BaseURL: "https://api.openai.com/v1", Enabled: true, TimeoutMS: 60000,
		Headers: []config.ProviderHeader{
			{Name: "openai-beta", Value: "assistants=v2"},
			{Name: "OpenAI-Organization", Value: headerSecret, Secret: true},
		},
		PassHeaders: []string{"x-trace-id", "OpenAI-Project"},
	}
	if err := st.UpdateProvider(ctx, s.openai, in); err != nil {
		t.Fatal(err)
	}
	provider := func() config.Provider {
		t.Helper()
		snap, _, err := st.Draft(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range snap.Providers {
			if p.ID == s.openai {
				return p
			}
		}
		t.Fatal("provider gone")
		return config.Provider{}
	}
	p := provider()
	if len(p.Headers) != 2 || p.Headers[0].Name != "Openai-Beta" || p.Headers[0].Value != "assistants=v2" ||
		p.Headers[1].Name != "Openai-Organization" || !p.Headers[1].Secret || p.Headers[1].Value != config.SecretSet || p.Headers[1].SecretID == 0 {
		t.Fatalf("headers: %+v", p.Headers)
	}
	if strings.Join(p.PassHeaders, ",") != "Openai-Project,X-Trace-Id" {
		t.Fatalf("pass headers: %v", p.PassHeaders)
	}
	firstID := p.Headers[1].SecretID

	// Nowhere in plaintext: the provider row, the sealed row, the draft text.
	var dump string
	if err := st.DB().QueryRowContext(ctx, `SELECT (SELECT string_agg(headers::text || pass_headers::text, '|') FROM providers)
		|| (SELECT string_agg(encode(secret, 'escape') || name, '|') FROM provider_header_secrets)`).Scan(&dump); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(dump, "SEALED-HEADER") {
		t.Fatal("a secret header value is stored in plaintext")
	}
	secrets, err := st.ProviderHeaderSecrets(ctx, []int64{firstID})
	if err != nil || secrets[firstID] != (config.HeaderSecret{ProviderID: s.openai, Value: headerSecret}) {
		t.Fatalf("the sealed value does not open back: %+v %v", secrets, err)
	}

	// Publish; the version text says "set", never the value.
	v1, err := st.Publish(ctx, store.PublishInput{Author: "a", Message: "headers", Check: check})
	if err != nil {
		t.Fatal(err)
	}
	if text := v1.Version.Snapshot; strings.Contains(text, "SEALED-HEADER") || !strings.Contains(text, config.SecretSet) || !strings.Contains(text, "Openai-Project") {
		t.Fatalf("version text:\n%s", text)
	}

	// Saving again without a value keeps it (the console's blank field, the
	// API's "••• set").
	for _, keep := range []string{"", config.SecretSet} {
		in.Headers[1].Value = keep
		if err := st.UpdateProvider(ctx, s.openai, in); err != nil {
			t.Fatal(err)
		}
		if got := provider().Headers[1].SecretID; got != firstID {
			t.Fatalf("keeping with %q made secret %d, want %d", keep, got, firstID)
		}
	}
	// A new value is a new sealed row; the old one stays for rollbacks.
	in.Headers[1].Value = "org-NEW-value-0002"
	if err := st.UpdateProvider(ctx, s.openai, in); err != nil {
		t.Fatal(err)
	}
	secondID := provider().Headers[1].SecretID
	if secondID == firstID || secondID == 0 {
		t.Fatalf("a new value kept secret id %d", secondID)
	}
	v2, err := st.Publish(ctx, store.PublishInput{Author: "a", Message: "new org", Check: check})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(v2.Version.Snapshot, "NEW-value") {
		t.Fatal("the new value is in the version text")
	}
	// Rolling back restores the draft's reference to the old value.
	if _, err := st.Publish(ctx, store.PublishInput{Author: "a", Message: "back", RollbackTo: v1.Version.Number, Check: check}); err != nil {
		t.Fatal(err)
	}
	if got := provider().Headers[1].SecretID; got != firstID {
		t.Fatalf("after rollback the secret is %d, want %d", got, firstID)
	}

	// A secret header cannot be created without a value.
	bad := in
	bad.Headers = []config.ProviderHeader{{Name: "X-New-Secret", Secret: true}}
	var ve *config.ValidationError
	if err := st.UpdateProvider(ctx, s.openai, bad); !errors.As(err, &ve) || !strings.Contains(ve.Fields["headers"], "enter its value") {
		t.Fatalf("secret without value: %v", err)
	}
	// Reserved names are refused: no configuration can send credentials.
	for _, name := range []string{"Authorization", "x-api-key", "Cookie", "Host"} {
		bad.Headers = []config.ProviderHeader{{Name: name, Value: "v"}}
		if err := st.UpdateProvider(ctx, s.openai, bad); !errors.As(err, &ve) || ve.Fields["headers"] == "" {
			t.Fatalf("static %s: %v", name, err)
		}
		bad.Headers, bad.PassHeaders = nil, []string{name}
		if err := st.UpdateProvider(ctx, s.openai, bad); !errors.As(err, &ve) || ve.Fields["pass_headers"] == "" {
			t.Fatalf("passthrough %s: %v", name, err)
		}
		bad.PassHeaders = nil
	}
}

// TestReplaceDraftHeaderSecretsBelongToTheirProvider: an imported snapshot
// cannot point a provider at another provider's sealed value, nor carry a
// secret value as text.
func TestReplaceDraftHeaderSecretsBelongToTheirProvider(t *testing.T) {
	st, _ := storetest.New(t)
	ctx := context.Background()
	s := seed(t, st)
	snap, _, _ := st.Draft(ctx)
	var openai config.Provider
	for _, p := range snap.Providers {
		if p.ID == s.openai {
			openai = p
		}
	}
	openai.Headers = []config.ProviderHeader{{Name: "X-Org", Value: headerSecret, Secret: true}}
	if err := st.UpdateProvider(ctx, s.openai, openai); err != nil {
		t.Fatal(err)
	}
	snap, _, _ = st.Draft(ctx)
	var stolen config.ProviderHeader
	for _, p := range snap.Providers {
		if p.ID == s.openai {
			stolen = p.Headers[0]
		}
	}
	for i := range snap.Providers {
		if snap.Providers[i].ID == s.claude {
			snap.Providers[i].Headers = []config.ProviderHeader{stolen}
		}
	}
	notes, err := st.ReplaceDraft(ctx, snap)
	if err != nil {
		t.Fatal(err)
	}
	if len(notes) != 1 || !strings.Contains(notes[0].Message, "secret header X-Org") || notes[0].Object != "provider claude" {
		t.Fatalf("notes: %+v", notes)
	}
	after, _, _ := st.Draft(ctx)
	for _, p := range after.Providers {
		if p.ID == s.claude && len(p.Headers) != 0 {
			t.Fatalf("claude took openai's secret: %+v", p.Headers)
		}
		if p.ID == s.openai && (len(p.Headers) != 1 || p.Headers[0].SecretID != stolen.SecretID) {
			t.Fatalf("openai lost its secret: %+v", p.Headers)
		}
	}
	// A plaintext secret value in imported text is refused, not sealed.
	for i := range snap.Providers {
		if snap.Providers[i].ID == s.claude {
			snap.Providers[i].Headers = []config.ProviderHeader{{Name: "X-Org", Value: "plain-in-text", Secret: true}}
		}
	}
	var ve *config.ValidationError
	if _, err := st.ReplaceDraft(ctx, snap); !errors.As(err, &ve) || !strings.Contains(ve.Error(), "cannot be part of the configuration text") || strings.Contains(ve.Error(), "plain-in-text") {
		t.Fatalf("plaintext secret in text: %v", err)
	}
}
