package limits

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// The limit operations of concurrent requests share Redis round trips.
//
// One caller at a time is the sender: it takes every call waiting, sends
// them as one pipeline and answers each. Calls that arrive while a
// pipeline is out wait for the next one; when the sender is done it hands
// the role to the first of them that waits for an answer, so no goroutine
// is started for it and none idles between requests.
//
// In a pipeline, the calls of one caller (one hash tag, so one slot on a
// cluster) go as one run of limitScript, in queue order: a request's check
// and the previous request's settlement cost Redis one script call, and the
// client one command.
//
// A settlement waits for nobody: the request that made it has been
// answered. It rides the next pipeline a check sends, or, when no check
// comes, goes alone at most settleLinger later (a timer's goroutine sends
// it). So a request costs at most one round trip of its own (its check),
// and fewer when requests overlap. Flush waits until every settlement
// queued before it is in Redis; Usage flushes first, so what the console
// reads includes them.

// settleLinger is how long a settlement waits for a check, or other
// settlements, to share a round trip with. With leased slices most
// requests send no check, so settlements mostly travel together: at 200
// requests a second, four to a round trip. The spend other instances see
// lags by at most this (Usage and Flush send at once).
const settleLinger = 20 * time.Millisecond

// maxBatch caps the calls in one pipeline; more wait for the next one.
const maxBatch = 256

// maxRunOps caps the operations of one script run (a caller with more
// calls waiting gets more runs in the same pipeline), so that one run
// holds Redis for a bounded time.
const maxRunOps = 16

// Operations of limitScript, boxed once.
var (
	opCheck  any = "c"
	opPeek   any = "p"
	opLease  any = "l"
	opSettle any = "s"
)

// call is one limit operation waiting for a pipeline. Calls are pooled:
// their arguments are sent by pointer (go-redis writes an *int64 as the
// number), so a call costs no allocation once the pool is warm.
type call struct {
	op     any   // opCheck, opPeek, opLease, opSettle; nil is Flush's marker, which sends nothing
	caller int64 // the hash tag {c<caller>}: one caller's calls share a script run
	keys   []any // the operation's KEYS, boxed once (keySet.boxed)
	argv   [10]int64
	nargv  int

	reply [leaseReplyLen]int64 // the operation's part of the script's reply
	err   error

	// A waited-for call is answered on done, and gives up at timer. A
	// settlement (opSettle) has settle instead, applied by the sender with
	// its reply.
	done   chan struct{}
	timer  *time.Timer
	settle settlement

	// Guarded by coalescer.mu.
	lead      bool // this call's waiter is the sender now
	abandoned bool // its waiter gave up: skip it if not yet sent
}

// settlement is what the Limiter needs to apply a settlement's reply.
type settlement struct {
	k        keySet
	daily    bool
	monthTTL time.Duration
	delta    int64
	cost     int64
}

// replyLen is the length of the call's part of a script reply.
func (cl *call) replyLen() int {
	switch cl.op {
	case opSettle:
		return settleReplyLen
	case opLease:
		return leaseReplyLen
	}
	return checkReplyLen
}

// run is one limitScript command of a pipeline: calls [from, to) of the
// sorted batch.
type run struct {
	cmd      *redis.IntSliceCmd
	args     []any
	from, to int
}

// coalescer gathers the calls of one Limiter.
type coalescer struct {
	rdb      redis.UniversalClient
	ctxAware bool
	timeout  time.Duration
	settled  func(cl *call) // applies a settlement's reply (or error)
	bg       *background    // runs the sends no waiting caller makes

	mu      sync.Mutex
	pending []*call
	sending bool        // a sender holds the role
	linger  *time.Timer // runs lingered; made once, re-armed
	armed   bool        // linger is armed: only settlements wait and nobody sends
	spare   []*call     // the last batch's slice, reused

	// The sender's, reused from batch to batch.
	args []any
	runs []run
	cmds []redis.Cmder
	pipe redis.Pipeliner
}

func newCoalescer(rdb redis.UniversalClient, ctxAware bool, timeout time.Duration, settled func(*call), bg *background) *coalescer {
	return &coalescer{rdb: rdb, ctxAware: ctxAware, timeout: timeout, settled: settled, bg: bg}
}

var callPool = sync.Pool{New: func() any { return &call{done: make(chan struct{}, 1)} }}

// getCall returns a blank call from the pool.
func getCall() *call {
	return callPool.Get().(*call)
}

// putCall blanks cl and returns it to the pool.
func putCall(cl *call) {
	done, timer := cl.done, cl.timer
	*cl = call{done: done, timer: timer}
	callPool.Put(cl)
}

// do sends cl with the next pipeline and returns its reply. It gives up
// (ctx.Err(), or context.DeadlineExceeded after timeout when it is not 0)
// when ctx ends or the time is up first; a call already sent may still run
// in Redis then, as a timed-out single call may. cl is the coalescer's
// afterwards.
func (c *coalescer) do(ctx context.Context, cl *call, timeout time.Duration) ([leaseReplyLen]int64, error) {
	if err := ctx.Err(); err != nil {
		putCall(cl)
		return [leaseReplyLen]int64{}, err
	}
	var expired <-chan time.Time
	if timeout > 0 {
		if cl.timer == nil {
			cl.timer = time.NewTimer(timeout)
		} else {
			cl.timer.Reset(timeout)
		}
		expired = cl.timer.C
	}
	c.mu.Lock()
	c.pending = append(c.pending, cl)
	lead := !c.sending
	c.sending = true
	c.mu.Unlock()
	for {
		if lead {
			if c.ctxAware {
				c.send()
			} else {
				// A client that does not stop at the context's deadline
				// could hold this request on a hung socket: the pipeline
				// goes from a goroutine of its own, and this call waits
				// for its answer like any other.
				c.bg.run(c.send)
			}
		}
		var err error
		select {
		case <-cl.done:
			c.mu.Lock()
			lead, cl.lead = cl.lead, false
			c.mu.Unlock()
			if lead { // handed the sender's role, not answered yet
				continue
			}
			if cl.timer != nil {
				cl.timer.Stop()
			}
			reply, err := cl.reply, cl.err
			putCall(cl)
			return reply, err
		case <-ctx.Done():
			err = ctx.Err()
		case <-expired:
			err = context.DeadlineExceeded
		}
		c.mu.Lock()
		cl.abandoned = true
		lead, cl.lead = cl.lead, false
		c.mu.Unlock()
		if cl.timer != nil {
			cl.timer.Stop()
		}
		if lead { // handed the role just now: pass it on
			c.bg.run(c.send)
		}
		return [leaseReplyLen]int64{}, err // cl is not reused: the sender may still answer it
	}
}

// later queues a settlement; c.settled applies its reply once it is sent.
func (c *coalescer) later(cl *call) {
	c.mu.Lock()
	c.pending = append(c.pending, cl)
	if !c.sending && !c.armed {
		c.armLocked()
	}
	c.mu.Unlock()
}

// armLocked starts the linger: lingered runs settleLinger from now.
func (c *coalescer) armLocked() {
	c.armed = true
	if c.linger == nil {
		c.linger = time.AfterFunc(settleLinger, func() { c.bg.run(c.lingered) })
	} else {
		c.linger.Reset(settleLinger)
	}
}

// lingered sends the settlements no check came to carry. (A run the
// linger's Stop came too late for may send them early: no harm.)
func (c *coalescer) lingered() {
	c.mu.Lock()
	c.armed = false
	if c.sending || len(c.pending) == 0 {
		c.mu.Unlock()
		return
	}
	c.sending = true
	c.mu.Unlock()
	c.send()
}

// flush returns once every call queued before it has been sent and
// answered (or ctx ended).
func (c *coalescer) flush(ctx context.Context) error {
	c.mu.Lock()
	if len(c.pending) == 0 && !c.sending {
		c.mu.Unlock()
		return nil
	}
	c.mu.Unlock()
	// A call with no operation: it is answered after everything before it.
	_, err := c.do(ctx, getCall(), 0)
	return err
}

// send takes the waiting calls, sends them, answers them and passes the
// sender's role on. The caller holds the role.
func (c *coalescer) send() {
	c.mu.Lock()
	batch := c.spare[:0]
	n := 0
	for _, cl := range c.pending {
		if n == maxBatch {
			break
		}
		n++
		if !cl.abandoned {
			batch = append(batch, cl)
		}
	}
	rest := copy(c.pending, c.pending[n:])
	clear(c.pending[rest:])
	c.pending = c.pending[:rest]
	c.spare = nil
	if c.armed {
		c.linger.Stop()
		c.armed = false
	}
	c.mu.Unlock()

	c.exec(batch)
	// Settlements' replies first, while the role is held: a Flush that
	// finds nobody sending finds them applied (or kept for the replay).
	for _, cl := range batch {
		if cl.op == opSettle {
			c.settled(cl)
		}
	}

	c.mu.Lock()
	var next *call
	for _, cl := range c.pending {
		if cl.op != opSettle && !cl.abandoned {
			next = cl
			break
		}
	}
	switch {
	case next != nil: // a waiter takes the role and sends what is pending then
		next.lead = true
	case len(c.pending) > 0: // only settlements: they linger for a check
		c.sending = false
		c.armLocked()
	default:
		c.sending = false
	}
	c.mu.Unlock()
	c.answer(batch)
	c.mu.Lock()
	c.spare = batch[:0]
	c.mu.Unlock()
	if next != nil {
		next.done <- struct{}{}
	}
}

// answer wakes the waiters of a sent batch and returns its settlements to
// the pool.
func (c *coalescer) answer(batch []*call) {
	for i, cl := range batch {
		batch[i] = nil
		if cl.op == opSettle {
			putCall(cl)
		} else {
			cl.done <- struct{}{}
		}
	}
}

// exec runs the batch in one round trip (a second one for a script Redis
// did not have) and stores each call's reply in it. The batch is reordered:
// one caller's calls, in queue order, become one run of the script (several
// past maxRunOps); Flush's markers go last.
func (c *coalescer) exec(batch []*call) {
	slices.SortStableFunc(batch, func(a, b *call) int {
		if n := cmp.Compare(marker(a), marker(b)); n != 0 {
			return n
		}
		return cmp.Compare(a.caller, b.caller)
	})
	runs, args := c.runs[:0], c.args[:0]
	for from := 0; from < len(batch) && batch[from].op != nil; {
		to, nkeys, nargv := from, 0, 0
		for to < len(batch) && to-from < maxRunOps && batch[to].op != nil && batch[to].caller == batch[from].caller {
			nkeys += len(batch[to].keys)
			nargv += 1 + batch[to].nargv
			to++
		}
		// Grown once per run, so no append moves the run's arguments.
		args = slices.Grow(args, 3+nkeys+nargv)
		start := len(args)
		args = append(args, "evalsha", limitScript.sha, nkeys)
		for _, cl := range batch[from:to] {
			args = append(args, cl.keys...)
		}
		for _, cl := range batch[from:to] {
			args = append(args, cl.op)
			for i := range cl.nargv {
				args = append(args, &cl.argv[i])
			}
		}
		runs = append(runs, run{args: args[start:len(args):len(args)], from: from, to: to})
		from = to
	}
	if len(runs) > 0 {
		ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
		c.process(ctx, runs, false)
		// A restarted or new node lacks the script: send those runs whole.
		if slices.ContainsFunc(runs, func(r run) bool { return noScript(r.cmd.Err()) }) {
			c.process(ctx, runs, true)
		}
		cancel()
	}
	for _, r := range runs {
		distribute(batch[r.from:r.to], r.cmd)
	}
	clear(runs)
	clear(args)
	c.runs, c.args = runs[:0], args[:0]
}

// marker is 1 for Flush's marker, which sends nothing.
func marker(cl *call) int {
	if cl.op == nil {
		return 1
	}
	return 0
}

// process sends the runs' commands in one round trip; with retry, only
// those that met NOSCRIPT, as EVAL with the script's source.
func (c *coalescer) process(ctx context.Context, runs []run, retry bool) {
	cmds := c.cmds[:0]
	for i := range runs {
		r := &runs[i]
		if retry {
			if !noScript(r.cmd.Err()) {
				continue
			}
			r.args[0], r.args[1] = "eval", limitScript.src
		}
		r.cmd = redis.NewIntSliceCmd(ctx, r.args...)
		r.cmd.SetFirstKeyPos(3)
		cmds = append(cmds, r.cmd)
	}
	if len(cmds) == 1 { // the common case: no pipeline
		_ = c.rdb.Process(ctx, cmds[0])
	} else {
		if c.pipe == nil {
			c.pipe = c.rdb.Pipeline()
		}
		for _, cmd := range cmds {
			_ = c.pipe.Process(ctx, cmd)
		}
		_, _ = c.pipe.Exec(ctx)
	}
	clear(cmds)
	c.cmds = cmds[:0]
}

// distribute hands each call of a run its part of the run's reply.
func distribute(calls []*call, cmd *redis.IntSliceCmd) {
	v, err := cmd.Result()
	if err == nil {
		want := 0
		for _, cl := range calls {
			want += cl.replyLen()
		}
		if len(v) != want {
			err = fmt.Errorf("limits: script returned %d values for %d operations, want %d", len(v), len(calls), want)
		}
	}
	for _, cl := range calls {
		cl.reply, cl.err = [leaseReplyLen]int64{}, err
		if err == nil {
			n := copy(cl.reply[:], v[:cl.replyLen()])
			v = v[n:]
		}
	}
}

func noScript(err error) bool {
	return err != nil && strings.HasPrefix(err.Error(), "NOSCRIPT ")
}
