package handlers_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"switchyard/routing/alert"
	"switchyard/routing/config"
	"switchyard/store"
	"switchyard/web/webtest"
)

// Settings → Alerts lists the default rules and says alerts go nowhere
// until a webhook is added; an admin edits a threshold (422 on a bad one),
// silences a rule, adds a webhook whose URL is never shown again; the
// overview lists a firing alert, and says none is firing otherwise.
func TestSettingsAlerts(t *testing.T) {
	env := webtest.New(t)
	admin := env.Login(t, "ops", store.RoleAdmin)
	// A provider, so the overview is not the onboarding.
	if _, err := env.Store.CreateProvider(t.Context(), config.Provider{Name: "p", Protocol: config.ProtocolOpenAI, BaseURL: "http://127.0.0.1:1/v1", Enabled: true, TimeoutMS: 1000}); err != nil {
		t.Fatal(err)
	}
	_, doc := admin.Get("/")
	if webtest.TestID(doc, "overview-firing-empty").Length() != 1 {
		t.Fatal("overview: no empty firing panel")
	}
	res, doc := admin.Get("/settings/alerts")
	if res.StatusCode != http.StatusOK || webtest.TestID(doc, "alerts-nowhere").Length() != 1 {
		t.Fatalf("alerts page: %d", res.StatusCode)
	}
	rules, _ := env.Store.AlertRules(t.Context())
	if len(rules) != len(alert.Defaults()) || webtest.TestID(doc, "alert-rule-"+itoa(rules[1].ID)).AttrOr("data-kind", "") != "error_rate" {
		t.Fatalf("rules listed: %d", len(rules))
	}
	rate := itoa(rules[1].ID)
	res, _ = admin.PostForm("/settings/alerts/rules/"+rate, url.Values{"percent": {"-4"}, "window_seconds": {"300"}, "enabled": {"on"}})
	if res.StatusCode != http.StatusUnprocessableEntity {
		t.Fatalf("a negative percent: %d", res.StatusCode)
	}
	res, _ = admin.NoRedirects().PostForm("/settings/alerts/rules/"+rate, url.Values{"percent": {"35"}, "window_seconds": {"600"}, "min_requests": {"5"}, "for_seconds": {"0"}})
	if res.StatusCode != http.StatusSeeOther {
		t.Fatalf("save rule: %d", res.StatusCode)
	}
	res, _ = admin.NoRedirects().PostForm("/settings/alerts/rules/"+rate+"/silence", url.Values{"for": {"4h"}})
	if res.StatusCode != http.StatusSeeOther {
		t.Fatalf("silence: %d", res.StatusCode)
	}
	rules, _ = env.Store.AlertRules(t.Context())
	r := rules[1]
	if r.Params.Percent != 35 || r.Params.WindowSeconds != 600 || r.Enabled || !r.Silenced(time.Now().Add(3*time.Hour)) || r.Silenced(time.Now().Add(5*time.Hour)) {
		t.Fatalf("stored rule: %+v", r)
	}
	res, _ = admin.PostForm("/settings/alerts/channels", url.Values{"name": {"ops"}, "shape": {"slack"}, "url": {"not a url"}})
	if res.StatusCode != http.StatusUnprocessableEntity {
		t.Fatalf("a bad URL: %d", res.StatusCode)
	}
	res, _ = admin.NoRedirects().PostForm("/settings/alerts/channels", url.Values{"name": {"ops"}, "shape": {"slack"}, "url": {"https://hooks.example.com/services/T/B/s3cr3t"}})
	if res.StatusCode != http.StatusSeeOther {
		t.Fatalf("add webhook: %d", res.StatusCode)
	}
	_, doc = admin.Get("/settings/alerts")
	if html, _ := doc.Html(); strings.Contains(html, "s3cr3t") || webtest.TestID(doc, "alerts-nowhere").Length() != 0 {
		t.Fatal("the webhook URL is shown, or the page still says alerts go nowhere")
	}

	now := time.Now()
	st := alert.State{RuleID: rules[0].ID, Subject: alert.Subject{Kind: alert.SubjectTier, Name: "main/deep"}, Status: alert.StatusFiring, Since: now, FiredAt: now}
	if _, err := env.Store.SaveAlertPass(t.Context(), []int64{rules[0].ID}, []alert.State{st}, nil, now); err != nil {
		t.Fatal(err)
	}
	_, doc = admin.Get("/")
	if li := webtest.TestID(doc, "overview-firing-tier_unservable"); li.AttrOr("data-subject", "") != "main/deep" || !strings.Contains(li.Text(), "unservable") {
		t.Fatalf("overview firing: %q", li.Text())
	}
}
