package gateway

import (
	"context"
	"strings"
	"testing"
	"time"

	"switchyard/routing/alert"
	"switchyard/store/rows"
	"switchyard/web/metrics"
)

// Every scrape-time gauge the gateway registers is one the metrics package
// knows, so the alerting rules' check against it sees them all.
func TestGaugesAreDocumented(t *testing.T) {
	for name := range (&Gateway{}).gauges(nil) {
		if !metrics.Documented(name) {
			t.Errorf("gauge %s is not in metrics' gaugeHelp", name)
		}
	}
}

type expiringKeysStub struct{ keys []rows.CallerKeyInfo }

func (expiringKeysStub) TierCalls(context.Context, time.Time) ([]rows.TierCalls, error) {
	return nil, nil
}
func (s expiringKeysStub) CallerKeysExpiringWithin(_ context.Context, d time.Duration) ([]rows.CallerKeyInfo, error) {
	var out []rows.CallerKeyInfo
	for _, k := range s.keys {
		if k.ExpiresAt != nil && time.Until(*k.ExpiresAt) <= d {
			out = append(out, k)
		}
	}
	return out, nil
}

// A key that expires inside the rule's horizon is one finding, named by its
// caller, name and prefix, with the seconds it has left; the rule fires
// once for it and not again on the next pass.
func TestKeyExpiringRule(t *testing.T) {
	now := time.Now()
	soon, later := now.Add(36*time.Hour), now.Add(30*24*time.Hour)
	src := alertSource{calls: expiringKeysStub{keys: []rows.CallerKeyInfo{
		{CallerName: "app", Name: "ci", Prefix: "sy-abc", ExpiresAt: &soon},
		{CallerName: "app", Name: "laptop", Prefix: "sy-def", ExpiresAt: &later},
	}}}
	rule := alert.Rule{ID: 1, Kind: alert.KindKeyExpiring, Params: alert.Params{WithinDays: 7}, Enabled: true}
	if err := rule.Validate(); err != nil {
		t.Fatal(err)
	}
	found, err := src.expiringKeys(context.Background(), 7*24*time.Hour, now)
	if err != nil {
		t.Fatal(err)
	}
	if len(found) != 1 || found[0].Subject.Name != "app/ci (sy-abc…)" || found[0].Subject.Kind != alert.SubjectCallerKey {
		t.Fatalf("findings = %+v, want the key expiring in 36 h only", found)
	}
	if left := time.Duration(found[0].Value) * time.Second; left < 35*time.Hour || left > 36*time.Hour {
		t.Errorf("time left = %s, want ~36h", left)
	}
	states, notices := alert.Step(rule, nil, found, now)
	if len(notices) != 1 || notices[0].Event != alert.EventFiring {
		t.Fatalf("first pass notices = %+v, want one firing", notices)
	}
	if msg := alert.Describe(rule, found[0].Subject, found[0].Value); !strings.Contains(msg, "app/ci") || strings.Contains(msg, "laptop") {
		t.Errorf("message = %q", msg)
	}
	if _, again := alert.Step(rule, states, found, now.Add(10*time.Second)); len(again) != 0 {
		t.Errorf("second pass sent %+v, want nothing", again)
	}
}
