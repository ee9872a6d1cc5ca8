// Package dashboard renders the Dashboard: requests, errors, latency,
// tokens and cost over time from the roll-up tables, as server-rendered SVG
// charts; breakdowns per caller, tier and logic model; the daily cost
// roll-up; and the live breaker and key states per deployment.
package dashboard

import (
	"sort"
	"strconv"
	"time"

	"switchyard/views/components"
	"switchyard/views/layout"
)

// Ranges are the selectable ranges, in display order.
var Ranges = []components.Option{
	{Value: "1h", Label: "Last hour"},
	{Value: "24h", Label: "Last 24 hours"},
	{Value: "7d", Label: "Last 7 days"},
	{Value: "30d", Label: "Last 30 days"},
}

// DefaultRange is the range without a choice.
const DefaultRange = "24h"

// RangeSpec returns a range's length and its step (per minute for the last
// hour, hourly up to 7 days, daily beyond); ok is false for an unknown range.
func RangeSpec(r string) (d, step time.Duration, ok bool) {
	switch r {
	case "1h":
		return time.Hour, time.Minute, true
	case "24h":
		return 24 * time.Hour, time.Hour, true
	case "7d":
		return 7 * 24 * time.Hour, time.Hour, true
	case "30d":
		return 30 * 24 * time.Hour, 24 * time.Hour, true
	}
	return 0, 0, false
}

// Group-by choices of the series; the values are the roll-up query's.
const (
	GroupNone       = ""
	GroupCaller     = "caller"
	GroupTier       = "tier"
	GroupLogicModel = "logic_model"
)

// Groupings are the series' group-by choices.
var Groupings = []components.Option{
	{Value: GroupNone, Label: "No grouping"},
	{Value: GroupCaller, Label: "Caller"},
	{Value: GroupTier, Label: "Tier"},
	{Value: GroupLogicModel, Label: "Logic model"},
}

// Point is one step (hour or day) of one group of the hourly roll-ups, as
// the handler read it.
type Point struct {
	Time                                                          time.Time
	Group                                                         string // "" when not grouped
	Requests, Errors, Rejected, Cancelled                         int64
	PromptTokens, CompletionTokens, CachedTokens, ReasoningTokens int64
	// CostMicros per currency, in micro-units (never added across currencies).
	CostMicros map[string]int64
	// Hist is the latency histogram (the store's fixed buckets).
	Hist []int64
}

// CostRow is one day × caller × tier × logic model × currency of the daily
// cost roll-up.
type CostRow struct {
	Day                                          time.Time
	Caller, Tier, LogicModel, Currency           string
	Requests, Errors                             int64
	PromptTokens, CompletionTokens, CachedTokens int64
	CostMicros                                   int64
}

// Quantile estimates the q-quantile in milliseconds of a latency histogram
// laid out by the store's buckets (the handler passes the store's).
type Quantile func(hist []int64, q float64) float64

// Page is the Dashboard.
type Page struct {
	Page    layout.Page
	Range   string
	GroupBy string
	From    time.Time
	To      time.Time
	Step    time.Duration

	Totals Totals
	Charts []Chart
	// Causes are every non-2xx by route group × tier × error code.
	Causes []ErrorCause

	ByCaller []Breakdown
	ByTier   []Breakdown
	ByModel  []Breakdown

	Costs []CostRow

	// Resilience is the retry budget and degradation ladder section.
	Resilience Resilience

	// States is the live state per deployment; StatesNote says why it is
	// missing or partial.
	States     []DeploymentState
	StatesNote string
}

// Totals sum the range.
type Totals struct {
	Requests, Errors, Rejected, Cancelled int64
	// Non2xx is every answer that was not a 2xx, of Outcomes requests
	// (the per-minute outcome roll-up).
	Non2xx, Outcomes int64
	Tokens           int64
	P95MS            float64
	CostMicros       map[string]int64
}

// ErrorRate is every non-2xx per request, in percent.
func (t Totals) ErrorRate() float64 { return rate(t.Non2xx, t.Outcomes) }

// Breakdown is one caller, tier or logic model over the range.
type Breakdown struct {
	Name                                         string
	Requests, Errors, Rejected, Cancelled        int64
	PromptTokens, CompletionTokens, CachedTokens int64
	P50MS, P95MS                                 float64
	CostMicros                                   map[string]int64
	hist                                         []int64
}

// ErrorRate is upstream errors per request, in percent.
func (b Breakdown) ErrorRate() float64 { return rate(b.Errors, b.Requests) }

func rate(n, of int64) float64 {
	if of == 0 {
		return 0
	}
	return 100 * float64(n) / float64(of)
}

// Aggregate sums points by group into breakdown rows, busiest first.
func Aggregate(points []Point, quantile Quantile) []Breakdown {
	idx := map[string]int{}
	var out []Breakdown
	for _, p := range points {
		i, ok := idx[p.Group]
		if !ok {
			i = len(out)
			idx[p.Group] = i
			out = append(out, Breakdown{Name: p.Group, CostMicros: map[string]int64{}, hist: make([]int64, len(p.Hist))})
		}
		b := &out[i]
		b.Requests += p.Requests
		b.Errors += p.Errors
		b.Rejected += p.Rejected
		b.Cancelled += p.Cancelled
		b.PromptTokens += p.PromptTokens
		b.CompletionTokens += p.CompletionTokens
		b.CachedTokens += p.CachedTokens
		for cur, v := range p.CostMicros {
			b.CostMicros[cur] += v
		}
		for j, c := range p.Hist {
			b.hist[j] += c
		}
	}
	for i := range out {
		out[i].P50MS = quantile(out[i].hist, 0.50)
		out[i].P95MS = quantile(out[i].hist, 0.95)
	}
	sort.SliceStable(out, func(a, b int) bool {
		if out[a].Requests != out[b].Requests {
			return out[a].Requests > out[b].Requests
		}
		return out[a].Name < out[b].Name
	})
	return out
}

// DeploymentState is one deployment's live protection state.
type DeploymentState struct {
	ID         int64
	Model      string
	Provider   string
	Upstream   string
	Weight     int
	StaticSkip string // parked, disabled, ...
	Breakers   []InstanceBreaker
	Load       int64
	MaxConc    int
	Keys       []KeyView
}

// InstanceBreaker is one instance's breaker of a deployment.
type InstanceBreaker struct {
	Instance    string
	State       string
	FailureRate float64
	Calls       int
}

// Kind is the badge kind of a breaker state.
func (b InstanceBreaker) Kind() string { return components.BreakerKind(b.State) }

// WorstBreaker is the most alarming state over every instance.
func (d DeploymentState) WorstBreaker() string {
	worst := "closed"
	for _, b := range d.Breakers {
		switch {
		case b.State == "open":
			return "open"
		case b.State == "half_open":
			worst = "half_open"
		}
	}
	return worst
}

// KeyView is one provider key's live state.
type KeyView struct {
	ID          int64
	Fingerprint string
	Status      string // active | cooling | quarantined | disabled
	Note        string
}

// Kind is the badge kind of a key status.
func (k KeyView) Kind() string {
	switch k.Status {
	case "active":
		return "ok"
	case "cooling":
		return "warn"
	case "quarantined":
		return "bad"
	}
	return ""
}

// BreakerKind is the badge kind of a breaker state name.
func BreakerKind(s string) string { return InstanceBreaker{State: s}.Kind() }

func i64(v int64) string { return strconv.FormatInt(v, 10) }

func itoa(v int) string { return strconv.Itoa(v) }

func orNone(s, none string) string {
	if s == "" {
		return none
	}
	return s
}

func day(t time.Time) string { return t.UTC().Format(time.DateOnly) }

func stamp(t time.Time) string { return t.UTC().Format("2006-01-02 15:04") }

func stepName(d time.Duration) string {
	if d >= 24*time.Hour {
		return "daily"
	}
	if d < time.Hour {
		return "per-minute"
	}
	return "hourly"
}

// RangeURL is the dashboard with another range, keeping the grouping.
func (p Page) RangeURL(r string) string {
	u := "/dashboard?range=" + r
	if p.GroupBy != "" {
		u += "&group=" + p.GroupBy
	}
	return u
}
