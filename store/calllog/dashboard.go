package calllog

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/lib/pq"
)

// Series groupings.
const (
	GroupNone       = ""
	GroupCaller     = "caller"
	GroupTier       = "tier"
	GroupLogicModel = "logic_model"
)

// SeriesQuery selects a dashboard time series from call_stats.
type SeriesQuery struct {
	// From and To select the hours in [From, To). A zero To is now; a zero
	// From is 24 hours before To.
	From, To time.Time
	// Step is the point width: time.Hour (default) or 24*time.Hour
	// (UTC days).
	Step time.Duration
	// GroupBy splits the series by GroupCaller, GroupTier or GroupLogicModel;
	// GroupNone gives one series.
	GroupBy string
	// Optional filters.
	Caller, Tier, LogicModel string
}

// Point is one step of one series. Latency quantiles are estimated from the
// call_stats histogram by linear interpolation within a bucket (see
// LatencyBucketBounds); they cover calls that were not rejected.
type Point struct {
	Time             time.Time
	Group            string // the GroupBy value; "" when not grouped
	Requests         int64
	Errors           int64 // status upstream_error
	Rejected         int64
	Cancelled        int64
	P50MS, P95MS     float64
	MeanMS           float64
	PromptTokens     int64
	CompletionTokens int64
	CachedTokens     int64
	ReasoningTokens  int64
	// CostMicros per currency, in micro-units (costs in different currencies
	// are not added up).
	CostMicros map[string]int64
	// Hist is the merged latency histogram.
	Hist [latencyBuckets]int64
}

// Series returns points ordered by time, then group. Steps without calls
// have no point.
func Series(ctx context.Context, db Queryer, q SeriesQuery) ([]Point, error) {
	query, args, err := seriesSQL(q)
	if err != nil {
		return nil, err
	}
	rows, err := db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("calllog: series: %w", err)
	}
	defer rows.Close()
	points, sums, err := scanSeries(rows)
	if err != nil {
		return nil, err
	}
	latencies(points, sums)
	return points, nil
}

// seriesSQL is the roll-up query of q and its arguments.
func seriesSQL(q SeriesQuery) (string, []any, error) {
	step := "hour"
	switch q.Step {
	case 0, time.Hour:
	case 24 * time.Hour:
		step = "day"
	default:
		return "", nil, invalidFilter("step must be an hour or a day")
	}
	group := "''"
	switch q.GroupBy {
	case GroupNone:
	case GroupCaller, GroupTier, GroupLogicModel:
		group = q.GroupBy
	default:
		return "", nil, invalidFilter("unknown grouping %q", q.GroupBy)
	}
	if q.To.IsZero() {
		q.To = time.Now()
	}
	if q.From.IsZero() {
		q.From = q.To.Add(-24 * time.Hour)
	}
	args := []any{q.From, q.To}
	where := []string{"hour >= $1", "hour < $2"}
	for _, eq := range []struct{ col, v string }{
		{"caller", q.Caller}, {"tier", q.Tier}, {"logic_model", q.LogicModel},
	} {
		if eq.v != "" {
			args = append(args, eq.v)
			where = append(where, eq.col+" = $"+strconv.Itoa(len(args)))
		}
	}
	hist := make([]string, latencyBuckets)
	for i := range hist {
		hist[i] = "sum(latency_hist[" + strconv.Itoa(i+1) + "])::bigint"
	}
	query := `SELECT date_trunc('` + step + `', hour, 'UTC') AS t, ` + group + ` AS g, currency,
		sum(requests)::bigint, sum(errors)::bigint, sum(rejected)::bigint, sum(cancelled)::bigint,
		sum(prompt_tokens)::bigint, sum(completion_tokens)::bigint, sum(cached_tokens)::bigint,
		sum(reasoning_tokens)::bigint, least(sum(cost_micros), 9223372036854775807)::bigint, sum(latency_sum_ms)::bigint,
		ARRAY[` + strings.Join(hist, ", ") + `]
		FROM call_stats WHERE ` + strings.Join(where, " AND ") + `
		GROUP BY 1, 2, 3 ORDER BY 1, 2, 3`
	return query, args, nil
}

// scanSeries reads the roll-up rows into points, one per time and group
// (currencies folded in), with each point's latency sum beside it.
func scanSeries(rows *sql.Rows) ([]Point, []int64, error) {
	var (
		points []Point
		sums   []int64 // latency_sum_ms per point
	)
	for rows.Next() {
		var (
			t        time.Time
			g, cur   string
			x        Point
			cost     int64
			latSum   int64
			histVals pq.Int64Array
		)
		if err := rows.Scan(&t, &g, &cur, &x.Requests, &x.Errors, &x.Rejected, &x.Cancelled,
			&x.PromptTokens, &x.CompletionTokens, &x.CachedTokens, &x.ReasoningTokens,
			&cost, &latSum, &histVals); err != nil {
			return nil, nil, fmt.Errorf("calllog: series: %w", err)
		}
		t = t.UTC()
		n := len(points)
		if n == 0 || !points[n-1].Time.Equal(t) || points[n-1].Group != g {
			points = append(points, Point{Time: t, Group: g, CostMicros: map[string]int64{}})
			sums = append(sums, 0)
			n++
		}
		p := &points[n-1]
		p.Requests += x.Requests
		p.Errors += x.Errors
		p.Rejected += x.Rejected
		p.Cancelled += x.Cancelled
		p.PromptTokens += x.PromptTokens
		p.CompletionTokens += x.CompletionTokens
		p.CachedTokens += x.CachedTokens
		p.ReasoningTokens += x.ReasoningTokens
		if cur != "" || cost != 0 {
			p.CostMicros[cur] = addMicros(p.CostMicros[cur], cost)
		}
		sums[n-1] += latSum
		for i := range min(len(histVals), latencyBuckets) {
			p.Hist[i] += histVals[i]
		}
	}
	if err := rows.Err(); err != nil {
		return nil, nil, fmt.Errorf("calllog: series: %w", err)
	}
	return points, sums, nil
}

// latencies fills each point's quantiles and mean from its histogram and
// latency sum.
func latencies(points []Point, sums []int64) {
	for i := range points {
		p := &points[i]
		p.P50MS = HistogramQuantile(p.Hist[:], 0.50)
		p.P95MS = HistogramQuantile(p.Hist[:], 0.95)
		var n int64
		for _, c := range p.Hist {
			n += c
		}
		if n > 0 {
			p.MeanMS = float64(sums[i]) / float64(n)
		}
	}
}

// HistogramQuantile estimates the q-quantile (0 < q <= 1) in milliseconds of
// a latency histogram laid out by LatencyBucketBounds, interpolating linearly
// inside the bucket the quantile falls in. The open-ended last bucket
// reports its lower bound. An empty histogram gives 0.
func HistogramQuantile(hist []int64, q float64) float64 {
	var total int64
	for _, c := range hist {
		total += c
	}
	if total == 0 {
		return 0
	}
	rank := q * float64(total)
	var seen float64
	for i, c := range hist {
		if c == 0 {
			continue
		}
		if seen+float64(c) >= rank {
			lo := 0.0
			if i > 0 {
				lo = float64(LatencyBucketBounds[i-1])
			}
			if i >= len(LatencyBucketBounds) {
				return lo
			}
			hi := float64(LatencyBucketBounds[i])
			return lo + (hi-lo)*(rank-seen)/float64(c)
		}
		seen += float64(c)
	}
	return float64(LatencyBucketBounds[len(LatencyBucketBounds)-1])
}

// CostRow is one day × caller × tier × logic model × currency of
// cost_rollups. Text fields are "" where the call log had none (rejected
// calls have no logic model).
type CostRow struct {
	Day              time.Time // UTC midnight
	Caller           string
	Tier             string
	LogicModel       string
	Currency         string
	Requests         int64
	Errors           int64
	PromptTokens     int64
	CompletionTokens int64
	CachedTokens     int64
	CostMicros       int64 // micro-units of Currency
}

// Costs returns the cost roll-ups of the UTC days overlapping [from, to),
// ordered by day, caller, tier, logic model and currency. A zero to is now.
func Costs(ctx context.Context, db Queryer, from, to time.Time) ([]CostRow, error) {
	if to.IsZero() {
		to = time.Now()
	}
	first := utcDay(from)
	end := utcDay(to)
	if end.Before(to) {
		end = end.AddDate(0, 0, 1) // a partial last day is included
	}
	rows, err := db.QueryContext(ctx, `
		SELECT day, caller, tier, logic_model, currency, requests, errors,
			prompt_tokens, completion_tokens, cached_tokens, cost_micros
		FROM cost_rollups WHERE day >= $1::date AND day < $2::date
		ORDER BY day, caller, tier, logic_model, currency`,
		first.Format(time.DateOnly), end.Format(time.DateOnly))
	if err != nil {
		return nil, fmt.Errorf("calllog: costs: %w", err)
	}
	defer rows.Close()
	var out []CostRow
	for rows.Next() {
		var c CostRow
		if err := rows.Scan(&c.Day, &c.Caller, &c.Tier, &c.LogicModel, &c.Currency, &c.Requests,
			&c.Errors, &c.PromptTokens, &c.CompletionTokens, &c.CachedTokens, &c.CostMicros); err != nil {
			return nil, fmt.Errorf("calllog: costs: %w", err)
		}
		c.Day = utcDay(c.Day)
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("calllog: costs: %w", err)
	}
	return out, nil
}

// QueuePoint is one step of one priority class in queue_stats: requests
// that waited in the class's queue for capacity, requests its queue refused
// (full, or shed for an interactive request), and the waits.
type QueuePoint struct {
	Time    time.Time
	Class   string
	Queued  int64
	Refused int64
	// WaitSumMS is the summed wait; MeanDepth is it over the step's length,
	// the mean number of requests waiting (Little's law).
	WaitSumMS int64
	MeanDepth float64
	P95MS     float64
	Hist      [latencyBuckets]int64
}

// QueueSeries returns queue_stats points in [from, to) by step (an hour or
// a day), ordered by time, then class. Steps without queued or refused
// requests have no point.
func QueueSeries(ctx context.Context, db Queryer, from, to time.Time, step time.Duration) ([]QueuePoint, error) {
	unit := "hour"
	switch step {
	case 0, time.Hour:
		step = time.Hour
	case 24 * time.Hour:
		unit = "day"
	default:
		return nil, invalidFilter("step must be an hour or a day")
	}
	if to.IsZero() {
		to = time.Now()
	}
	if from.IsZero() {
		from = to.Add(-24 * time.Hour)
	}
	hist := make([]string, latencyBuckets)
	for i := range hist {
		hist[i] = "sum(wait_hist[" + strconv.Itoa(i+1) + "])::bigint"
	}
	rows, err := db.QueryContext(ctx, `SELECT date_trunc('`+unit+`', hour, 'UTC') AS t, class,
		sum(queued)::bigint, sum(refused)::bigint, sum(wait_sum_ms)::bigint, ARRAY[`+strings.Join(hist, ", ")+`]
		FROM queue_stats WHERE hour >= $1 AND hour < $2 GROUP BY 1, 2 ORDER BY 1, 2`, from, to)
	if err != nil {
		return nil, fmt.Errorf("calllog: queue series: %w", err)
	}
	defer rows.Close()
	var out []QueuePoint
	for rows.Next() {
		var p QueuePoint
		var h pq.Int64Array
		if err := rows.Scan(&p.Time, &p.Class, &p.Queued, &p.Refused, &p.WaitSumMS, &h); err != nil {
			return nil, fmt.Errorf("calllog: queue series: %w", err)
		}
		p.Time = p.Time.UTC()
		for i := range min(len(h), latencyBuckets) {
			p.Hist[i] = h[i]
		}
		p.P95MS = HistogramQuantile(p.Hist[:], 0.95)
		p.MeanDepth = float64(p.WaitSumMS) / float64(step.Milliseconds())
		out = append(out, p)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("calllog: queue series: %w", err)
	}
	return out, nil
}
