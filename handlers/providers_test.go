package handlers_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"switchyard/store"
	"switchyard/web/webtest"
)

func TestProvidersCreateValidateAndKeys(t *testing.T) {
	env := webtest.New(t)
	admin := env.Login(t, "ops", store.RoleAdmin)

	// Invalid input: 422, a message per field, nothing stored.
	res, doc := admin.PostForm("/providers", url.Values{"name": {"has space"}, "protocol": {"cohere"}, "base_url": {"ftp://x"}, "timeout_ms": {"ten"}})
	if res.StatusCode != http.StatusUnprocessableEntity {
		t.Fatalf("invalid provider: status %d", res.StatusCode)
	}
	for _, f := range []string{"name", "protocol", "base_url", "timeout_ms"} {
		if webtest.TestID(doc, "error-"+f).Length() != 1 {
			t.Errorf("no error shown for %s", f)
		}
	}
	snap, _, _ := env.Store.Draft(t.Context())
	if len(snap.Providers) != 0 {
		t.Fatal("an invalid form stored a provider")
	}

	res, doc = admin.PostForm("/providers", url.Values{"name": {"openai"}, "protocol": {"openai"}, "base_url": {"https://api.openai.com/v1"}, "timeout_ms": {"60000"}, "enabled": {"on"}})
	if res.StatusCode != http.StatusOK || webtest.TestID(doc, "provider-openai").Length() != 1 {
		t.Fatalf("create provider: %d", res.StatusCode)
	}
	snap, _, _ = env.Store.Draft(t.Context())
	pid := snap.Providers[0].ID
	path := "/providers/" + itoa(pid) + "/keys"

	// htmx key add returns the pool fragment; a bad key is refused with 422.
	admin.HTMX = true
	res, doc = admin.PostForm(path, url.Values{"secret": {"short"}})
	if res.StatusCode != http.StatusUnprocessableEntity || webtest.TestID(doc, "error-secret").Length() != 1 {
		t.Fatalf("short key: %d", res.StatusCode)
	}
	res, doc = admin.PostForm(path, url.Values{"secret": {"sk-live-abcdefghijklmn-9876"}, "label": {"primary"}})
	if res.StatusCode != http.StatusOK {
		t.Fatalf("add key: %d", res.StatusCode)
	}
	html, _ := doc.Html()
	if strings.Contains(html, "abcdefghijklmn") || !strings.Contains(html, "sk-…9876") {
		t.Fatal("key pool shows the secret or misses the fingerprint")
	}
	if webtest.TestID(doc, "key-pool").Length() != 1 || doc.Find("html").Length() > 0 && strings.Contains(html, "<nav") {
		t.Fatal("htmx request should get the pool fragment only")
	}

	// Duplicate name: the per-field message, and the first provider is untouched.
	admin.HTMX = false
	res, doc = admin.PostForm("/providers", url.Values{"name": {"openai"}, "protocol": {"openai"}, "base_url": {"https://x.example/v1"}, "timeout_ms": {"1000"}})
	if res.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(webtest.TestID(doc, "error-name").Text(), "already taken") {
		t.Fatalf("duplicate: %d %q", res.StatusCode, webtest.TestID(doc, "error-name").Text())
	}
}

func TestViewerSeesNoEditControlsAndCannotPost(t *testing.T) {
	env := webtest.New(t)
	viewer := env.Login(t, "watcher", store.RoleViewer)
	_, doc := viewer.Get("/providers")
	if webtest.TestID(doc, "provider-new").Length() != 0 {
		t.Fatal("viewer sees the add button")
	}
	res, _ := viewer.PostForm("/providers", url.Values{"name": {"x"}, "protocol": {"openai"}, "base_url": {"https://x.example"}, "timeout_ms": {"1000"}})
	if res.StatusCode != http.StatusForbidden {
		t.Fatalf("viewer POST: %d", res.StatusCode)
	}
	anon := env.Anonymous(t).NoRedirects()
	res, _ = anon.Get("/providers")
	if res.StatusCode != http.StatusSeeOther || !strings.HasPrefix(res.Header.Get("Location"), "/login") {
		t.Fatalf("anonymous: %d %s", res.StatusCode, res.Header.Get("Location"))
	}
	// A form post without the CSRF token is refused.
	admin := env.Login(t, "ops", store.RoleAdmin)
	res, _ = admin.PostForm("/providers", url.Values{"_csrf": {"forged"}, "name": {"x"}})
	if res.StatusCode != http.StatusForbidden {
		t.Fatalf("forged CSRF: %d", res.StatusCode)
	}
}
