package gateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3/option"

	"switchyard/routing/config"
	"switchyard/store"
	"switchyard/web/gateway/gatewaytest"
	"switchyard/web/webtest"
)

const vendorSecret = "tok-SECRET-vendor-9d41"

// adminAPI sends one admin API request with a fresh admin token.
func adminAPI(t *testing.T, e *gatewaytest.Env, token, method, path string, body any) (int, []byte) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, e.URL+"/admin/api"+path, rd)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, b
}

// TestProviderHeadersReachTheVendor: an operator sets a provider's extra
// headers (one secret) and passthrough allowlist in the console; the
// console, the admin API, the version text and the export show the secret
// only as "••• set"; once published, the static headers and the allowlisted
// caller header reach the vendor — and a caller header not on the list, the
// caller's key and its cookies do not.
func TestProviderHeadersReachTheVendor(t *testing.T) {
	t.Parallel()
	e := gatewaytest.New(t)
	callerKey := e.Simple()
	ctx := context.Background()
	snap, _, err := e.Store.Draft(ctx)
	if err != nil {
		t.Fatal(err)
	}
	pid := snap.Providers[0].ID
	edit := "/providers/" + itoa(pid)

	// The console form.
	ops := webtest.LoginAt(t, e.Store, e.URL, "ops", store.RoleAdmin)
	res, doc := ops.Get(edit + "/edit")
	if res.StatusCode != 200 || webtest.TestID(doc, "provider-headers-form").Length() != 1 {
		t.Fatalf("edit form: %d, headers fieldset %d", res.StatusCode, webtest.TestID(doc, "provider-headers-form").Length())
	}
	form := url.Values{
		"name": {"fake"}, "protocol": {"openai"}, "base_url": {e.FakeURL + "/v1"}, "enabled": {"on"}, "timeout_ms": {"60000"},
		"header_rows":   {"3"},
		"header_name_0": {"OpenAI-Organization"}, "header_value_0": {"org-static-1"},
		"header_name_1": {"X-Vendor-Token"}, "header_value_1": {vendorSecret}, "header_secret_1": {"on"},
		"pass_headers": {"anthropic-beta, X-Trace-Id"},
	}
	// A reserved name is refused with a message at the headers.
	bad := url.Values{}
	for k, v := range form {
		bad[k] = v
	}
	bad.Set("header_name_2", "Authorization")
	bad.Set("header_value_2", "Bearer stolen")
	res, doc, raw := ops.PostFormRaw(edit, bad)
	if res.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(webtest.TestID(doc, "headers-error").Text(), "Authorization cannot be set") {
		t.Fatalf("reserved header: %d %q", res.StatusCode, webtest.TestID(doc, "headers-error").Text())
	}
	if strings.Contains(raw, vendorSecret) {
		t.Fatal("the re-rendered form shows the secret value back")
	}
	if res, _ := ops.PostForm(edit, form); res.StatusCode != 200 {
		t.Fatalf("save: %d", res.StatusCode)
	}
	for _, page := range []string{edit + "/edit", "/providers", "/config/export"} {
		_, _, raw := ops.GetRaw(page)
		if strings.Contains(raw, vendorSecret) {
			t.Fatalf("%s shows the secret header value", page)
		}
		if !strings.Contains(raw, "X-Vendor-Token") || !strings.Contains(raw, config.SecretSet) {
			t.Fatalf("%s does not show the secret header as set:\n%s", page, raw)
		}
	}
	// Saving the form again with the secret field blank keeps the value.
	form.Set("header_value_1", "")
	if res, _ := ops.PostForm(edit, form); res.StatusCode != 200 {
		t.Fatalf("save again: %d", res.StatusCode)
	}

	// The admin API: "••• set", and a PUT that leaves headers out keeps them.
	token, _, err := e.Store.CreateAdminToken(ctx, "ci", store.RoleAdmin, "test")
	if err != nil {
		t.Fatal(err)
	}
	status, body := adminAPI(t, e, token, http.MethodPut, "/providers/"+itoa(pid), map[string]any{"notes": "has headers"})
	if status != 200 {
		t.Fatalf("PUT: %d %s", status, body)
	}
	var got config.Provider
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Headers) != 2 || got.Headers[0].Name != "Openai-Organization" || got.Headers[0].Value != "org-static-1" ||
		got.Headers[1].Name != "X-Vendor-Token" || got.Headers[1].Value != config.SecretSet || strings.Join(got.PassHeaders, ",") != "Anthropic-Beta,X-Trace-Id" {
		t.Fatalf("admin API provider: %s", body)
	}
	if bytes.Contains(body, []byte(vendorSecret)) {
		t.Fatal("the admin API answered the secret value")
	}

	v := e.Publish("vendor headers")
	ver, err := e.Store.Version(ctx, v)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(ver.Snapshot, vendorSecret) || !strings.Contains(ver.Snapshot, "pass_headers") {
		t.Fatalf("version text:\n%s", ver.Snapshot)
	}
	res, _, raw = ops.GetRaw("/versions/diff?from=" + itoa(v-1) + "&to=" + itoa(v))
	if res.StatusCode != 200 || strings.Contains(raw, vendorSecret) || !strings.Contains(raw, "X-Vendor-Token") {
		t.Fatalf("the diff of the headers (%d):\n%s", res.StatusCode, raw)
	}

	// A request through the SDK with headers of all kinds.
	client := sdk(e, callerKey)
	opts := []option.RequestOption{
		option.WithHeader("anthropic-beta", "tools-2024-04-04"),
		option.WithHeader("X-Not-Allowed", "nope"),
		option.WithHeader("Cookie", "session=caller-cookie"),
		option.WithHeader("OpenAI-Organization", "org-from-the-caller"),
	}
	for _, stream := range []bool{false, true} {
		if stream {
			s := client.Chat.Completions.NewStreaming(ctx, userSays("fast", "hi"), opts...)
			for s.Next() {
			}
			if err := s.Err(); err != nil {
				t.Fatal(err)
			}
		} else if _, err := client.Chat.Completions.New(ctx, userSays("fast", "hi"), opts...); err != nil {
			t.Fatal(err)
		}
		last, ok := e.Fake.LastRequest("fake-small")
		if !ok {
			t.Fatal("the vendor saw no request")
		}
		h := last.Header
		for name, want := range map[string]string{
			"OpenAI-Organization": "org-static-1",     // static (the caller's own is not on the list)
			"X-Vendor-Token":      vendorSecret,       // static, secret
			"Anthropic-Beta":      "tools-2024-04-04", // allowlisted caller header
		} {
			if got := h.Values(name); len(got) != 1 || got[0] != want {
				t.Errorf("stream=%v: vendor got %s %q, want %q", stream, name, got, want)
			}
		}
		for _, name := range []string{"X-Not-Allowed", "Cookie", "X-Trace-Id"} {
			if v := h.Get(name); v != "" {
				t.Errorf("stream=%v: vendor got %s %q", stream, name, v)
			}
		}
		if !strings.HasPrefix(h.Get("Authorization"), "Bearer sk-fake-key-") {
			t.Errorf("stream=%v: vendor Authorization %q", stream, h.Get("Authorization"))
		}
		for name, vals := range h {
			for _, v := range vals {
				if strings.Contains(v, callerKey) || strings.Contains(v, "caller-cookie") {
					t.Errorf("stream=%v: the caller's key or cookie reached the vendor in %s", stream, name)
				}
			}
		}
	}

	// A new secret value: the diff says which header changed, never a value.
	form.Set("header_value_1", "tok-ROTATED-value-0002")
	if res, _ := ops.PostForm(edit, form); res.StatusCode != 200 {
		t.Fatalf("rotate: %d", res.StatusCode)
	}
	v2 := e.Publish("rotate the vendor token")
	res, _, raw = ops.GetRaw("/versions/diff?from=" + itoa(v) + "&to=" + itoa(v2))
	if res.StatusCode != 200 || strings.Contains(raw, vendorSecret) || strings.Contains(raw, "ROTATED") || !strings.Contains(raw, "secret_id") {
		t.Fatalf("the diff of a rotated secret (%d):\n%s", res.StatusCode, raw)
	}
	if _, err := client.Chat.Completions.New(ctx, userSays("fast", "hi")); err != nil {
		t.Fatal(err)
	}
	if last, _ := e.Fake.LastRequest("fake-small"); last.Header.Get("X-Vendor-Token") != "tok-ROTATED-value-0002" {
		t.Fatalf("after the rotation the vendor got %q", last.Header.Get("X-Vendor-Token"))
	}
}
