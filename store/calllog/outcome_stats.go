package calllog

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/lib/pq"
)

// outcome_stats: per-minute outcomes per route group × tier — every
// request under its outcome (OutcomeOf) with its latency — maintained from
// the inserted rows like call_stats. It is what counts every non-2xx by
// cause (our refusals and 503s as well as the vendors' errors) and what
// gives short ranges per-minute points.

// OutcomeOf is a row's outcome: "" for an answer (2xx), else its error
// code, or "http_<status>" for a non-2xx row without one.
func OutcomeOf(httpStatus int, errorCode string) string {
	switch {
	case httpStatus >= 200 && httpStatus < 300:
		return ""
	case errorCode != "":
		return errorCode
	}
	return "http_" + strconv.Itoa(httpStatus)
}

type outcomeKey struct {
	minute               int64 // Unix time / 60
	group, tier, outcome string
}

type outcomeStat struct {
	key              outcomeKey
	requests, latSum int64
	hist             [latencyBuckets]int64
}

// outcomeRollup accumulates one batch's outcome_stats increments (reused
// between batches).
type outcomeRollup struct {
	rows []outcomeStat
	at   map[outcomeKey]int
}

func newOutcomeRollup() outcomeRollup { return outcomeRollup{at: map[outcomeKey]int{}} }

func (or *outcomeRollup) reset() {
	or.rows = or.rows[:0]
	clear(or.at)
}

func (or *outcomeRollup) add(r *Record) {
	k := outcomeKey{minute: floorDiv(r.At.Unix(), 60), group: r.RouteGroup, tier: string(r.Tier), outcome: OutcomeOf(r.HTTPStatus, r.ErrorCode)}
	i, ok := or.at[k]
	if !ok {
		i = len(or.rows)
		or.rows = append(or.rows, outcomeStat{key: k})
		or.at[k] = i
	}
	s := &or.rows[i]
	s.requests++
	s.latSum += int64(r.LatencyMS)
	s.hist[latencyBucket(r.LatencyMS)]++
}

// sort puts the rows in key order (no deadlocks between writers).
func (or *outcomeRollup) sort() {
	slices.SortFunc(or.rows, func(a, b outcomeStat) int {
		return cmp.Or(cmp.Compare(a.key.minute, b.key.minute), cmp.Compare(a.key.group, b.key.group),
			cmp.Compare(a.key.tier, b.key.tier), cmp.Compare(a.key.outcome, b.key.outcome))
	})
}

func (or *outcomeRollup) appendJSON(b []byte) []byte {
	b = append(b, '[')
	for i := range or.rows {
		s := &or.rows[i]
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"minute":"`...)
		b = time.Unix(s.key.minute*60, 0).UTC().AppendFormat(b, time.RFC3339)
		b = append(b, '"')
		b = appendJSONField(b, "route_group", s.key.group)
		b = appendJSONField(b, "tier", s.key.tier)
		b = appendJSONField(b, "outcome", s.key.outcome)
		b = appendJSONInt(b, "requests", s.requests)
		b = appendJSONInt(b, "latency_sum_ms", s.latSum)
		b = appendJSONHist(b, "latency_hist", &s.hist)
		b = append(b, '}')
	}
	return append(b, ']')
}

// outcomeStatsInsert upserts a batch's outcome_stats increments.
var outcomeStatsInsert = `
    INSERT INTO outcome_stats AS s (minute, route_group, tier, outcome, requests, latency_sum_ms, latency_hist)
    SELECT * FROM json_to_recordset($ARG::json) AS x(minute timestamptz, route_group text, tier text, outcome text,
        requests bigint, latency_sum_ms bigint, latency_hist bigint[])
    ON CONFLICT (minute, route_group, tier, outcome) DO UPDATE SET
        requests = s.requests + EXCLUDED.requests,
        latency_sum_ms = s.latency_sum_ms + EXCLUDED.latency_sum_ms,
        latency_hist = ` + histAdd("s.latency_hist", "EXCLUDED.latency_hist")

// OutcomeQuery selects outcome_stats points.
type OutcomeQuery struct {
	// From and To select the minutes in [From, To).
	From, To time.Time
	// Step is the point width: a minute, an hour or a day (UTC).
	Step time.Duration
}

// OutcomePoint is one step of one route group × tier × outcome.
type OutcomePoint struct {
	Time                 time.Time
	Group, Tier, Outcome string
	Requests             int64
	LatencySumMS         int64
	Hist                 [latencyBuckets]int64
}

// OutcomeSeries returns the points ordered by time, group, tier and
// outcome; steps without calls have no point.
func OutcomeSeries(ctx context.Context, db Queryer, q OutcomeQuery) ([]OutcomePoint, error) {
	unit := ""
	switch q.Step {
	case time.Minute:
		unit = "minute"
	case time.Hour:
		unit = "hour"
	case 24 * time.Hour:
		unit = "day"
	default:
		return nil, invalidFilter("step must be a minute, an hour or a day")
	}
	hist := make([]string, latencyBuckets)
	for i := range hist {
		hist[i] = "sum(latency_hist[" + strconv.Itoa(i+1) + "])::bigint"
	}
	rows, err := db.QueryContext(ctx, `SELECT date_trunc('`+unit+`', minute, 'UTC'), route_group, tier, outcome,
		sum(requests)::bigint, sum(latency_sum_ms)::bigint, ARRAY[`+strings.Join(hist, ", ")+`]
		FROM outcome_stats WHERE minute >= $1 AND minute < $2 GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4`, q.From, q.To)
	if err != nil {
		return nil, fmt.Errorf("calllog: outcome series: %w", err)
	}
	defer rows.Close()
	var out []OutcomePoint
	for rows.Next() {
		var p OutcomePoint
		var h pq.Int64Array
		if err := rows.Scan(&p.Time, &p.Group, &p.Tier, &p.Outcome, &p.Requests, &p.LatencySumMS, &h); err != nil {
			return nil, fmt.Errorf("calllog: outcome series: %w", err)
		}
		p.Time = p.Time.UTC()
		for i := range min(len(h), latencyBuckets) {
			p.Hist[i] = h[i]
		}
		out = append(out, p)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("calllog: outcome series: %w", err)
	}
	return out, nil
}
