package calllog

import "time"

// quickFlush times the early flush of a partial batch: QuickFlush after
// the batch's first record, and no sooner than QuickFlushGap after the
// previous batch went. On a quiet instance a record goes after QuickFlush;
// under steady traffic partial batches go every QuickFlushGap, so the
// fixed cost of a batch (a transaction with its COPY and roll-up, and the
// wake-ups around it) is shared by the records of a gap instead of those
// of QuickFlush.
type quickFlush struct {
	on         bool
	delay, gap time.Duration
	timer      *time.Timer
	armed      bool
	last       time.Time // when the previous batch went
}

func newQuickFlush(o WriterOptions) *quickFlush {
	q := &quickFlush{
		on:    o.QuickFlush > 0 && o.QuickFlush < o.FlushInterval,
		delay: o.QuickFlush,
		gap:   max(o.QuickFlushGap, 0),
		timer: time.NewTimer(time.Hour),
	}
	q.timer.Stop()
	return q
}

// arm starts the timer for a batch waiting (pending), unless it runs.
func (q *quickFlush) arm(pending bool) {
	if !q.on || q.armed || !pending {
		return
	}
	wait := max(q.delay, q.untilGap(time.Now()))
	q.timer.Reset(wait)
	q.armed = true
}

// fired is called when the timer fires at now: it reports whether the
// waiting batch may go, or restarts the timer for the rest of the gap (a
// batch went since the timer started).
func (q *quickFlush) fired(now time.Time) bool {
	q.armed = false
	if wait := q.untilGap(now); wait > 0 {
		q.timer.Reset(wait)
		q.armed = true
		return false
	}
	return true
}

// sent records that a batch went at now.
func (q *quickFlush) sent(now time.Time) { q.last = now }

func (q *quickFlush) untilGap(now time.Time) time.Duration {
	if q.last.IsZero() {
		return 0
	}
	return q.last.Add(q.gap).Sub(now)
}
