package worker_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"switchyard/store"
	"switchyard/store/redis/lease"
	"switchyard/store/storetest"
	"switchyard/web/gateway/gatewaytest"
	"switchyard/web/worker"
)

// start runs r until the returned stop is called (or the test ends).
func start(t *testing.T, r *worker.Runner) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { r.Run(ctx); close(done) }()
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); <-done }) }
	t.Cleanup(stop)
	return stop
}

func newRunner(rdb *redis.Client, prefix, instance string, st *store.Store, ttl time.Duration, jobs ...worker.Job) *worker.Runner {
	return worker.New(worker.Options{Redis: rdb, Prefix: prefix, Instance: instance, LeaseTTL: ttl, Poll: 20 * time.Millisecond, Runs: st}, jobs...)
}

func runs(t *testing.T, st *store.Store, job string) []store.JobRun {
	t.Helper()
	rs, err := st.JobRuns(context.Background(), job, 1000)
	if err != nil {
		t.Fatal(err)
	}
	slices.Reverse(rs) // oldest first
	return rs
}

func waitFor(t *testing.T, what string, within time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s", what, within)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestTwoWorkersRunEachTickOnce(t *testing.T) {
	st, _ := storetest.New(t)
	rdb, prefix := gatewaytest.NewRedis(t)
	const every = 100 * time.Millisecond
	var inFlight, maxInFlight atomic.Int32
	var total atomic.Int32
	job := worker.Job{Name: "count", Every: every, Run: func(ctx context.Context) (string, error) {
		n := inFlight.Add(1)
		defer inFlight.Add(-1)
		for {
			m := maxInFlight.Load()
			if n <= m || maxInFlight.CompareAndSwap(m, n) {
				break
			}
		}
		total.Add(1)
		time.Sleep(10 * time.Millisecond) // long enough for the other worker to look
		return "counted", nil
	}}
	a := newRunner(rdb, prefix, "worker-a", st, 2*time.Second, job)
	b := newRunner(rdb, prefix, "worker-b", st, 2*time.Second, job)
	began := time.Now()
	stopA, stopB := start(t, a), start(t, b)
	time.Sleep(1500 * time.Millisecond)
	stopA()
	stopB()
	elapsed := time.Since(began)

	var rs []store.JobRun
	var lost int
	for _, r := range runs(t, st, "count") {
		if r.Outcome == store.JobLost { // stopped before it began
			lost++
			continue
		}
		rs = append(rs, r)
	}
	if lost > 2 {
		t.Fatalf("%d runs lost, more than the two workers stopping", lost)
	}
	if int(total.Load()) != len(rs) {
		t.Fatalf("%d runs happened, %d recorded", total.Load(), len(rs))
	}
	if m := maxInFlight.Load(); m != 1 {
		t.Fatalf("%d runs of the job at the same time", m)
	}
	seen := map[int64]string{}
	by := map[string]int{}
	for _, r := range rs {
		if prev, dup := seen[r.Slot]; dup {
			t.Fatalf("tick %d ran twice (%s and %s)", r.Slot, prev, r.Instance)
		}
		seen[r.Slot] = r.Instance
		by[r.Instance]++
		if r.Outcome != store.JobOK || r.Message != "counted" || !r.FinishedAt.Valid {
			t.Fatalf("run %+v", r)
		}
	}
	ticks := int(elapsed / every)
	// Each tick runs once; a tick may only be missed if both workers were
	// descheduled through all of it (a loaded CI machine).
	if len(rs) > ticks+1 || len(rs) < ticks*7/10 {
		t.Fatalf("%d runs in %d ticks", len(rs), ticks)
	}
	t.Logf("%d ticks in %s: %d runs, by worker %v", ticks, elapsed.Round(time.Millisecond), len(rs), by)
}

func TestKilledHolderIsTakenOver(t *testing.T) {
	st, _ := storetest.New(t)
	rdb, prefix := gatewaytest.NewRedis(t)
	const ttl = time.Second
	started := make(chan string, 10)
	job := func(instance string) worker.Job {
		return worker.Job{Name: "sweep", Every: time.Hour, Run: func(ctx context.Context) (string, error) {
			started <- instance
			if instance == "worker-a" {
				<-ctx.Done() // a long run, until the worker is killed
				return "half done", ctx.Err()
			}
			return "swept", nil
		}}
	}
	a := newRunner(rdb, prefix, "worker-a", st, ttl, job("worker-a"))
	b := newRunner(rdb, prefix, "worker-b", st, ttl, job("worker-b"))
	stopA := start(t, a)
	if got := <-started; got != "worker-a" {
		t.Fatalf("%s started first", got)
	}
	start(t, b)
	// Worker b sees the lease held and leaves the job alone, across several
	// renewals of a's lease.
	select {
	case got := <-started:
		t.Fatalf("%s ran while worker-a held the lease", got)
	case <-time.After(3 * ttl / 2):
	}
	jobs, err := b.Jobs(context.Background())
	if err != nil || len(jobs) != 1 || jobs[0].Holder != "worker-a" || jobs[0].LeaseLeft <= 0 {
		t.Fatalf("Jobs() = %+v, %v; want worker-a holding the lease", jobs, err)
	}

	killed := time.Now()
	stopA()
	select {
	case got := <-started:
		if got != "worker-b" {
			t.Fatalf("%s took over", got)
		}
	case <-time.After(ttl):
		t.Fatal("worker-b did not take over within the lease ttl")
	}
	t.Logf("worker-b took over %s after worker-a was killed", time.Since(killed).Round(time.Millisecond))
	waitFor(t, "the takeover's run recorded", 2*time.Second, func() bool {
		rs := runs(t, st, "sweep")
		return len(rs) == 2 && rs[1].Outcome == store.JobOK
	})
	rs := runs(t, st, "sweep")
	if rs[0].Instance != "worker-a" || rs[0].Outcome != store.JobLost || rs[1].Instance != "worker-b" || rs[1].Slot != rs[0].Slot {
		t.Fatalf("runs %+v; want a's lost run redone by b for the same tick", rs)
	}
}

func TestDeadHolderLeaseExpires(t *testing.T) {
	st, _ := storetest.New(t)
	rdb, prefix := gatewaytest.NewRedis(t)
	const ttl = 700 * time.Millisecond
	// A worker took the lease and died: never renewed, never released.
	if _, held, err := lease.Acquire(context.Background(), rdb, prefix+":job:{sweep}:lease", ttl); err != nil || !held {
		t.Fatalf("acquire: %v %v", held, err)
	}
	died := time.Now()
	// A run it started is still marked running.
	if _, err := st.StartJobRun(context.Background(), "sweep", "dead-worker", 1, died); err != nil {
		t.Fatal(err)
	}
	ran := make(chan time.Time, 1)
	b := newRunner(rdb, prefix, "worker-b", st, ttl, worker.Job{Name: "sweep", Every: time.Hour, Run: func(context.Context) (string, error) {
		ran <- time.Now()
		return "swept", nil
	}})
	start(t, b)
	select {
	case at := <-ran:
		waited := at.Sub(died)
		if waited < ttl-50*time.Millisecond {
			t.Fatalf("worker-b ran %s after the holder died, before its lease (%s) expired", waited, ttl)
		}
		if waited > ttl+500*time.Millisecond {
			t.Fatalf("worker-b ran only %s after the holder died (lease %s)", waited, ttl)
		}
		t.Logf("lease %s: worker-b ran %s after the holder died", ttl, waited.Round(time.Millisecond))
	case <-time.After(5 * time.Second):
		t.Fatal("worker-b never ran")
	}
	waitFor(t, "runs recorded", 2*time.Second, func() bool {
		rs := runs(t, st, "sweep")
		return len(rs) == 2 && rs[1].Outcome == store.JobOK
	})
	if rs := runs(t, st, "sweep"); rs[0].Outcome != store.JobLost || rs[0].Instance != "dead-worker" {
		t.Fatalf("the dead worker's run is %+v, want lost", rs[0])
	}
}

func TestOutcomesScheduleAndRequests(t *testing.T) {
	st, _ := storetest.New(t)
	rdb, prefix := gatewaytest.NewRedis(t)
	ctx := context.Background()
	var calls atomic.Int32
	failing := worker.Job{Name: "failing", Every: time.Hour, Run: func(context.Context) (string, error) {
		calls.Add(1)
		return "tried", errors.New("PostgreSQL said no")
	}}
	panicky := worker.Job{Name: "panicky", Every: time.Hour, Run: func(context.Context) (string, error) { panic("boom") }}
	r := newRunner(rdb, prefix, "w", st, time.Second, failing, panicky)

	for _, tc := range []struct{ job, outcome, msg string }{
		{"failing", store.JobError, "tried; PostgreSQL said no"},
		{"panicky", store.JobError, "panic: boom"},
	} {
		ran, err := r.Check(ctx, tc.job)
		if err != nil || !ran {
			t.Fatalf("%s: Check = %v, %v", tc.job, ran, err)
		}
		rs := runs(t, st, tc.job)
		if len(rs) != 1 || rs[0].Outcome != tc.outcome || rs[0].Message != tc.msg {
			t.Fatalf("%s: runs %+v", tc.job, rs)
		}
	}
	// A failed tick is done: it is not retried before the next tick.
	if ran, err := r.Check(ctx, "failing"); ran || err != nil {
		t.Fatalf("second Check in the tick = %v, %v", ran, err)
	}
	jobs, err := r.Jobs(ctx)
	if err != nil || len(jobs) != 2 {
		t.Fatal(jobs, err)
	}
	next := jobs[0].NextRun
	if jobs[0].Name != "failing" || jobs[0].Holder != "" || next.IsZero() || time.Until(next) > time.Hour || next.Minute() != 0 || next.Second() != 0 {
		t.Fatalf("failing: %+v; want free, next run at the top of the next hour", jobs[0])
	}

	// Run now: a request makes the job due at once.
	if err := r.Request(ctx, "failing"); err != nil {
		t.Fatal(err)
	}
	if jobs, _ := r.Jobs(ctx); !jobs[0].Requested || !jobs[0].NextRun.IsZero() {
		t.Fatalf("after Request: %+v", jobs[0])
	}
	if ran, err := r.Check(ctx, "failing"); !ran || err != nil {
		t.Fatalf("Check after Request = %v, %v", ran, err)
	}
	if jobs, _ := r.Jobs(ctx); jobs[0].Requested {
		t.Fatal("request still pending after the run")
	}
	// RunNow runs regardless of the schedule.
	if ran, err := r.RunNow(ctx, "failing"); !ran || err != nil {
		t.Fatalf("RunNow = %v, %v", ran, err)
	}
	if n := calls.Load(); n != 3 {
		t.Fatalf("%d calls, want 3", n)
	}
	if err := r.Request(ctx, "nope"); err == nil {
		t.Fatal("request for an unknown job accepted")
	}
	if _, err := r.Check(ctx, "nope"); err == nil {
		t.Fatal("check of an unknown job accepted")
	}
}

func TestJobsWithoutRedis(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1, DialTimeout: 100 * time.Millisecond})
	defer rdb.Close()
	r := worker.New(worker.Options{Redis: rdb, Prefix: "x"}, worker.Job{Name: "j", Every: time.Minute, Description: "d", Run: func(context.Context) (string, error) { return "", nil }})
	jobs, err := r.Jobs(context.Background())
	if err == nil || len(jobs) != 1 || jobs[0].Name != "j" || jobs[0].Description != "d" {
		t.Fatalf("Jobs() = %+v, %v; want the job list and the error", jobs, err)
	}
	if ran, err := r.Check(context.Background(), "j"); ran || err == nil {
		t.Fatalf("Check without Redis = %v, %v", ran, err)
	}
}

// stopWhileRecording is the run log of a worker that is shut down while it
// records the start of a run.
type stopWhileRecording struct {
	*store.Store
	stop context.CancelFunc
}

func (s stopWhileRecording) StartJobRun(ctx context.Context, job, instance string, slot int64, at time.Time) (int64, error) {
	s.stop()
	return s.Store.StartJobRun(ctx, job, instance, slot, at)
}

func TestShutdownWhileRecordingARunLosesNoRecord(t *testing.T) {
	st, _ := storetest.New(t)
	rdb, prefix := gatewaytest.NewRedis(t)
	var calls atomic.Int32
	job := worker.Job{Name: "sweep", Every: time.Hour, Run: func(context.Context) (string, error) {
		calls.Add(1)
		return "swept", nil
	}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r := worker.New(worker.Options{Redis: rdb, Prefix: prefix, Instance: "w", LeaseTTL: time.Second, Runs: stopWhileRecording{st, cancel}}, job)
	if ran, err := r.Check(ctx, "sweep"); !ran || err != nil {
		t.Fatalf("Check = %v, %v", ran, err)
	}
	// The run is recorded, as stopped before it began, and did not begin;
	// its tick stays undone for the next worker.
	rs := runs(t, st, "sweep")
	if len(rs) != 1 || rs[0].Outcome != store.JobLost || !rs[0].FinishedAt.Valid {
		t.Fatalf("runs %+v, want one lost run", rs)
	}
	if n := calls.Load(); n != 0 {
		t.Fatalf("the job ran %d times after shutdown", n)
	}
	again := newRunner(rdb, prefix, "w2", st, time.Second, job)
	if ran, err := again.Check(context.Background(), "sweep"); !ran || err != nil {
		t.Fatalf("the next worker's Check = %v, %v; want it to run the undone tick", ran, err)
	}
}
