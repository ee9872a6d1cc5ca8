package handlers_test

import (
	"net/http"
	"strings"
	"testing"

	"switchyard/routing/config"
	"switchyard/web/webtest"
)

// TestAPIProviderHeaders: the admin API sets a provider's extra headers
// (a secret one sealed, answered as "••• set", kept when sent back as
// such) and passthrough allowlist; left out of a PUT they are kept, [] empties
// them, and reserved names are refused field by field.
func TestAPIProviderHeaders(t *testing.T) {
	env := webtest.New(t)
	a := newCRUD(t, env) // fails the test if secretInTests is ever answered

	var p config.Provider
	a.call("POST", "/providers", `{"name":"claude","protocol":"anthropic","base_url":"https://api.anthropic.com",
		"headers":[{"name":"anthropic-beta","value":"prompt-caching-2024-07-31"},{"name":"X-Proxy-Token","value":"`+secretInTests+`","secret":true}],
		"pass_headers":["anthropic-beta-extra"]}`, http.StatusCreated, &p)
	if len(p.Headers) != 2 || p.Headers[0].Name != "Anthropic-Beta" || p.Headers[0].Value != "prompt-caching-2024-07-31" ||
		!p.Headers[1].Secret || p.Headers[1].Value != config.SecretSet || len(p.PassHeaders) != 1 || p.PassHeaders[0] != "Anthropic-Beta-Extra" {
		t.Fatalf("created provider headers %+v / %v", p.Headers, p.PassHeaders)
	}
	pid := itoa(p.ID)
	secretID := p.Headers[1].SecretID

	// A GET answer sent back as is keeps the secret; a PUT without the lists keeps both.
	a.call("PUT", "/providers/"+pid, crudJSON(p), http.StatusOK)
	var got config.Provider
	a.call("PUT", "/providers/"+pid, `{"notes":"n"}`, http.StatusOK, &got)
	if len(got.Headers) != 2 || got.Headers[1].SecretID != secretID || len(got.PassHeaders) != 1 {
		t.Fatalf("kept headers %+v / %v", got.Headers, got.PassHeaders)
	}
	// The secret_id a client sends is not trusted: the value is found by name.
	var byName config.Provider
	a.call("PUT", "/providers/"+pid, `{"headers":[{"name":"X-Proxy-Token","value":"`+config.SecretSet+`","secret":true,"secret_id":999999}]}`, http.StatusOK, &byName)
	if len(byName.Headers) != 1 || byName.Headers[0].SecretID != secretID {
		t.Fatalf("secret by name: %+v", byName.Headers)
	}

	for _, bad := range []struct{ body, field string }{
		{`{"headers":[{"name":"x-api-key","value":"k"}]}`, "headers"},
		{`{"headers":[{"name":"Bad Name","value":"k"}]}`, "headers"},
		{`{"headers":[{"name":"X-A","value":"line\nbreak"}]}`, "headers"},
		{`{"headers":[{"name":"X-A","value":"1"},{"name":"x-a","value":"2"}]}`, "headers"},
		{`{"headers":[{"name":"X-New","secret":true}]}`, "headers"},
		{`{"pass_headers":["Authorization"]}`, "pass_headers"},
		{`{"pass_headers":["Cookie"]}`, "pass_headers"},
		{`{"pass_headers":["X-Proxy-Token"]}`, "pass_headers"},
	} {
		e := a.fails("PUT", "/providers/"+pid, bad.body, http.StatusUnprocessableEntity, "validation_failed")
		if e.Error.Fields[bad.field] == "" {
			t.Errorf("%s: %+v", bad.body, e)
		}
	}
	var emptied config.Provider
	a.call("PUT", "/providers/"+pid, `{"headers":[],"pass_headers":[]}`, http.StatusOK, &emptied)
	if len(emptied.Headers) != 0 || len(emptied.PassHeaders) != 0 || emptied.Name != "claude" {
		t.Fatalf("emptied: %+v", emptied)
	}

	// The export never carries a secret value either.
	text := a.call("GET", "/config/draft", "", http.StatusOK)
	if strings.Contains(string(text), secretInTests) {
		t.Fatal("the draft export has the secret")
	}
}
