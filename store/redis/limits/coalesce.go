package limits

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// The limit scripts of concurrent requests share Redis round trips.
//
// One caller at a time is the sender: it takes every call waiting, sends
// them as one pipeline and answers each. Calls that arrive while a
// pipeline is out wait for the next one; when the sender is done it hands
// the role to the first of them that waits for an answer, so no goroutine
// is started for it and none idles between requests.
//
// A settlement waits for nobody: the request that made it has been
// answered. It rides the next pipeline a check sends, or, when no check
// comes, goes alone at most settleLinger later (a timer's goroutine sends
// it). So a request costs at most one round trip of its own (its check),
// and fewer when requests overlap. Flush waits until every settlement
// queued before it is in Redis; Usage flushes first, so what the console
// reads includes them.

// settleLinger is how long a settlement waits for a check to share a
// round trip with.
const settleLinger = 2 * time.Millisecond

// maxBatch caps the calls in one pipeline; more wait for the next one.
const maxBatch = 256

// call is one script call waiting for a pipeline.
type call struct {
	args []any // "evalsha", sha, nkeys, keys..., args...
	src  any   // the script, for EVAL when Redis lacks it

	// A waited-for call is answered on done. A settlement has after
	// instead, run by the sender with the reply.
	done  chan struct{}
	after func(v []any, err error)

	v   []any
	err error

	// Guarded by coalescer.mu.
	lead      bool // this call's waiter is the sender now
	abandoned bool // its waiter gave up: skip it if not yet sent
}

// coalescer gathers the calls of one Limiter.
type coalescer struct {
	rdb      redis.UniversalClient
	ctxAware bool
	timeout  time.Duration

	mu      sync.Mutex
	pending []*call
	sending bool        // a sender holds the role
	timer   *time.Timer // armed while only settlements wait and nobody sends
	spare   []*call     // the last batch's slice, reused
}

func newCoalescer(rdb redis.UniversalClient, ctxAware bool, timeout time.Duration) *coalescer {
	return &coalescer{rdb: rdb, ctxAware: ctxAware, timeout: timeout}
}

var callPool = sync.Pool{New: func() any { return &call{done: make(chan struct{}, 1)} }}

// do sends a script call with the next pipeline and returns its reply. It
// gives up (ctx.Err()) when ctx ends first; a call already sent may still
// run in Redis then, as a timed-out single call may.
func (c *coalescer) do(ctx context.Context, s *script, keys, args []any) ([]any, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	cl := callPool.Get().(*call)
	cl.args = buildArgs(cl.args[:0], s, keys, args)
	cl.src = nil
	if s != nil {
		cl.src = s.src
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
				go c.send()
			}
		}
		select {
		case <-cl.done:
			c.mu.Lock()
			lead, cl.lead = cl.lead, false
			c.mu.Unlock()
			if lead { // handed the sender's role, not answered yet
				continue
			}
			v, err := cl.v, cl.err
			cl.v, cl.err = nil, nil
			callPool.Put(cl)
			return v, err
		case <-ctx.Done():
			c.mu.Lock()
			cl.abandoned = true
			lead, cl.lead = cl.lead, false
			c.mu.Unlock()
			if lead { // handed the role just now: pass it on
				go c.send()
			}
			return nil, ctx.Err() // cl is not reused: the sender may still answer it
		}
	}
}

// later queues a settlement; after runs with its reply once it is sent.
func (c *coalescer) later(s *script, keys, args []any, after func(v []any, err error)) {
	cl := &call{args: buildArgs(make([]any, 0, 3+len(keys)+len(args)), s, keys, args), src: s.src, after: after}
	c.mu.Lock()
	c.pending = append(c.pending, cl)
	if !c.sending && c.timer == nil {
		c.timer = time.AfterFunc(settleLinger, c.lingered)
	}
	c.mu.Unlock()
}

// lingered sends the settlements no check came to carry.
func (c *coalescer) lingered() {
	c.mu.Lock()
	c.timer = nil
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
	// A call with no command: it is answered after everything before it.
	_, err := c.do(ctx, nil, nil, nil)
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
	if c.timer != nil {
		c.timer.Stop()
		c.timer = nil
	}
	c.mu.Unlock()

	c.exec(batch)
	// Settlements' replies first, while the role is held: a Flush that
	// finds nobody sending finds them applied (or kept for the replay).
	for _, cl := range batch {
		if cl.after != nil {
			cl.after(cl.v, cl.err)
		}
	}

	c.mu.Lock()
	var next *call
	for _, cl := range c.pending {
		if cl.after == nil && !cl.abandoned {
			next = cl
			break
		}
	}
	switch {
	case next != nil: // a waiter takes the role and sends what is pending then
		next.lead = true
	case len(c.pending) > 0: // only settlements: they linger for a check
		c.sending = false
		c.timer = time.AfterFunc(settleLinger, c.lingered)
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

// answer wakes the waiters of a sent batch.
func (c *coalescer) answer(batch []*call) {
	for i, cl := range batch {
		batch[i] = nil
		if cl.after == nil {
			cl.done <- struct{}{}
		}
	}
}

// exec runs the batch's commands in one round trip (a second one for
// scripts Redis did not have) and stores each reply in its call.
func (c *coalescer) exec(batch []*call) {
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	cmds := make([]*redis.Cmd, len(batch))
	real := 0
	for i, cl := range batch {
		if len(cl.args) > 0 {
			cmds[i] = redis.NewCmd(ctx, cl.args...)
			real++
		}
	}
	switch {
	case real == 0:
	case real == 1:
		for _, cmd := range cmds {
			if cmd != nil {
				_ = c.rdb.Process(ctx, cmd)
			}
		}
	default:
		pipe := c.rdb.Pipeline()
		for _, cmd := range cmds {
			if cmd != nil {
				_ = pipe.Process(ctx, cmd)
			}
		}
		_, _ = pipe.Exec(ctx)
	}
	// A restarted or new node lacks the scripts: send those calls whole.
	var retry []int
	for i, cmd := range cmds {
		if cmd != nil && noScript(cmd.Err()) {
			retry = append(retry, i)
		}
	}
	if len(retry) == 1 {
		i := retry[0]
		a := batch[i].args
		a[0], a[1] = "eval", batch[i].src
		cmds[i] = redis.NewCmd(ctx, a...)
		_ = c.rdb.Process(ctx, cmds[i])
	} else if len(retry) > 1 {
		pipe := c.rdb.Pipeline()
		for _, i := range retry {
			a := batch[i].args
			a[0], a[1] = "eval", batch[i].src
			cmds[i] = redis.NewCmd(ctx, a...)
			_ = pipe.Process(ctx, cmds[i])
		}
		_, _ = pipe.Exec(ctx)
	}
	for i, cl := range batch {
		if cmds[i] == nil {
			cl.v, cl.err = nil, nil
			continue
		}
		cl.v, cl.err = cmds[i].Slice()
	}
}

func noScript(err error) bool {
	return err != nil && strings.HasPrefix(err.Error(), "NOSCRIPT ")
}

// buildArgs lays out an EVALSHA call; a nil script is Flush's marker,
// which sends nothing.
func buildArgs(a []any, s *script, keys, args []any) []any {
	if s == nil {
		return a[:0]
	}
	a = append(a, "evalsha", s.sha, len(keys))
	a = append(a, keys...)
	return append(a, args...)
}
