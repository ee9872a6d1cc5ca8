package store

import (
	"context"
	"fmt"
	"time"

	"switchyard/store/rows"
)

// alertCounted leaves out what the caller caused (a bad key, a limit, a
// malformed request, a hang-up): the error rate is the gateway's and its
// vendors'.
const alertCounted = `status <> 'client_cancelled' AND COALESCE(error_code, '') NOT IN
	('invalid_api_key', 'caller_disabled', 'caller_not_live', 'invalid_request', 'request_timeout', 'model_not_found',
	 'unsupported_parameter', 'content_filtered', 'idempotency_conflict', 'rate_limited', 'quota_exceeded', 'budget_exceeded', 'client_stalled')`

// TierCalls returns every route group × tier with calls since since: the
// calls counted for alerts, their p95 latency, and the failures by cause
// (the error code, else the error class).
func (s *Store) TierCalls(ctx context.Context, since time.Time) ([]rows.TierCalls, error) {
	var totals []struct {
		Group string  `db:"route_group"`
		Tier  string  `db:"tier"`
		N     int64   `db:"n"`
		P95   float64 `db:"p95"`
	}
	err := s.db.SelectContext(ctx, &totals, `
		SELECT COALESCE(route_group, '') AS route_group, COALESCE(tier, '') AS tier, count(*) AS n,
			COALESCE(percentile_cont(0.95) WITHIN GROUP (ORDER BY latency_ms), 0) AS p95
		FROM call_logs WHERE at >= $1 AND `+alertCounted+` GROUP BY 1, 2`, since)
	if err != nil {
		return nil, fmt.Errorf("store: tier calls: %w", err)
	}
	var causes []struct {
		Group string `db:"route_group"`
		Tier  string `db:"tier"`
		Cause string `db:"cause"`
		N     int64  `db:"n"`
	}
	err = s.db.SelectContext(ctx, &causes, `
		SELECT COALESCE(route_group, '') AS route_group, COALESCE(tier, '') AS tier,
			COALESCE(NULLIF(error_code, ''), NULLIF(error_class, ''), status) AS cause, count(*) AS n
		FROM call_logs WHERE at >= $1 AND status <> 'ok' AND `+alertCounted+` GROUP BY 1, 2, 3`, since)
	if err != nil {
		return nil, fmt.Errorf("store: tier call failures: %w", err)
	}
	out := make([]rows.TierCalls, len(totals))
	at := map[[2]string]int{}
	for i, t := range totals {
		out[i] = rows.TierCalls{Group: t.Group, Tier: t.Tier, Total: t.N, P95MS: t.P95, Causes: map[string]int64{}}
		at[[2]string{t.Group, t.Tier}] = i
	}
	for _, c := range causes {
		if i, ok := at[[2]string{c.Group, c.Tier}]; ok {
			out[i].Causes[c.Cause] = c.N
		}
	}
	return out, nil
}
