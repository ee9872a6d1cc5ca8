package overview

import (
	"testing"
	"time"

	"switchyard/routing"
	"switchyard/routing/config"
)

func sumQuantile(h []int64, q float64) float64 {
	var n int64
	for _, v := range h {
		n += v
	}
	return float64(n) * q
}

// Each card's figures are its own group × tier's: requests per second over
// the last 5 minutes, every non-2xx by cause over the hour, latency.
func TestFiguresPerGroupAndTier(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	tiers := []Tier{
		{Verdict: routing.TierVerdict{Group: "night", Tier: config.TierDeep, Verdict: routing.VerdictUnservable}},
		{Verdict: routing.TierVerdict{Group: "night", Tier: config.TierFast}},
		{Verdict: routing.TierVerdict{Group: "main", Tier: config.TierDeep}},
	}
	pts := []Point{
		{Time: now.Add(-30 * time.Minute), Group: "night", Tier: "deep", Outcome: "no_available_model", Requests: 30, Hist: []int64{30}},
		{Time: now.Add(-2 * time.Minute), Group: "night", Tier: "deep", Outcome: "no_available_model", Requests: 30, Hist: []int64{30}},
		{Time: now.Add(-2 * time.Minute), Group: "night", Tier: "fast", Outcome: "", Requests: 9, Hist: []int64{9}},
		{Time: now.Add(-time.Minute), Group: "night", Tier: "fast", Outcome: "rate_limited", Requests: 1, Hist: []int64{1}},
	}
	Figures(tiers, pts, now, sumQuantile)
	deep, fast, main := tiers[0], tiers[1], tiers[2]
	if deep.Requests != 60 || deep.PerSec != 0.1 || deep.ErrorPercent() != 100 || len(deep.Causes) != 1 || deep.Causes[0].Code != "no_available_model" || deep.Causes[0].Percent != 100 {
		t.Errorf("night deep %+v", deep)
	}
	if fast.Requests != 10 || fast.ErrorPercent() != 10 || fast.Causes[0].Code != "rate_limited" || !fast.HasLatency || fast.P95MS != 9.5 {
		t.Errorf("night fast %+v", fast)
	}
	if main.Requests != 0 || main.HasLatency || main.ErrorPercent() != 0 {
		t.Errorf("main deep %+v", main)
	}
	cs := Charts(pts, []time.Time{now.Add(-30 * time.Minute), now.Add(-2 * time.Minute), now.Add(-time.Minute)})
	if len(cs) != 2 || len(cs[0].Series) != 2 || cs[0].Series[0].Name != "night · deep" {
		t.Fatalf("charts %+v", cs)
	}
}
