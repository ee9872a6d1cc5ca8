// Package queue holds the requests of one instance that wait for capacity,
// in three bounded queues — interactive, normal, batch — and lets them in
// 10:3:1 (protection: "Priority classes").
//
// A request waits when this instance is at its in-flight cap
// (SWITCHYARD_MAX_INFLIGHT, Admit) or when every deployment its plan may
// use is at its max_concurrency or max_inflight_tokens (Wait). One
// dispatcher goroutine hands out capacity: whenever capacity may have freed
// it runs a pass, picking the next class by smooth weighted round-robin over
// the classes that have a waiter who could be served, and letting that
// class's oldest such waiter try. A class gets 10, 3 or 1 turns in every
// 14 while all three wait, so batch never starves and interactive never
// waits behind more than one batch request in a row (at most 4 of any 14
// turns go to the others).
//
// Capacity frees in two ways. A slot released on this instance wakes the
// dispatcher at once (Released). A slot released on another instance is
// seen by re-polling: while anyone waits for a deployment, the dispatcher
// runs a pass every Poll (default 10 ms) — each a few Lua calls on the
// shared counters, at most one refusal per full deployment per pass,
// because a pass remembers what it found full and skips the waiters who
// need only that. Polling rather than a pub/sub nudge: it needs no extra
// connection per instance, cannot miss a message, and costs a bounded few
// hundred round trips a second per busy deployment while (and only while)
// requests wait, against LLM service times of seconds. So that instances
// share a contended deployment fairly, a release that another instance is
// also waiting for (loadcount reports it) does not wake the local waiters
// first: every instance's waiters then race at their next poll.
//
// A full interactive queue sheds the youngest batch waiter (else the
// youngest normal one) to make room; a full normal or batch queue refuses
// at once. A waiter leaves when it is served, when its context ends, or at
// its deadline; every wait selects on a timer and the context.
package queue

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"switchyard/routing/config"
)

// Class is a priority class as an index.
type Class int

// The classes, highest first.
const (
	Interactive Class = iota
	Normal
	Batch
	classes = 3
)

// Weights are the classes' shares of the turns: 10:3:1.
var Weights = [classes]int{10, 3, 1}

// ClassOf maps a caller's priority class (unknown: normal).
func ClassOf(c config.PriorityClass) Class {
	switch c {
	case config.ClassInteractive:
		return Interactive
	case config.ClassBatch:
		return Batch
	}
	return Normal
}

func (c Class) String() string {
	switch c {
	case Interactive:
		return string(config.ClassInteractive)
	case Batch:
		return string(config.ClassBatch)
	}
	return string(config.ClassNormal)
}

// InstanceKey is the key of the instance's own in-flight cap.
const InstanceKey int64 = -1

// Defaults of Options.
const (
	DefaultInteractive = 256
	DefaultNormal      = 512
	DefaultBatch       = 1024
	DefaultPoll        = 10 * time.Millisecond
)

// Options configure a Queue.
type Options struct {
	// Bounds are the most waiters per class (index by Class); a negative
	// bound means no queue (refuse at once), 0 the default.
	Bounds [classes]int
	// InstanceCap is this instance's in-flight cap (0: unlimited).
	InstanceCap int
	// Poll is the re-poll period of shared capacity while requests wait.
	Poll time.Duration
	// Observer is told of every dequeue and refusal (metrics); may be nil.
	Observer Observer
}

// Observer watches a queue.
type Observer interface {
	// Dequeued: a waiter of class c got its capacity after waiting wait.
	Dequeued(c Class, wait time.Duration)
	// Refused: a waiter of class c was refused (queue full), shed, or
	// reached its deadline still waiting (expired).
	Refused(c Class, why Why)
}

// Why a waiter left without capacity.
type Why string

// Reasons for leaving.
const (
	WhyFull    Why = "full"
	WhyShed    Why = "shed"
	WhyExpired Why = "expired"
)

// Refusal is the error of a request its queue refused or shed.
type Refusal struct {
	Class Class
	Bound int  // the bound of the queue that was full
	Shed  bool // shed from its queue to make room for an interactive request
}

func (r *Refusal) Error() string {
	if r.Shed {
		return "queue: " + r.Class.String() + " request shed for an interactive request"
	}
	return "queue: the " + r.Class.String() + " queue is full (" + strconv.Itoa(r.Bound) + ")"
}

// ErrExpired is returned when the deadline passed while waiting.
var ErrExpired = errors.New("queue: deadline passed while waiting for capacity")

// Need is one capacity a waiter can use: a key (a deployment id, or
// InstanceKey) and the tokens it would hold there.
type Need struct {
	Key    int64
	Tokens int64
}

// TryFunc attempts to take capacity for a waiter, without waiting. It
// records what it found full in the pass (Pass.Full) and returns the
// release of what it took.
type TryFunc func(p *Pass) (release func(), ok bool)

// Queue is one instance's three queues. Safe for concurrent use.
type Queue struct {
	opts   Options
	bounds [classes]int

	mu      sync.Mutex
	lists   [classes]list
	credit  [classes]int  // smooth weighted round-robin state
	grants  int64         // waiters let in so far
	keys    map[int64]int // waiters per key
	polled  int           // waiters needing a key other than InstanceKey
	waiting atomic.Int64  // all waiters (the lock-free fast-path check)
	depth   [classes]atomic.Int64

	inflight atomic.Int64 // instance slots held

	kick chan struct{}
	stop chan struct{}
	done chan struct{}
	once sync.Once
}

// New starts a queue's dispatcher; Close stops it.
func New(o Options) *Queue {
	if o.Poll <= 0 {
		o.Poll = DefaultPoll
	}
	q := &Queue{opts: o, keys: map[int64]int{}, kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	for c, def := range [classes]int{DefaultInteractive, DefaultNormal, DefaultBatch} {
		switch b := o.Bounds[c]; {
		case b == 0:
			q.bounds[c] = def
		case b < 0:
			q.bounds[c] = 0
		default:
			q.bounds[c] = b
		}
	}
	go q.dispatch()
	return q
}

// Close stops the dispatcher. Waiters still queued wait until their
// deadline or context; nothing new is handed out.
func (q *Queue) Close() {
	q.once.Do(func() {
		close(q.stop)
		<-q.done
	})
}

// Bound is the configured bound of class c's queue.
func (q *Queue) Bound(c Class) int { return q.bounds[c] }

// Queues reports whether requests of class c wait at capacity; a class
// configured without a queue (bound 0) is refused at once, as before there
// were queues.
func (q *Queue) Queues(c Class) bool { return q.bounds[c] > 0 }

// InstanceCap is this instance's in-flight cap (0: unlimited).
func (q *Queue) InstanceCap() int { return q.opts.InstanceCap }

// Depth is the number of waiters of class c now.
func (q *Queue) Depth(c Class) int { return int(q.depth[c].Load()) }

// InFlight is the number of instance slots held (every admitted request
// still in flight).
func (q *Queue) InFlight() int { return int(q.inflight.Load()) }

// Busy reports whether requests of this instance are waiting for key: a
// newcomer then queues behind them instead of taking a freed slot first.
// Lock-free while nobody waits.
func (q *Queue) Busy(key int64) bool {
	if q == nil || q.waiting.Load() == 0 {
		return false
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.keys[key] > 0
}

// Released tells the queue that capacity of key was released on this
// instance. othersWaiting: another instance waits for it too, so it is left
// to every instance's next poll rather than handed to a local waiter first.
func (q *Queue) Released(key int64, othersWaiting bool) {
	if q == nil || othersWaiting || q.waiting.Load() == 0 {
		return
	}
	q.poke()
}

func (q *Queue) poke() {
	select {
	case q.kick <- struct{}{}:
	default:
	}
}

func (q *Queue) takeInstance() bool {
	limit := int64(q.opts.InstanceCap)
	for {
		n := q.inflight.Load()
		if limit > 0 && n >= limit {
			return false
		}
		if q.inflight.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

func (q *Queue) instanceRelease() func() {
	var done atomic.Bool
	return func() {
		if done.CompareAndSwap(false, true) {
			q.inflight.Add(-1)
			q.Released(InstanceKey, false)
		}
	}
}

// Waited is what a request spent in a queue.
type Waited struct {
	Queued bool          // it went through the queue at all
	For    time.Duration // how long it waited
	// Behind counts the requests this queue let in while it waited: its
	// wait in turns, which the 10:3:1 order bounds (a machine that stalls
	// lengthens For, not Behind).
	Behind int64
}

// Admit takes one of this instance's in-flight slots for a request of class
// c, waiting in the class's queue while the instance is at its cap (until
// deadline or ctx ends). release must be called when the request ends; it
// is idempotent.
func (q *Queue) Admit(ctx context.Context, c Class, deadline time.Time) (release func(), waited Waited, err error) {
	if !q.Busy(InstanceKey) && q.takeInstance() {
		return q.instanceRelease(), Waited{}, nil
	}
	try := func(p *Pass) (func(), bool) {
		if !p.Fits(InstanceKey, 0) {
			return nil, false
		}
		if q.takeInstance() {
			return q.instanceRelease(), true
		}
		p.Full(InstanceKey, true, 0)
		return nil, false
	}
	return q.Wait(ctx, c, deadline, []Need{{Key: InstanceKey}}, try)
}

// Wait queues a request of class c until try, called by the dispatcher in
// the request's turn, takes capacity; needs lists what it could use (a
// pass skips the waiter once all of them are known full). It returns the
// release try returned and what it spent queued, a *Refusal when the queue
// is full or the request was shed, ErrExpired at deadline, or ctx's error.
func (q *Queue) Wait(ctx context.Context, c Class, deadline time.Time, needs []Need, try TryFunc) (release func(), waited Waited, err error) {
	if err := ctx.Err(); err != nil {
		return nil, Waited{}, err
	}
	w := &waiter{class: c, needs: needs, try: try, ready: make(chan struct{}), at: time.Now()}
	q.mu.Lock()
	if refused := q.enqueue(w); refused != nil {
		q.mu.Unlock()
		q.refused(c, WhyFull)
		return nil, Waited{}, refused
	}
	w.grantsAt = q.grants
	q.mu.Unlock()
	q.poke()

	left := time.Until(deadline)
	if deadline.IsZero() {
		left = DefaultMaxWait
	}
	timer := time.NewTimer(max(left, 0))
	defer timer.Stop()
	var gone error
	select {
	case <-w.ready:
	case <-ctx.Done():
		gone = ctx.Err()
	case <-timer.C:
		gone = ErrExpired
	}
	waited = Waited{Queued: true, For: time.Since(w.at)}
	if gone != nil {
		q.mu.Lock()
		switch w.state {
		case stateWaiting:
			q.remove(w)
			w.state = stateGone
		case stateTrying:
			w.state = stateGone // the dispatcher gives back what it takes
		}
		st := w.state
		waited.Behind = q.grants - w.grantsAt
		q.mu.Unlock()
		if st == stateGone {
			if gone == ErrExpired {
				q.refused(c, WhyExpired)
			}
			return nil, waited, gone
		}
		<-w.ready // granted or shed meanwhile: take that outcome
	}
	waited.Behind = w.behind
	if w.err != nil {
		return nil, waited, w.err
	}
	return w.release, waited, nil
}

// DefaultMaxWait bounds a wait without a deadline.
const DefaultMaxWait = 10 * time.Minute

func (q *Queue) refused(c Class, why Why) {
	if q.opts.Observer != nil {
		q.opts.Observer.Refused(c, why)
	}
}

// enqueue adds w to its class's queue (q.mu held), shedding a batch (else
// normal) waiter for an interactive one when the interactive queue is full.
func (q *Queue) enqueue(w *waiter) *Refusal {
	c := w.class
	if q.lists[c].n >= q.bounds[c] {
		if c != Interactive || !q.shedFor() {
			return &Refusal{Class: c, Bound: q.bounds[c]}
		}
	}
	q.lists[c].push(w)
	q.depth[c].Add(1)
	q.waiting.Add(1)
	for _, n := range w.needs {
		q.keys[n.Key]++
		if n.Key != InstanceKey {
			w.polled = true
		}
	}
	if w.polled {
		q.polled++
	}
	return nil
}

// shedFor evicts the youngest waiting batch, else normal, waiter; false
// when there is none to shed.
func (q *Queue) shedFor() bool {
	for _, c := range []Class{Batch, Normal} {
		for v := q.lists[c].tail; v != nil; v = v.prev {
			if v.state != stateWaiting {
				continue
			}
			q.remove(v)
			v.state = stateShed
			v.err = &Refusal{Class: c, Bound: q.bounds[Interactive], Shed: true}
			v.behind = q.grants - v.grantsAt
			close(v.ready)
			q.refused(c, WhyShed)
			return true
		}
	}
	return false
}

// remove takes w out of its list (q.mu held).
func (q *Queue) remove(w *waiter) {
	if !w.listed {
		return
	}
	q.lists[w.class].unlink(w)
	q.depth[w.class].Add(-1)
	q.waiting.Add(-1)
	for _, n := range w.needs {
		if q.keys[n.Key]--; q.keys[n.Key] <= 0 {
			delete(q.keys, n.Key)
		}
	}
	if w.polled {
		q.polled--
	}
}

// dispatch is the dispatcher goroutine: a pass on every kick, and every
// Poll while someone waits for shared capacity (no timer runs otherwise).
func (q *Queue) dispatch() {
	defer close(q.done)
	poll := time.NewTimer(q.opts.Poll)
	poll.Stop()
	armed := false
	p := &Pass{full: map[int64]mark{}}
	for {
		var tick <-chan time.Time
		if armed {
			tick = poll.C
		}
		select {
		case <-q.stop:
			return
		case <-q.kick:
		case <-tick:
			armed = false
		}
		q.pass(p)
		q.mu.Lock()
		again := q.polled > 0
		q.mu.Unlock()
		if again && !armed {
			poll.Reset(q.opts.Poll)
			armed = true
		}
	}
}

// pass lets waiters try, in weighted class order, until none is left who
// could be served by what the pass has not found full.
func (q *Queue) pass(p *Pass) {
	clear(p.full)
	for {
		q.mu.Lock()
		w, undo := q.next(p)
		if w == nil {
			q.mu.Unlock()
			return
		}
		w.state = stateTrying
		q.mu.Unlock()

		release, ok := w.try(p)

		q.mu.Lock()
		gone := w.state == stateGone
		switch {
		case ok:
			q.remove(w)
			if !gone {
				w.state, w.release, w.behind = stateGranted, release, q.grants-w.grantsAt
				q.grants++
				close(w.ready)
			}
		default:
			q.credit = undo // the turn was not used
			if gone {
				q.remove(w)
			} else {
				w.state = stateWaiting
			}
		}
		q.mu.Unlock()
		if ok && gone && release != nil {
			release() // the waiter left while we took its capacity
		}
		if ok && !gone && q.opts.Observer != nil {
			q.opts.Observer.Dequeued(w.class, time.Since(w.at))
		}
	}
}

// next picks the next waiter by smooth weighted round-robin over the classes
// that have a waiter the pass can still serve (q.mu held); undo is the
// credit before the pick, restored when the waiter's try fails.
func (q *Queue) next(p *Pass) (*waiter, [classes]int) {
	undo := q.credit
	var cand [classes]*waiter
	total := 0
	for c := range Class(classes) {
		for w := q.lists[c].head; w != nil; w = w.next {
			if w.state == stateWaiting && p.fitsAny(w) {
				cand[c] = w
				total += Weights[c]
				break
			}
		}
	}
	if total == 0 {
		return nil, undo
	}
	best := Class(-1)
	for c := range Class(classes) {
		if cand[c] == nil {
			continue
		}
		q.credit[c] += Weights[c]
		if best < 0 || q.credit[c] > q.credit[best] {
			best = c
		}
	}
	q.credit[best] -= total
	return cand[best], undo
}

// Pass is what one dispatch pass found full, so that waiters needing only
// that are skipped without another round trip.
type Pass struct {
	full map[int64]mark
}

// mark is what a key refused in this pass: every slot, or requests of at
// least so many tokens (0: none).
type mark struct {
	slots  bool
	tokens int64
}

// Fits reports whether key may still admit a request holding tokens, as far
// as this pass knows.
func (p *Pass) Fits(key int64, tokens int64) bool {
	m, ok := p.full[key]
	return !ok || (!m.slots && (m.tokens == 0 || tokens < m.tokens))
}

// Full records that key refused a request: by its slots, or (slots false)
// because its tokens did not fit (a smaller request still may).
func (p *Pass) Full(key int64, slots bool, tokens int64) {
	m := p.full[key]
	if slots {
		m.slots = true
	} else if m.tokens == 0 || tokens < m.tokens {
		m.tokens = max(tokens, 1)
	}
	p.full[key] = m
}

func (p *Pass) fitsAny(w *waiter) bool {
	for _, n := range w.needs {
		if p.Fits(n.Key, n.Tokens) {
			return true
		}
	}
	return false
}

type state uint8

const (
	stateWaiting state = iota
	stateTrying        // the dispatcher is calling its try
	stateGranted
	stateShed
	stateGone // left (context, deadline) before it was served
)

type waiter struct {
	class   Class
	needs   []Need
	try     TryFunc
	at      time.Time
	ready   chan struct{} // closed when granted or shed
	state   state
	release func()
	err     error
	polled  bool // needs shared capacity (re-polled)
	// grantsAt is the queue's grants when it joined; behind, when it
	// left, how many were let in meanwhile.
	grantsAt, behind int64

	listed     bool
	prev, next *waiter
}

// list is a FIFO of waiters, oldest first.
type list struct {
	head, tail *waiter
	n          int
}

func (l *list) push(w *waiter) {
	w.prev, w.next, w.listed = l.tail, nil, true
	if l.tail != nil {
		l.tail.next = w
	} else {
		l.head = w
	}
	l.tail = w
	l.n++
}

func (l *list) unlink(w *waiter) {
	if w.prev != nil {
		w.prev.next = w.next
	} else {
		l.head = w.next
	}
	if w.next != nil {
		w.next.prev = w.prev
	} else {
		l.tail = w.prev
	}
	w.prev, w.next, w.listed = nil, nil, false
	l.n--
}
