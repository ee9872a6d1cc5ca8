package calllog

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/lib/pq"
)

// A caller's (or a tenant's callers') usage: spend this month, tokens per
// day by logic model, requests per minute over the last hour, and the
// logic models it used most. Months and days come from the hourly
// call_stats roll-up, read through its (caller, hour) index; the minutes
// from the call logs themselves, through their (caller, at) index.

// UsageQuery selects whose usage, and when "now" is.
type UsageQuery struct {
	// Callers are the callers' names; a tenant's usage is its callers'.
	Callers []string
	// Now is the end of every window; zero is time.Now().
	Now time.Time
	// Location decides the month and the days (the limiter's: the budget
	// resets at its local month start); nil is UTC.
	Location *time.Location
	// Days is how many days of tokens per day, today included; 0 is 30.
	Days int
}

// UsageSummary is what UsageQuery selected.
type UsageSummary struct {
	// MonthStart and MonthEnd bound the local calendar month of Now.
	MonthStart, MonthEnd time.Time
	// MonthSpend is the spend since MonthStart by currency, in micro-units
	// (hours that begin at or after MonthStart: a zone whose offset is not
	// whole hours counts its first part-hour from the next hour).
	MonthSpend map[string]int64
	// Models are the month's logic models, by spend, then requests.
	// Rejected calls, which no logic model served, are left out.
	Models []ModelUsage
	// Days are the tokens per local day and logic model, oldest first;
	// days without tokens have no entry.
	Days []DayTokens
	// DaysFrom is the first day of Days (local midnight).
	DaysFrom time.Time
	// Minutes are the requests per minute and tier over the hour before
	// Now, oldest first; minutes without calls have no entry.
	Minutes []MinuteRequests
	// MinutesFrom is the first minute of Minutes.
	MinutesFrom time.Time
}

// ModelUsage is one logic model's month.
type ModelUsage struct {
	LogicModel                     string
	Requests, Errors               int64
	PromptTokens, CompletionTokens int64
	// CostMicros by currency, in micro-units.
	CostMicros map[string]int64
}

// DayTokens is one local day × logic model.
type DayTokens struct {
	Day                            time.Time
	LogicModel                     string
	PromptTokens, CompletionTokens int64
}

// MinuteRequests is one minute × tier of the call logs.
type MinuteRequests struct {
	Minute   time.Time
	Tier     string
	Requests int64
	// Rejected counts the requests our limits refused (status rejected).
	Rejected int64
}

// UsageOf runs q: three queries, each an index range scan per caller.
func UsageOf(ctx context.Context, db Queryer, q UsageQuery) (UsageSummary, error) {
	if q.Now.IsZero() {
		q.Now = time.Now()
	}
	if q.Location == nil {
		q.Location = time.UTC
	}
	if q.Days <= 0 {
		q.Days = 30
	}
	local := q.Now.In(q.Location)
	y, m, d := local.Date()
	u := UsageSummary{
		MonthStart:  time.Date(y, m, 1, 0, 0, 0, 0, q.Location),
		MonthEnd:    time.Date(y, m+1, 1, 0, 0, 0, 0, q.Location),
		DaysFrom:    time.Date(y, m, d-q.Days+1, 0, 0, 0, 0, q.Location),
		MinutesFrom: q.Now.Truncate(time.Minute).Add(-59 * time.Minute),
		MonthSpend:  map[string]int64{},
	}
	callers := pq.StringArray(q.Callers)
	if len(callers) == 0 {
		return u, nil
	}
	if err := readUsageMonth(ctx, db, &u, callers, q.Now); err != nil {
		return UsageSummary{}, err
	}
	if err := readUsageDays(ctx, db, &u, callers, q.Now, q.Location); err != nil {
		return UsageSummary{}, err
	}
	if err := readUsageMinutes(ctx, db, &u, callers, q.Now); err != nil {
		return UsageSummary{}, err
	}
	return u, nil
}

// readUsageMonth sums the month so far by logic model and currency.
func readUsageMonth(ctx context.Context, db Queryer, u *UsageSummary, callers pq.StringArray, now time.Time) error {
	rows, err := db.QueryContext(ctx, `
		SELECT logic_model, currency, sum(requests)::bigint, sum(errors)::bigint,
			sum(prompt_tokens)::bigint, sum(completion_tokens)::bigint,
			least(sum(cost_micros), 9223372036854775807)::bigint
		FROM call_stats WHERE caller = ANY($1) AND hour >= $2 AND hour <= $3
		GROUP BY 1, 2`, callers, u.MonthStart, now)
	if err != nil {
		return fmt.Errorf("calllog: usage month: %w", err)
	}
	defer rows.Close()
	at := map[string]int{}
	for rows.Next() {
		var (
			model, cur string
			x          ModelUsage
			cost       int64
		)
		if err := rows.Scan(&model, &cur, &x.Requests, &x.Errors, &x.PromptTokens, &x.CompletionTokens, &cost); err != nil {
			return fmt.Errorf("calllog: usage month: %w", err)
		}
		if cur != "" || cost != 0 {
			u.MonthSpend[cur] = addMicros(u.MonthSpend[cur], cost)
		}
		if model == "" {
			continue
		}
		i, ok := at[model]
		if !ok {
			i = len(u.Models)
			u.Models = append(u.Models, ModelUsage{LogicModel: model, CostMicros: map[string]int64{}})
			at[model] = i
		}
		mu := &u.Models[i]
		mu.Requests += x.Requests
		mu.Errors += x.Errors
		mu.PromptTokens += x.PromptTokens
		mu.CompletionTokens += x.CompletionTokens
		if cur != "" || cost != 0 {
			mu.CostMicros[cur] = addMicros(mu.CostMicros[cur], cost)
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("calllog: usage month: %w", err)
	}
	slices.SortFunc(u.Models, func(a, b ModelUsage) int {
		return cmp.Or(-cmp.Compare(sumMicros(a.CostMicros), sumMicros(b.CostMicros)),
			-cmp.Compare(a.Requests, b.Requests), cmp.Compare(a.LogicModel, b.LogicModel))
	})
	return nil
}

// sumMicros orders models by spend; currencies are only added up to rank.
func sumMicros(m map[string]int64) int64 {
	var s int64
	for _, v := range m {
		s = addMicros(s, v)
	}
	return s
}

// readUsageDays sums tokens per local day and logic model.
func readUsageDays(ctx context.Context, db Queryer, u *UsageSummary, callers pq.StringArray, now time.Time, loc *time.Location) error {
	zone := loc.String()
	if zone == "Local" || zone == "" {
		zone = "UTC" // PostgreSQL knows no "Local"; the gateway passes named zones
	}
	rows, err := db.QueryContext(ctx, `
		SELECT date_trunc('day', hour, $4), logic_model, sum(prompt_tokens)::bigint, sum(completion_tokens)::bigint
		FROM call_stats WHERE caller = ANY($1) AND hour >= $2 AND hour <= $3 AND logic_model <> ''
		GROUP BY 1, 2 HAVING sum(prompt_tokens) + sum(completion_tokens) > 0 ORDER BY 1, 2`,
		callers, u.DaysFrom, now, zone)
	if err != nil {
		return fmt.Errorf("calllog: usage days: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var d DayTokens
		if err := rows.Scan(&d.Day, &d.LogicModel, &d.PromptTokens, &d.CompletionTokens); err != nil {
			return fmt.Errorf("calllog: usage days: %w", err)
		}
		d.Day = d.Day.In(loc)
		u.Days = append(u.Days, d)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("calllog: usage days: %w", err)
	}
	return nil
}

// readUsageMinutes counts the last hour's calls per minute and tier.
func readUsageMinutes(ctx context.Context, db Queryer, u *UsageSummary, callers pq.StringArray, now time.Time) error {
	rows, err := db.QueryContext(ctx, `
		SELECT date_trunc('minute', at), coalesce(tier, ''), count(*), count(*) FILTER (WHERE status = 'rejected')
		FROM call_logs WHERE caller = ANY($1) AND at >= $2 AND at <= $3
		GROUP BY 1, 2 ORDER BY 1, 2`, callers, u.MinutesFrom, now)
	if err != nil {
		return fmt.Errorf("calllog: usage minutes: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var m MinuteRequests
		if err := rows.Scan(&m.Minute, &m.Tier, &m.Requests, &m.Rejected); err != nil {
			return fmt.Errorf("calllog: usage minutes: %w", err)
		}
		m.Minute = m.Minute.UTC()
		u.Minutes = append(u.Minutes, m)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("calllog: usage minutes: %w", err)
	}
	return nil
}

// Projection is the month's spend at the month-to-date rate: spend so far
// divided by the time elapsed since the month began, times the month's
// length. Before any time has elapsed it is the spend so far.
func Projection(spentMicros int64, monthStart, monthEnd, now time.Time) int64 {
	elapsed, length := now.Sub(monthStart), monthEnd.Sub(monthStart)
	if elapsed <= 0 || length <= 0 {
		return spentMicros
	}
	if elapsed >= length {
		return spentMicros
	}
	p := float64(spentMicros) * (float64(length) / float64(elapsed))
	if p >= 9.2e18 {
		return 9223372036854775807
	}
	return int64(p + 0.5)
}
