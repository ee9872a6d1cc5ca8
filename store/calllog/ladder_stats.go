package calllog

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"
)

// ladder_stats: hourly resilience figures per route group × tier — the
// retry budget's retries and refusals and the degradation ladder's answers
// — maintained from the inserted rows like call_stats.

// Degradation levels as the call log stores them (routing's constants).
const (
	DegradedStepDown = "step_down"
	DegradedCached   = "cached"
	DegradedStatic   = "static"
)

// codeBudgetExhausted is the error code of a request the retry budget stopped.
const codeBudgetExhausted = "retry_budget_exhausted"

type ladderKey struct {
	hour        int64 // Unix time / 3600
	group, tier string
}

type ladderStat struct {
	key                                                    ladderKey
	requests, retries, exhausted, stepDown, cached, static int64
}

// ladderRollup accumulates one batch's ladder_stats increments (reused
// between batches).
type ladderRollup struct {
	rows []ladderStat
	at   map[ladderKey]int
}

func newLadderRollup() ladderRollup { return ladderRollup{at: map[ladderKey]int{}} }

func (lr *ladderRollup) reset() {
	lr.rows = lr.rows[:0]
	clear(lr.at)
}

func (lr *ladderRollup) add(r *Record, hour int64) {
	if r.RouteGroup == "" || r.Tier == "" || r.Status == StatusRejected && r.Degraded == "" {
		return // before routing, or refused by us: nothing the budget or the ladder did
	}
	k := ladderKey{hour: hour, group: r.RouteGroup, tier: string(r.Tier)}
	i, ok := lr.at[k]
	if !ok {
		i = len(lr.rows)
		lr.rows = append(lr.rows, ladderStat{key: k})
		lr.at[k] = i
	}
	s := &lr.rows[i]
	s.requests++
	s.retries += int64(r.Retries)
	if r.ErrorCode == codeBudgetExhausted {
		s.exhausted++
	}
	switch r.Degraded {
	case DegradedStepDown:
		s.stepDown++
	case DegradedCached:
		s.cached++
	case DegradedStatic:
		s.static++
	}
}

// sort puts the rows in key order (no deadlocks between writers).
func (lr *ladderRollup) sort() {
	slices.SortFunc(lr.rows, func(a, b ladderStat) int {
		return cmp.Or(cmp.Compare(a.key.hour, b.key.hour), cmp.Compare(a.key.group, b.key.group), cmp.Compare(a.key.tier, b.key.tier))
	})
}

func (lr *ladderRollup) appendJSON(b []byte) []byte {
	b = append(b, '[')
	for i := range lr.rows {
		s := &lr.rows[i]
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONHour(append(b, '{'), s.key.hour)
		b = appendJSONField(b, "route_group", s.key.group)
		b = appendJSONField(b, "tier", s.key.tier)
		b = appendJSONInt(b, "requests", s.requests)
		b = appendJSONInt(b, "retries", s.retries)
		b = appendJSONInt(b, "budget_exhausted", s.exhausted)
		b = appendJSONInt(b, "step_down", s.stepDown)
		b = appendJSONInt(b, "cached", s.cached)
		b = appendJSONInt(b, "static", s.static)
		b = append(b, '}')
	}
	return append(b, ']')
}

// ladderStatsInsert upserts a batch's ladder_stats increments.
const ladderStatsInsert = `
    INSERT INTO ladder_stats AS s (hour, route_group, tier, requests, retries, budget_exhausted, step_down, cached, static)
    SELECT * FROM json_to_recordset($ARG::json) AS x(hour timestamptz, route_group text, tier text, requests bigint,
        retries bigint, budget_exhausted bigint, step_down bigint, cached bigint, static bigint)
    ON CONFLICT (hour, route_group, tier) DO UPDATE SET
        requests = s.requests + EXCLUDED.requests,
        retries = s.retries + EXCLUDED.retries,
        budget_exhausted = s.budget_exhausted + EXCLUDED.budget_exhausted,
        step_down = s.step_down + EXCLUDED.step_down,
        cached = s.cached + EXCLUDED.cached,
        static = s.static + EXCLUDED.static`

// LadderQuery selects ladder_stats points.
type LadderQuery struct {
	From, To time.Time
	// Step is time.Hour (default) or 24*time.Hour.
	Step time.Duration
}

// LadderPoint is one step of one route group × tier.
type LadderPoint struct {
	Time                                                   time.Time
	Group, Tier                                            string
	Requests, Retries, Exhausted, StepDown, Cached, Static int64
}

// LadderSeries returns the points ordered by time, group and tier; steps
// without calls have no point.
func LadderSeries(ctx context.Context, db Queryer, q LadderQuery) ([]LadderPoint, error) {
	step := "hour"
	switch q.Step {
	case 0, time.Hour:
	case 24 * time.Hour:
		step = "day"
	default:
		return nil, invalidFilter("step must be an hour or a day")
	}
	if q.To.IsZero() {
		q.To = time.Now()
	}
	if q.From.IsZero() {
		q.From = q.To.Add(-24 * time.Hour)
	}
	rows, err := db.QueryContext(ctx, `SELECT date_trunc('`+step+`', hour, 'UTC'), route_group, tier,
		sum(requests)::bigint, sum(retries)::bigint, sum(budget_exhausted)::bigint, sum(step_down)::bigint, sum(cached)::bigint, sum(static)::bigint
		FROM ladder_stats WHERE hour >= $1 AND hour < $2 GROUP BY 1, 2, 3 ORDER BY 1, 2, 3`, q.From, q.To)
	if err != nil {
		return nil, fmt.Errorf("calllog: ladder series: %w", err)
	}
	defer rows.Close()
	var out []LadderPoint
	for rows.Next() {
		var p LadderPoint
		if err := rows.Scan(&p.Time, &p.Group, &p.Tier, &p.Requests, &p.Retries, &p.Exhausted, &p.StepDown, &p.Cached, &p.Static); err != nil {
			return nil, fmt.Errorf("calllog: ladder series: %w", err)
		}
		p.Time = p.Time.UTC()
		out = append(out, p)
	}
	return out, rows.Err()
}
