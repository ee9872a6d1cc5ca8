// Package usage renders the Usage page: a caller's or a tenant's spend this
// month against its budget with the projection to the month's end, tokens
// per day by logic model (stacked bars), requests per minute against the
// RPM limits (a line chart) and the month's top logic models.
package usage

import (
	"strconv"
	"time"

	"switchyard/views/layout"
	"switchyard/views/pages/dashboard"
)

// Subject kinds.
const (
	KindCaller = "caller"
	KindTenant = "tenant"
)

// Page is the Usage page.
type Page struct {
	layout.Page
	// Callers and Tenants are the picker's choices.
	Callers, Tenants []string
	// Kind and Name are the subject shown; "" when none is picked.
	Kind, Name string
	// NotFound: the picked caller or tenant does not exist.
	NotFound bool
	Report   Report
}

// Selected is the picker's value of the subject shown.
func (p Page) Selected() string { return p.Kind + ":" + p.Name }

// Report is one subject's usage, as the handler read it.
type Report struct {
	Members       []string
	ConfigVersion int64 // 0: the draft's budgets and limits
	Now           time.Time
	TimeZone      string
	MonthStart    time.Time
	MonthEnd      time.Time
	Spend         []Spend
	// CallersWithoutBudget counts members with no monthly budget.
	CallersWithoutBudget int
	Days                 []DayTokens
	DaysFrom             time.Time // the first day shown, local midnight
	NumDays              int
	Minutes              []Minute
	MinutesFrom          time.Time
	RPMLimits            []Limit
	Models               []Model
}

// Spend is the month in one currency, in micro-units.
type Spend struct {
	Currency                  string
	SpentMicros, BudgetMicros int64 // BudgetMicros 0: no budget
	ProjectedMicros           int64
}

// Over reports whether the projection passes the budget.
func (s Spend) Over() bool { return s.BudgetMicros > 0 && s.ProjectedMicros > s.BudgetMicros }

// DayTokens is one local day × logic model.
type DayTokens struct {
	Day                            time.Time
	LogicModel                     string
	PromptTokens, CompletionTokens int64
}

// Minute is one minute × tier of the last hour.
type Minute struct {
	Minute             time.Time
	Tier               string
	Requests, Rejected int64
}

// Limit is a tier's requests-per-minute limit.
type Limit struct {
	Tier string
	RPM  int64
}

// Model is one logic model's month.
type Model struct {
	LogicModel                     string
	Requests, Errors               int64
	PromptTokens, CompletionTokens int64
	CostMicros                     map[string]int64
}

// tiers in display order.
var tiers = []string{"fast", "standard", "deep"}

// RPMChart is the last hour per minute: a line per tier with calls, and a
// dashed flat line for each of those tiers' RPM limits.
func (r Report) RPMChart() dashboard.Chart {
	times := make([]time.Time, 60)
	for i := range times {
		times[i] = r.MinutesFrom.Add(time.Duration(i) * time.Minute)
	}
	c := dashboard.Chart{TestID: "usage-rpm-chart", Title: "Requests per minute, last hour", Unit: "requests", Times: times,
		Note: "Every request, refusals included; a dashed line is a tier's RPM limit.", EmptyText: "No requests in the last hour."}
	active := map[string]bool{}
	for ti, tier := range append(tiers, "") {
		s := dashboard.Series{Name: tierName(tier), Color: dashboard.Color(ti), Values: make([]float64, 60)}
		seen := false
		for _, m := range r.Minutes {
			if m.Tier != tier {
				continue
			}
			if i := int(m.Minute.Sub(r.MinutesFrom) / time.Minute); i >= 0 && i < 60 {
				s.Values[i] += float64(m.Requests)
				seen = true
			}
		}
		if seen {
			c.Series = append(c.Series, s)
			active[tier] = true
		}
	}
	for _, l := range r.RPMLimits {
		if !active[l.Tier] {
			continue // a limit alone would only squash the tiers with calls
		}
		s := dashboard.Series{Name: l.Tier + " RPM limit", Color: dashboard.Color(indexOf(tiers, l.Tier)), Values: make([]float64, 60), Dashed: true}
		for i := range s.Values {
			s.Values[i] = float64(l.RPM)
		}
		c.Series = append(c.Series, s)
	}
	return c
}

func tierName(t string) string {
	if t == "" {
		return "no tier"
	}
	return t
}

func indexOf(xs []string, x string) int {
	for i, v := range xs {
		if v == x {
			return i
		}
	}
	return len(xs)
}

// PeakMinute is the busiest minute's requests (all tiers).
func (r Report) PeakMinute() int64 {
	per := map[time.Time]int64{}
	var peak int64
	for _, m := range r.Minutes {
		per[m.Minute] += m.Requests
		peak = max(peak, per[m.Minute])
	}
	return peak
}

// TotalTokens is the tokens of the days shown.
func (r Report) TotalTokens() int64 {
	var n int64
	for _, d := range r.Days {
		n += d.PromptTokens + d.CompletionTokens
	}
	return n
}

func i64(v int64) string { return strconv.FormatInt(v, 10) }
