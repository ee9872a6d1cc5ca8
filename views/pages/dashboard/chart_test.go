package dashboard

import (
	"strings"
	"testing"
	"time"
)

// noQuantile stands in for the store's histogram quantile.
func noQuantile([]int64, float64) float64 { return 0 }

func TestNiceScale(t *testing.T) {
	for _, tt := range []struct{ max, top, step float64 }{
		{0, 1, 0.2}, {3, 3, 1}, {8, 8, 2}, {9, 10, 5}, {950, 1000, 250 * 2}, {0.00004, 0.00004, 0.00001},
	} {
		top, step := niceScale(tt.max)
		if top < tt.max || step <= 0 || (tt.top != 0 && (abs(top-tt.top) > 1e-12 || abs(step-tt.step) > 1e-12)) {
			t.Errorf("niceScale(%v) = %v, %v; want %v, %v", tt.max, top, step, tt.top, tt.step)
		}
	}
}

func abs(f float64) float64 {
	if f < 0 {
		return -f
	}
	return f
}

func TestChartLayoutBreaksLinesAtGaps(t *testing.T) {
	base := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	c := Chart{Times: Steps(base, base.Add(4*time.Hour), time.Hour), Series: []Series{
		{Name: "p95", Values: []float64{10, 20, 0, 40}, Has: []bool{true, true, false, true}},
	}}
	p := c.Layout()
	if got := strings.Count(p.Lines[0].D, "M"); got != 2 {
		t.Errorf("path %q: %d segments, want 2", p.Lines[0].D, got)
	}
	if len(p.Lines[0].Dots) != 3 || len(p.XTicks) != 4 || len(p.YTicks) < 3 {
		t.Errorf("dots %d, x ticks %d, y ticks %d", len(p.Lines[0].Dots), len(p.XTicks), len(p.YTicks))
	}
	if (Chart{Times: c.Times, NoData: true}).Empty() == false {
		t.Error("NoData chart is not empty")
	}
}

func TestChartsGroupTheBusiestAndSumTheRest(t *testing.T) {
	base := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	times := Steps(base, base.Add(2*time.Hour), time.Hour)
	var pts []Point
	for i, g := range []string{"a", "b", "c", "d", "e", "f", "g", "h", "i"} {
		pts = append(pts, Point{Time: base, Group: g, Requests: int64(100 - i), CostMicros: map[string]int64{"USD": 1_000_000}})
	}
	charts := Charts(pts, times, GroupCaller, noQuantile)
	req := charts[0]
	if req.TestID != "chart-requests" || len(req.Series) != maxGroups+1 || req.Series[maxGroups].Name != "other" {
		t.Fatalf("series: %d, last %q", len(req.Series), req.Series[len(req.Series)-1].Name)
	}
	if got := req.Series[maxGroups].Values[0]; got != 92+93 {
		t.Errorf("other = %v, want 185", got)
	}
	if cost := charts[4]; cost.Series[0].Values[0] != 1 || cost.Unit != "USD per hour" {
		t.Errorf("cost chart: %+v, unit %q (1 USD a group drawn in currency units)", cost.Series[0].Values, cost.Unit)
	}
	total := Total(pts, noQuantile)
	if total.Requests != 100+99+98+97+96+95+94+93+92 || total.CostMicros["USD"] != 9_000_000 {
		t.Errorf("total %+v", total)
	}
	if rows := Aggregate(pts, noQuantile); rows[0].Name != "a" || len(rows) != 9 {
		t.Errorf("aggregate order: %v", rows[0].Name)
	}
}

func TestCompact(t *testing.T) {
	for v, want := range map[float64]string{0: "0", 7: "7", 1500: "1.5k", 2_000_000: "2M", 0.5: "0.5", 0.000025: "0.000025", 2.5: "2.5"} {
		if got := Compact(v); got != want {
			t.Errorf("Compact(%v) = %q, want %q", v, got, want)
		}
	}
}

func TestQueueCharts(t *testing.T) {
	base := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	times := Steps(base, base.Add(3*time.Hour), time.Hour)
	p95 := func(h []int64, q float64) float64 { return float64(h[0]) * q }
	charts := QueueCharts([]QueuePoint{
		{Time: base, Class: "interactive", Queued: 10, MeanDepth: 0.5, Hist: []int64{100}},
		{Time: base.Add(time.Hour), Class: "batch", Queued: 0, Refused: 7, MeanDepth: 0},
		{Time: base.Add(2 * time.Hour), Class: "batch", Queued: 3, Refused: 2, MeanDepth: 2.25, Hist: []int64{40}},
	}, times, 40, p95)
	if len(charts) != 2 || charts[0].TestID != "chart-queue-depth" || charts[1].TestID != "chart-queue-wait" {
		t.Fatalf("charts %+v", charts)
	}
	depth, wait := charts[0], charts[1]
	if len(depth.Series) != 3 || depth.Series[0].Name != "interactive" || depth.Series[2].Name != "batch" {
		t.Fatalf("depth series %+v", depth.Series)
	}
	// No point means nobody waited: depth 0, drawn.
	if got := depth.Series[2].Values; got[0] != 0 || got[2] != 2.25 || !depth.Series[2].has(1) {
		t.Errorf("batch depth %v", got)
	}
	// A wait p95 only where requests queued.
	if w := wait.Series[2]; w.has(1) || !w.has(2) || w.Values[2] != 38 {
		t.Errorf("batch wait %v %v", w.Values, w.Has)
	}
	if w := wait.Series[0]; !w.has(0) || w.Values[0] != 95 || w.has(1) {
		t.Errorf("interactive wait %v %v", w.Values, w.Has)
	}
	if !strings.HasSuffix(wait.Note, "request: batch 9.") {
		t.Errorf("refusals note %q", wait.Note)
	}
	// Calls but no queueing: flat depth lines and a wait chart that says
	// nobody waited, never "no calls".
	if quiet := QueueCharts(nil, times, 26, p95); quiet[0].Empty() || !strings.Contains(quiet[0].Note, "26 call(s)") || !quiet[1].Empty() || quiet[1].NoData {
		t.Errorf("calls without queueing: %+v", quiet)
	}
	if none := QueueCharts(nil, times, 0, p95); !none[0].Empty() || !strings.Contains(none[1].Note, "No request was refused") {
		t.Errorf("empty range: %+v", none)
	}
}

// A status has one colour in every chart: "rejected" is amber in the
// requests chart and in the error-rate chart, an upstream error red in
// both, and no other series takes a status colour.
func TestStatusSeriesKeepTheirColourAcrossCharts(t *testing.T) {
	base := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	times := Steps(base, base.Add(3*time.Hour), time.Hour)
	pts := []Point{{Time: base, Requests: 10, Errors: 2, Rejected: 3, PromptTokens: 5, CompletionTokens: 7, CostMicros: map[string]int64{"USD": 10}}}
	status := map[string]string{"upstream errors": ColorUpstreamError, "rejected by us": ColorRejected, "requests": ColorRequests}
	seen := map[string]int{}
	for _, c := range Charts(pts, times, "", noQuantile) {
		for _, l := range c.Layout().Lines {
			want, isStatus := status[l.Name]
			switch {
			case isStatus && l.Color != want:
				t.Errorf("%s: series %q is %s, want %s", c.TestID, l.Name, l.Color, want)
			case !isStatus && (l.Color == ColorUpstreamError || l.Color == ColorRejected || l.Color == ColorOK):
				t.Errorf("%s: series %q takes the status colour %s", c.TestID, l.Name, l.Color)
			}
			if isStatus {
				seen[l.Name]++
			}
		}
	}
	if seen["upstream errors"] != 2 || seen["rejected by us"] != 2 {
		t.Fatalf("status series drawn: %v", seen)
	}
}
