// Package overview renders the console's first page: per route group ×
// tier whether it can serve now (the routing core's servability verdict),
// its request rate, error rate by cause, latency and spend today, charts of
// the last hour per minute, and the top callers today against their
// budgets. The board refreshes itself (htmx polling).
//
// data-testid: overview-board (the fragment refreshed by htmx),
// overview-empty, overview-tier-<group>-<tier> (a card, data-verdict) with
// verdict-badge, overview-why, overview-rps, overview-errors (data-percent),
// overview-cause (data-cause), overview-latency, overview-spend;
// overview-charts; overview-callers with overview-caller (data-caller).
package overview

import (
	"cmp"
	"slices"
	"strconv"
	"time"

	"switchyard/routing"
	"switchyard/routing/alert"
	"switchyard/views/layout"
	"switchyard/views/pages/dashboard"
)

// Window is what the rates, errors and latency cover.
const Window = time.Hour

// RateWindow is what requests per second are measured over.
const RateWindow = 5 * time.Minute

// Cause is one error code of a tier over the window.
type Cause struct {
	Code    string
	Count   int64
	Percent float64
}

// Tier is one route group × tier.
type Tier struct {
	Verdict routing.TierVerdict
	// Requests over Window and per second over RateWindow.
	Requests int64
	PerSec   float64
	// Non2xx is every non-2xx answer over Window, by cause (largest first).
	Non2xx int64
	Causes []Cause
	// P50MS and P95MS are over Window; HasLatency is false without calls.
	P50MS, P95MS float64
	HasLatency   bool
	// Spend is today's (UTC) cost per currency, in micro-units.
	Spend map[string]int64
}

// ErrorPercent is every non-2xx as a share of requests.
func (t Tier) ErrorPercent() float64 {
	if t.Requests == 0 {
		return 0
	}
	return 100 * float64(t.Non2xx) / float64(t.Requests)
}

// Caller is one of today's busiest callers.
type Caller struct {
	Name, Group string
	Requests    int64
	// Spend is today's cost per currency; Month the month's so far in
	// Currency, against BudgetMicros (0: no budget).
	Spend        map[string]int64
	Month        int64
	BudgetMicros int64
	Currency     string
}

// BudgetPercent is the month's spend as a share of the budget.
func (c Caller) BudgetPercent() float64 {
	if c.BudgetMicros <= 0 {
		return 0
	}
	return 100 * float64(c.Month) / float64(c.BudgetMicros)
}

// Board is the part of the page htmx refreshes.
type Board struct {
	Tiers   []Tier
	Callers []Caller
	Charts  []dashboard.Chart
	// NoConfig: nothing is published yet.
	NoConfig bool
	// Error is shown when figures could not be read.
	Error string
	At    time.Time
	// Firing are the alerts firing now (Settings → Alerts), oldest first.
	Firing []Firing
}

// Firing is one alert firing now.
type Firing struct {
	Rule  alert.Rule
	State alert.State
}

// Words is what the alert found.
func (f Firing) Words() string { return alert.Describe(f.Rule, f.State.Subject, f.State.Value) }

// Page is the overview.
type Page struct {
	Page  layout.Page
	Board Board
}

// Point is one minute of one route group × tier × outcome ("" answered).
type Point = dashboard.OutcomePoint

// Figures fills each tier's rate, errors by cause and latency from the
// per-minute outcome points of the window ending at now.
func Figures(tiers []Tier, points []Point, now time.Time, quantile dashboard.Quantile) {
	for i := range tiers {
		t := &tiers[i]
		var hist []int64
		var recent int64
		causes := map[string]int64{}
		for _, p := range points {
			if p.Group != t.Verdict.Group || p.Tier != string(t.Verdict.Tier) {
				continue
			}
			t.Requests += p.Requests
			if !p.Time.Before(now.Add(-RateWindow)) {
				recent += p.Requests
			}
			if p.Outcome != "" {
				t.Non2xx += p.Requests
				causes[p.Outcome] += p.Requests
			}
			if hist == nil {
				hist = make([]int64, len(p.Hist))
			}
			for j, v := range p.Hist {
				hist[j] += v
			}
		}
		t.PerSec = float64(recent) / RateWindow.Seconds()
		for code, n := range causes {
			t.Causes = append(t.Causes, Cause{Code: code, Count: n, Percent: 100 * float64(n) / float64(t.Requests)})
		}
		slices.SortFunc(t.Causes, func(a, b Cause) int { return cmp.Or(cmp.Compare(b.Count, a.Count), cmp.Compare(a.Code, b.Code)) })
		if t.Requests > 0 {
			t.P50MS, t.P95MS, t.HasLatency = quantile(hist, 0.5), quantile(hist, 0.95), true
		}
	}
}

// Charts are the window's requests per minute and error rate (every
// non-2xx) per route group × tier.
func Charts(points []Point, times []time.Time) []dashboard.Chart {
	labelled := make([]Point, len(points))
	for i, p := range points {
		p.Tier = p.Group + " · " + p.Tier
		labelled[i] = p
	}
	req := dashboard.Chart{TestID: "overview-chart-requests", Title: "Requests", Unit: "per minute, by route group · tier", Times: times, Format: dashboard.Compact, NoData: len(points) == 0}
	per := map[string][]float64{}
	var order []string
	idx := map[int64]int{}
	for i, t := range times {
		idx[t.Unix()] = i
	}
	for _, p := range labelled {
		i, ok := idx[p.Time.Unix()]
		if !ok {
			continue
		}
		if per[p.Tier] == nil {
			per[p.Tier] = make([]float64, len(times))
			order = append(order, p.Tier)
		}
		per[p.Tier][i] += float64(p.Requests)
	}
	slices.Sort(order)
	for _, l := range order {
		req.Series = append(req.Series, dashboard.Series{Name: l, Values: per[l]})
	}
	errs := dashboard.ErrorChart(labelled, times, true)
	errs.TestID, errs.Unit = "overview-chart-errors", "% of requests, every non-2xx, by route group · tier"
	errs.Note = "Every non-2xx counts: upstream errors, our refusals and 503s when nothing can serve."
	return []dashboard.Chart{req, errs}
}

func pct(f float64) string { return dashboard.Percent(f) }

func perSec(f float64) string {
	if f > 0 && f < 0.1 {
		return strconv.FormatFloat(f, 'f', 3, 64)
	}
	return strconv.FormatFloat(f, 'f', 1, 64)
}
