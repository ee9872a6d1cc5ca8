package calllog

import (
	"cmp"
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/lib/pq"

	"switchyard/routing/wire"
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

// copyStmt streams a batch into call_logs. COPY has no ON CONFLICT: it
// fails as a whole on a row already present, and the batch is then stored
// again without the rows already present (storeBatch).
var copyStmt = "COPY call_logs (" + columnList + ") FROM STDIN"

// storedStmt returns, of a batch's keys ($1: [{"i", "at", "request_id"}]),
// the positions of those already in call_logs.
const storedStmt = `SELECT k.i FROM json_to_recordset($1::json) AS k(i int, at timestamptz, request_id text COLLATE "C")
    WHERE EXISTS (SELECT FROM call_logs c WHERE c.at = k.at AND c.request_id = k.request_id)`

// insertBatch stores recs (already normalized) and returns how many were
// new; see storeBatch.
func insertBatch(ctx context.Context, db *sql.DB, recs []Record) (int, error) {
	return storeBatch(ctx, db, recs, false)
}

// storeBatch stores recs (already normalized) and returns how many rows
// were new. In one transaction it streams the rows into call_logs with COPY
// and adds them to the roll-ups with one statement (rollupStmt), so a batch
// is stored and counted whole or not at all.
//
// COPY has no ON CONFLICT: if a row is there already (a replay, a retry
// after an ambiguous commit, a record twice in the batch) it fails, and the
// batch is stored again in a new transaction that first looks up which of
// its rows are stored and leaves them out (and all but the first record of
// a key), so that a row is stored once and counted once. A replay (mayExist)
// starts there.
//
// It uses one connection of db, and no session state: it works through
// PgBouncer in transaction mode.
func storeBatch(ctx context.Context, db *sql.DB, recs []Record, mayExist bool) (int, error) {
	if len(recs) == 0 {
		return 0, nil
	}
	for i := range recs {
		// As normalize does: the keys must be the stored ones.
		recs[i].At = recs[i].At.Truncate(time.Microsecond).UTC()
	}
	// In key order, so that two writers storing some of the same rows (a
	// replay beside a live batch) wait for each other's rows in the same
	// order instead of deadlocking; stable, so the first record of a key
	// stays first.
	slices.SortStableFunc(recs, func(a, b Record) int {
		return cmp.Or(a.At.Compare(b.At), strings.Compare(a.RequestID, b.RequestID))
	})
	conn, err := db.Conn(ctx)
	if err != nil {
		return 0, fmt.Errorf("calllog: insert batch: %w", err)
	}
	defer conn.Close()
	bb := batchBufs.Get().(*batchBuf)
	defer bb.release()
	names := nameCacheOf(db)
	var n int
	err = conn.Raw(func(dc any) error {
		c, ok := dc.(driverConn)
		if !ok {
			return fmt.Errorf("the PostgreSQL driver (%T) is not lib/pq", dc)
		}
		var err error
		if !mayExist {
			if n, err = bb.store(ctx, c, recs, names, false); !errors.Is(err, errRowStored) {
				return err
			}
		}
		// Another writer may store one of the rows between the look-up and
		// the COPY (the same records replayed by two instances): look again.
		for try := 1; ; try++ {
			if n, err = bb.store(ctx, c, recs, names, true); !errors.Is(err, errRowStored) || try == 3 {
				return err
			}
		}
	})
	if err != nil {
		return 0, fmt.Errorf("calllog: insert batch: %w", err)
	}
	return n, nil
}

// errRowStored wraps COPY's unique violation (a row of the batch is
// stored) and a deadlock with a writer storing the same rows.
var errRowStored = errors.New("a row of the batch is stored already")

// driverConn is what storeBatch needs of lib/pq's connection.
type driverConn interface {
	driver.ConnBeginTx
	driver.ConnPrepareContext
	driver.ExecerContext
	driver.QueryerContext
}

// copyData is lib/pq's COPY statement's raw stream: the lines are sent as
// given, with a newline added.
type copyData interface {
	CopyData(ctx context.Context, line string) (driver.Result, error)
}

// batchBuf is one batch's work space, reused between batches.
type batchBuf struct {
	lines []byte // COPY lines, sent in chunks
	skip  []bool // records left out: stored already, or repeated
	seen  map[rowKey]struct{}
	ru    rollups
	args  [numParts]driver.NamedValue
}

var batchBufs = sync.Pool{New: func() any { return &batchBuf{seen: map[rowKey]struct{}{}, ru: newRollups()} }}

// copyChunk is how many bytes of lines go to lib/pq at a time: well below
// its 64 KiB buffer, which then rarely grows.
const copyChunk = 16 << 10

func (bb *batchBuf) release() {
	clear(bb.seen)
	bb.ru.reset()
	bb.lines, bb.skip = bb.lines[:0], bb.skip[:0]
	clear(bb.args[:])
	if cap(bb.lines) <= 4*copyChunk { // not after an unusual batch (or look-up) grew it
		batchBufs.Put(bb)
	}
}

type rowKey struct {
	atMicros  int64
	requestID string
}

// store runs one attempt at storing recs in a transaction of its own.
// With skipStored it first leaves out the records already in call_logs
// and repeated ones (the first of a key is the one stored).
func (bb *batchBuf) store(ctx context.Context, c driverConn, recs []Record, names *nameCache, skipStored bool) (_ int, err error) {
	bb.ru.reset()
	bb.skip = slices.Grow(bb.skip[:0], len(recs))[:len(recs)]
	clear(bb.skip)
	tx, err := c.BeginTx(ctx, driver.TxOptions{})
	if err != nil {
		return 0, fmt.Errorf("begin: %w", err)
	}
	defer func() {
		if err != nil {
			_ = tx.Rollback()
		}
	}()
	n := len(recs)
	if skipStored {
		if n, err = bb.skipStored(ctx, c, recs); err != nil {
			return 0, fmt.Errorf("look up stored rows: %w", err)
		}
	}
	if n > 0 {
		if err = bb.copyRows(ctx, c, recs); err != nil {
			return 0, fmt.Errorf("copy: %w", err)
		}
		if err = bb.ru.store(ctx, c, names, &bb.args); err != nil {
			return 0, fmt.Errorf("update roll-ups: %w", err)
		}
	}
	if err = tx.Commit(); err != nil {
		return 0, fmt.Errorf("commit: %w", err)
	}
	bb.ru.committed(names)
	return n, nil
}

// skipStored marks the records to leave out and returns how many remain.
func (bb *batchBuf) skipStored(ctx context.Context, c driverConn, recs []Record) (int, error) {
	clear(bb.seen)
	keys := append(bb.lines[:0], '[')
	for i := range recs {
		r := &recs[i]
		k := rowKey{r.At.UnixMicro(), r.RequestID}
		if _, dup := bb.seen[k]; dup {
			bb.skip[i] = true
			continue
		}
		bb.seen[k] = struct{}{}
		if len(keys) > 1 {
			keys = append(keys, ',')
		}
		keys = append(keys, `{"i":`...)
		keys = strconv.AppendInt(keys, int64(i), 10)
		keys = append(keys, `,"at":"`...)
		keys = appendCopyTime(keys, r.At)
		keys = append(keys, `","request_id":`...)
		keys = wire.AppendString(keys, r.RequestID)
		keys = append(keys, '}')
	}
	keys = append(keys, ']')
	bb.lines = keys[:0]
	bb.args[0] = driver.NamedValue{Ordinal: 1, Value: keys}
	rows, err := c.QueryContext(ctx, storedStmt, bb.args[:1])
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	dest := make([]driver.Value, 1)
	for {
		if err := rows.Next(dest); err == io.EOF {
			break
		} else if err != nil {
			return 0, err
		}
		i, ok := dest[0].(int64)
		if !ok || i < 0 || int(i) >= len(recs) {
			return 0, fmt.Errorf("stored rows: unexpected position %v", dest[0])
		}
		bb.skip[i] = true
	}
	n := 0
	for _, s := range bb.skip {
		if !s {
			n++
		}
	}
	return n, nil
}

// copyRows streams the records not skipped into call_logs and adds them
// to the roll-ups.
func (bb *batchBuf) copyRows(ctx context.Context, c driverConn, recs []Record) error {
	st, err := c.PrepareContext(ctx, copyStmt)
	if err != nil {
		return err
	}
	defer st.Close()
	cd, ok := st.(copyData)
	if !ok {
		return fmt.Errorf("the PostgreSQL driver's COPY statement (%T) cannot stream raw lines", st)
	}
	send := func() error {
		if len(bb.lines) == 0 {
			return nil
		}
		// CopyData adds the last newline. It gets no ctx, which would cost a
		// goroutine per call: the transaction's watches it (BeginTx).
		chunk := bb.lines[:len(bb.lines)-1]
		_, err := cd.CopyData(context.Background(), string(chunk))
		bb.lines = bb.lines[:0]
		return err
	}
	for i := range recs {
		if bb.skip[i] {
			continue
		}
		bb.lines = appendCopyLine(bb.lines, &recs[i])
		bb.ru.add(&recs[i])
		if len(bb.lines) >= copyChunk {
			if err = send(); err != nil {
				break
			}
		}
	}
	if err == nil {
		if err = send(); err == nil {
			_, err = st.Exec(nil) // lib/pq's COPY statement ends its stream on Exec(nil)
		}
	}
	var pqErr *pq.Error
	if errors.As(err, &pqErr) && (pqErr.Code == "23505" || pqErr.Code == "40P01") {
		// The primary key (call_logs has no other unique index), or a
		// deadlock with another writer storing some of the same rows:
		// either way the batch goes again without the rows stored by now.
		return fmt.Errorf("%w: %w", errRowStored, err)
	}
	return err
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
