package calllog

import (
	"context"
	"database/sql"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"switchyard/routing/config"
	"switchyard/routing/record"

	"github.com/google/go-cmp/cmp"
	"github.com/lib/pq"
)

var quietLog = slog.New(slog.NewTextHandler(io.Discard, nil))

// sampleRecord is a completed call of caller at time at.
func sampleRecord(at time.Time, caller string, i int) Record {
	cost := int64(100 * (i%7 + 1))
	return Record{
		At:               at,
		RequestID:        record.NewRequestIDAt(at),
		CallerID:         new(int64(42)),
		Caller:           caller,
		RouteGroup:       "general",
		Tier:             []config.TierName{"fast", "standard", "deep"}[i%3],
		RequestedModel:   "standard",
		LogicModel:       []string{"qwen3-max", "gpt-4.1"}[i%2],
		DeploymentID:     new(int64(7)),
		Provider:         []string{"dashscope", "openai"}[i%2],
		KeyFingerprint:   "sk-…abcd",
		Status:           StatusOK,
		HTTPStatus:       200,
		LatencyMS:        100 + i%900,
		PromptTokens:     new(int64(100)),
		CompletionTokens: new(int64(20)),
		CachedTokens:     new(int64(0)),
		CostMicros:       &cost,
		Currency:         "USD",
		ConfigVersion:    new(int64(3)),
		Attempts:         json.RawMessage(`[{"deployment":7,"outcome":"ok"}]`),
	}
}

func sampleRecords(at time.Time, caller string, n int) []Record {
	recs := make([]Record, n)
	for i := range recs {
		recs[i] = sampleRecord(at.Add(time.Duration(i)*time.Millisecond), caller, i)
	}
	return recs
}

func testWriter(t testing.TB, db *sql.DB, opts WriterOptions) *Writer {
	t.Helper()
	if opts.SpillDir == "" {
		opts.SpillDir = t.TempDir()
	}
	if opts.Logger == nil {
		opts.Logger = quietLog
	}
	w, err := NewWriter(db, opts)
	if err != nil {
		t.Fatalf("NewWriter: %v", err)
	}
	return w
}

func ensureToday(t testing.TB, db *sql.DB) {
	t.Helper()
	if err := EnsurePartitions(context.Background(), db, time.Now(), 1); err != nil {
		t.Fatalf("EnsurePartitions: %v", err)
	}
}

func TestWriterRoundTrip(t *testing.T) {
	db, _ := newTestDB(t)
	ensureToday(t, db)
	w := testWriter(t, db, WriterOptions{})

	at := time.Now().Add(-time.Minute)
	full := Record{
		At: at, RequestID: record.NewRequestID(), CallerID: new(int64(1)), Caller: "billing",
		Tenant: "acme", RouteGroup: "acme-pool", Tier: "deep", RequestedModel: "deep",
		LogicModel: "qwen3-max", DeploymentID: new(int64(9)), Provider: "dashscope",
		KeyFingerprint: "sk-…wxyz", Status: StatusUpstreamError, ErrorClass: "server",
		ErrorCode: "upstream_error", HTTPStatus: 502, LatencyMS: 1234, TTFCMS: new(0),
		PromptTokens: new(int64(10)), CompletionTokens: new(int64(0)), CachedTokens: new(int64(3)),
		ReasoningTokens: new(int64(5)), UsageEstimated: true, CostMicros: new(int64(12_500)), Currency: "CNY", Stream: true,
		IdempotencyReplay: true, Fallback: "policy shared → group general", ConfigVersion: new(int64(12)),
		Attempts: json.RawMessage(`[{"deployment_id": 9, "class": "server", "status": 502}]`),
		Needs:    record.NeedThinking | record.NeedTools, Fields: 1<<35 | 1<<9,
	}
	rejected := Record{At: at, RequestID: record.NewRequestID(), Caller: "billing", Tier: "fast",
		Status: StatusRejected, ErrorClass: "rate_limited", ErrorCode: "rate_limited", HTTPStatus: 429}
	w.Write(full)
	w.Write(rejected)
	mustClose(t, w)

	for _, want := range []Record{full, rejected} {
		got, err := Get(context.Background(), db, want.RequestID, time.Time{})
		if err != nil {
			t.Fatalf("Get %s: %v", want.RequestID, err)
		}
		want.At = want.At.Truncate(time.Microsecond).UTC()
		if want.Attempts == nil {
			want.Attempts = json.RawMessage(`[]`)
		}
		// jsonb normalizes spacing; compare the JSON values.
		var wa, ga any
		_ = json.Unmarshal(want.Attempts, &wa)
		_ = json.Unmarshal(got.Attempts, &ga)
		if d := cmp.Diff(wa, ga); d != "" {
			t.Errorf("attempts (-want +got):\n%s", d)
		}
		want.Attempts, got.Attempts = nil, nil
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("record %s (-want +got):\n%s", want.Status, d)
		}
	}
	if s := w.Stats(); s.Written != 2 || s.Spilled != 0 || s.Lost != 0 {
		t.Errorf("stats = %+v, want 2 written, nothing spilled or lost", s)
	}
}

func TestNullTokensStayDistinctFromZero(t *testing.T) {
	db, _ := newTestDB(t)
	ensureToday(t, db)
	w := testWriter(t, db, WriterOptions{})
	unknown := Record{At: time.Now(), RequestID: record.NewRequestID(), Caller: "c", Status: StatusOK}
	zero := Record{At: time.Now(), RequestID: record.NewRequestID(), Caller: "c", Status: StatusOK,
		PromptTokens: new(int64(0)), CompletionTokens: new(int64(0)), CachedTokens: new(int64(0)),
		ReasoningTokens: new(int64(0)), CostMicros: new(int64(0)), TTFCMS: new(0)}
	w.Write(unknown)
	w.Write(zero)
	mustClose(t, w)

	got, err := Get(context.Background(), db, unknown.RequestID, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if got.PromptTokens != nil || got.CompletionTokens != nil || got.CachedTokens != nil ||
		got.ReasoningTokens != nil || got.CostMicros != nil || got.TTFCMS != nil {
		t.Errorf("unknown usage read back as %+v, want nil pointers", got)
	}
	got, err = Get(context.Background(), db, zero.RequestID, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	for name, p := range map[string]*int64{"prompt": got.PromptTokens, "completion": got.CompletionTokens,
		"cached": got.CachedTokens, "reasoning": got.ReasoningTokens} {
		if p == nil || *p != 0 {
			t.Errorf("%s tokens = %v, want 0", name, p)
		}
	}
	if got.CostMicros == nil || *got.CostMicros != 0 || got.TTFCMS == nil || *got.TTFCMS != 0 {
		t.Errorf("zero cost/ttfc read back as %v/%v", got.CostMicros, got.TTFCMS)
	}
	var nulls int64
	if err := db.QueryRow(`SELECT count(*) FROM call_logs WHERE prompt_tokens IS NULL`).Scan(&nulls); err != nil || nulls != 1 {
		t.Errorf("rows with NULL prompt_tokens = %d (%v), want 1", nulls, err)
	}
}

// rollupTotals sums the roll-ups of caller.
func rollupTotals(t testing.TB, db *sql.DB, caller string) (costReq, costPrompt, statReq, statHist int64) {
	t.Helper()
	err := db.QueryRow(`SELECT coalesce(sum(requests), 0), coalesce(sum(prompt_tokens), 0)
		FROM cost_rollups WHERE caller = $1`, caller).Scan(&costReq, &costPrompt)
	if err != nil {
		t.Fatal(err)
	}
	err = db.QueryRow(`SELECT coalesce(sum(requests), 0),
		coalesce(sum((SELECT sum(x) FROM unnest(latency_hist) x)), 0)::bigint
		FROM call_stats WHERE caller = $1`, caller).Scan(&statReq, &statHist)
	if err != nil {
		t.Fatal(err)
	}
	return
}

func TestReplayedRecordsAreStoredAndCountedOnce(t *testing.T) {
	db, _ := newTestDB(t)
	ensureToday(t, db)
	recs := sampleRecords(time.Now().Add(-time.Hour), "replayer", 1500)

	w := testWriter(t, db, WriterOptions{})
	for _, r := range recs {
		w.Write(r)
	}
	mustClose(t, w)

	// The same records again (a retried batch), plus 10 new ones.
	w = testWriter(t, db, WriterOptions{})
	for _, r := range recs {
		w.Write(r)
	}
	fresh := sampleRecords(time.Now().Add(-time.Minute), "replayer", 10)
	for _, r := range fresh {
		w.Write(r)
	}
	mustClose(t, w)
	if s := w.Stats(); s.Written != 10 {
		t.Errorf("second writer stored %d rows, want 10", s.Written)
	}

	// And once more through a spill file, as after a crash mid-replay: the
	// file holds rows already stored, 300 that are not, and a line torn by
	// the crash.
	unstored := sampleRecords(time.Now().Add(-30*time.Minute), "replayer", 300)
	dir := t.TempDir()
	f, err := os.Create(filepath.Join(dir, activeName))
	if err != nil {
		t.Fatal(err)
	}
	enc := json.NewEncoder(f)
	for _, r := range append(slices.Clone(recs), unstored...) {
		if err := enc.Encode(&r); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := f.WriteString(`{"at":"2026-01-01T00:00:00Z","request_id":"torn`); err != nil {
		t.Fatal(err)
	}
	_ = f.Close()
	w = testWriter(t, db, WriterOptions{SpillDir: dir})
	mustClose(t, w)
	if s := w.Stats(); s.Replayed != int64(len(recs)+len(unstored)) || s.Written != int64(len(unstored)) {
		t.Errorf("spill replay stats = %+v, want %d replayed and %d written", s, len(recs)+len(unstored), len(unstored))
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "spill-*")); len(left) != 0 {
		t.Errorf("spill files left after replay: %v", left)
	}
	if b, err := os.ReadFile(filepath.Join(dir, deadLetterName)); err != nil || !strings.Contains(string(b), "torn") {
		t.Errorf("torn line not in the dead-letter file: %q, %v", b, err)
	}

	want := int64(len(recs) + len(fresh) + len(unstored))
	if n := countRows(t, db, `SELECT count(*) FROM call_logs WHERE caller = 'replayer'`); n != want {
		t.Errorf("rows = %d, want %d", n, want)
	}
	if n := countRows(t, db, `SELECT count(DISTINCT request_id) FROM call_logs`); n != want {
		t.Errorf("distinct request ids = %d, want %d", n, want)
	}
	var exact bool
	if err := db.QueryRow(`SELECT (SELECT sum(cost_micros) FROM call_logs) = (SELECT sum(cost_micros) FROM cost_rollups)
		AND (SELECT sum(cost_micros) FROM call_logs) = (SELECT sum(cost_micros) FROM call_stats)`).Scan(&exact); err != nil || !exact {
		t.Errorf("roll-up cost differs from the sum of call-log costs (%v)", err)
	}
	costReq, costPrompt, statReq, statHist := rollupTotals(t, db, "replayer")
	if costReq != want || costPrompt != want*100 || statReq != want || statHist != want {
		t.Errorf("roll-ups: cost requests %d, prompt tokens %d, stat requests %d, histogram %d; want %d, %d, %d, %d",
			costReq, costPrompt, statReq, statHist, want, want*100, want, want)
	}
}

func TestOutageSpillsThenReplaysEveryRecordOnce(t *testing.T) {
	db, schema := newTestDB(t)
	ensureToday(t, db)
	proxy := newProxy(t, dsnHostPort(t, baseDSN))
	viaProxy := openSchema(t, withHost(t, baseDSN, proxy.addr), schema)
	if err := viaProxy.Ping(); err != nil {
		t.Fatalf("ping through proxy: %v", err)
	}

	var (
		flushMu sync.Mutex
		flushes []FlushStats
	)
	w := testWriter(t, viaProxy, WriterOptions{
		FlushInterval: 20 * time.Millisecond, BatchSize: 200,
		RetryMin: 20 * time.Millisecond, RetryMax: 100 * time.Millisecond,
		InsertTimeout: 2 * time.Second,
		OnFlush: func(s FlushStats) {
			flushMu.Lock()
			defer flushMu.Unlock()
			flushes = append(flushes, s)
		},
	})

	// Some rows while up, then an outage in the middle of the stream.
	recs := sampleRecords(time.Now().Add(-10*time.Minute), "outage", 3000)
	for _, r := range recs[:500] {
		w.Write(r)
	}
	waitFor(t, 10*time.Second, "first rows stored", func() (bool, error) {
		return w.Stats().Written == 500, nil
	})
	proxy.down()
	for _, r := range recs[500:] {
		w.Write(r)
	}
	waitFor(t, 10*time.Second, "records spilled while PostgreSQL is down", func() (bool, error) {
		return w.Stats().Spilled == 2500 && w.Depth() == 0, nil
	})
	if w.SpillBytes() == 0 {
		t.Fatal("SpillBytes = 0 during the outage")
	}
	if n := countRows(t, db, `SELECT count(*) FROM call_logs`); n != 500 {
		t.Fatalf("rows during outage = %d, want 500", n)
	}

	proxy.up()
	waitFor(t, 20*time.Second, "spill replayed", func() (bool, error) {
		return w.SpillBytes() == 0 && countRows(t, db, `SELECT count(*) FROM call_logs`) == 3000, nil
	})
	mustClose(t, w)

	var missing, dup int64
	ids := make([]string, len(recs))
	for i, r := range recs {
		ids[i] = r.RequestID
	}
	err := db.QueryRow(`
		SELECT count(*) FILTER (WHERE n = 0), count(*) FILTER (WHERE n > 1) FROM (
			SELECT id, (SELECT count(*) FROM call_logs c WHERE c.request_id = id) AS n
			FROM unnest($1::text[]) AS id) x`, pq.Array(ids)).Scan(&missing, &dup)
	if err != nil {
		t.Fatal(err)
	}
	if missing != 0 || dup != 0 {
		t.Errorf("after the outage: %d request ids missing, %d duplicated", missing, dup)
	}
	if costReq, _, statReq, _ := rollupTotals(t, db, "outage"); costReq != 3000 || statReq != 3000 {
		t.Errorf("roll-up requests = %d / %d, want 3000", costReq, statReq)
	}
	var sawSpill, sawReplay bool
	for _, f := range flushes {
		sawSpill = sawSpill || (f.Spilled > 0 && f.Err != nil)
		sawReplay = sawReplay || (f.Replay && f.Inserted > 0)
	}
	if !sawSpill || !sawReplay {
		t.Errorf("OnFlush saw spill=%t replay=%t, want both", sawSpill, sawReplay)
	}
}

func TestCloseWhileDownKeepsRecordsForTheNextWriter(t *testing.T) {
	db, schema := newTestDB(t)
	ensureToday(t, db)
	proxy := newProxy(t, dsnHostPort(t, baseDSN))
	viaProxy := openSchema(t, withHost(t, baseDSN, proxy.addr), schema)
	proxy.down()

	dir := t.TempDir()
	w := testWriter(t, viaProxy, WriterOptions{SpillDir: dir, InsertTimeout: time.Second})
	recs := sampleRecords(time.Now().Add(-time.Minute), "restart", 1234)
	for _, r := range recs {
		w.Write(r)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := w.Close(ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if s := w.Stats(); s.Spilled != 1234 || s.Written != 0 {
		t.Fatalf("stats after close while down = %+v, want all 1234 spilled", s)
	}
	// Written after Close: straight to the spill file.
	late := sampleRecord(time.Now(), "restart", 9999)
	w.Write(late)

	// A new process on the same spill dir, PostgreSQL back.
	w2 := testWriter(t, db, WriterOptions{SpillDir: dir})
	if w2.SpillBytes() == 0 {
		t.Fatal("new writer sees no spill")
	}
	mustClose(t, w2)
	if n := countRows(t, db, `SELECT count(*) FROM call_logs WHERE caller = 'restart'`); n != 1235 {
		t.Errorf("rows = %d, want 1235", n)
	}
}

func TestCloseFlushesPartialBatch(t *testing.T) {
	db, _ := newTestDB(t)
	ensureToday(t, db)
	w := testWriter(t, db, WriterOptions{FlushInterval: time.Hour, BatchSize: 1000})
	for _, r := range sampleRecords(time.Now().Add(-time.Minute), "closer", 2500) {
		w.Write(r)
	}
	mustClose(t, w)
	if n := countRows(t, db, `SELECT count(*) FROM call_logs`); n != 2500 {
		t.Errorf("rows after Close = %d, want 2500", n)
	}
	if w.Depth() != 0 || w.SpillBytes() != 0 {
		t.Errorf("after Close: depth %d, spill bytes %d", w.Depth(), w.SpillBytes())
	}
}

func TestFullBufferSpillsInsteadOfDropping(t *testing.T) {
	db, _ := newTestDB(t)
	ensureToday(t, db)
	w := testWriter(t, db, WriterOptions{BufferSize: 8, BatchSize: 100})
	const n = 5000
	for _, r := range sampleRecords(time.Now().Add(-time.Minute), "burst", n) {
		w.Write(r)
	}
	mustClose(t, w)
	s := w.Stats()
	if s.Spilled == 0 {
		t.Errorf("nothing spilled with an 8-record buffer and %d writes", n)
	}
	if got := countRows(t, db, `SELECT count(*) FROM call_logs`); got != n {
		t.Errorf("rows = %d, want %d (stats %+v)", got, n, s)
	}
	if w.SpillBytes() != 0 {
		t.Errorf("spill bytes after Close = %d, want 0", w.SpillBytes())
	}
}

func TestRefusedRecordsGoToTheDeadLetterFile(t *testing.T) {
	db, _ := newTestDB(t)
	ensureToday(t, db)
	dir := t.TempDir()
	w := testWriter(t, db, WriterOptions{SpillDir: dir})
	recs := sampleRecords(time.Now().Add(-time.Minute), "poison", 20)
	// Valid JSON that jsonb refuses: the batch is split until it is isolated.
	recs[13].Attempts = json.RawMessage(`[{"msg":"\u0000"}]`)
	for _, r := range recs {
		w.Write(r)
	}
	bad := sampleRecord(time.Now(), "poison", 99)
	bad.Status = "weird"
	w.Write(bad)
	mustClose(t, w)

	if n := countRows(t, db, `SELECT count(*) FROM call_logs`); n != 19 {
		t.Errorf("rows = %d, want 19", n)
	}
	if s := w.Stats(); s.DeadLettered != 2 || s.Lost != 0 {
		t.Errorf("stats = %+v, want 2 dead-lettered", s)
	}
	b, err := os.ReadFile(filepath.Join(dir, deadLetterName))
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{recs[13].RequestID, bad.RequestID} {
		if !strings.Contains(string(b), id) {
			t.Errorf("dead-letter file lacks %s", id)
		}
	}
}

func TestNormalizeRepairsWhatPostgresWouldRefuse(t *testing.T) {
	r := Record{Caller: "a\x00b", Tier: "fa\xffst", Status: StatusOK, LatencyMS: 1 << 40,
		Attempts: json.RawMessage(`{not json`), At: time.Date(2026, 1, 2, 3, 4, 5, 123456789, time.UTC)}
	if err := normalize(&r); err != nil {
		t.Fatal(err)
	}
	if r.Caller != "ab" || r.Tier != "fa\uFFFDst" || r.LatencyMS != 1<<31-1 || r.RequestID == "" ||
		!json.Valid(r.Attempts) || r.At.Nanosecond() != 123456000 {
		t.Errorf("normalized = %+v", r)
	}
	r = Record{Status: "nope"}
	if err := normalize(&r); err == nil {
		t.Error("unknown status accepted")
	}
}

func TestNewWriterNeedsSpillDir(t *testing.T) {
	db, _ := newTestDB(t)
	if _, err := NewWriter(db, WriterOptions{}); err == nil {
		t.Fatal("NewWriter without SpillDir succeeded")
	}
}

// The crash window: under light load a row is in PostgreSQL within about
// QuickFlush plus one insert, not FlushInterval (an hour here, so only the
// quick path can have stored it). With QuickFlush disabled it stays queued.
func TestQuickFlushBoundsTheCrashWindowUnderLightLoad(t *testing.T) {
	db, _ := newTestDB(t)
	ensureToday(t, db)
	w := testWriter(t, db, WriterOptions{FlushInterval: time.Hour, QuickFlush: 10 * time.Millisecond})
	for i, r := range sampleRecords(time.Now().Add(-time.Minute), "quick", 3) {
		w.Write(r)
		deadline := time.Now().Add(5 * time.Second)
		for countRows(t, db, `SELECT count(*) FROM call_logs WHERE caller = 'quick'`) != int64(i+1) {
			if time.Now().After(deadline) {
				t.Fatalf("row %d not stored without Close: the quick flush did not run", i+1)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	mustClose(t, w)

	slow := testWriter(t, db, WriterOptions{FlushInterval: time.Hour, QuickFlush: -1})
	slow.Write(sampleRecord(time.Now().Add(-time.Minute), "slow", 1))
	time.Sleep(300 * time.Millisecond)
	if n := countRows(t, db, `SELECT count(*) FROM call_logs WHERE caller = 'slow'`); n != 0 {
		t.Fatalf("with QuickFlush disabled the row should wait for FlushInterval, found %d", n)
	}
	mustClose(t, slow)
}
