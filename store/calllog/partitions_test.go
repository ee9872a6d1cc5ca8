package calllog

import (
	"context"
	"slices"
	"testing"
	"time"
)

func partitionNames(t *testing.T, db Queryer) []string {
	t.Helper()
	parts, err := partitions(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range parts {
		names = append(names, p.name)
	}
	return names
}

func TestPartitions(t *testing.T) {
	db, _ := newTestDB(t)
	ctx := context.Background()
	// 23:30 UTC: the day boundary is UTC whatever the local zone says.
	now := time.Date(2026, 5, 30, 23, 30, 0, 0, time.FixedZone("UTC-5", -5*3600)) // 2026-05-31 04:30 UTC

	if err := EnsurePartitions(ctx, db, now, 3); err != nil {
		t.Fatal(err)
	}
	want := []string{"call_logs_20260531", "call_logs_20260601", "call_logs_20260602", "call_logs_20260603"}
	if got := partitionNames(t, db); !slices.Equal(got, want) {
		t.Fatalf("partitions = %v, want %v", got, want)
	}
	if err := EnsurePartitions(ctx, db, now, 3); err != nil {
		t.Fatalf("second EnsurePartitions: %v", err)
	}

	// A row with no partition for its day lands in the default partition...
	stray := sampleRecord(time.Date(2026, 6, 10, 0, 0, 0, 0, time.UTC), "stray", 1)
	edge := sampleRecord(time.Date(2026, 6, 10, 23, 59, 59, 999999000, time.UTC), "stray", 2)
	other := sampleRecord(time.Date(2026, 6, 11, 0, 0, 0, 0, time.UTC), "stray", 3)
	// stray failed over: its attempt rows are days' rows too.
	served(&stray, []testAttempt{call("vendor-x", 1, "sk-…xxxx", "failed", "auth"), call("vendor-y", 2, "sk-…yyyy", "ok", "")}, t)
	recs := []Record{stray, edge, other}
	for i := range recs {
		_ = normalize(&recs[i])
	}
	if _, err := insertBatch(ctx, db, recs); err != nil {
		t.Fatal(err)
	}
	if n := countRows(t, db, `SELECT count(*) FROM call_logs_default`); n != 3 {
		t.Fatalf("default partition rows = %d, want 3", n)
	}
	// ...and is moved when that day's partition is created.
	if err := EnsurePartitions(ctx, db, time.Date(2026, 6, 10, 8, 0, 0, 0, time.UTC), 0); err != nil {
		t.Fatalf("EnsurePartitions over stray rows: %v", err)
	}
	if n := countRows(t, db, `SELECT count(*) FROM call_logs_20260610`); n != 2 {
		t.Errorf("moved rows = %d, want 2", n)
	}
	if n := countRows(t, db, `SELECT count(*) FROM call_logs_default`); n != 1 {
		t.Errorf("default partition rows after move = %d, want 1 (the next day's)", n)
	}
	if n := countRows(t, db, `SELECT count(*) FROM call_logs`); n != 3 {
		t.Errorf("rows = %d, want 3", n)
	}
	if n := countRows(t, db, `SELECT count(*) FROM call_log_attempts_20260610`); n != 4 {
		t.Errorf("attempt rows moved = %d, want stray's 4 (class, provider, key, deployment)", n)
	}
	if n := countRows(t, db, `SELECT count(*) FROM call_log_attempts_default`); n != 0 {
		t.Errorf("attempt rows left in the default partition: %d", n)
	}
	// Roll-ups are not touched by the move.
	if req, _, _, _ := rollupTotals(t, db, "stray"); req != 3 {
		t.Errorf("roll-up requests = %d, want 3", req)
	}

	// Retention 7 days on 2026-06-10 12:00: days ending by 2026-06-03 12:00 go.
	dropped, err := DropPartitions(ctx, db, time.Date(2026, 6, 10, 12, 0, 0, 0, time.UTC), 7*24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	wantDropped := []string{"call_logs_20260531", "call_logs_20260601", "call_logs_20260602"}
	if !slices.Equal(dropped, wantDropped) {
		t.Errorf("dropped = %v, want %v", dropped, wantDropped)
	}
	if got := partitionNames(t, db); !slices.Equal(got, []string{"call_logs_20260603", "call_logs_20260610"}) {
		t.Errorf("partitions left = %v", got)
	}
	// call_log_attempts' partitions go with them.
	if n := countRows(t, db, `SELECT count(*) FROM pg_inherits WHERE inhparent = 'call_log_attempts'::regclass`); n != 3 {
		t.Errorf("attempt partitions left = %d, want 2 days and the default", n)
	}
	// Old rows in the default partition are trimmed too.
	dropped, err = DropPartitions(ctx, db, time.Date(2026, 7, 20, 0, 0, 0, 0, time.UTC), 7*24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if len(dropped) != 2 || countRows(t, db, `SELECT count(*) FROM call_logs`) != 0 {
		t.Errorf("dropped %v, rows left %d", dropped, countRows(t, db, `SELECT count(*) FROM call_logs`))
	}
}

func TestPartitionName(t *testing.T) {
	if got := PartitionName(time.Date(2026, 1, 1, 1, 0, 0, 0, time.FixedZone("CST", 8*3600))); got != "call_logs_20251231" {
		t.Errorf("PartitionName = %s", got)
	}
}
