package calllog

import (
	"context"
	"database/sql"
	"encoding/json"
	"math/rand/v2"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"switchyard/routing/adapter"
	"switchyard/routing/config"
	"switchyard/routing/limit"
	"switchyard/routing/record"
	"switchyard/store/storetest"

	"github.com/google/go-cmp/cmp"
	"github.com/lib/pq"
)

// Text that COPY's format, JSON or SQL could get wrong: its escapes
// (backslash, tab, newline, carriage return, \N, \.), quotes, control
// characters, non-ASCII, and what normalize repairs (NUL, invalid UTF-8).
var oddStrings = []string{"", "plain", `quo"te`, `back\slash`, "tab\tin", "new\nline", "cr\rhere", "ctl\x01\x1f\x7f",
	"é 😀 中文", `\N`, `\.`, "NULL", "{a,b}", " spaced ", "\u2028\u2029", "a\x00b", "bad\xffutf8", `\\N`, `"`, `\`,
	strings.Repeat("x", 300)}

// Attempt trails: none, JSON null (stored as jsonb null), scalars, text
// that is not JSON (stored as a JSON string), and failovers whose attempt
// values hold escapes.
var oddTrails = []string{"", "[]", "null", `"just a string"`, "42", "true", `{not json`, `[{"deployment":7,"outcome":"ok"}]`,
	`{"attempts": [{"deployment_id": 9, "provider": "pr\"ov\\x", "key": "sk-…zz\tzz", "outcome": "failed", "class": "ser\u00e9ver"}, {"deployment_id": 7, "provider": "p2", "key": "k2", "outcome": "ok"}]}`,
	`[{"deployment_id": 3, "provider": "p\u2028", "key": "k", "outcome": "failed", "class": "timeout"}, {"deployment_id": 0, "outcome": "skipped"}]`,
	`{"attempts":[{"deployment_id":5,"provider":"a\\\\b","outcome":"failed","class":""},{"deployment_id":6,"provider":"c","outcome":"failed","class":"auth"}], "x": [1.5e300, -0, "\u0041\n"]}`,
	`  {"nested": {"deep": [[[[["x"]]]]]}, "s": "\ud83d\ude00"}  `,
}

// oddRecords returns n normalized records with odd text, every status,
// latencies on the histogram's bounds, NULL and zero numbers, and times on
// hour and day boundaries, in a partition or in the default one.
func oddRecords(n int, seed uint64) []Record {
	rng := rand.New(rand.NewPCG(seed, 7))
	pick := func(xs []string) string { return xs[rng.IntN(len(xs))] }
	base := time.Date(2026, 3, 31, 23, 0, 0, 0, time.UTC)
	times := []time.Time{base, base.Add(time.Hour - time.Nanosecond), base.Add(time.Hour), base.Add(90 * time.Minute),
		base.Add(-24 * time.Hour), time.Date(2001, 2, 3, 4, 5, 6, 7, time.UTC), // no partition: the default one
		time.Date(2026, 3, 31, 22, 30, 0, 0, time.FixedZone("X", 5*3600+1800))}
	statuses := []record.Status{StatusOK, StatusOK, StatusUpstreamError, StatusRejected, StatusClientCancelled, record.StatusInterrupted}
	latencies := []int{-5, 0, 9, 10, 11, 24, 25, 99, 100, 179999, 180000, 1 << 40, 500}
	i64 := func() *int64 {
		switch rng.IntN(4) {
		case 0:
			return nil
		case 1:
			return new(int64(0))
		default:
			return new(int64(rng.IntN(5000)))
		}
	}
	recs := make([]Record, n)
	for i := range recs {
		at := times[rng.IntN(len(times))].Add(time.Duration(rng.IntN(1000)) * time.Microsecond)
		r := Record{
			At: at, RequestID: record.NewRequestIDAt(at), CallerID: i64(), Caller: pick(oddStrings),
			Tenant: pick(oddStrings), RouteGroup: pick([]string{"", "general", `g"2`}), Tier: config.TierName(pick([]string{"", "fast", "deep", `t\x`})),
			RequestedModel: pick(oddStrings), LogicModel: pick([]string{"", "m1", "m\n2", "é"}), DeploymentID: i64(),
			Provider: pick(oddStrings), KeyFingerprint: pick(oddStrings), Status: statuses[rng.IntN(len(statuses))],
			ErrorClass: adapter.Class(pick(oddStrings)), ErrorCode: pick([]string{"", "queue_full", "queue_shed", codeBudgetExhausted, "rate_limited"}),
			HTTPStatus: []int{200, 502, 1 << 40}[rng.IntN(3)], LatencyMS: latencies[rng.IntN(len(latencies))],
			PromptTokens: i64(), CompletionTokens: i64(), CachedTokens: i64(), ReasoningTokens: i64(),
			UsageEstimated: rng.IntN(2) == 0, CostMicros: i64(), Currency: pick([]string{"", "USD", "CNY"}),
			Stream: rng.IntN(2) == 0, IdempotencyReplay: rng.IntN(3) == 0, Fallback: pick(oddStrings), ConfigVersion: i64(),
			Attempts: json.RawMessage(pick(oddTrails)), Needs: record.Needs(rng.IntN(32)), Fields: rng.Uint64(),
			Degraded: pick([]string{"", "", DegradedStepDown, DegradedCached, DegradedStatic}), Retries: rng.IntN(4),
			PriorityClass: config.PriorityClass(pick([]string{"", "interactive", "batch"})), Endpoint: pick(oddStrings),
			LimitKind: limit.Kind(pick([]string{"", "rpm", "odd\tkind"})), LimitValue: i64(), LimitResetMS: i64(),
			ModelAlias: pick(append([]string{"claude-opus-*", "gpt-?-*"}, oddStrings...)),
		}
		for range rng.IntN(4) {
			r.DroppedFields = append(r.DroppedFields, pick(append([]string{"cache_control", "messages[2].content[0].type"}, oddStrings...)))
		}
		if len(r.Attempts) == 0 {
			r.Attempts = nil
		}
		if rng.IntN(3) == 0 {
			r.QueueWaitMS = new(latencies[rng.IntN(len(latencies))])
		}
		if rng.IntN(3) == 0 {
			r.TTFCMS = new(latencies[rng.IntN(len(latencies))])
		}
		if r.CostMicros != nil && rng.IntN(4) == 0 {
			*r.CostMicros = MaxCallCostMicros * 2 // clamped
		}
		if err := normalize(&r); err != nil {
			panic(err)
		}
		recs[i] = r
	}
	return recs
}

// oddTestDB is a test schema with partitions for oddRecords' days, through
// lib/pq's default protocol or, with binary, the store's (one round trip,
// []byte arguments in binary format).
func oddTestDB(t *testing.T, binary bool) *sql.DB {
	t.Helper()
	db, schema := newTestDB(t)
	if binary {
		db = openSchema(t, withParam(t, baseDSN, "binary_parameters", "yes"), schema)
	}
	if err := EnsurePartitions(context.Background(), db, time.Date(2026, 3, 30, 0, 0, 0, 0, time.UTC), 3); err != nil {
		t.Fatal(err)
	}
	return db
}

// Every column reads back as written (normalized), NULL for empty text and
// nil numbers, the trail as jsonb parses it; odd text reaches the roll-ups,
// the names and the attempt rows unchanged.
func TestOddRecordsRoundTrip(t *testing.T) {
	for _, binary := range []bool{false, true} {
		t.Run(map[bool]string{false: "text", true: "binary_parameters"}[binary], func(t *testing.T) {
			ctx := context.Background()
			db := oddTestDB(t, binary)
			recs := oddRecords(300, 1)
			if n, err := insertBatch(ctx, db, slices.Clone(recs)); err != nil || n != len(recs) {
				t.Fatalf("insertBatch = %d, %v; want %d", n, err, len(recs))
			}
			for _, want := range recs {
				got, err := Get(ctx, db, want.RequestID, want.At)
				if err != nil {
					t.Fatalf("Get %s: %v", want.RequestID, err)
				}
				trail := string(want.Attempts)
				if trail == "" {
					trail = "[]"
				}
				var same bool
				if err := db.QueryRow(`SELECT attempts = $1::jsonb FROM call_logs WHERE request_id = $2`, trail, want.RequestID).Scan(&same); err != nil || !same {
					t.Errorf("%s: trail %s stored as %s (%v)", want.RequestID, trail, got.Attempts, err)
				}
				want.Attempts, got.Attempts, want.Retries = nil, nil, 0
				if d := cmp.Diff(want, got); d != "" {
					t.Errorf("record %s (-want +got):\n%s", want.RequestID, d)
				}
			}
			if n := countRows(t, db, `SELECT count(*) FROM call_logs WHERE caller = '' OR tenant = '' OR endpoint = '' OR limit_kind = '' OR model_alias = ''
				OR cardinality(dropped_fields) = 0 OR '' = ANY(dropped_fields)`); n != 0 {
				t.Errorf("%d rows hold '' instead of NULL", n)
			}
			checkRollups(t, db, recs)
		})
	}
}

// A batch replayed with some of its rows stored, records repeated in it
// (the first of a key is the one stored, even if a later one differs), the
// same records stored by two writers at once, and everything replayed from
// a spill file: every row is stored once, and every roll-up counts it once.
func TestReplaysStoreAndCountEachRowOnce(t *testing.T) {
	t.Run("text", func(t *testing.T) { replayScenario(t, oddTestDB(t, false)) })
	t.Run("binary_parameters", func(t *testing.T) { replayScenario(t, oddTestDB(t, true)) })
	t.Run("pgbouncer", func(t *testing.T) {
		// PgBouncer in transaction mode, as store.Connect uses it: a
		// database of its own, since the pooler passes no search_path.
		name := "calllog_test_" + runID + "_pgbouncer"
		if _, err := adminDB.Exec(`CREATE DATABASE ` + pq.QuoteIdentifier(name)); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if _, err := adminDB.Exec(`DROP DATABASE ` + pq.QuoteIdentifier(name) + ` WITH (FORCE)`); err != nil {
				t.Errorf("drop database: %v", err)
			}
		})
		dsn := withDatabase(t, baseDSN, name)
		direct := openSchema(t, dsn, "public")
		applyMigration(t, direct)
		if err := EnsurePartitions(context.Background(), direct, time.Date(2026, 3, 30, 0, 0, 0, 0, time.UTC), 3); err != nil {
			t.Fatal(err)
		}
		pooled, err := sql.Open("postgres", withParam(t, storetest.PgBouncer(t, dsn), "binary_parameters", "yes"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = pooled.Close() })
		replayScenario(t, pooled)
	})
}

func replayScenario(t *testing.T, db *sql.DB) {
	ctx := context.Background()
	recs := oddRecords(1200, 2)

	if n, err := insertBatch(ctx, db, slices.Clone(recs[:250])); err != nil || n != 250 {
		t.Fatalf("first batch: %d, %v", n, err)
	}
	mixed := slices.Concat(recs[300:400], recs[200:250], recs[320:330])
	changed := slices.Clone(recs[340:345])
	for i := range changed {
		changed[i].Caller, changed[i].CostMicros, changed[i].LatencyMS = "changed", new(int64(777)), 3
	}
	mixed = append(mixed, changed...)
	for _, mayExist := range []bool{false, true} {
		want := 100
		if mayExist {
			want = 0 // the same batch again
		}
		if n, err := storeBatch(ctx, db, slices.Clone(mixed), mayExist); err != nil || n != want {
			t.Fatalf("mixed batch (mayExist %t) = %d, %v; want %d", mayExist, n, err, want)
		}
	}
	if n := countRows(t, db, `SELECT count(*) FROM call_logs WHERE caller = 'changed'`); n != 0 {
		t.Errorf("%d repeated records stored instead of the first of their key", n)
	}

	// Two writers at once, over overlapping batches of the rest.
	var wg sync.WaitGroup
	var mu sync.Mutex
	stored := 0
	for w, offset := range []int{0, 25} {
		wg.Go(func() {
			for i := 250 + offset; i < len(recs); i += 50 {
				n, err := storeBatch(ctx, db, slices.Clone(recs[i:min(i+50, len(recs))]), w == 1)
				if err != nil {
					t.Errorf("writer %d, batch at %d: %v", w, i, err)
					return
				}
				mu.Lock()
				stored += n
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if want := len(recs) - 350; stored != want {
		t.Errorf("the two writers stored %d rows, want %d", stored, want)
	}

	// And everything once more, from a spill file.
	dir := t.TempDir()
	f, err := os.Create(filepath.Join(dir, activeName))
	if err != nil {
		t.Fatal(err)
	}
	enc := json.NewEncoder(f)
	for _, r := range recs {
		if err := enc.Encode(&r); err != nil {
			t.Fatal(err)
		}
	}
	_ = f.Close()
	w := testWriter(t, db, WriterOptions{SpillDir: dir, BatchSize: 100})
	mustClose(t, w)
	if s := w.Stats(); s.Replayed != int64(len(recs)) || s.Written != 0 || s.DeadLettered != 0 {
		t.Errorf("replaying stored records: %+v", s)
	}

	if n := countRows(t, db, `SELECT count(*) FROM call_logs`); n != int64(len(recs)) {
		t.Errorf("rows = %d, want %d", n, len(recs))
	}
	checkRollups(t, db, recs)
}

// checkRollups checks that every roll-up of db is what the rows of
// call_logs add up to (the rows are recs, by key; ladder_stats' retries are
// not stored in the rows and are taken from recs), and that the attempt
// rows are those of the rows' trails.
func checkRollups(t *testing.T, db *sql.DB, recs []Record) {
	t.Helper()
	bounds := make([]string, len(LatencyBucketBounds))
	for i, b := range LatencyBucketBounds {
		bounds[i] = strconv.Itoa(b)
	}
	// hist is the histogram of col, bucketed by width_bucket (SQL's own
	// bucketing, against latencyBucket's).
	hist := func(col, cond string) string {
		counts := make([]string, latencyBuckets)
		for i := range counts {
			counts[i] = "count(*) FILTER (WHERE " + cond + "width_bucket(" + col + ", '{" + strings.Join(bounds, ",") + "}'::int[]) = " + strconv.Itoa(i) + ")"
		}
		return "ARRAY[" + strings.Join(counts, ", ") + "]::bigint[]"
	}
	for _, c := range []struct{ table, want, got string }{
		{"call_stats", `SELECT date_trunc('hour', at, 'UTC'), coalesce(caller, ''), coalesce(tier, ''), coalesce(logic_model, ''),
			coalesce(currency, ''), count(*), count(*) FILTER (WHERE status = 'upstream_error'),
			count(*) FILTER (WHERE status = 'rejected'), count(*) FILTER (WHERE status = 'client_cancelled'),
			coalesce(sum(prompt_tokens), 0), coalesce(sum(completion_tokens), 0), coalesce(sum(cached_tokens), 0),
			coalesce(sum(reasoning_tokens), 0), least(coalesce(sum(cost_micros), 0), 9223372036854775807),
			coalesce(sum(latency_ms) FILTER (WHERE status <> 'rejected'), 0),
			` + hist("latency_ms", "status <> 'rejected' AND ") + `
			FROM call_logs GROUP BY 1, 2, 3, 4, 5`,
			`SELECT hour, caller, tier, logic_model, currency, requests, errors, rejected, cancelled, prompt_tokens,
			completion_tokens, cached_tokens, reasoning_tokens, cost_micros, latency_sum_ms, latency_hist FROM call_stats`},
		{"cost_rollups", `SELECT (at AT TIME ZONE 'UTC')::date, coalesce(caller, ''), coalesce(tier, ''), coalesce(logic_model, ''),
			coalesce(currency, ''), count(*), count(*) FILTER (WHERE status = 'upstream_error'), coalesce(sum(prompt_tokens), 0),
			coalesce(sum(completion_tokens), 0), coalesce(sum(cached_tokens), 0), least(coalesce(sum(cost_micros), 0), 9223372036854775807)
			FROM call_logs GROUP BY 1, 2, 3, 4, 5`,
			`SELECT day, caller, tier, logic_model, currency, requests, errors, prompt_tokens, completion_tokens, cached_tokens,
			cost_micros FROM cost_rollups`},
		{"queue_stats", `SELECT date_trunc('hour', at, 'UTC'), coalesce(priority_class, ''), count(queue_wait_ms),
			count(*) FILTER (WHERE error_code IN ('queue_full', 'queue_shed')), coalesce(sum(queue_wait_ms), 0), ` + hist("queue_wait_ms", "") + `
			FROM call_logs WHERE queue_wait_ms IS NOT NULL OR error_code IN ('queue_full', 'queue_shed') GROUP BY 1, 2`,
			`SELECT hour, class, queued, refused, wait_sum_ms, wait_hist FROM queue_stats`},
		{"ladder_stats", `SELECT date_trunc('hour', at, 'UTC'), route_group, tier, count(*),
			count(*) FILTER (WHERE error_code = 'retry_budget_exhausted'), count(*) FILTER (WHERE degraded = 'step_down'),
			count(*) FILTER (WHERE degraded = 'cached'), count(*) FILTER (WHERE degraded = 'static')
			FROM call_logs WHERE route_group IS NOT NULL AND tier IS NOT NULL AND (status <> 'rejected' OR degraded IS NOT NULL)
			GROUP BY 1, 2, 3`,
			`SELECT hour, route_group, tier, requests, budget_exhausted, step_down, cached, static FROM ladder_stats`},
		{"call_log_names", `SELECT 'caller', caller, min((at AT TIME ZONE 'UTC')::date), max((at AT TIME ZONE 'UTC')::date)
			FROM call_logs WHERE caller IS NOT NULL GROUP BY 2
			UNION ALL SELECT 'logic_model', logic_model, min((at AT TIME ZONE 'UTC')::date), max((at AT TIME ZONE 'UTC')::date)
			FROM call_logs WHERE logic_model IS NOT NULL GROUP BY 2`,
			`SELECT kind, name, first_day, last_day FROM call_log_names`},
	} {
		var missing, extra int64
		if err := db.QueryRow(`SELECT (SELECT count(*) FROM ((`+c.want+`) EXCEPT ALL (`+c.got+`)) x),
			(SELECT count(*) FROM ((`+c.got+`) EXCEPT ALL (`+c.want+`)) y)`).Scan(&missing, &extra); err != nil {
			t.Fatalf("%s: %v", c.table, err)
		}
		if missing != 0 || extra != 0 {
			t.Errorf("%s: %d rows differ from what call_logs adds up to, %d rows extra", c.table, missing, extra)
		}
	}

	// Retries are not stored with the row: the records' (a repeated record
	// has the same retries).
	retries := map[string]int64{}
	for _, r := range recs {
		retries[r.RequestID] = int64(r.Retries)
	}
	var want, got int64
	rows, err := db.Query(`SELECT request_id FROM call_logs WHERE route_group IS NOT NULL AND tier IS NOT NULL
		AND (status <> 'rejected' OR degraded IS NOT NULL)`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		want += retries[id]
	}
	rows.Close()
	if err := db.QueryRow(`SELECT coalesce(sum(retries), 0) FROM ladder_stats`).Scan(&got); err != nil || got != want {
		t.Errorf("ladder_stats retries = %d (%v), want %d", got, err, want)
	}

	// Attempt rows: those of the stored rows' trails.
	var wantAttempts []string
	rows, err = db.Query(`SELECT ` + columnList + ` FROM call_logs`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		r, err := scanRecord(rows)
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range attemptValues(&r) {
			wantAttempts = append(wantAttempts, r.RequestID+" "+v.kind+" "+v.value)
		}
	}
	rows.Close()
	var gotAttempts []string
	rows, err = db.Query(`SELECT a.request_id || ' ' || a.kind || ' ' || a.value FROM call_log_attempts a
		JOIN call_logs c ON c.at = a.at AND c.request_id = a.request_id`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		gotAttempts = append(gotAttempts, s)
	}
	rows.Close()
	slices.Sort(wantAttempts)
	slices.Sort(gotAttempts)
	if n := countRows(t, db, `SELECT count(*) FROM call_log_attempts`); n != int64(len(gotAttempts)) || len(wantAttempts) == 0 {
		t.Errorf("%d attempt rows, %d of them of a stored row, %d expected", n, len(gotAttempts), len(wantAttempts))
	}
	if d := cmp.Diff(wantAttempts, gotAttempts); d != "" {
		t.Errorf("attempt rows (-want +got):\n%s", d)
	}
}

// withDatabase returns dsn naming database name.
func withDatabase(t testing.TB, dsn, name string) string {
	t.Helper()
	u, err := url.Parse(dsn)
	if err != nil || u.Scheme == "" {
		t.Fatalf("test DSN must be a URL: %q", dsn)
	}
	u.Path = "/" + name
	return u.String()
}

// withParam returns dsn with a connection parameter set.
func withParam(t testing.TB, dsn, key, value string) string {
	t.Helper()
	u, err := url.Parse(dsn)
	if err != nil || u.Scheme == "" {
		return dsn + " " + key + "=" + value
	}
	q := u.Query()
	q.Set(key, value)
	u.RawQuery = q.Encode()
	return u.String()
}
