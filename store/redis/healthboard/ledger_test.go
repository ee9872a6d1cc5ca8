package healthboard

import (
	"context"
	"testing"
	"time"

	"switchyard/routing/health"
)

// TestProbeLedger: live successes (not failures, not probes) stamp the last
// live success; probes sent and their cost, and skips, are summed over the
// last 24 hours (older hours drop out); a sent probe clears the last skip;
// a deployment that leaves the configuration loses its stamps.
func TestProbeLedger(t *testing.T) {
	rdb, prefix := testRedis(t)
	ctx := context.Background()
	clk := &clock{t: time.Now().Truncate(time.Hour)}
	b := NewBoard(rdb, prefix, health.Settings{})
	b.now = clk.now

	if err := b.Add(ctx, map[int64]health.Counts{1: {OK: 2}, 2: {Failed: 3}, 3: {ProbeOK: 1}}); err != nil {
		t.Fatal(err)
	}
	stamped := clk.now()
	for id, want := range map[int64]time.Time{1: stamped, 2: {}, 3: {}} {
		got, err := b.LastLiveOK(ctx, id)
		if err != nil || !got.Equal(want) {
			t.Fatalf("LastLiveOK(%d) = %v, %v; want %v", id, got, err, want)
		}
	}

	// Hour 0: two probes of 2, one skip of 1. Hour 1: one probe of 2 and a
	// skip of 2. Hour 24: hour 0 has dropped out.
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(b.NoteProbe(ctx, 2, 8))
	must(b.NoteProbe(ctx, 2, 8))
	must(b.NoteSkip(ctx, 1, health.SkipLiveTraffic))
	clk.add(time.Hour)
	must(b.NoteProbe(ctx, 2, 5))
	must(b.NoteSkip(ctx, 2, health.SkipLiveTraffic))
	skipAt := clk.now()
	l, err := b.Ledger(ctx)
	must(err)
	if got := l[2]; got.Sent != 3 || got.CostMicros != 21 || got.Skipped != 1 || !got.LastSkip.Equal(skipAt) {
		t.Fatalf("deployment 2: %+v", got)
	}
	if got := l[1]; got.Sent != 0 || got.Skipped != 1 || got.LastSkip.IsZero() || !got.LastLiveOK.Equal(stamped) {
		t.Fatalf("deployment 1: %+v", got)
	}
	must(b.NoteProbe(ctx, 2, 0)) // sent: the skip is history
	clk.add(23 * time.Hour)
	l, err = b.Ledger(ctx)
	must(err)
	if got := l[2]; got.Sent != 2 || got.CostMicros != 5 || got.Skipped != 1 || !got.LastSkip.IsZero() {
		t.Fatalf("deployment 2 a day later: %+v", got)
	}

	// Deployment 1 leaves the configuration.
	if _, _, err := b.Evaluate(ctx, []int64{1, 2, 3}, nil); err != nil {
		t.Fatal(err)
	}
	if _, _, err := b.Evaluate(ctx, []int64{2, 3}, nil); err != nil {
		t.Fatal(err)
	}
	if got, _ := b.LastLiveOK(ctx, 1); !got.IsZero() {
		t.Fatalf("removed deployment keeps its last live success %v", got)
	}
	l, err = b.Ledger(ctx)
	must(err)
	if got := l[1]; !got.LastSkip.IsZero() || !got.LastLiveOK.IsZero() {
		t.Fatalf("removed deployment: %+v", got)
	}
}
