package calllog

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"slices"
	"time"

	"github.com/lib/pq"
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
	hour        time.Time
	group, tier string
}

type ladderStat struct {
	requests, retries, exhausted, stepDown, cached, static int64
}

// ladderRollup accumulates one batch's ladder_stats increments.
type ladderRollup map[ladderKey]*ladderStat

func (lr ladderRollup) add(r *Record) {
	if r.RouteGroup == "" || r.Tier == "" || r.Status == StatusRejected && r.Degraded == "" {
		return // before routing, or refused by us: nothing the budget or the ladder did
	}
	k := ladderKey{hour: r.At.UTC().Truncate(time.Hour), group: r.RouteGroup, tier: r.Tier}
	s := lr[k]
	if s == nil {
		s = &ladderStat{}
		lr[k] = s
	}
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

const ladderStatsStmt = `INSERT INTO ladder_stats AS s (hour, route_group, tier, requests, retries, budget_exhausted, step_down, cached, static)
    SELECT * FROM unnest($1::timestamptz[], $2::text[], $3::text[], $4::bigint[], $5::bigint[], $6::bigint[], $7::bigint[], $8::bigint[], $9::bigint[])
    ON CONFLICT (hour, route_group, tier) DO UPDATE SET
        requests = s.requests + EXCLUDED.requests,
        retries = s.retries + EXCLUDED.retries,
        budget_exhausted = s.budget_exhausted + EXCLUDED.budget_exhausted,
        step_down = s.step_down + EXCLUDED.step_down,
        cached = s.cached + EXCLUDED.cached,
        static = s.static + EXCLUDED.static`

// store upserts the increments in key order (no deadlocks between writers).
func (lr ladderRollup) store(ctx context.Context, tx *sql.Tx) error {
	if len(lr) == 0 {
		return nil
	}
	keys := make([]ladderKey, 0, len(lr))
	for k := range lr {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b ladderKey) int {
		return cmp.Or(a.hour.Compare(b.hour), cmp.Compare(a.group, b.group), cmp.Compare(a.tier, b.tier))
	})
	var hours, groups, tiers []string
	var requests, retries, exhausted, stepDown, cached, static []int64
	for _, k := range keys {
		s := lr[k]
		hours, groups, tiers = append(hours, k.hour.Format(time.RFC3339)), append(groups, k.group), append(tiers, k.tier)
		requests, retries, exhausted = append(requests, s.requests), append(retries, s.retries), append(exhausted, s.exhausted)
		stepDown, cached, static = append(stepDown, s.stepDown), append(cached, s.cached), append(static, s.static)
	}
	if _, err := tx.ExecContext(ctx, ladderStatsStmt, pq.Array(hours), pq.Array(groups), pq.Array(tiers), pq.Array(requests),
		pq.Array(retries), pq.Array(exhausted), pq.Array(stepDown), pq.Array(cached), pq.Array(static)); err != nil {
		return fmt.Errorf("calllog: update ladder stats: %w", err)
	}
	return nil
}

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
		return nil, fmt.Errorf("%w: step must be an hour or a day", ErrInvalidFilter)
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
