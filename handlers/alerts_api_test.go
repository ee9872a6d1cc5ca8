package handlers_test

import (
	"strings"
	"testing"

	"switchyard/routing/alert"
	"switchyard/web/webtest"
)

// The alert API lists the seeded rules, changes one's thresholds and
// silence (refusing a value out of range with 422), adds a webhook channel
// without ever showing its URL's secret path, and lists events.
func TestAPIAlerts(t *testing.T) {
	env := webtest.New(t)
	a := newCRUD(t, env)
	var rules struct {
		Rules []struct {
			ID     int64  `json:"id"`
			Kind   string `json:"kind"`
			Params struct {
				Percent float64 `json:"percent"`
			} `json:"params"`
			ForSeconds    int     `json:"for_seconds"`
			SilencedUntil *string `json:"silenced_until"`
		} `json:"rules"`
	}
	a.call("GET", "/alerts/rules", "", 200, &rules)
	if len(rules.Rules) != len(alert.Defaults()) || rules.Rules[0].Kind != "tier_unservable" || rules.Rules[0].ForSeconds != 30 {
		t.Fatalf("rules: %+v", rules.Rules)
	}
	budget := rules.Rules[3]
	var e crudErr
	a.call("PUT", "/alerts/rules/"+itoa(budget.ID), `{"params":{"percent":-3}}`, 422, &e)
	if e.Error.Fields["params"] == "" {
		t.Fatalf("a negative percent: %+v", e)
	}
	a.call("PUT", "/alerts/rules/"+itoa(budget.ID), `{"params":{"percent":75},"silenced_until":"2099-01-01T00:00:00Z"}`, 200)
	a.call("GET", "/alerts/rules", "", 200, &rules)
	if got := rules.Rules[3]; got.Params.Percent != 75 || got.SilencedUntil == nil {
		t.Fatalf("after the update: %+v", got)
	}
	a.call("PUT", "/alerts/rules/99999", `{"enabled":false}`, 404)

	a.call("POST", "/alerts/channels", `{"name":"ops","shape":"slack","url":"ftp://x"}`, 422)
	a.call("POST", "/alerts/channels", `{"name":"ops","shape":"slack","url":"https://hooks.example.com/services/T0/B0/s3cr3tpath"}`, 201)
	out := a.call("GET", "/alerts/channels", "", 200)
	if strings.Contains(string(out), "s3cr3tpath") || !strings.Contains(string(out), "hooks.example.com") {
		t.Fatalf("channels: %s", out)
	}
	a.call("GET", "/alerts/events", "", 200)
}
