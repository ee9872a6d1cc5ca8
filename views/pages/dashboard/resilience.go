package dashboard

import (
	"slices"
	"strings"
	"time"
)

// The retry budget and degradation ladder section: retries and refusals of
// the retry budget and the ladder's answers over time (ladder_stats), and
// per route group × tier the range's totals with the live step-down state.

// LadderPoint is one step of one route group × tier (view model of
// calllog.LadderPoint).
type LadderPoint struct {
	Time                                                   time.Time
	Group, Tier                                            string
	Requests, Retries, Exhausted, StepDown, Cached, Static int64
}

// LadderRow is a route group × tier over the range.
type LadderRow struct {
	Group, Tier                                            string
	Requests, Retries, Exhausted, StepDown, Cached, Static int64
	// Budget is the tier's retry budget in words; Rule its step-down rule
	// ("" none); SteppedDown is set while this instance steps it down.
	Budget, Rule string
	SteppedDown  bool
	Until        time.Time
}

// RetryShare is the retries as a share of the requests, in percent.
func (r LadderRow) RetryShare() float64 { return rate(r.Retries, r.Requests) }

// Resilience is the section's view model.
type Resilience struct {
	Charts []Chart
	Rows   []LadderRow
}

// ResilienceCharts builds the section's two charts: retries and requests
// stopped by the retry budget, and answers per rung of the ladder.
func ResilienceCharts(points []LadderPoint, times []time.Time) []Chart {
	idx := make(map[int64]int, len(times))
	for i, t := range times {
		idx[t.Unix()] = i
	}
	n := len(times)
	sum := func(get func(p LadderPoint) int64) Series {
		s := Series{Values: make([]float64, n)}
		for _, p := range points {
			if i, ok := idx[p.Time.Unix()]; ok {
				s.Values[i] += float64(get(p))
			}
		}
		return s
	}
	named := func(name string, s Series) Series { s.Name = name; return s }
	noData := len(points) == 0
	unit := "per " + stepWord(times)
	return []Chart{
		{TestID: "chart-retries", Title: "Retries and the retry budget", Unit: unit, Times: times, NoData: noData, Format: Compact,
			Note: "attempts after a request's first, and requests the retry budget stopped (503 retry_budget_exhausted)",
			Series: []Series{
				named("retries", sum(func(p LadderPoint) int64 { return p.Retries })),
				named("stopped by the budget", sum(func(p LadderPoint) int64 { return p.Exhausted })),
			}},
		{TestID: "chart-degraded", Title: "Degraded answers", Unit: unit, Times: times, NoData: noData, Format: Compact,
			Note: "answers by rung of the degradation ladder (X-Switchyard-Degraded)",
			Series: []Series{
				named("step-down", sum(func(p LadderPoint) int64 { return p.StepDown })),
				named("cached", sum(func(p LadderPoint) int64 { return p.Cached })),
				named("static", sum(func(p LadderPoint) int64 { return p.Static })),
			}},
	}
}

// LadderRows sums the points per route group × tier, merges in the live
// rows (extra: tiers with a step-down rule, traffic or not) and each
// group's budget in words; sorted by group and tier order.
func LadderRows(points []LadderPoint, extra []LadderRow, budgets map[string]string) []LadderRow {
	byKey := map[[2]string]*LadderRow{}
	var out []*LadderRow
	get := func(g, t string) *LadderRow {
		k := [2]string{g, t}
		if r := byKey[k]; r != nil {
			return r
		}
		r := &LadderRow{Group: g, Tier: t}
		byKey[k] = r
		out = append(out, r)
		return r
	}
	for _, p := range points {
		r := get(p.Group, p.Tier)
		r.Requests += p.Requests
		r.Retries += p.Retries
		r.Exhausted += p.Exhausted
		r.StepDown += p.StepDown
		r.Cached += p.Cached
		r.Static += p.Static
	}
	for _, e := range extra {
		r := get(e.Group, e.Tier)
		r.Rule, r.SteppedDown, r.Until = e.Rule, e.SteppedDown, e.Until
	}
	for _, r := range out {
		r.Budget = budgets[r.Group]
	}
	tierOrder := func(t string) int { return slices.Index([]string{"fast", "standard", "deep"}, t) }
	slices.SortFunc(out, func(a, b *LadderRow) int {
		if c := strings.Compare(a.Group, b.Group); c != 0 {
			return c
		}
		return tierOrder(a.Tier) - tierOrder(b.Tier)
	})
	rows := make([]LadderRow, len(out))
	for i, r := range out {
		rows[i] = *r
	}
	return rows
}
