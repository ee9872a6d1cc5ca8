package queue

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// slots is a fake capacity of n slots under one key.
type slots struct {
	key   int64
	n     atomic.Int64
	cap   int64
	tries atomic.Int64
	q     *Queue
}

func (s *slots) try(c Class) TryFunc {
	return func(p *Pass) (func(), bool) {
		if !p.Fits(s.key, 0) {
			return nil, false
		}
		s.tries.Add(1)
		for {
			v := s.n.Load()
			if v >= s.cap {
				p.Full(s.key, true, 0)
				return nil, false
			}
			if s.n.CompareAndSwap(v, v+1) {
				return s.release, true
			}
		}
	}
}

func (s *slots) release() {
	s.n.Add(-1)
	s.q.Released(s.key, false)
}

type recorder struct {
	mu       sync.Mutex
	dequeued []Class
	refused  map[Why]int
}

func (r *recorder) Dequeued(c Class, _ time.Duration) {
	r.mu.Lock()
	r.dequeued = append(r.dequeued, c)
	r.mu.Unlock()
}

func (r *recorder) Refused(_ Class, why Why) {
	r.mu.Lock()
	if r.refused == nil {
		r.refused = map[Why]int{}
	}
	r.refused[why]++
	r.mu.Unlock()
}

func (r *recorder) order() []Class {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Class(nil), r.dequeued...)
}

func newQueue(t *testing.T, o Options) *Queue {
	t.Helper()
	q := New(o)
	t.Cleanup(q.Close)
	return q
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestWeightedOrder: with all three queues long, one slot handed out at a
// time goes 10:3:1, in every window of 14 turns, not only on average.
func TestWeightedOrder(t *testing.T) {
	rec := &recorder{}
	q := newQueue(t, Options{Observer: rec, Poll: time.Hour})
	s := &slots{key: 7, cap: 1, q: q}
	s.n.Store(1) // held: everyone queues
	const per = 60
	var wg sync.WaitGroup
	type grant struct {
		release func()
		class   Class
		behind  int64
	}
	granted := make(chan grant, 3*per)
	for c := range Class(classes) {
		for range per {
			wg.Add(1)
			go func() {
				defer wg.Done()
				rel, w, err := q.Wait(context.Background(), c, time.Now().Add(time.Minute), []Need{{Key: 7}}, s.try(c))
				if err != nil {
					t.Error(err)
					return
				}
				granted <- grant{rel, c, w.Behind}
			}()
		}
	}
	waitFor(t, "every waiter queued", func() bool { return q.Depth(Interactive)+q.Depth(Normal)+q.Depth(Batch) == 3*per })
	s.release()   // the holder finishes
	k := int64(0) // interactive grants so far
	for i := range 3 * per {
		g := <-granted
		if g.behind != int64(i) {
			t.Fatalf("grant %d reports %d let in before it", i, g.behind)
		}
		// The k-th interactive waiter is let in within 2k+1 turns: never
		// two other turns in a row while interactive requests wait.
		if g.class == Interactive && k < per {
			if g.behind > 2*k+1 {
				t.Fatalf("interactive waiter %d let in after %d turns, bound %d", k, g.behind, 2*k+1)
			}
			k++
		}
		g.release() // one at a time
	}
	wg.Wait()
	got := rec.order()
	// 56 turns while all three classes wait (40 interactive + 12 + 4).
	for w := 0; w+14 <= 56; w += 14 {
		var n [classes]int
		for _, c := range got[w : w+14] {
			n[c]++
		}
		if n != [classes]int{10, 3, 1} {
			t.Fatalf("turns %d-%d went %v, want [10 3 1]; order %v", w, w+14, n, got[:56])
		}
	}
	// Interactive never waits behind two batch requests in a row.
	for i := 1; i < 56; i++ {
		if got[i] == Batch && got[i-1] == Batch {
			t.Fatalf("two batch turns in a row at %d: %v", i, got[:56])
		}
	}
	// Each arrival's pass finds the key full once; each release's pass
	// serves one waiter and finds the key full once more: three tries per
	// waiter (a few more when pokes coalesce differently), where trying
	// every waiter in a pass would take thousands.
	if tries := s.tries.Load(); tries > 4*3*per {
		t.Fatalf("%d tries for %d grants: a pass keeps trying a full key", tries, 3*per)
	}
}

// TestPassSkipsFullKeysNotWaiters: a waiter for a free deployment is served
// at once although waiters for a full one are ahead of it in its queue, and
// a pass tries the full deployment once, not once per waiter.
func TestPassSkipsFullKeysNotWaiters(t *testing.T) {
	q := newQueue(t, Options{Poll: time.Hour})
	full := &slots{key: 1, cap: 1, q: q}
	full.n.Store(1)
	free := &slots{key: 2, cap: 1, q: q}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for range 20 {
		go func() {
			_, _, _ = q.Wait(ctx, Normal, time.Now().Add(time.Minute), []Need{{Key: 1}}, full.try(Normal))
		}()
	}
	waitFor(t, "20 waiters for the full deployment", func() bool { return q.Depth(Normal) == 20 })
	before := full.tries.Load()
	start := time.Now()
	rel, waited, err := q.Wait(ctx, Normal, time.Now().Add(time.Minute), []Need{{Key: 2}}, free.try(Normal))
	if err != nil {
		t.Fatal(err)
	}
	rel()
	if d := time.Since(start); d > time.Second || waited.For > time.Second {
		t.Fatalf("served after %s behind waiters for another deployment", d)
	}
	if n := full.tries.Load() - before; n > 2 {
		t.Fatalf("one pass tried the full deployment %d times", n)
	}
	if !q.Busy(1) || q.Busy(2) || q.Busy(3) {
		t.Fatalf("Busy: key 1 %v, key 2 %v, key 3 %v", q.Busy(1), q.Busy(2), q.Busy(3))
	}
}

// TestBoundsAndShedding: a full normal or batch queue refuses at once; a
// full interactive queue sheds the youngest batch waiter, then normal ones,
// and refuses only when neither is left.
func TestBoundsAndShedding(t *testing.T) {
	rec := &recorder{}
	q := newQueue(t, Options{Bounds: [classes]int{1, 2, -1}, Observer: rec, Poll: time.Hour})
	s := &slots{key: 3, cap: 0, q: q} // never any capacity
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	deadline := time.Now().Add(time.Minute)
	wait := func(c Class) <-chan error {
		ch := make(chan error, 1)
		go func() {
			_, _, err := q.Wait(ctx, c, deadline, []Need{{Key: 3}}, s.try(c))
			ch <- err
		}()
		return ch
	}
	if _, _, err := q.Wait(ctx, Batch, deadline, []Need{{Key: 3}}, s.try(Batch)); !isRefusal(err, Batch, false) {
		t.Fatalf("batch with a bound of no queue: %v", err)
	}
	n1 := wait(Normal)
	waitFor(t, "one normal waiter", func() bool { return q.Depth(Normal) == 1 })
	n2 := wait(Normal)
	waitFor(t, "two normal waiters", func() bool { return q.Depth(Normal) == 2 })
	var r *Refusal
	if _, _, err := q.Wait(ctx, Normal, deadline, []Need{{Key: 3}}, s.try(Normal)); !errors.As(err, &r) || r.Bound != 2 || r.Shed {
		t.Fatalf("third normal waiter = %v, want a refusal with bound 2", err)
	}
	i1 := wait(Interactive)
	waitFor(t, "interactive waiter", func() bool { return q.Depth(Interactive) == 1 })
	i2 := wait(Interactive) // interactive full: the youngest normal goes
	select {
	case err := <-n2:
		if !isRefusal(err, Normal, true) {
			t.Fatalf("shed waiter got %v", err)
		}
	case err := <-n1:
		t.Fatalf("the oldest normal waiter was shed (%v), want the youngest", err)
	case <-time.After(5 * time.Second):
		t.Fatal("nothing shed for an interactive request")
	}
	i3 := wait(Interactive) // the last normal goes
	if err := <-n1; !isRefusal(err, Normal, true) {
		t.Fatalf("second shed: %v", err)
	}
	if _, _, err := q.Wait(ctx, Interactive, deadline, []Need{{Key: 3}}, s.try(Interactive)); !isRefusal(err, Interactive, false) {
		t.Fatalf("interactive with nothing to shed: %v", err)
	}
	if q.Depth(Interactive) != 3 || q.Depth(Normal) != 0 {
		t.Fatalf("depths %d/%d", q.Depth(Interactive), q.Depth(Normal))
	}
	cancel()
	for _, ch := range []<-chan error{i1, i2, i3} {
		if err := <-ch; !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled waiter: %v", err)
		}
	}
	// A waiter the dispatcher was trying when it left is removed once the
	// dispatcher's try ends, which may be just after the waiter returned.
	waitFor(t, "cancelled waiters removed", func() bool { return q.Depth(Interactive) == 0 && !q.Busy(3) })
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if rec.refused[WhyFull] != 3 || rec.refused[WhyShed] != 2 {
		t.Fatalf("refusals observed %v", rec.refused)
	}
}

func isRefusal(err error, c Class, shed bool) bool {
	var r *Refusal
	return errors.As(err, &r) && r.Class == c && r.Shed == shed
}

// TestDeadline: a waiter leaves at its deadline with ErrExpired (a timer,
// not a poll), holding nothing; one whose capacity is taken while it
// leaves gives it back.
func TestDeadline(t *testing.T) {
	rec := &recorder{}
	q := newQueue(t, Options{Observer: rec, Poll: time.Hour})
	s := &slots{key: 4, cap: 1, q: q}
	s.n.Store(1)
	start := time.Now()
	_, waited, err := q.Wait(context.Background(), Interactive, start.Add(80*time.Millisecond), []Need{{Key: 4}}, s.try(Interactive))
	if !errors.Is(err, ErrExpired) {
		t.Fatalf("Wait = %v, want ErrExpired", err)
	}
	if waited.For < 70*time.Millisecond || time.Since(start) > 2*time.Second {
		t.Fatalf("left after %s (waited %s), deadline 80ms", time.Since(start), waited.For)
	}
	if q.Depth(Interactive) != 0 || q.Busy(4) {
		t.Fatal("expired waiter still queued")
	}
	// A try that takes capacity after its waiter left: given back.
	slow := make(chan struct{})
	var taken atomic.Int64
	try := func(p *Pass) (func(), bool) {
		<-slow
		taken.Add(1)
		return func() { taken.Add(-1) }, true
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() {
		_, _, err := q.Wait(ctx, Normal, time.Now().Add(time.Minute), []Need{{Key: 5}}, try)
		done <- err
	}()
	waitFor(t, "the try started", func() bool { return q.Depth(Normal) == 1 })
	time.Sleep(10 * time.Millisecond)
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled during its try: %v", err)
	}
	close(slow)
	waitFor(t, "capacity given back", func() bool { return taken.Load() == 0 && q.Depth(Normal) == 0 })
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if rec.refused[WhyExpired] != 1 {
		t.Fatalf("refusals %v, want one expired", rec.refused)
	}
}

// TestPollSeesCapacityFreedElsewhere: capacity freed without a local
// release (another instance) is found by the re-poll; a release another
// instance also waits for does not wake the local waiters, the poll does.
func TestPollSeesCapacityFreedElsewhere(t *testing.T) {
	q := newQueue(t, Options{Poll: 20 * time.Millisecond})
	s := &slots{key: 6, cap: 1, q: q}
	s.n.Store(1)
	got := make(chan time.Time, 1)
	go func() {
		rel, _, err := q.Wait(context.Background(), Batch, time.Now().Add(time.Minute), []Need{{Key: 6}}, s.try(Batch))
		if err == nil {
			got <- time.Now()
			rel()
		}
	}()
	waitFor(t, "queued", func() bool { return q.Depth(Batch) == 1 })
	freed := time.Now()
	s.n.Add(-1)         // freed on another instance: no Released here
	q.Released(6, true) // or here, but another instance waits too
	at := <-got
	if d := at.Sub(freed); d > time.Second {
		t.Fatalf("found the freed slot after %s with a 20ms poll", d)
	}
}

// TestAdmitInstanceCap: at the instance cap requests wait, whatever their
// class, and are let in by class weight as slots come back.
func TestAdmitInstanceCap(t *testing.T) {
	rec := &recorder{}
	q := newQueue(t, Options{InstanceCap: 3, Observer: rec, Poll: time.Hour})
	ctx := context.Background()
	deadline := time.Now().Add(time.Minute)
	var held []func()
	for range 3 {
		rel, waited, err := q.Admit(ctx, Batch, deadline)
		if err != nil || waited.Queued {
			t.Fatalf("under the cap: %v (waited %+v)", err, waited)
		}
		held = append(held, rel)
	}
	if q.InFlight() != 3 {
		t.Fatalf("in flight %d", q.InFlight())
	}
	admitted := make(chan Class, 8)
	queue := func(c Class) {
		go func() {
			rel, waited, err := q.Admit(ctx, c, deadline)
			if err != nil || !waited.Queued || waited.For <= 0 {
				t.Errorf("%s at the cap: %v after %+v", c, err, waited)
				return
			}
			admitted <- c
			_ = rel // held until the end of the test
		}()
	}
	queue(Batch)
	waitFor(t, "batch waits", func() bool { return q.Depth(Batch) == 1 })
	queue(Normal)
	waitFor(t, "normal waits", func() bool { return q.Depth(Normal) == 1 })
	queue(Interactive)
	waitFor(t, "interactive waits", func() bool { return q.Depth(Interactive) == 1 })
	held[0]()
	held[0]() // idempotent
	if c := <-admitted; c != Interactive {
		t.Fatalf("first slot back went to %s, want interactive (arrived last)", c)
	}
	held[1]()
	if c := <-admitted; c != Normal {
		t.Fatalf("second slot back went to %s, want normal", c)
	}
	held[2]()
	if c := <-admitted; c != Batch {
		t.Fatalf("third slot back went to %s, want batch", c)
	}
	if q.InFlight() != 3 || q.Depth(Batch)+q.Depth(Normal)+q.Depth(Interactive) != 0 {
		t.Fatalf("in flight %d", q.InFlight())
	}
	unlimited := newQueue(t, Options{})
	for range 1000 {
		if _, _, err := unlimited.Admit(ctx, Batch, deadline); err != nil {
			t.Fatal(err)
		}
	}
}
