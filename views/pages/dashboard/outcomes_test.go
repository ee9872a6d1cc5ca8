package dashboard

import (
	"testing"
	"time"
)

// A tier answering 503 no_available_model to every request draws 100 %
// under that cause, not 0 % (only upstream errors used to be plotted), and
// the cause table says so per route group × tier.
func TestErrorRateCountsEveryNon2xxByCause(t *testing.T) {
	base := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	times := Steps(base, base.Add(3*time.Minute), time.Minute)
	pts := []OutcomePoint{
		{Time: base, Group: "default", Tier: "deep", Outcome: "no_available_model", Requests: 4},
		{Time: base, Group: "default", Tier: "fast", Outcome: "", Requests: 6},
		{Time: base.Add(time.Minute), Group: "default", Tier: "deep", Outcome: "no_available_model", Requests: 2},
		{Time: base.Add(time.Minute), Group: "default", Tier: "fast", Outcome: "rate_limited", Requests: 1},
		{Time: base.Add(time.Minute), Group: "default", Tier: "fast", Outcome: "", Requests: 1},
	}
	c := ErrorChart(pts, times, false)
	if len(c.Times) != 3 || c.Series[0].Name != "every non-2xx" || c.Series[1].Name != "no_available_model" || c.Series[2].Name != "rate_limited" {
		t.Fatalf("series %+v", c.Series)
	}
	if v := c.Series[0].Values; v[0] != 40 || v[1] != 75 || c.Series[0].has(2) {
		t.Errorf("every non-2xx %v %v", v, c.Series[0].Has)
	}
	byTier := ErrorChart(pts, times, true)
	for _, s := range byTier.Series {
		if s.Name == "deep" && (s.Values[0] != 100 || s.Values[1] != 100) {
			t.Errorf("deep %v", s.Values)
		}
		if s.Name == "fast" && (s.Values[0] != 0 || s.Values[1] != 50) {
			t.Errorf("fast %v", s.Values)
		}
	}
	cs := Causes(pts)
	if len(cs) != 2 || cs[0] != (ErrorCause{Group: "default", Tier: "deep", Cause: "no_available_model", Count: 6, Requests: 6}) || cs[0].Rate() != 100 {
		t.Fatalf("causes %+v", cs)
	}
	if cs[1].Tier != "fast" || cs[1].Count != 1 || cs[1].Requests != 8 {
		t.Errorf("fast cause %+v", cs[1])
	}
	mp := MinutePoints(pts, false)
	if len(mp) != 2 || mp[0].Requests != 10 || mp[0].Errors != 4 || mp[1].Errors != 3 {
		t.Errorf("minute points %+v", mp)
	}
	if stepWord(times) != "minute" {
		t.Errorf("step word %q", stepWord(times))
	}
}
