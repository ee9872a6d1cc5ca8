package calllog

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lib/pq"
)

// WriterOptions configures a Writer. Zero values take the defaults.
type WriterOptions struct {
	// BufferSize bounds the in-memory queue (default 10,000 records). When it
	// is full, Write appends to the spill file instead.
	BufferSize int
	// BatchSize is the most records inserted per transaction (default 1,000,
	// at most BufferSize).
	BatchSize int
	// FlushInterval is how long a partial batch may wait (default 200ms).
	FlushInterval time.Duration
	// QuickFlush (default 20ms) sends a partial batch early when an insert
	// worker is idle: under light load a row reaches PostgreSQL within
	// about QuickFlush plus one insert instead of FlushInterval, which is
	// what a kill -9 can lose; under heavy load the workers are busy and
	// batches grow as before. Negative disables it.
	QuickFlush time.Duration
	// QuickFlushGap (default 100ms) is the least time between a batch
	// going and the next quick flush. A record on a quiet instance still
	// goes after QuickFlush; under steady traffic partial batches go at
	// most every QuickFlushGap, so at a few hundred records a second a
	// batch holds tens of them instead of a handful, and a record waits at
	// most about QuickFlushGap plus one insert. Negative: no gap.
	QuickFlushGap time.Duration
	// SpillDir holds the spill and dead-letter files. Required; it must not
	// be shared by two running Writers. Spill left by a previous process is
	// replayed.
	SpillDir string
	// Workers is how many batches are inserted concurrently (default 2):
	// while one transaction waits for its commit to be flushed, another
	// copies its rows.
	Workers int
	// InsertTimeout bounds one batch's transaction (default 10s).
	InsertTimeout time.Duration
	// RetryMin and RetryMax bound the backoff while PostgreSQL is failing
	// (defaults 500ms and 30s). Meanwhile batches go straight to the spill.
	RetryMin, RetryMax time.Duration
	// Logger receives state changes (PostgreSQL down / back) and failures.
	// Default slog.Default().
	Logger *slog.Logger
	// OnFlush, if set, is called after every batch, for metrics; calls may
	// come from several goroutines at once. It must not block.
	OnFlush func(FlushStats)
}

// FlushStats describes one batch.
type FlushStats struct {
	Records    int           // records in the batch
	Inserted   int           // rows stored (duplicates of stored rows excluded)
	Spilled    int           // records written to the spill file instead
	Replay     bool          // the batch came from the spill file
	Depth      int           // queue depth after the batch
	SpillBytes int64         // spilled bytes waiting for replay
	Duration   time.Duration // time spent on the batch
	Err        error         // why the batch was not stored, if it was not
}

// WriterStats are cumulative counters since NewWriter.
type WriterStats struct {
	Written      int64 // rows stored
	Spilled      int64 // records written to the spill file
	Replayed     int64 // records read back from the spill file and stored or found present
	DeadLettered int64 // records PostgreSQL refused, kept in the dead-letter file
	Lost         int64 // records neither stored nor spilled (the disk failed too)
}

// Writer stores call-log records asynchronously. Write never blocks: one
// goroutine assembles batches from a bounded queue and Workers goroutines
// insert them; records go to the spill file when PostgreSQL is unavailable
// or the queue is full, and are replayed when it answers again.
type Writer struct {
	db    *sql.DB
	opts  WriterOptions
	log   *slog.Logger
	free  chan []Record // flushed batches for reuse
	spool *spool
	done  chan struct{}

	// The queue: records Write took and no worker has yet. A record costs
	// one copy into the open batch under mu, and nothing wakes the loop
	// but the first record of a batch and a batch that is full.
	mu       sync.Mutex
	open     []Record   // the batch being filled
	full     [][]Record // batches of BatchSize waiting for a worker
	queued   int        // records in open and full
	kick     chan struct{}
	closed   bool
	closeCtx context.Context

	written, spilled, replayed, deadLettered, lost atomic.Int64

	replaying atomic.Bool  // a worker is replaying the spill file
	idle      atomic.Int32 // workers waiting for a job

	stateMu   sync.Mutex // guards the PostgreSQL health below
	downUntil time.Time
	backoff   time.Duration
	down      bool
}

// NewWriter starts a Writer on db. Records spilled by an earlier process in
// opts.SpillDir are replayed once PostgreSQL accepts writes.
func NewWriter(db *sql.DB, opts WriterOptions) (*Writer, error) {
	if db == nil {
		return nil, errors.New("calllog: NewWriter: nil db")
	}
	if opts.SpillDir == "" {
		return nil, errors.New("calllog: NewWriter: SpillDir is required")
	}
	if opts.BufferSize <= 0 {
		opts.BufferSize = 10000
	}
	if opts.BatchSize <= 0 {
		opts.BatchSize = 1000
	}
	opts.BatchSize = min(opts.BatchSize, opts.BufferSize) // a batch never holds more than the queue
	if opts.FlushInterval <= 0 {
		opts.FlushInterval = 200 * time.Millisecond
	}
	if opts.Workers <= 0 {
		opts.Workers = 2
	}
	if opts.QuickFlush == 0 {
		opts.QuickFlush = 20 * time.Millisecond
	}
	if opts.QuickFlushGap == 0 {
		opts.QuickFlushGap = 100 * time.Millisecond
	}
	if opts.InsertTimeout <= 0 {
		opts.InsertTimeout = 10 * time.Second
	}
	if opts.RetryMin <= 0 {
		opts.RetryMin = 500 * time.Millisecond
	}
	if opts.RetryMax < opts.RetryMin {
		opts.RetryMax = max(30*time.Second, opts.RetryMin)
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	sp, err := openSpool(opts.SpillDir)
	if err != nil {
		return nil, err
	}
	w := &Writer{
		db:      db,
		opts:    opts,
		log:     opts.Logger.With("component", "calllog"),
		free:    make(chan []Record, opts.Workers+1),
		kick:    make(chan struct{}, 1),
		spool:   sp,
		done:    make(chan struct{}),
		backoff: opts.RetryMin,
	}
	go w.run()
	return w, nil
}

// Write queues r for storage and returns at once. A zero At is set to now
// and an empty RequestID to a new one. If the queue is full (or the Writer
// is closed) r is appended to the spill file instead. A record with an
// unknown status cannot be stored: it goes to the dead-letter file and is
// logged.
func (w *Writer) Write(r Record) {
	if err := normalize(&r); err != nil {
		w.deadLetter([]Record{r}, err)
		return
	}
	w.mu.Lock()
	if w.closed || w.queued >= w.opts.BufferSize {
		closed := w.closed
		w.mu.Unlock()
		// Overflow: fsynced by the loop within a flush interval (at once
		// when the Writer is closed, as nothing else will).
		w.spillRecords([]Record{r}, closed, nil)
		return
	}
	if w.open == nil {
		w.open = w.newBatch()
	}
	w.open = append(w.open, r)
	w.queued++
	wake := len(w.open) == 1 // the loop times the flush of a new batch
	if len(w.open) >= w.opts.BatchSize {
		w.full = append(w.full, w.open)
		w.open = nil
		wake = true
	}
	if wake { // under mu: Close closes kick under it
		select {
		case w.kick <- struct{}{}:
		default: // the loop has a kick waiting already
		}
	}
	w.mu.Unlock()
}

// Depth is the number of queued records.
func (w *Writer) Depth() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.queued
}

// take removes the queue's next batch: a full one, or else (all) the open
// one's records, or nil.
func (w *Writer) take(all bool) []Record {
	w.mu.Lock()
	defer w.mu.Unlock()
	var b []Record
	switch {
	case len(w.full) > 0:
		b = w.full[0]
		w.full[0] = nil
		w.full = w.full[1:]
		if len(w.full) == 0 {
			w.full = nil
		}
	case all && len(w.open) > 0:
		b, w.open = w.open, nil
	}
	w.queued -= len(b)
	return b
}

// SpillBytes is the size of spilled records waiting for replay.
func (w *Writer) SpillBytes() int64 { return w.spool.bytes.Load() }

// Stats returns cumulative counters.
func (w *Writer) Stats() WriterStats {
	return WriterStats{
		Written:      w.written.Load(),
		Spilled:      w.spilled.Load(),
		Replayed:     w.replayed.Load(),
		DeadLettered: w.deadLettered.Load(),
		Lost:         w.lost.Load(),
	}
}

// Close stops accepting records into the queue, stores what is queued — or
// spills it if PostgreSQL is unavailable or ctx ends first — and replays the
// spill file while PostgreSQL accepts writes and ctx allows. Spill left over
// is replayed by the next Writer on the same SpillDir. Records written after
// Close go straight to the spill file.
func (w *Writer) Close(ctx context.Context) error {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		<-w.done
		return nil
	}
	w.closed = true
	w.closeCtx = ctx
	close(w.kick) // the loop hands on what is queued and stops
	w.mu.Unlock()
	<-w.done
	return w.spool.close()
}

// job is a unit of work for the insert workers: a batch from the queue, or
// a turn at replaying the spill file.
type job struct {
	batch  []Record
	replay bool
}

// run hands the queue's batches to the workers. When all workers are busy
// it waits for one, while Write goes on queueing up to BufferSize records
// and then overflows into the spill file: memory stays bounded and Write
// never waits.
func (w *Writer) run() {
	defer close(w.done)
	batches := make(chan job)
	var workers sync.WaitGroup
	for range w.opts.Workers {
		workers.Go(func() { w.work(batches) })
	}
	ticker := time.NewTicker(w.opts.FlushInterval)
	defer ticker.Stop()
	quick := newQuickFlush(w.opts)
	defer quick.timer.Stop()
	send := func(all bool) {
		for b := w.take(all); b != nil; b = w.take(all) {
			batches <- job{batch: b}
			quick.sent(time.Now())
		}
	}
	for {
		select {
		case _, ok := <-w.kick:
			send(false)
			if !ok { // closed: hand on the rest and stop
				send(true)
				close(batches)
				workers.Wait()
				w.shutdown()
				return
			}
			quick.arm(w.Depth() > 0)
		case <-quick.timer.C:
			if quick.fired(time.Now()) && w.idle.Load() > 0 { // a worker is idle: the batch goes now
				send(true)
			}
			quick.arm(w.Depth() > 0) // all busy: the batch keeps growing, and is looked at again
		case <-ticker.C:
			send(true)
			w.tick(batches)
		}
	}
}

// tick is the flush interval's housekeeping: the spill file is fsynced,
// and replayed if PostgreSQL accepts writes and a worker is idle.
func (w *Writer) tick(batches chan<- job) {
	if err := w.spool.sync(); err != nil {
		w.log.Error("call-log spill fsync failed", "err", err)
	}
	if w.spool.pending() && !w.isDown() && !w.replaying.Load() {
		select {
		case batches <- job{replay: true}: // only if a worker is idle
		default:
		}
	}
}

// newBatch returns an empty batch, reusing a flushed one if there is one.
// A new one starts small and grows as records come (an idle instance holds
// no batch of BatchSize records).
func (w *Writer) newBatch() []Record {
	select {
	case b := <-w.free:
		return b
	default:
		return make([]Record, 0, min(w.opts.BatchSize, 64))
	}
}

func (w *Writer) work(jobs <-chan job) {
	for {
		w.idle.Add(1)
		j, ok := <-jobs
		w.idle.Add(-1)
		if !ok {
			return
		}
		if !j.replay {
			w.flush(w.ctx(), j.batch)
			clear(j.batch) // keeps no request's strings alive
			select {
			case w.free <- j.batch[:0]:
			default:
			}
			continue
		}
		// One replayer at a time: the spool's reader is not shared.
		if w.replaying.CompareAndSwap(false, true) {
			w.replay(w.ctx(), 10)
			w.replaying.Store(false)
		}
	}
}

// ctx is the context for database work: Close's once closing.
func (w *Writer) ctx() context.Context {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closeCtx != nil {
		return w.closeCtx
	}
	return context.Background()
}

// shutdown runs after the queue is drained and the workers have stopped:
// it replays the spill file while PostgreSQL and Close's context allow.
func (w *Writer) shutdown() {
	ctx := w.ctx()
	if ctx.Err() != nil {
		return
	}
	w.stateMu.Lock()
	w.downUntil = time.Time{} // one more try, whatever the backoff says
	w.stateMu.Unlock()
	w.replay(ctx, -1)
}

// flush stores batch, or spills it when PostgreSQL is failing.
func (w *Writer) flush(ctx context.Context, batch []Record) {
	start := time.Now()
	st := FlushStats{Records: len(batch)}
	if w.isDown() {
		st.Err = errDown
		w.spillRecords(batch, true, &st)
	} else {
		st.Inserted, st.Err = w.store(ctx, batch, &st)
	}
	w.report(st, start)
}

var errDown = errors.New("calllog: PostgreSQL unavailable, waiting to retry")

// store inserts batch. A batch PostgreSQL refuses for its data is split
// until the offending records are isolated and dead-lettered; any other
// failure marks PostgreSQL down and spills the batch (records of it already
// stored are skipped when the spill is replayed).
func (w *Writer) store(ctx context.Context, batch []Record, st *FlushStats) (int, error) {
	n, err := w.insert(ctx, batch, false)
	if err != nil && isDataError(err) {
		n, err = w.storeHalves(ctx, batch, err, false)
	}
	if err != nil {
		w.markDown(err)
		w.spillRecords(batch, true, st)
		return 0, err
	}
	w.markUp()
	return n, nil
}

// storeHalves stores recs, which PostgreSQL refused with dataErr for what is
// in them, by halves, down to single records that are dead-lettered. It
// returns early with any error that is not about the data. replay: recs
// come from the spill file, and some may be stored already.
func (w *Writer) storeHalves(ctx context.Context, recs []Record, dataErr error, replay bool) (int, error) {
	if len(recs) == 1 {
		w.deadLetter(recs, dataErr)
		return 0, nil
	}
	total := 0
	for _, half := range [][]Record{recs[:len(recs)/2], recs[len(recs)/2:]} {
		n, err := w.insert(ctx, half, replay)
		if err != nil && isDataError(err) {
			n, err = w.storeHalves(ctx, half, err, replay)
		}
		if err != nil {
			return total, err
		}
		total += n
	}
	return total, nil
}

func (w *Writer) insert(ctx context.Context, batch []Record, replay bool) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, w.opts.InsertTimeout)
	defer cancel()
	n, err := storeBatch(ctx, w.db, batch, replay)
	if err == nil {
		w.written.Add(int64(n))
	}
	return n, err
}

// replay stores up to maxBatches batches from the spill file (no limit if
// negative), stopping early when the queue fills up.
func (w *Writer) replay(ctx context.Context, maxBatches int) {
	for i := 0; maxBatches < 0 || i < maxBatches; i++ {
		if !w.spool.pending() || w.isDown() || ctx.Err() != nil {
			return
		}
		if maxBatches >= 0 && w.Depth() > w.opts.BufferSize/2 {
			return // the live queue comes first
		}
		start := time.Now()
		recs, err := w.spool.next(w.opts.BatchSize)
		if err != nil {
			w.log.Error("call-log spill replay failed", "err", err)
			w.markDown(err)
			return
		}
		recs = w.normalizeSpilled(recs)
		if len(recs) == 0 {
			if !w.spool.replaying() {
				return // nothing left
			}
			if err := w.spool.commit(); err != nil { // a file with no records left
				w.log.Error("call-log spill replay failed", "err", err)
				return
			}
			continue
		}
		st := FlushStats{Records: len(recs), Replay: true}
		n, err := w.insert(ctx, recs, true)
		if err != nil && isDataError(err) {
			n, err = w.storeHalves(ctx, recs, err, true)
		}
		if err != nil {
			// Read these records again next time; those already stored
			// will be skipped.
			st.Err = err
			w.markDown(err)
			if rerr := w.spool.rewind(); rerr != nil {
				w.log.Error("call-log spill replay failed", "err", rerr)
			}
			w.report(st, start)
			return
		}
		st.Inserted = n
		w.markUp()
		w.replayed.Add(int64(len(recs)))
		if err := w.spool.commit(); err != nil {
			w.log.Error("call-log spill replay failed", "err", err)
		}
		w.report(st, start)
	}
}

// normalizeSpilled normalizes records read back from the spill file (Write
// normalized them already, unless an older version or a person wrote the
// file) and dead-letters the ones that cannot be stored.
func (w *Writer) normalizeSpilled(recs []Record) []Record {
	ok := recs[:0]
	for _, r := range recs {
		if err := normalize(&r); err != nil {
			w.deadLetter([]Record{r}, err)
			continue
		}
		ok = append(ok, r)
	}
	return ok
}

func (w *Writer) spillRecords(recs []Record, sync bool, st *FlushStats) {
	if err := w.spool.append(recs, sync); err != nil {
		w.lost.Add(int64(len(recs)))
		w.log.Error("call-log records lost: PostgreSQL and the spill file both failed",
			"records", len(recs), "err", err)
		return
	}
	w.spilled.Add(int64(len(recs)))
	if st != nil {
		st.Spilled += len(recs)
	}
}

func (w *Writer) deadLetter(recs []Record, cause error) {
	if err := w.spool.deadLetter(recs); err != nil {
		w.lost.Add(int64(len(recs)))
		w.log.Error("call-log records lost: refused and the dead-letter file failed",
			"records", len(recs), "cause", cause, "err", err)
		return
	}
	w.deadLettered.Add(int64(len(recs)))
	w.log.Error("call-log records refused, kept in the dead-letter file",
		"records", len(recs), "request_id", recs[0].RequestID, "err", cause)
}

// isDown reports whether PostgreSQL failed recently enough that batches
// should go straight to the spill file.
func (w *Writer) isDown() bool {
	w.stateMu.Lock()
	defer w.stateMu.Unlock()
	return time.Now().Before(w.downUntil)
}

func (w *Writer) markDown(err error) {
	w.stateMu.Lock()
	defer w.stateMu.Unlock()
	if !w.down {
		w.log.Warn("call-log store unavailable, spilling to disk", "err", err, "spill_dir", w.opts.SpillDir)
	}
	w.down = true
	w.downUntil = time.Now().Add(w.backoff)
	w.backoff = min(w.backoff*2, w.opts.RetryMax)
}

func (w *Writer) markUp() {
	w.stateMu.Lock()
	defer w.stateMu.Unlock()
	if w.down {
		w.log.Info("call-log store available again, replaying spill", "spill_bytes", w.SpillBytes())
	}
	w.down = false
	w.downUntil = time.Time{}
	w.backoff = w.opts.RetryMin
}

func (w *Writer) report(st FlushStats, start time.Time) {
	if w.opts.OnFlush == nil {
		return
	}
	st.Depth = w.Depth()
	st.SpillBytes = w.SpillBytes()
	st.Duration = time.Since(start)
	w.opts.OnFlush(st)
}

// isDataError reports whether PostgreSQL refused the batch for what is in it
// (data exception, constraint violation, program limit) rather than for
// being unavailable; retrying such a batch unchanged would fail forever.
func isDataError(err error) bool {
	var pqErr *pq.Error
	if !errors.As(err, &pqErr) {
		return false
	}
	switch pqErr.Code.Class() {
	case "22", "23", "54":
		return true
	}
	return false
}

// String makes FlushStats readable in logs.
func (s FlushStats) String() string {
	return fmt.Sprintf("records=%d inserted=%d spilled=%d replay=%t depth=%d spill_bytes=%d took=%s err=%v",
		s.Records, s.Inserted, s.Spilled, s.Replay, s.Depth, s.SpillBytes, s.Duration, s.Err)
}
