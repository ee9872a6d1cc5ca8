package calllog

import (
	"database/sql"
	"sync/atomic"
	"testing"
	"time"
)

// A quick flush is due at once on a writer that has sent nothing, and
// otherwise not before the gap since the last batch went.
func TestQuickFlushWaitsOutTheGap(t *testing.T) {
	q := newQuickFlush(WriterOptions{QuickFlush: 20 * time.Millisecond, QuickFlushGap: 100 * time.Millisecond, FlushInterval: time.Hour})
	defer q.timer.Stop()
	t0 := time.Now()
	if !q.fired(t0) {
		t.Fatal("nothing sent yet: the quick flush should be due")
	}
	q.sent(t0)
	if q.fired(t0.Add(30 * time.Millisecond)) {
		t.Fatal("30 ms after a batch went, inside the 100 ms gap: the quick flush should wait")
	}
	if !q.armed {
		t.Fatal("a quick flush held by the gap should be timed again")
	}
	if !q.fired(t0.Add(100 * time.Millisecond)) {
		t.Fatal("at the end of the gap the quick flush should be due")
	}
	noGap := newQuickFlush(WriterOptions{QuickFlush: 20 * time.Millisecond, QuickFlushGap: -1, FlushInterval: time.Hour})
	defer noGap.timer.Stop()
	noGap.sent(t0)
	if !noGap.fired(t0.Add(time.Millisecond)) {
		t.Fatal("with no gap the quick flush should be due whenever it fires")
	}
}

// On a quiet writer a row goes after QuickFlush; a row that comes right
// after a batch went waits for the gap (an hour here, as is FlushInterval,
// so only Close stores it). Without a gap it goes after QuickFlush too.
func TestQuickFlushGapHoldsTheNextPartialBatch(t *testing.T) {
	db, _ := newTestDB(t)
	ensureToday(t, db)
	for _, c := range []struct {
		caller string
		gap    time.Duration
		held   bool
	}{{"gap", time.Hour, true}, {"nogap", -1, false}} {
		w := testWriter(t, db, WriterOptions{FlushInterval: time.Hour, QuickFlush: 10 * time.Millisecond, QuickFlushGap: c.gap})
		recs := sampleRecords(time.Now().Add(-time.Minute), c.caller, 2)
		w.Write(recs[0])
		waitRows(t, db, c.caller, 1)
		w.Write(recs[1])
		if !c.held {
			waitRows(t, db, c.caller, 2)
			mustClose(t, w)
			continue
		}
		time.Sleep(300 * time.Millisecond)
		if n := countRows(t, db, `SELECT count(*) FROM call_logs WHERE caller = $1`, c.caller); n != 1 {
			t.Fatalf("%s: the second row should wait for the gap, found %d rows", c.caller, n)
		}
		mustClose(t, w)
		if n := countRows(t, db, `SELECT count(*) FROM call_logs WHERE caller = $1`, c.caller); n != 2 {
			t.Fatalf("%s: Close should store the held row, found %d rows", c.caller, n)
		}
	}
}

// Under steady traffic (200 rows a second) partial batches go once per
// gap, not once per QuickFlush: the batches are counted, and every row is
// stored.
func TestQuickFlushGapCoalescesSteadyTraffic(t *testing.T) {
	db, _ := newTestDB(t)
	ensureToday(t, db)
	const gap = 100 * time.Millisecond
	var batches atomic.Int64
	w := testWriter(t, db, WriterOptions{FlushInterval: time.Hour, QuickFlush: 20 * time.Millisecond, QuickFlushGap: gap,
		OnFlush: func(s FlushStats) {
			if !s.Replay && s.Records > 0 {
				batches.Add(1)
			}
		}})
	recs := sampleRecords(time.Now().Add(-time.Minute), "steady", 200)
	tick := time.NewTicker(5 * time.Millisecond)
	start := time.Now()
	for _, r := range recs {
		<-tick.C
		w.Write(r)
	}
	tick.Stop()
	elapsed := time.Since(start)
	mustClose(t, w) // its batch is one more
	if most := int64(elapsed/gap) + 2; batches.Load() > most {
		t.Errorf("%d rows over %s went in %d batches; with a %s gap at most %d", len(recs), elapsed.Round(time.Millisecond), batches.Load(), gap, most)
	}
	if n := countRows(t, db, `SELECT count(*) FROM call_logs WHERE caller = 'steady'`); n != int64(len(recs)) {
		t.Fatalf("stored %d of %d rows", n, len(recs))
	}
}

// waitRows waits up to five seconds for caller's rows to number want.
func waitRows(t *testing.T, db *sql.DB, caller string, want int64) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for countRows(t, db, `SELECT count(*) FROM call_logs WHERE caller = $1`, caller) != want {
		if time.Now().After(deadline) {
			t.Fatalf("%s: %d rows not stored without Close: the quick flush did not run", caller, want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
