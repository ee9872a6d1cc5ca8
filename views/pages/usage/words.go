package usage

import (
	"strconv"
	"strings"
	"time"

	"switchyard/views/pages/dashboard"
)

func num(f float64) string { return strconv.FormatFloat(f, 'f', 1, 64) }

// markerColor is the projection marker's: amber within the budget, red
// past it.
func markerColor(over bool) string {
	if over {
		return dashboard.ColorUpstreamError
	}
	return dashboard.ColorRejected
}

// monthLine names the month and how much of it has passed.
func monthLine(r Report) string {
	loc := r.MonthStart.Location()
	if z, err := time.LoadLocation(r.TimeZone); err == nil {
		loc = z
	}
	length := r.MonthEnd.Sub(r.MonthStart)
	share := 0.0
	if length > 0 {
		share = 100 * float64(r.Now.Sub(r.MonthStart)) / float64(length)
	}
	return r.MonthStart.In(loc).Format("January 2006") + " in " + r.TimeZone + " (the budget's month): " +
		r.MonthStart.In(loc).Format("Jan 2 15:04") + " to " + r.MonthEnd.In(loc).Format("Jan 2 15:04") + ", " +
		dashboard.Percent(share) + " elapsed."
}

// unbudgetedLine says which part of a tenant no budget bounds.
func unbudgetedLine(r Report) string {
	n := r.CallersWithoutBudget
	if n == len(r.Members) {
		return "None of its callers has a monthly budget: nothing bounds the tenant's spend."
	}
	who := strconv.Itoa(n) + " of its " + strconv.Itoa(len(r.Members)) + " callers have"
	if n == 1 {
		who = "1 of its " + strconv.Itoa(len(r.Members)) + " callers has"
	}
	return who + " no monthly budget: the tenant's budget is the sum of the others', and its spend counts every caller."
}

// rpmLine sums up the last hour beside the limits.
func rpmLine(p Page) string {
	r := p.Report
	var b strings.Builder
	b.WriteString("Busiest minute of the last hour: " + i64(r.PeakMinute()) + " requests. ")
	if len(r.RPMLimits) == 0 {
		b.WriteString("No tier has an RPM limit")
		if p.Kind == KindTenant {
			b.WriteString(" on every caller")
		}
		b.WriteString(".")
		return b.String()
	}
	parts := make([]string, len(r.RPMLimits))
	for i, l := range r.RPMLimits {
		parts[i] = l.Tier + " " + i64(l.RPM)
	}
	b.WriteString("RPM limits: " + strings.Join(parts, ", "))
	if p.Kind == KindTenant {
		b.WriteString(" (the sum of its callers' limits; each caller is held to its own)")
	}
	b.WriteString(".")
	return b.String()
}
