package calllog

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"strings"
)

// LatencyBucketBounds are the bucket bounds of call_stats.latency_hist in
// milliseconds. Bucket 0 counts latencies below the first bound, bucket i
// counts [bounds[i-1], bounds[i]) and the last bucket counts everything from
// the last bound up, so there are len(LatencyBucketBounds)+1 buckets. The
// migration documents the same list; changing it needs a new column.
var LatencyBucketBounds = [...]int{
	10, 25, 50, 100, 200, 300, 500, 750, 1000, 1500, 2000, 3000, 4000, 5000,
	7500, 10000, 15000, 20000, 30000, 45000, 60000, 90000, 120000, 180000,
}

// latencyBuckets is the number of histogram buckets.
const latencyBuckets = len(LatencyBucketBounds) + 1

// stagingDDL creates the per-connection staging table COPY writes into.
// ON COMMIT DELETE ROWS empties it at the end of every batch's transaction.
const stagingDDL = `CREATE TEMP TABLE IF NOT EXISTS call_logs_staging
    (LIKE call_logs INCLUDING DEFAULTS) ON COMMIT DELETE ROWS`

var copyStmt = "COPY call_logs_staging (" + columnList + ") FROM STDIN"

// mergeSQL moves the staged batch into call_logs and increments the roll-ups
// in one statement. Only the rows the insert returns — those not already
// present — feed cost_rollups and call_stats, so replaying a batch never
// counts a row twice. Roll-up rows are inserted in key order so concurrent
// writers lock them in the same order.
var mergeSQL = buildMergeSQL()

func buildMergeSQL() string {
	var hist, histAdd []string
	for i := range latencyBuckets {
		cond := "status <> 'rejected'"
		if i > 0 {
			cond += " AND latency_ms >= " + strconv.Itoa(LatencyBucketBounds[i-1])
		}
		if i < len(LatencyBucketBounds) {
			cond += " AND latency_ms < " + strconv.Itoa(LatencyBucketBounds[i])
		}
		hist = append(hist, "count(*) FILTER (WHERE "+cond+")")
		n := strconv.Itoa(i + 1)
		histAdd = append(histAdd, "s.latency_hist["+n+"] + EXCLUDED.latency_hist["+n+"]")
	}
	return `WITH ins AS (
    INSERT INTO call_logs (` + columnList + `)
    SELECT ` + columnList + ` FROM call_logs_staging
    ON CONFLICT DO NOTHING
    RETURNING at, caller, tier, logic_model, currency, status, latency_ms,
        prompt_tokens, completion_tokens, cached_tokens, reasoning_tokens, cost
), keyed AS (
    SELECT *, coalesce(caller, '') AS k_caller, coalesce(tier, '') AS k_tier,
        coalesce(logic_model, '') AS k_logic_model, coalesce(currency, '') AS k_currency
    FROM ins
), rollup AS (
    INSERT INTO cost_rollups AS r (day, caller, tier, logic_model, currency, requests, errors,
        prompt_tokens, completion_tokens, cached_tokens, cost)
    SELECT (at AT TIME ZONE 'UTC')::date, k_caller, k_tier, k_logic_model, k_currency,
        count(*), count(*) FILTER (WHERE status = 'upstream_error'),
        coalesce(sum(prompt_tokens), 0), coalesce(sum(completion_tokens), 0),
        coalesce(sum(cached_tokens), 0), coalesce(sum(cost), 0)
    FROM keyed
    GROUP BY 1, 2, 3, 4, 5
    ORDER BY 1, 2, 3, 4, 5
    ON CONFLICT (day, caller, tier, logic_model, currency) DO UPDATE SET
        requests = r.requests + EXCLUDED.requests,
        errors = r.errors + EXCLUDED.errors,
        prompt_tokens = r.prompt_tokens + EXCLUDED.prompt_tokens,
        completion_tokens = r.completion_tokens + EXCLUDED.completion_tokens,
        cached_tokens = r.cached_tokens + EXCLUDED.cached_tokens,
        cost = r.cost + EXCLUDED.cost
), stats AS (
    INSERT INTO call_stats AS s (hour, caller, tier, logic_model, currency, requests, errors,
        rejected, cancelled, prompt_tokens, completion_tokens, cached_tokens, reasoning_tokens,
        cost, latency_sum_ms, latency_hist)
    SELECT date_trunc('hour', at, 'UTC'), k_caller, k_tier, k_logic_model, k_currency,
        count(*), count(*) FILTER (WHERE status = 'upstream_error'),
        count(*) FILTER (WHERE status = 'rejected'),
        count(*) FILTER (WHERE status = 'client_cancelled'),
        coalesce(sum(prompt_tokens), 0), coalesce(sum(completion_tokens), 0),
        coalesce(sum(cached_tokens), 0), coalesce(sum(reasoning_tokens), 0),
        coalesce(sum(cost), 0),
        coalesce(sum(latency_ms) FILTER (WHERE status <> 'rejected'), 0),
        ARRAY[` + strings.Join(hist, ",\n            ") + `]
    FROM keyed
    GROUP BY 1, 2, 3, 4, 5
    ORDER BY 1, 2, 3, 4, 5
    ON CONFLICT (hour, caller, tier, logic_model, currency) DO UPDATE SET
        requests = s.requests + EXCLUDED.requests,
        errors = s.errors + EXCLUDED.errors,
        rejected = s.rejected + EXCLUDED.rejected,
        cancelled = s.cancelled + EXCLUDED.cancelled,
        prompt_tokens = s.prompt_tokens + EXCLUDED.prompt_tokens,
        completion_tokens = s.completion_tokens + EXCLUDED.completion_tokens,
        cached_tokens = s.cached_tokens + EXCLUDED.cached_tokens,
        reasoning_tokens = s.reasoning_tokens + EXCLUDED.reasoning_tokens,
        cost = s.cost + EXCLUDED.cost,
        latency_sum_ms = s.latency_sum_ms + EXCLUDED.latency_sum_ms,
        latency_hist = ARRAY[` + strings.Join(histAdd, ",\n            ") + `]
)
SELECT count(*) FROM ins`
}

// insertBatch stores recs (already normalized) and returns how many were new.
func insertBatch(ctx context.Context, db *sql.DB, recs []Record) (inserted int, err error) {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return 0, fmt.Errorf("calllog: begin: %w", err)
	}
	defer func() {
		if err != nil {
			_ = tx.Rollback()
		}
	}()
	if _, err = tx.ExecContext(ctx, stagingDDL); err != nil {
		return 0, fmt.Errorf("calllog: create staging table: %w", err)
	}
	stmt, err := tx.PrepareContext(ctx, copyStmt)
	if err != nil {
		return 0, fmt.Errorf("calllog: start copy: %w", err)
	}
	for i := range recs {
		if _, err = stmt.ExecContext(ctx, recs[i].values()...); err != nil {
			_ = stmt.Close()
			return 0, fmt.Errorf("calllog: copy: %w", err)
		}
	}
	if _, err = stmt.ExecContext(ctx); err != nil {
		_ = stmt.Close()
		return 0, fmt.Errorf("calllog: copy: %w", err)
	}
	if err = stmt.Close(); err != nil {
		return 0, fmt.Errorf("calllog: copy: %w", err)
	}
	if err = tx.QueryRowContext(ctx, mergeSQL).Scan(&inserted); err != nil {
		return 0, fmt.Errorf("calllog: merge batch: %w", err)
	}
	if err = tx.Commit(); err != nil {
		return 0, fmt.Errorf("calllog: commit: %w", err)
	}
	return inserted, nil
}
