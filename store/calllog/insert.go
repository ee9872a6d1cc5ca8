package calllog

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/lib/pq"
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

// latencyBucket returns the histogram bucket of a latency.
func latencyBucket(ms int) int {
	n, _ := slices.BinarySearch(LatencyBucketBounds[:], ms+1)
	return n
}

// stagingDDL creates the per-connection staging table COPY writes into.
// ON COMMIT DELETE ROWS empties it at the end of every batch's transaction.
const stagingDDL = `CREATE TEMP TABLE IF NOT EXISTS call_logs_staging
    (LIKE call_logs INCLUDING DEFAULTS) ON COMMIT DELETE ROWS`

var copyStmt = "COPY call_logs_staging (" + columnList + ") FROM STDIN"

// moveStmt moves the staged batch into call_logs and returns the keys of
// the rows that were new; rows already present (a replay) are skipped.
var moveStmt = `INSERT INTO call_logs (` + columnList + `)
    SELECT ` + columnList + ` FROM call_logs_staging
    ON CONFLICT DO NOTHING
    RETURNING (extract(epoch FROM at) * 1000000)::bigint, request_id`

var costRollupStmt = `INSERT INTO cost_rollups AS r (day, caller, tier, logic_model, currency,
        requests, errors, prompt_tokens, completion_tokens, cached_tokens, cost_micros)
    SELECT * FROM unnest($1::date[], $2::text[], $3::text[], $4::text[], $5::text[],
        $6::bigint[], $7::bigint[], $8::bigint[], $9::bigint[], $10::bigint[], $11::bigint[])
    ON CONFLICT (day, caller, tier, logic_model, currency) DO UPDATE SET
        requests = r.requests + EXCLUDED.requests,
        errors = r.errors + EXCLUDED.errors,
        prompt_tokens = r.prompt_tokens + EXCLUDED.prompt_tokens,
        completion_tokens = r.completion_tokens + EXCLUDED.completion_tokens,
        cached_tokens = r.cached_tokens + EXCLUDED.cached_tokens,
        cost_micros = ` + saturatingSum("r.cost_micros", "EXCLUDED.cost_micros")

var callStatsStmt = buildCallStatsStmt()

func buildCallStatsStmt() string {
	add := make([]string, latencyBuckets)
	for i := range add {
		n := strconv.Itoa(i + 1)
		add[i] = "s.latency_hist[" + n + "] + EXCLUDED.latency_hist[" + n + "]"
	}
	return `INSERT INTO call_stats AS s (hour, caller, tier, logic_model, currency, requests, errors,
        rejected, cancelled, prompt_tokens, completion_tokens, cached_tokens, reasoning_tokens,
        cost_micros, latency_sum_ms, latency_hist)
    SELECT hour, caller, tier, logic_model, currency, requests, errors, rejected, cancelled,
        prompt_tokens, completion_tokens, cached_tokens, reasoning_tokens, cost_micros, latency_sum_ms,
        latency_hist::bigint[]
    FROM unnest($1::timestamptz[], $2::text[], $3::text[], $4::text[], $5::text[],
        $6::bigint[], $7::bigint[], $8::bigint[], $9::bigint[], $10::bigint[], $11::bigint[],
        $12::bigint[], $13::bigint[], $14::bigint[], $15::bigint[], $16::text[])
        AS u(hour, caller, tier, logic_model, currency, requests, errors, rejected, cancelled,
            prompt_tokens, completion_tokens, cached_tokens, reasoning_tokens, cost_micros,
            latency_sum_ms, latency_hist)
    ON CONFLICT (hour, caller, tier, logic_model, currency) DO UPDATE SET
        requests = s.requests + EXCLUDED.requests,
        errors = s.errors + EXCLUDED.errors,
        rejected = s.rejected + EXCLUDED.rejected,
        cancelled = s.cancelled + EXCLUDED.cancelled,
        prompt_tokens = s.prompt_tokens + EXCLUDED.prompt_tokens,
        completion_tokens = s.completion_tokens + EXCLUDED.completion_tokens,
        cached_tokens = s.cached_tokens + EXCLUDED.cached_tokens,
        reasoning_tokens = s.reasoning_tokens + EXCLUDED.reasoning_tokens,
        cost_micros = ` + saturatingSum("s.cost_micros", "EXCLUDED.cost_micros") + `,
        latency_sum_ms = s.latency_sum_ms + EXCLUDED.latency_sum_ms,
        latency_hist = ARRAY[` + strings.Join(add, ", ") + `]`
}

var queueStatsStmt = buildQueueStatsStmt()

func buildQueueStatsStmt() string {
	add := make([]string, latencyBuckets)
	for i := range add {
		n := strconv.Itoa(i + 1)
		add[i] = "q.wait_hist[" + n + "] + EXCLUDED.wait_hist[" + n + "]"
	}
	return `INSERT INTO queue_stats AS q (hour, class, queued, refused, wait_sum_ms, wait_hist)
    SELECT hour, class, queued, refused, wait_sum_ms, wait_hist::bigint[]
    FROM unnest($1::timestamptz[], $2::text[], $3::bigint[], $4::bigint[], $5::bigint[], $6::text[])
        AS u(hour, class, queued, refused, wait_sum_ms, wait_hist)
    ON CONFLICT (hour, class) DO UPDATE SET
        queued = q.queued + EXCLUDED.queued,
        refused = q.refused + EXCLUDED.refused,
        wait_sum_ms = q.wait_sum_ms + EXCLUDED.wait_sum_ms,
        wait_hist = ARRAY[` + strings.Join(add, ", ") + `]`
}

// insertBatch stores recs (already normalized) and returns how many were
// new. In one transaction it copies them into the staging table, moves them
// into call_logs skipping rows already present, and adds only the rows the
// insert returned to cost_rollups and call_stats, so replaying a batch never
// counts a row twice.
func insertBatch(ctx context.Context, db *sql.DB, recs []Record) (inserted int, err error) {
	var names storedNames
	for i := range recs {
		// As normalize does: the returned keys must match the records.
		recs[i].At = recs[i].At.Truncate(time.Microsecond).UTC()
	}
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
	if err = copyRecords(ctx, tx, recs); err != nil {
		return 0, err
	}
	fresh, err := moveStaged(ctx, tx, len(recs))
	if err != nil {
		return 0, err
	}
	if len(fresh) > 0 {
		ru := newRollups()
		var at attemptRows
		for i := range recs {
			k := rowKey{recs[i].At.UnixMicro(), recs[i].RequestID}
			if _, ok := fresh[k]; ok {
				delete(fresh, k) // a record twice in one batch is one row
				ru.add(&recs[i])
				at.add(&recs[i])
				inserted++
			}
		}
		if err = at.store(ctx, tx); err != nil {
			return 0, err
		}
		if err = ru.store(ctx, tx); err != nil {
			return 0, err
		}
		if names, err = storeNames(ctx, tx, db, ru); err != nil {
			return 0, err
		}
	}
	if err = tx.Commit(); err != nil {
		return 0, fmt.Errorf("calllog: commit: %w", err)
	}
	names.committed()
	return inserted, nil
}

func copyRecords(ctx context.Context, tx *sql.Tx, recs []Record) error {
	stmt, err := tx.PrepareContext(ctx, copyStmt)
	if err != nil {
		return fmt.Errorf("calllog: start copy: %w", err)
	}
	defer stmt.Close()
	for i := range recs {
		if _, err := stmt.ExecContext(ctx, values(&recs[i])...); err != nil {
			return fmt.Errorf("calllog: copy: %w", err)
		}
	}
	if _, err := stmt.ExecContext(ctx); err != nil {
		return fmt.Errorf("calllog: copy: %w", err)
	}
	return nil
}

type rowKey struct {
	atMicros  int64
	requestID string
}

func moveStaged(ctx context.Context, tx *sql.Tx, n int) (map[rowKey]struct{}, error) {
	rows, err := tx.QueryContext(ctx, moveStmt)
	if err != nil {
		return nil, fmt.Errorf("calllog: insert batch: %w", err)
	}
	defer rows.Close()
	fresh := make(map[rowKey]struct{}, n)
	for rows.Next() {
		var k rowKey
		if err := rows.Scan(&k.atMicros, &k.requestID); err != nil {
			return nil, fmt.Errorf("calllog: insert batch: %w", err)
		}
		fresh[k] = struct{}{}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("calllog: insert batch: %w", err)
	}
	return fresh, nil
}

// rollupKey is a roll-up row's key; text columns hold "" for NULL.
type rollupKey struct {
	at                                 time.Time // UTC day or hour
	caller, tier, logicModel, currency string
}

func compareRollupKeys(a, b rollupKey) int {
	return cmp.Or(a.at.Compare(b.at), cmp.Compare(a.caller, b.caller), cmp.Compare(a.tier, b.tier),
		cmp.Compare(a.logicModel, b.logicModel), cmp.Compare(a.currency, b.currency))
}

type costRollup struct {
	requests, errors, prompt, completion, cached int64
	cost                                         int64 // micro-units
}

type callStat struct {
	requests, errors, rejected, cancelled         int64
	prompt, completion, cached, reasoning, latSum int64
	cost                                          int64 // micro-units
	hist                                          [latencyBuckets]int64
}

// queueKey is a queue_stats row's key.
type queueKey struct {
	hour  time.Time
	class string
}

type queueStat struct {
	queued, refused, waitSum int64
	hist                     [latencyBuckets]int64
}

// rollups accumulates one batch's increments of cost_rollups, call_stats
// and queue_stats.
type rollups struct {
	costs  map[rollupKey]*costRollup
	stats  map[rollupKey]*callStat
	ladder ladderRollup
	queues map[queueKey]*queueStat
}

func newRollups() *rollups {
	return &rollups{costs: map[rollupKey]*costRollup{}, stats: map[rollupKey]*callStat{}, ladder: ladderRollup{}, queues: map[queueKey]*queueStat{}}
}

// QueueRefusalCodes are the error codes of requests our priority queues
// refused (counted in queue_stats.refused).
var QueueRefusalCodes = []string{"queue_full", "queue_shed"}

// addQueue counts a request that waited in its class's queue, or that the
// queue refused.
func (ru *rollups) addQueue(r *Record, hour time.Time) {
	refused := slices.Contains(QueueRefusalCodes, r.ErrorCode)
	if r.QueueWaitMS == nil && !refused {
		return
	}
	k := queueKey{hour: hour, class: r.PriorityClass}
	q := ru.queues[k]
	if q == nil {
		q = &queueStat{}
		ru.queues[k] = q
	}
	if refused {
		q.refused++
	}
	if r.QueueWaitMS != nil {
		q.queued++
		q.waitSum += int64(*r.QueueWaitMS)
		q.hist[latencyBucket(*r.QueueWaitMS)]++
	}
}

func (ru *rollups) add(r *Record) {
	ru.ladder.add(r)
	at := r.At.UTC()
	key := rollupKey{caller: r.Caller, tier: r.Tier, logicModel: r.LogicModel, currency: r.Currency}

	key.at = utcDay(at)
	c := ru.costs[key]
	if c == nil {
		c = &costRollup{}
		ru.costs[key] = c
	}
	c.requests++
	if r.Status == StatusUpstreamError {
		c.errors++
	}
	c.prompt += deref(r.PromptTokens)
	c.completion += deref(r.CompletionTokens)
	c.cached += deref(r.CachedTokens)
	c.cost = addMicros(c.cost, deref(r.CostMicros))

	key.at = at.Truncate(time.Hour)
	s := ru.stats[key]
	if s == nil {
		s = &callStat{}
		ru.stats[key] = s
	}
	s.requests++
	switch r.Status {
	case StatusUpstreamError:
		s.errors++
	case StatusRejected:
		s.rejected++
	case StatusClientCancelled:
		s.cancelled++
	}
	s.prompt += deref(r.PromptTokens)
	s.completion += deref(r.CompletionTokens)
	s.cached += deref(r.CachedTokens)
	s.reasoning += deref(r.ReasoningTokens)
	s.cost = addMicros(s.cost, deref(r.CostMicros))
	if r.Status != StatusRejected { // a rejection's latency is ours, not a model's
		s.latSum += int64(r.LatencyMS)
		s.hist[latencyBucket(r.LatencyMS)]++
	}
	ru.addQueue(r, key.at)
}

// store upserts the increments in key order, so that concurrent writers
// lock roll-up rows in the same order and cannot deadlock on them.
func (ru *rollups) store(ctx context.Context, tx *sql.Tx) error {
	keys := sortedKeys(ru.costs)
	var (
		days, callers, tiers, models, currencies  []string
		requests, errs, prompt, completion, cache []int64
		costs                                     []int64
	)
	for _, k := range keys {
		c := ru.costs[k]
		days = append(days, k.at.Format(time.DateOnly))
		callers, tiers = append(callers, k.caller), append(tiers, k.tier)
		models, currencies = append(models, k.logicModel), append(currencies, k.currency)
		requests, errs = append(requests, c.requests), append(errs, c.errors)
		prompt, completion, cache = append(prompt, c.prompt), append(completion, c.completion), append(cache, c.cached)
		costs = append(costs, c.cost)
	}
	if _, err := tx.ExecContext(ctx, costRollupStmt, pq.Array(days), pq.Array(callers), pq.Array(tiers),
		pq.Array(models), pq.Array(currencies), pq.Array(requests), pq.Array(errs), pq.Array(prompt),
		pq.Array(completion), pq.Array(cache), pq.Array(costs)); err != nil {
		return fmt.Errorf("calllog: update cost roll-ups: %w", err)
	}

	keys = sortedKeys(ru.stats)
	var (
		hours                                          []string
		rejected, cancelled, reasoning, latSum         []int64
		hists                                          []string
		sCallers, sTiers, sModels, sCurrencies         []string
		sRequests, sErrs, sPrompt, sCompletion, sCache []int64
		sCosts                                         []int64
	)
	for _, k := range keys {
		s := ru.stats[k]
		hours = append(hours, k.at.Format(time.RFC3339))
		sCallers, sTiers = append(sCallers, k.caller), append(sTiers, k.tier)
		sModels, sCurrencies = append(sModels, k.logicModel), append(sCurrencies, k.currency)
		sRequests, sErrs = append(sRequests, s.requests), append(sErrs, s.errors)
		rejected, cancelled = append(rejected, s.rejected), append(cancelled, s.cancelled)
		sPrompt, sCompletion = append(sPrompt, s.prompt), append(sCompletion, s.completion)
		sCache, reasoning = append(sCache, s.cached), append(reasoning, s.reasoning)
		sCosts, latSum = append(sCosts, s.cost), append(latSum, s.latSum)
		hists = append(hists, histLiteral(s.hist[:]))
	}
	if _, err := tx.ExecContext(ctx, callStatsStmt, pq.Array(hours), pq.Array(sCallers), pq.Array(sTiers),
		pq.Array(sModels), pq.Array(sCurrencies), pq.Array(sRequests), pq.Array(sErrs), pq.Array(rejected),
		pq.Array(cancelled), pq.Array(sPrompt), pq.Array(sCompletion), pq.Array(sCache), pq.Array(reasoning),
		pq.Array(sCosts), pq.Array(latSum), pq.Array(hists)); err != nil {
		return fmt.Errorf("calllog: update call stats: %w", err)
	}
	if err := ru.ladder.store(ctx, tx); err != nil {
		return err
	}
	return ru.storeQueues(ctx, tx)
}

// storeQueues upserts the queue_stats increments in key order.
func (ru *rollups) storeQueues(ctx context.Context, tx *sql.Tx) error {
	if len(ru.queues) == 0 {
		return nil
	}
	keys := make([]queueKey, 0, len(ru.queues))
	for k := range ru.queues {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b queueKey) int { return cmp.Or(a.hour.Compare(b.hour), cmp.Compare(a.class, b.class)) })
	var (
		hours, classes, hists    []string
		queued, refused, waitSum []int64
	)
	for _, k := range keys {
		q := ru.queues[k]
		hours, classes = append(hours, k.hour.Format(time.RFC3339)), append(classes, k.class)
		queued, refused, waitSum = append(queued, q.queued), append(refused, q.refused), append(waitSum, q.waitSum)
		hists = append(hists, histLiteral(q.hist[:]))
	}
	if _, err := tx.ExecContext(ctx, queueStatsStmt, pq.Array(hours), pq.Array(classes), pq.Array(queued),
		pq.Array(refused), pq.Array(waitSum), pq.Array(hists)); err != nil {
		return fmt.Errorf("calllog: update queue stats: %w", err)
	}
	return nil
}

func sortedKeys[V any](m map[rollupKey]V) []rollupKey {
	keys := make([]rollupKey, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, compareRollupKeys)
	return keys
}

func histLiteral(h []int64) string {
	b := make([]byte, 0, 4*len(h))
	b = append(b, '{')
	for i, v := range h {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, v, 10)
	}
	return string(append(b, '}'))
}

func deref(p *int64) int64 {
	if p == nil {
		return 0
	}
	return *p
}

// Cost sums are plain int64 micro-units, not big.Int or numeric: a single
// call costs at most MaxCallCostMicros (normalize clamps it), 10^9 currency
// units, and realistic daily or hourly sums stay many orders of magnitude
// below int64's 9.2×10^12 units. Sums saturate at the int64 maximum instead
// of overflowing (in Go and in SQL), so absurd input can never make a
// batch fail and wedge the writer; a saturated roll-up is visibly absurd.

// MaxCallCostMicros bounds the cost of one call log row (10^9 units).
const MaxCallCostMicros = 1_000_000_000_000_000

func addMicros(a, b int64) int64 {
	if b > 0 && a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// saturatingSum is the SQL of a + b for non-negative bigints, capped at the
// bigint maximum.
func saturatingSum(a, b string) string {
	return "CASE WHEN " + a + " > 9223372036854775807 - " + b + " THEN 9223372036854775807 ELSE " + a + " + " + b + " END"
}
