package calllog

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/json"
	"flag"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lib/pq"
)

// Benchmarks (not run by plain go test):
//
//	go test -run XXX -bench Ingest ./calllog/
//	go test -run XXX -bench Search10M ./calllog/                       # 100k rows
//	go test -run XXX -bench Search10M ./calllog/ -args -rows=10000000  # the call-log search target at 10M rows
//
// The search data set is generated once per size (and migration version)
// into the schema calllog_bench_<rows> and kept for the next run;
// -drop-bench-data removes it afterwards. -explain logs EXPLAIN (ANALYZE, BUFFERS) of every search.
var (
	benchRows    = flag.Int("rows", 100000, "rows in BenchmarkSearch10M's data set (30 daily partitions)")
	benchExplain = flag.Bool("explain", false, "log each benchmarked search's EXPLAIN ANALYZE")
	benchDrop    = flag.Bool("drop-bench-data", false, "drop BenchmarkSearch10M's schema after the run")
)

// BenchmarkIngest measures rows/s through a Writer into PostgreSQL: the
// producer writes as fast as the queue accepts (staying below the spill
// threshold), and the clock stops when Close has stored everything.
func BenchmarkIngest(b *testing.B) { benchIngest(b, WriterOptions{}) }

// BenchmarkIngestSmallBatches is BenchmarkIngest in batches of 100 rows,
// the size QuickFlush sends at 5–10k requests a second: per-batch costs
// (statements, round trips, the commit) weigh ten times as much per row.
func BenchmarkIngestSmallBatches(b *testing.B) { benchIngest(b, WriterOptions{BatchSize: 100}) }

func benchIngest(b *testing.B, opts WriterOptions) {
	db, _ := newTestDB(b)
	now := time.Now()
	if err := EnsurePartitions(context.Background(), db, now.Add(-24*time.Hour), 2); err != nil {
		b.Fatal(err)
	}
	callers := []string{"web", "search", "support", "batch-etl", "billing", "mobile", "ads", "docs"}
	recs := make([]Record, b.N)
	for i := range recs {
		recs[i] = sampleRecord(now.Add(-time.Duration(i%3600000)*time.Millisecond), callers[i%len(callers)], i)
		if i%30 == 0 { // about 3% fail over first
			recs[i].Attempts = json.RawMessage(`{"attempts": [{"model": "m", "deployment_id": 9, "provider": "other", "key": "sk-…zzzz", "outcome": "failed", "class": "server", "status": 502, "latency_ms": 40},` +
				` {"model": "m", "deployment_id": 7, "provider": "` + recs[i].Provider + `", "key": "sk-…abcd", "outcome": "ok", "latency_ms": 120}]}`)
		}
	}
	w := testWriter(b, db, opts)
	highWater := w.opts.BufferSize * 3 / 4

	b.ResetTimer()
	start := time.Now()
	for i := range recs {
		for w.Depth() > highWater {
			time.Sleep(50 * time.Microsecond)
		}
		w.Write(recs[i])
	}
	if err := w.Close(context.Background()); err != nil {
		b.Fatal(err)
	}
	elapsed := time.Since(start)
	b.StopTimer()

	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "rows/s")
	s := w.Stats()
	b.ReportMetric(float64(s.Spilled), "spilled")
	if n := countRows(b, db, `SELECT count(*) FROM call_logs`); n != int64(b.N) || s.Lost != 0 {
		b.Fatalf("stored %d of %d rows (stats %+v)", n, b.N, s)
	}
}

// benchBase is the first day of the search data set.
var benchBase = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

const benchDays = 30

// BenchmarkSearch10M measures Search on a generated data set of -rows rows
// (default 100k; 10M for the search target) spread over 30 daily partitions:
// 50 callers, 3 tiers, 10 logic models, 6 providers; 90% ok, 6% upstream
// errors, 3% rejected, 1% cancelled.
func BenchmarkSearch10M(b *testing.B) {
	ctx := context.Background()
	db, schema := benchSearchDB(b, *benchRows)
	if *benchDrop {
		b.Cleanup(func() { _, _ = adminDB.Exec(`DROP SCHEMA ` + pq.QuoteIdentifier(schema) + ` CASCADE`) })
	}
	end := benchBase.AddDate(0, 0, benchDays)
	var someID string
	var someAt time.Time
	if err := db.QueryRow(`SELECT request_id, at FROM call_logs WHERE at >= $1 ORDER BY at LIMIT 1`,
		end.AddDate(0, 0, -10)).Scan(&someID, &someAt); err != nil {
		b.Fatal(err)
	}
	var someKey string
	if err := db.QueryRow(`SELECT key_fingerprint FROM call_logs WHERE at >= $1 AND key_fingerprint IS NOT NULL ORDER BY at LIMIT 1`,
		end.AddDate(0, 0, -10)).Scan(&someKey); err != nil {
		b.Fatal(err)
	}
	pageAfter := func(f Filter, pages int) Filter {
		for range pages {
			p, err := Search(ctx, db, f)
			if err != nil || p.Next == "" {
				b.Fatalf("paging: %v (next %q)", err, p.Next)
			}
			f.Cursor = p.Next
		}
		return f
	}
	last24h := Filter{From: end.Add(-24 * time.Hour), To: end}
	last7d := Filter{From: end.AddDate(0, 0, -7), To: end}
	with := func(f Filter, edit func(*Filter)) Filter { edit(&f); return f }

	cases := []struct {
		name   string
		filter Filter
	}{
		{"first_page_all_time", Filter{}},
		{"first_page_last_24h", last24h},
		{"caller_last_7d", with(last7d, func(f *Filter) { f.Caller = "caller-7" })},
		{"caller_all_time", Filter{Caller: "caller-7"}},
		{"status_rejected_last_7d", with(last7d, func(f *Filter) { f.Status = string(StatusRejected) })},
		{"status_rejected_all_time", Filter{Status: string(StatusRejected)}},
		{"error_class_timeout_all_time", Filter{ErrorClass: "timeout"}},
		{"logic_model_and_status", with(last7d, func(f *Filter) { f.LogicModel = "model-3"; f.Status = string(StatusUpstreamError) })},
		{"caller_tier_provider", with(last7d, func(f *Filter) { f.Caller = "caller-11"; f.Tier = "deep"; f.Provider = "provider-2" })},
		{"page_5_last_24h", pageAfter(last24h, 4)},
		{"page_5_caller", pageAfter(Filter{Caller: "caller-7"}, 4)},
		{"request_id", Filter{RequestID: someID}},
		// Issue 16: filters on any attempt, partial names, id parts.
		{"error_class_timeout_final_only", Filter{ErrorClass: "timeout"}},
		{"error_class_timeout_any_attempt", Filter{ErrorClass: "timeout"}},
		{"error_class_auth_any_attempt", Filter{ErrorClass: "auth"}},
		{"provider_last_7d_final_only", with(last7d, func(f *Filter) { f.Provider = "provider-2" })},
		{"provider_last_7d_any_attempt", with(last7d, func(f *Filter) { f.Provider = "provider-2" })},
		{"provider_upstream_error_any_attempt", with(last7d, func(f *Filter) { f.Provider = "provider-2"; f.Status = string(StatusUpstreamError) })},
		{"deployment_all_time_any_attempt", Filter{Deployment: 17}},
		{"key_all_time_any_attempt", Filter{Key: someKey}},
		{"caller_part_11_names_last_7d", with(last7d, func(f *Filter) { f.CallerPart = "CALLER-1" })},
		{"caller_part_11_names_all_time", Filter{CallerPart: "caller-1"}},
		{"caller_part_all_50_names", Filter{CallerPart: "caller"}},
		{"caller_part_one_name_and_status", with(last7d, func(f *Filter) { f.CallerPart = "ller-42"; f.Status = string(StatusRejected) })},
		{"model_part_last_24h", with(last24h, func(f *Filter) { f.LogicModelPart = "del-3" })},
		{"request_id_prefix", Filter{RequestIDPart: someID[:18]}},
		{"request_id_suffix", Filter{RequestIDPart: "…" + someID[len(someID)-12:]}},
		{"request_id_suffix_6_chars", Filter{RequestIDPart: someID[len(someID)-6:]}},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			search := func() (Page, error) { return Search(ctx, db, c.filter) }
			// A *_final_only case runs the search as it was before attempt
			// filters, on the final columns only: the baseline of the
			// *_any_attempt case beside it.
			final := strings.HasSuffix(c.name, "_final_only")
			if final {
				search = func() (Page, error) { return searchFinalOnly(ctx, db, c.filter) }
			}
			if *benchExplain && !final {
				logExplain(b, db, c.filter)
			}
			rows := 0
			var took []time.Duration
			for b.Loop() {
				start := time.Now()
				p, err := search()
				if err != nil {
					b.Fatal(err)
				}
				took = append(took, time.Since(start))
				rows = len(p.Rows)
			}
			reportPercentiles(b, took)
			b.ReportMetric(float64(rows), "rows/page")
		})
	}
	b.Run("get_by_request_id", func(b *testing.B) {
		var took []time.Duration
		for b.Loop() {
			start := time.Now()
			if _, err := Get(ctx, db, someID, time.Time{}); err != nil {
				b.Fatal(err)
			}
			took = append(took, time.Since(start))
		}
		reportPercentiles(b, took)
	})
}

// searchFinalOnly is Search as it was before issue 16 for a filter of
// error class or provider (with time and status): the final columns only,
// one ordered index scan.
func searchFinalOnly(ctx context.Context, db *sql.DB, f Filter) (Page, error) {
	q := "SELECT " + columnList + " FROM call_logs WHERE true"
	var args []any
	for _, c := range []struct {
		cond string
		v    any
		set  bool
	}{
		{"at >= ", f.From, !f.From.IsZero()}, {"at < ", f.To, !f.To.IsZero()},
		{"error_class = ", f.ErrorClass, f.ErrorClass != ""}, {"provider = ", f.Provider, f.Provider != ""},
		{"status = ", f.Status, f.Status != ""},
	} {
		if c.set {
			args = append(args, c.v)
			q += fmt.Sprintf(" AND %s$%d", c.cond, len(args))
		}
	}
	rows, err := db.QueryContext(ctx, q+" ORDER BY at DESC, request_id DESC LIMIT 51", args...)
	if err != nil {
		return Page{}, err
	}
	defer rows.Close()
	var p Page
	for rows.Next() {
		r, err := scanRecord(rows)
		if err != nil {
			return Page{}, err
		}
		p.Rows = append(p.Rows, r)
	}
	return p, rows.Err()
}

// reportPercentiles reports the median and 99th percentile of the
// measured pages (run with -benchtime=200x or more for a meaningful p99).
func reportPercentiles(b *testing.B, took []time.Duration) {
	if len(took) == 0 {
		return
	}
	slices.Sort(took)
	at := func(q float64) float64 {
		return float64(took[min(len(took)-1, int(q*float64(len(took))))].Microseconds()) / 1000
	}
	b.ReportMetric(at(0.50), "p50-ms")
	b.ReportMetric(at(0.99), "p99-ms")
	b.ReportMetric(0, "ns/op")
}

func logExplain(b *testing.B, db *sql.DB, f Filter) {
	b.Helper()
	ctx := context.Background()
	sq, err := buildSearch(ctx, db, f)
	if err != nil {
		b.Fatal(err)
	}
	q := sq.q
	var plan []string
	err = sq.run(ctx, db, func(db Queryer) error {
		rows, err := db.QueryContext(ctx, "EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) "+q, sq.args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var line string
			if err := rows.Scan(&line); err != nil {
				return err
			}
			plan = append(plan, line)
		}
		return rows.Err()
	})
	if err != nil {
		b.Fatal(err)
	}
	// Benchmark logs are cut after a few lines: the timings first.
	var timings []string
	for _, l := range plan {
		if strings.HasPrefix(l, "Planning Time") || strings.HasPrefix(l, "Execution Time") {
			timings = append(timings, l)
		}
	}
	b.Logf("%s\n%s\n%s", strings.Join(timings, ", "), q, strings.Join(plan, "\n"))
}

// benchSearchDB returns a pool on the schema holding the data set of n rows,
// generating it unless an earlier run did.
func benchSearchDB(b *testing.B, n int) (*sql.DB, string) {
	b.Helper()
	ctx := context.Background()
	schema := fmt.Sprintf("calllog_bench_%d", n)
	db, err := sql.Open("postgres", withSearchPath(b, baseDSN, schema))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = db.Close() })

	migText, err := migrationText(func(string) bool { return true })
	mig := []byte(migText)
	if err != nil {
		b.Fatal(err)
	}
	migSHA := fmt.Sprintf("%x", sha256.Sum256(mig))
	var (
		haveRows int64
		haveSHA  string
	)
	err = db.QueryRow(`SELECT rows, migration_sha FROM calllog_bench_meta`).Scan(&haveRows, &haveSHA)
	if err == nil && haveRows == int64(n) && haveSHA == migSHA {
		return db, schema
	}

	b.Logf("generating %d call-log rows in schema %s (kept for later runs)", n, schema)
	start := time.Now()
	if _, err := adminDB.Exec(`DROP SCHEMA IF EXISTS ` + pq.QuoteIdentifier(schema) + ` CASCADE`); err != nil {
		b.Fatal(err)
	}
	if _, err := adminDB.Exec(`CREATE SCHEMA ` + pq.QuoteIdentifier(schema)); err != nil {
		b.Fatal(err)
	}
	applyMigration(b, db)
	if err := EnsurePartitions(ctx, db, benchBase, benchDays-1); err != nil {
		b.Fatal(err)
	}
	perDay := (n + benchDays - 1) / benchDays
	for d := range benchDays {
		count := min(perDay, n-d*perDay)
		if count <= 0 {
			break
		}
		day := benchBase.AddDate(0, 0, d)
		if err := generateDay(ctx, db, day, count); err != nil {
			b.Fatalf("generate %s: %v", day.Format(time.DateOnly), err)
		}
		b.Logf("  %s: %d rows (%s)", day.Format(time.DateOnly), count, time.Since(start).Round(time.Second))
	}
	if err := generateNames(ctx, db); err != nil {
		b.Fatal(err)
	}
	if _, err := db.Exec(`VACUUM (ANALYZE) call_logs, call_log_attempts, call_log_names`); err != nil {
		b.Fatal(err)
	}
	if _, err := db.Exec(`CREATE TABLE calllog_bench_meta (rows bigint NOT NULL, migration_sha text NOT NULL,
		generated_at timestamptz NOT NULL DEFAULT now())`); err != nil {
		b.Fatal(err)
	}
	if _, err := db.Exec(`INSERT INTO calllog_bench_meta (rows, migration_sha) VALUES ($1, $2)`, n, migSHA); err != nil {
		b.Fatal(err)
	}
	b.Logf("generated in %s", time.Since(start).Round(time.Second))
	return db, schema
}

// generateDay inserts count rows evenly spread over day with
// generate_series. Request ids are UUIDv7-shaped with the row's time.
// benchColumns are the columns the generator fills, in its SELECT's order:
// every column up to the attempt trail, and the refusing limit; the
// others keep their defaults (a column added later needs no change here).
var benchColumns = strings.Join(append(append([]string{}, columns[:slices.Index(columns, "attempts")+1]...), "limit_kind", "limit_value", "limit_reset_ms"), ", ")

func generateDay(ctx context.Context, db *sql.DB, day time.Time, count int) error {
	conn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, `SET synchronous_commit = off`); err != nil {
		return err
	}
	spacingUS := float64(24*time.Hour/time.Microsecond) / float64(count)
	_, err = conn.ExecContext(ctx, `
WITH src AS (
    SELECT g, $1::timestamptz + (floor(g * $3::float8)::bigint * interval '1 microsecond') AS at,
        (random() * 50)::int % 50 AS c, random() AS r1, random() AS r2, random() AS r3,
        random() AS r4, md5($4::text || g) AS h
    FROM generate_series(0, $2::int - 1) AS g
), v AS (
    SELECT *, lpad(to_hex(floor(extract(epoch FROM at) * 1000)::bigint), 12, '0') AS ms,
        CASE WHEN r1 < 0.90 THEN 'ok' WHEN r1 < 0.96 THEN 'upstream_error'
             WHEN r1 < 0.99 THEN 'rejected' ELSE 'client_cancelled' END AS status,
        (ARRAY['fast', 'standard', 'deep'])[1 + (r3 * 3)::int % 3] AS tier
    FROM src
)
INSERT INTO call_logs (`+benchColumns+`)
SELECT at,
    substr(ms, 1, 8) || '-' || substr(ms, 9, 4) || '-7' || substr(h, 1, 3) || '-8' || substr(h, 4, 3) || '-' || substr(h, 7, 12),
    c, 'caller-' || c, NULL, 'general', tier, tier,
    CASE WHEN status <> 'rejected' THEN 'model-' || ((r2 * 10)::int % 10) END,
    CASE WHEN status <> 'rejected' THEN (r2 * 60)::int END,
    CASE WHEN status <> 'rejected' THEN 'provider-' || ((r2 * 60)::int % 6) END,
    CASE WHEN status <> 'rejected' THEN 'sk-…' || substr(h, 20, 4) END,
    status,
    CASE status WHEN 'rejected' THEN 'rate_limited'
        WHEN 'upstream_error' THEN (ARRAY['server', 'timeout', 'network', 'rate_limited'])[1 + (r3 * 4)::int % 4] END,
    CASE status WHEN 'rejected' THEN 'rate_limited' WHEN 'upstream_error' THEN 'upstream_error' END,
    CASE status WHEN 'ok' THEN 200 WHEN 'rejected' THEN 429 WHEN 'upstream_error' THEN 502 ELSE 499 END,
    CASE WHEN status = 'rejected' THEN 1 ELSE (50 + r3 * r2 * 20000)::int END,
    CASE WHEN tier = 'fast' THEN (20 + r3 * 500)::int END,
    CASE WHEN status = 'ok' THEN (r2 * 4000)::bigint END,
    CASE WHEN status = 'ok' THEN (r3 * 800)::bigint END,
    CASE WHEN status = 'ok' THEN 0 END,
    CASE WHEN status = 'ok' AND tier = 'deep' THEN (r3 * 2000)::bigint END,
    false,
    CASE WHEN status = 'ok' THEN (r2 * 10000)::bigint END,
    CASE WHEN status = 'ok' THEN 'USD' END,
    tier <> 'deep', false, NULL, 42,
    '[{"deployment_id": 1, "outcome": "ok", "latency_ms": 120}]'::jsonb,
    CASE WHEN status = 'rejected' THEN 'rpm' END, CASE WHEN status = 'rejected' THEN 60 END,
    CASE WHEN status = 'rejected' THEN (r4 * 60000)::bigint END
FROM v`, day, count, spacingUS, day.Format(time.DateOnly))
	if err != nil {
		return err
	}
	// What the failed attempts saw, as the writer records it: every
	// upstream error and 3% of the served calls tried another deployment
	// of another provider first, which failed with one of four classes.
	_, err = conn.ExecContext(ctx, `
INSERT INTO call_log_attempts (at, request_id, kind, value)
SELECT c.at, c.request_id, v.kind, v.value
FROM call_logs c, md5(c.request_id) AS h,
    LATERAL (VALUES
        ('class', (ARRAY['auth', 'server', 'rate_limited', 'billing'])[1 + get_byte(decode(substr(h, 1, 2), 'hex'), 0) % 4]),
        ('provider', 'provider-' || ((c.deployment_id + 1) % 6)),
        ('deployment', ((c.deployment_id + 7) % 60)::text),
        ('key', 'sk-…' || substr(h, 24, 4))) AS v(kind, value)
WHERE c.at >= $1 AND c.at < $2 AND c.deployment_id IS NOT NULL
    AND (c.status = 'upstream_error' OR c.status = 'ok' AND get_byte(decode(substr(h, 3, 2), 'hex'), 0) < 8)`,
		day, day.AddDate(0, 0, 1))
	return err
}

// generateNames fills call_log_names as the writer would have.
func generateNames(ctx context.Context, db *sql.DB) error {
	_, err := db.ExecContext(ctx, `INSERT INTO call_log_names (kind, name, first_day, last_day)
SELECT 'caller', caller, min(at)::date, max(at)::date FROM call_logs WHERE caller IS NOT NULL GROUP BY caller
UNION ALL
SELECT 'logic_model', logic_model, min(at)::date, max(at)::date FROM call_logs WHERE logic_model IS NOT NULL GROUP BY logic_model`)
	return err
}
