package limits

import (
	"context"
	"strings"
	"testing"
	"time"

	"switchyard/routing/limit"
	"switchyard/store/storetest"
)

// holdSender makes l look busy sending: calls queue until the test, as the
// sender, sends them as one batch with the returned function.
func holdSender(t *testing.T, l *Limiter) (send func()) {
	t.Helper()
	c := l.co
	c.mu.Lock()
	if c.sending {
		c.mu.Unlock()
		t.Fatal("the limiter is sending already")
	}
	c.sending = true
	c.mu.Unlock()
	return c.send
}

// warmScript loads the script on the nodes of the callers' keys (on a
// cluster, each master meets it first as NOSCRIPT), with peeks that
// spend nothing.
func warmScript(t *testing.T, l *Limiter, callers ...int64) {
	t.Helper()
	for _, c := range callers {
		mustPeek(t, l, Request{CallerID: c, Tier: "warm", Limits: Limits{RPM: 1}})
	}
}

// waitPending waits until n calls are queued.
func waitPending(t *testing.T, l *Limiter, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		l.co.mu.Lock()
		got := len(l.co.pending)
		l.co.mu.Unlock()
		if got == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d calls queued, want %d", got, n)
		}
		time.Sleep(time.Millisecond)
	}
}

// batchStep is one call of TestMixedBatch: a check or a peek (settle < 0),
// or the settlement of step settle's reservation.
type batchStep struct {
	caller int64
	tier   string
	est    int64
	peek   bool
	settle int // index of the step whose reservation is settled; -1: none
	actual int64
	cost   int64
}

// TestMixedBatch queues checks, peeks and settlements of two callers in
// two tiers and a Flush behind one pipeline: one script run per caller,
// in queue order, and every call's outcome is what it is when the same
// calls go one at a time.
func TestMixedBatch(t *testing.T) {
	rdb, prefix := testRedis(t)
	// 4 s a request (burst 2), 1 s a token: the test's milliseconds move nothing.
	lim := Limits{RPM: 15, RPMBurst: 2, TPM: 60, DailyTokens: 1000, MonthlyBudgetMicros: 1000}
	before := []batchStep{ // one at a time, before the batch
		{caller: 1, tier: "fast", est: 10, settle: -1},
		{caller: 2, tier: "fast", est: 5, settle: -1},
	}
	batch := []batchStep{
		{caller: 1, settle: 0, actual: 30, cost: 600},
		{caller: 1, tier: "fast", est: 10, settle: -1},
		{caller: 1, tier: "deep", est: 20, settle: -1},
		{caller: 2, tier: "fast", est: 5, settle: -1},
		{caller: 1, tier: "fast", peek: true, settle: -1},
		{caller: 2, settle: 1, actual: 0, cost: 0},
		{caller: 1, tier: "fast", est: 10, settle: -1},   // RPM burst spent
		{caller: 1, tier: "deep", est: 2000, settle: -1}, // never fits the quota
	}
	// run runs the steps on l, the batch's as one batch or one at a time.
	run := func(l *Limiter, batched bool) (decisions []Decision, usage []Usage) {
		t.Helper()
		var reservations []Reservation
		for _, s := range before {
			d := mustCheck(t, l, Request{CallerID: s.caller, Tier: s.tier, Limits: lim, EstimatedTokens: s.est})
			reservations = append(reservations, d.Reservation)
		}
		var send func()
		if batched {
			send = holdSender(t, l)
		}
		decisions = make([]Decision, len(batch))
		errs := make(chan error, len(batch)+1)
		queued := 0
		for i, s := range batch {
			if s.settle >= 0 {
				if err := l.Settle(context.Background(), reservations[s.settle], s.actual, s.cost); err != nil {
					t.Fatal(err)
				}
			} else {
				go func() {
					var err error
					req := Request{CallerID: s.caller, Tier: s.tier, Limits: lim, EstimatedTokens: s.est}
					if s.peek {
						decisions[i], err = l.Peek(context.Background(), req)
					} else {
						decisions[i], err = l.Check(context.Background(), req)
					}
					errs <- err
				}()
			}
			queued++
			if send == nil {
				if s.settle < 0 {
					if err := <-errs; err != nil {
						t.Fatal(err)
					}
				}
				if err := l.Flush(context.Background()); err != nil {
					t.Fatal(err)
				}
				continue
			}
			waitPending(t, l, queued) // queue order is step order
		}
		if send != nil {
			go func() { errs <- l.Flush(context.Background()) }()
			waitPending(t, l, queued+1)
			send()
			for range len(batch) - 2 + 1 { // the checks and peeks, and the Flush
				if err := <-errs; err != nil {
					t.Fatal(err)
				}
			}
		}
		for _, u := range [][2]any{{int64(1), "fast"}, {int64(1), "deep"}, {int64(2), "fast"}} {
			usage = append(usage, mustUsage(t, l, u[0].(int64), u[1].(string)))
		}
		return decisions, usage
	}

	batched := testLimiter(t, rdb, prefix, Options{})
	warmScript(t, batched, 1, 2)
	counter := &commandCounter{}
	rdb.AddHook(counter)
	got, gotUsage := run(batched, true)
	names, pipes := counter.take()
	ops := counter.takeOps()
	// Before the batch: two checks; the batch: one run per caller in one
	// pipeline; then the Usage reads.
	if strings.Join(names[:4], ",") != "evalsha,evalsha,evalsha,evalsha" || pipes != 1 {
		t.Fatalf("sent %v in %d pipelines, want two checks, then a pipeline of one run per caller", names, pipes)
	}
	if want := []string{"c", "c", "s,c,c,p,c,c", "c,s"}; strings.Join(ops, " ") != strings.Join(want, " ") {
		t.Fatalf("script runs %q, want %q", ops, want)
	}

	alone := testLimiter(t, rdb, prefix+"-alone", Options{})
	want, wantUsage := run(alone, false)

	for i, s := range batch {
		if s.settle >= 0 {
			continue
		}
		g, w := got[i], want[i]
		if g.Allowed != w.Allowed || g.Reason != w.Reason || g.Limit != w.Limit || g.Never != w.Never ||
			g.Requests.Remaining != w.Requests.Remaining || g.Tokens.Remaining != w.Tokens.Remaining ||
			!sameReservation(g.Reservation, w.Reservation) || g.Local || w.Local {
			t.Errorf("step %d batched: %+v\nalone: %+v", i, g, w)
		}
		for _, d := range [][2]time.Duration{{g.RetryAfter, w.RetryAfter}, {g.Requests.Reset, w.Requests.Reset}, {g.Tokens.Reset, w.Tokens.Reset}} {
			if diff := d[0] - d[1]; diff < -tolerance || diff > tolerance {
				t.Errorf("step %d: durations batched %v, alone %v", i, d[0], d[1])
			}
		}
	}
	for i := range gotUsage {
		if gotUsage[i] != wantUsage[i] {
			t.Errorf("usage %d batched %+v, alone %+v", i, gotUsage[i], wantUsage[i])
		}
	}
	// The outcomes themselves, so that both ways agreeing is not both wrong.
	if !got[1].Allowed || !got[2].Allowed || !got[3].Allowed || got[4].Allowed || got[4].Limit != limit.KindRPM ||
		got[6].Allowed || got[6].Limit != limit.KindRPM || got[7].Allowed || !got[7].Never {
		t.Errorf("batched outcomes: %+v", got)
	}
	if gotUsage[0].DailyTokens != 40 || gotUsage[0].MonthSpentMicros != 600 || gotUsage[1].DailyTokens != 20 || gotUsage[2].DailyTokens != 5 {
		t.Errorf("usage %+v, want 40, 600, 20 and 5", gotUsage)
	}
}

// sameReservation compares reservations but for MonthTTL, which is
// measured from the time of the check.
func sameReservation(a, b Reservation) bool {
	a.MonthTTL, b.MonthTTL = 0, 0
	return a == b
}

// TestLongRunsSplit: more calls of one caller than a script run takes go
// as several runs in one pipeline, in queue order.
func TestLongRunsSplit(t *testing.T) {
	rdb, prefix := testRedis(t)
	l := testLimiter(t, rdb, prefix, Options{})
	const n, rpm = 2*maxRunOps + 5, 30
	warmScript(t, l, 1)
	send := holdSender(t, l)
	counter := &commandCounter{}
	rdb.AddHook(counter)
	decisions := make([]Decision, n)
	done := make(chan error, n)
	for i := range n {
		go func() {
			var err error
			decisions[i], err = l.Check(context.Background(), Request{CallerID: 1, Tier: "fast", Limits: Limits{RPM: rpm}})
			done <- err
		}()
		waitPending(t, l, i+1)
	}
	send()
	for range n {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	names, pipes := counter.take()
	if len(names) != 3 || pipes != 1 {
		t.Fatalf("sent %v in %d pipelines, want 3 runs in one", names, pipes)
	}
	for i, d := range decisions {
		wantRemaining := max(int64(rpm-1-i), 0)
		if d.Allowed != (i < rpm) || d.Requests.Remaining != wantRemaining {
			t.Errorf("check %d: allowed %v, %d left; want %v, %d", i, d.Allowed, d.Requests.Remaining, i < rpm, wantRemaining)
		}
	}
}

// TestAbandonedCallSkipped: a call whose waiter gave up before it was sent
// is not sent; the others of its batch are.
func TestAbandonedCallSkipped(t *testing.T) {
	rdb, prefix := testRedis(t)
	l := testLimiter(t, rdb, prefix, Options{})
	warmScript(t, l, 1, 2)
	send := holdSender(t, l)
	counter := &commandCounter{}
	rdb.AddHook(counter)
	ctx, cancel := context.WithCancel(context.Background())
	gaveUp := make(chan error, 1)
	go func() {
		_, err := l.Check(ctx, Request{CallerID: 1, Tier: "fast", Limits: Limits{RPM: 10}})
		gaveUp <- err
	}()
	waitPending(t, l, 1)
	answered := make(chan Decision, 1)
	go func() {
		d, err := l.Check(context.Background(), Request{CallerID: 2, Tier: "fast", Limits: Limits{RPM: 10}})
		if err != nil {
			t.Error(err)
		}
		answered <- d
	}()
	waitPending(t, l, 2)
	cancel()
	if err := <-gaveUp; err == nil {
		t.Fatal("a cancelled check waited for the batch")
	}
	send()
	if d := <-answered; !d.Allowed || d.Requests.Remaining != 9 {
		t.Fatalf("the other check: %+v", d)
	}
	if ops := counter.takeOps(); strings.Join(ops, " ") != "c" {
		t.Fatalf("script runs %q, want only the second check's", ops)
	}
	if got := storetest.Keys(t, rdb, prefix+"*"); len(got) != 1 || got[0] != prefix+":{c2}:rpm:fast" {
		t.Fatalf("keys %v, want the second caller's RPM key only", got)
	}
}
