package calllog

import (
	"cmp"
	"context"
	"database/sql/driver"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"switchyard/routing/wire"
)

// The roll-ups of a batch's rows — call_stats per hour, cost_rollups per
// day, ladder_stats, queue_stats, outcome_stats per minute, and with them the call_log_attempts and
// call_log_names rows — are summed here from the rows the batch's COPY
// stores, and written by one statement in the same transaction.

// The parts of a batch's roll-up statement (rollupStmt), one per table,
// in the order they are written. Each reads its rows from a JSON array
// ($ARG), already in key order (text in byte order): concurrent writers
// lock roll-up rows in the same order and cannot deadlock on them.
const (
	partAttempts = iota
	partCosts
	partStats
	partLadder
	partQueues
	partNames
	partOutcomes
	numParts
)

var rollupParts = [numParts]string{
	partAttempts: attemptsInsert,
	partCosts: `
    INSERT INTO cost_rollups AS r (day, caller, tier, logic_model, currency,
        requests, errors, prompt_tokens, completion_tokens, cached_tokens, cost_micros)
    SELECT * FROM json_to_recordset($ARG::json) AS x(day date, caller text, tier text, logic_model text, currency text,
        requests bigint, errors bigint, prompt_tokens bigint, completion_tokens bigint, cached_tokens bigint, cost_micros bigint)
    ON CONFLICT (day, caller, tier, logic_model, currency) DO UPDATE SET
        requests = r.requests + EXCLUDED.requests,
        errors = r.errors + EXCLUDED.errors,
        prompt_tokens = r.prompt_tokens + EXCLUDED.prompt_tokens,
        completion_tokens = r.completion_tokens + EXCLUDED.completion_tokens,
        cached_tokens = r.cached_tokens + EXCLUDED.cached_tokens,
        cost_micros = ` + saturatingSum("r.cost_micros", "EXCLUDED.cost_micros"),
	partStats: `
    INSERT INTO call_stats AS s (hour, caller, tier, logic_model, currency, requests, errors,
        rejected, cancelled, prompt_tokens, completion_tokens, cached_tokens, reasoning_tokens,
        cost_micros, latency_sum_ms, latency_hist)
    SELECT * FROM json_to_recordset($ARG::json) AS x(hour timestamptz, caller text, tier text, logic_model text,
        currency text, requests bigint, errors bigint, rejected bigint, cancelled bigint, prompt_tokens bigint,
        completion_tokens bigint, cached_tokens bigint, reasoning_tokens bigint, cost_micros bigint,
        latency_sum_ms bigint, latency_hist bigint[])
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
        latency_hist = ` + histAdd("s.latency_hist", "EXCLUDED.latency_hist"),
	partLadder: ladderStatsInsert,
	partQueues: `
    INSERT INTO queue_stats AS q (hour, class, queued, refused, wait_sum_ms, wait_hist)
    SELECT * FROM json_to_recordset($ARG::json) AS x(hour timestamptz, class text, queued bigint, refused bigint,
        wait_sum_ms bigint, wait_hist bigint[])
    ON CONFLICT (hour, class) DO UPDATE SET
        queued = q.queued + EXCLUDED.queued,
        refused = q.refused + EXCLUDED.refused,
        wait_sum_ms = q.wait_sum_ms + EXCLUDED.wait_sum_ms,
        wait_hist = ` + histAdd("q.wait_hist", "EXCLUDED.wait_hist"),
	partNames:    namesInsert,
	partOutcomes: outcomeStatsInsert,
}

// rollupStmts caches rollupStmt's statements by their set of parts.
var rollupStmts [1 << numParts]atomic.Pointer[string]

// rollupStmt returns the statement writing the parts in set (a bit per
// part), their arguments numbered in part order. A batch leaves out the
// parts it has no rows for, which PostgreSQL would parse and plan all the
// same. The statement is the first part, with the others as data-modifying
// CTEs in reverse: PostgreSQL runs the statement, then the CTEs its query
// did not read, the last written first, so the parts write their tables in
// part order, as every writer does.
func rollupStmt(set int) string {
	if s := rollupStmts[set].Load(); s != nil {
		return *s
	}
	var parts []string
	for p := range numParts {
		if set&(1<<p) != 0 {
			parts = append(parts, strings.Replace(rollupParts[p], "$ARG", "$"+strconv.Itoa(len(parts)+1), 1))
		}
	}
	var b strings.Builder
	for i := len(parts) - 1; i > 0; i-- {
		if i == len(parts)-1 {
			b.WriteString("WITH ")
		} else {
			b.WriteString(", ")
		}
		b.WriteString("part" + strconv.Itoa(i+1) + " AS (" + parts[i] + "\n)")
	}
	if len(parts) > 0 {
		b.WriteString(parts[0])
	}
	s := b.String()
	rollupStmts[set].Store(&s)
	return s
}

// histAdd is the SQL of the element-wise sum of two histograms.
func histAdd(a, b string) string {
	add := make([]string, latencyBuckets)
	for i := range add {
		n := strconv.Itoa(i + 1)
		add[i] = a + "[" + n + "] + " + b + "[" + n + "]"
	}
	return "ARRAY[" + strings.Join(add, ", ") + "]"
}

// statKey is a call_stats row's key; text columns hold "" for NULL.
type statKey struct {
	hour                               int64 // Unix time / 3600
	caller, tier, logicModel, currency string
}

func compareStatKeys(a, b statKey) int {
	return cmp.Or(cmp.Compare(a.hour, b.hour), cmp.Compare(a.caller, b.caller), cmp.Compare(a.tier, b.tier),
		cmp.Compare(a.logicModel, b.logicModel), cmp.Compare(a.currency, b.currency))
}

type callStat struct {
	key                                           statKey
	requests, errors, rejected, cancelled         int64
	prompt, completion, cached, reasoning, latSum int64
	cost                                          int64 // micro-units
	hist                                          [latencyBuckets]int64
}

// costKey is a cost_rollups row's key.
type costKey struct {
	day                                int64 // Unix time / 86400
	caller, tier, logicModel, currency string
}

func compareCostKeys(a, b costKey) int {
	return cmp.Or(cmp.Compare(a.day, b.day), cmp.Compare(a.caller, b.caller), cmp.Compare(a.tier, b.tier),
		cmp.Compare(a.logicModel, b.logicModel), cmp.Compare(a.currency, b.currency))
}

type costRollup struct {
	key                                          costKey
	requests, errors, prompt, completion, cached int64
	cost                                         int64 // micro-units
}

// queueKey is a queue_stats row's key.
type queueKey struct {
	hour  int64
	class string
}

type queueStat struct {
	key                      queueKey
	queued, refused, waitSum int64
	hist                     [latencyBuckets]int64
}

// rollups accumulates one batch's roll-ups; reused between batches. Each
// kind is a slice of rows and a map from key to position.
type rollups struct {
	stats    []callStat
	statAt   map[statKey]int
	costs    []costRollup
	costAt   map[costKey]int
	ladder   ladderRollup
	outcomes outcomeRollup
	queues   []queueStat
	queueAt  map[queueKey]int
	attempts []attemptRow
	names    batchNames
	buf      [numParts][]byte // the statement's arguments
}

func newRollups() rollups {
	return rollups{statAt: map[statKey]int{}, costAt: map[costKey]int{}, ladder: newLadderRollup(),
		outcomes: newOutcomeRollup(), queueAt: map[queueKey]int{}, names: newBatchNames()}
}

func (ru *rollups) reset() {
	ru.stats, ru.costs, ru.queues, ru.attempts = ru.stats[:0], ru.costs[:0], ru.queues[:0], ru.attempts[:0]
	clear(ru.statAt)
	clear(ru.costAt)
	clear(ru.queueAt)
	ru.ladder.reset()
	ru.outcomes.reset()
	ru.names.reset()
}

// unixHour is t's hour since the Unix epoch (UTC hours).
func unixHour(t time.Time) int64 {
	s := t.Unix()
	h := s / 3600
	if s%3600 < 0 {
		h--
	}
	return h
}

// QueueRefusalCodes are the error codes of requests our priority queues
// refused (counted in queue_stats.refused).
var QueueRefusalCodes = []string{"queue_full", "queue_shed"}

// add counts r, a row the batch stores.
func (ru *rollups) add(r *Record) {
	hour := unixHour(r.At)
	k := statKey{hour: hour, caller: r.Caller, tier: string(r.Tier), logicModel: r.LogicModel, currency: r.Currency}
	i, ok := ru.statAt[k]
	if !ok {
		i = len(ru.stats)
		ru.stats = append(ru.stats, callStat{key: k})
		ru.statAt[k] = i
	}
	s := &ru.stats[i]
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
	ru.ladder.add(r, hour)
	ru.outcomes.add(r)
	ru.addQueue(r, hour)
	ru.attempts = appendAttemptRows(ru.attempts, r)
	ru.names.see(r)
}

// addQueue counts a request that waited in its class's queue, or that the
// queue refused.
func (ru *rollups) addQueue(r *Record, hour int64) {
	refused := slices.Contains(QueueRefusalCodes, r.ErrorCode)
	if r.QueueWaitMS == nil && !refused {
		return
	}
	k := queueKey{hour: hour, class: string(r.PriorityClass)}
	i, ok := ru.queueAt[k]
	if !ok {
		i = len(ru.queues)
		ru.queues = append(ru.queues, queueStat{key: k})
		ru.queueAt[k] = i
	}
	q := &ru.queues[i]
	if refused {
		q.refused++
	}
	if r.QueueWaitMS != nil {
		q.queued++
		q.waitSum += int64(*r.QueueWaitMS)
		q.hist[latencyBucket(*r.QueueWaitMS)]++
	}
}

// costsByDay sums the hourly stats into the daily cost roll-ups.
func (ru *rollups) costsByDay() {
	for i := range ru.stats {
		s := &ru.stats[i]
		k := costKey{floorDiv(s.key.hour, 24), s.key.caller, s.key.tier, s.key.logicModel, s.key.currency}
		j, ok := ru.costAt[k]
		if !ok {
			j = len(ru.costs)
			ru.costs = append(ru.costs, costRollup{key: k})
			ru.costAt[k] = j
		}
		c := &ru.costs[j]
		c.requests += s.requests
		c.errors += s.errors
		c.prompt += s.prompt
		c.completion += s.completion
		c.cached += s.cached
		c.cost = addMicros(c.cost, s.cost)
	}
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b < 0 {
		q--
	}
	return q
}

// store writes the roll-ups with c, in the batch's transaction.
func (ru *rollups) store(ctx context.Context, c driverConn, names *nameCache, args *[numParts]driver.NamedValue) error {
	ru.costsByDay()
	slices.SortFunc(ru.stats, func(a, b callStat) int { return compareStatKeys(a.key, b.key) })
	slices.SortFunc(ru.costs, func(a, b costRollup) int { return compareCostKeys(a.key, b.key) })
	slices.SortFunc(ru.queues, func(a, b queueStat) int {
		return cmp.Or(cmp.Compare(a.key.hour, b.key.hour), cmp.Compare(a.key.class, b.key.class))
	})
	ru.ladder.sort()
	ru.outcomes.sort()
	ru.names.unknown(names)

	b := &ru.buf
	set, n := 0, 0
	for p := range numParts {
		switch p {
		case partAttempts:
			if len(ru.attempts) == 0 {
				continue
			}
			b[p] = appendAttemptsJSON(b[p][:0], ru.attempts)
		case partCosts:
			b[p] = ru.appendCostsJSON(b[p][:0])
		case partStats:
			b[p] = ru.appendStatsJSON(b[p][:0])
		case partLadder:
			if len(ru.ladder.rows) == 0 {
				continue
			}
			b[p] = ru.ladder.appendJSON(b[p][:0])
		case partQueues:
			if len(ru.queues) == 0 {
				continue
			}
			b[p] = ru.appendQueuesJSON(b[p][:0])
		case partNames:
			if len(ru.names.keys) == 0 {
				continue
			}
			b[p] = ru.names.appendJSON(b[p][:0])
		case partOutcomes:
			if len(ru.outcomes.rows) == 0 {
				continue
			}
			b[p] = ru.outcomes.appendJSON(b[p][:0])
		}
		set |= 1 << p
		args[n] = driver.NamedValue{Ordinal: n + 1, Value: b[p]}
		n++
	}
	_, err := c.ExecContext(ctx, rollupStmt(set), args[:n])
	return err
}

// committed is called once the batch's transaction committed.
func (ru *rollups) committed(names *nameCache) { ru.names.committed(names) }

func (ru *rollups) appendCostsJSON(b []byte) []byte {
	b = append(b, '[')
	for i := range ru.costs {
		c := &ru.costs[i]
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"day":"`...)
		b = time.Unix(c.key.day*86400, 0).UTC().AppendFormat(b, time.DateOnly)
		b = append(b, '"')
		b = appendJSONField(b, "caller", c.key.caller)
		b = appendJSONField(b, "tier", c.key.tier)
		b = appendJSONField(b, "logic_model", c.key.logicModel)
		b = appendJSONField(b, "currency", c.key.currency)
		b = appendJSONInt(b, "requests", c.requests)
		b = appendJSONInt(b, "errors", c.errors)
		b = appendJSONInt(b, "prompt_tokens", c.prompt)
		b = appendJSONInt(b, "completion_tokens", c.completion)
		b = appendJSONInt(b, "cached_tokens", c.cached)
		b = appendJSONInt(b, "cost_micros", c.cost)
		b = append(b, '}')
	}
	return append(b, ']')
}

func (ru *rollups) appendStatsJSON(b []byte) []byte {
	b = append(b, '[')
	for i := range ru.stats {
		s := &ru.stats[i]
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONHour(append(b, '{'), s.key.hour)
		b = appendJSONField(b, "caller", s.key.caller)
		b = appendJSONField(b, "tier", s.key.tier)
		b = appendJSONField(b, "logic_model", s.key.logicModel)
		b = appendJSONField(b, "currency", s.key.currency)
		b = appendJSONInt(b, "requests", s.requests)
		b = appendJSONInt(b, "errors", s.errors)
		b = appendJSONInt(b, "rejected", s.rejected)
		b = appendJSONInt(b, "cancelled", s.cancelled)
		b = appendJSONInt(b, "prompt_tokens", s.prompt)
		b = appendJSONInt(b, "completion_tokens", s.completion)
		b = appendJSONInt(b, "cached_tokens", s.cached)
		b = appendJSONInt(b, "reasoning_tokens", s.reasoning)
		b = appendJSONInt(b, "cost_micros", s.cost)
		b = appendJSONInt(b, "latency_sum_ms", s.latSum)
		b = appendJSONHist(b, "latency_hist", &s.hist)
		b = append(b, '}')
	}
	return append(b, ']')
}

func (ru *rollups) appendQueuesJSON(b []byte) []byte {
	b = append(b, '[')
	for i := range ru.queues {
		q := &ru.queues[i]
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONHour(append(b, '{'), q.key.hour)
		b = appendJSONField(b, "class", q.key.class)
		b = appendJSONInt(b, "queued", q.queued)
		b = appendJSONInt(b, "refused", q.refused)
		b = appendJSONInt(b, "wait_sum_ms", q.waitSum)
		b = appendJSONHist(b, "wait_hist", &q.hist)
		b = append(b, '}')
	}
	return append(b, ']')
}

// JSON for the roll-up statement's arguments (json_to_recordset), written
// by hand: BenchmarkRollupJSON measured encoding/json over row structs at
// about 0.5 MB in some 660 allocations per batch of 1,000 records, where
// these append to the batch's reused buffers and allocate nothing.

// appendJSONHour appends the first field of an object: "hour".
func appendJSONHour(b []byte, hour int64) []byte {
	b = append(b, `"hour":"`...)
	b = time.Unix(hour*3600, 0).UTC().AppendFormat(b, time.RFC3339)
	return append(b, '"')
}

func appendJSONField(b []byte, key, s string) []byte {
	b = append(append(append(b, ',', '"'), key...), '"', ':')
	return wire.AppendString(b, s)
}

func appendJSONInt(b []byte, key string, n int64) []byte {
	b = append(append(append(b, ',', '"'), key...), '"', ':')
	return strconv.AppendInt(b, n, 10)
}

func appendJSONHist(b []byte, key string, h *[latencyBuckets]int64) []byte {
	b = append(append(append(b, ',', '"'), key...), '"', ':', '[')
	for i, v := range h {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, v, 10)
	}
	return append(b, ']')
}

func deref(p *int64) int64 {
	if p == nil {
		return 0
	}
	return *p
}
