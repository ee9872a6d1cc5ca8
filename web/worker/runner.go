// Package worker runs the worker role's singleton jobs (health scoring and the worker role): health
// probes, call-log partition maintenance and load-counter repair.
//
// Every job has an interval, and time is cut into ticks of that interval
// (tick n covers [n×Every, (n+1)×Every) of Unix time). Every worker checks
// each job a few times per tick; the first to find the current tick not
// yet done takes the job's Redis lease (SET NX PX with an owner token,
// renewed while the run lasts, released by its owner only — package lease),
// checks again under the lease, runs the job and marks the tick done. So N
// workers run each tick once, never two runs of a job at the same time, and
// when the holder dies its lease expires and the next worker to look runs
// the unfinished tick.
//
// Runs are recorded in PostgreSQL (store/jobs.go) with their instance,
// duration and outcome for the Jobs page.
package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"switchyard/store"
	"switchyard/store/redis/lease"
)

// Job is one singleton job.
type Job struct {
	Name        string
	Description string
	Every       time.Duration
	// Timeout bounds one run (default 10 minutes).
	Timeout time.Duration
	// Run does the work and returns a one-line summary for the Jobs page.
	Run func(ctx context.Context) (summary string, err error)
}

func (j *Job) timeout() time.Duration {
	if j.Timeout > 0 {
		return j.Timeout
	}
	return 10 * time.Minute
}

// RunLog records job runs (store.Store).
type RunLog interface {
	StartJobRun(ctx context.Context, job, instance string, slot int64, at time.Time) (int64, error)
	FinishJobRun(ctx context.Context, id int64, outcome, message string, at time.Time) error
	PruneJobRuns(ctx context.Context, cutoff time.Time) (int64, error)
}

// Options configure a Runner.
type Options struct {
	Redis  redis.UniversalClient
	Prefix string // the instance's Redis prefix
	// Instance names this worker in leases and job runs.
	Instance string
	// LeaseTTL is how long a dead worker's lease outlives it (default 30s).
	LeaseTTL time.Duration
	// Poll caps how long a worker waits between checks of a job (default
	// 1s; a job is also checked four times per interval).
	Poll time.Duration
	// Runs records runs; nil records nothing.
	Runs RunLog
	// KeepRuns is how long job runs are kept (default 7 days).
	KeepRuns time.Duration
	Logger   *slog.Logger
}

// Runner runs jobs. The same Runner serves the Jobs page of an instance that
// does not run them (APP_ROLE=api): Jobs and Request only read and write
// Redis.
type Runner struct {
	o         Options
	jobs      []*Job
	byName    map[string]*Job
	lastPrune atomic.Int64
	failing   sync.Map // job name → struct{} while its checks fail
}

// New returns a Runner for jobs.
func New(o Options, jobs ...Job) *Runner {
	if o.LeaseTTL <= 0 {
		o.LeaseTTL = 30 * time.Second
	}
	if o.Poll <= 0 {
		o.Poll = time.Second
	}
	if o.KeepRuns <= 0 {
		o.KeepRuns = 7 * 24 * time.Hour
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Instance == "" {
		o.Instance = "worker"
	}
	r := &Runner{o: o, byName: map[string]*Job{}}
	for _, j := range jobs {
		r.jobs = append(r.jobs, &j)
		r.byName[j.Name] = &j
	}
	return r
}

// Instance is this worker's name.
func (r *Runner) Instance() string { return r.o.Instance }

// key names a job's Redis key. The job name is hash-tagged: a job's done
// marker and run request are read in one MGET, which Redis Cluster only
// allows within one hash slot.
func (r *Runner) key(j *Job, what string) string {
	return r.o.Prefix + ":job:{" + j.Name + "}:" + what
}

// slot is the tick of t.
func slot(j *Job, t time.Time) int64 { return t.UnixNano() / int64(j.Every) }

func (r *Runner) poll(j *Job) time.Duration {
	return max(min(j.Every/4, r.o.Poll), 5*time.Millisecond)
}

// Run checks every job until ctx ends, then waits for runs in progress
// (which see ctx cancelled) to finish.
func (r *Runner) Run(ctx context.Context) {
	var wg sync.WaitGroup
	for _, j := range r.jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.loop(ctx, j)
		}()
	}
	wg.Wait()
}

func (r *Runner) loop(ctx context.Context, j *Job) {
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		_, err := r.tick(ctx, j, false)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			if _, was := r.failing.LoadOrStore(j.Name, struct{}{}); !was {
				r.o.Logger.Warn("worker: cannot check job", "job", j.Name, "err", err)
			}
		} else if _, was := r.failing.LoadAndDelete(j.Name); was {
			r.o.Logger.Info("worker: job checks work again", "job", j.Name)
		}
		t.Reset(r.poll(j))
	}
}

// due reports whether the job should run for tick s: it was requested, or
// s is after the last tick done.
func (r *Runner) due(ctx context.Context, j *Job, s int64) (bool, error) {
	vals, err := r.o.Redis.MGet(ctx, r.key(j, "done"), r.key(j, "requested")).Result()
	if err != nil {
		return false, fmt.Errorf("worker: job %s: %w", j.Name, err)
	}
	if vals[1] != nil {
		return true, nil
	}
	if vals[0] == nil {
		return true, nil
	}
	done, err := strconv.ParseInt(fmt.Sprint(vals[0]), 10, 64)
	if err != nil {
		return true, nil
	}
	return done < s, nil
}

// Check runs job name if its current tick is due and no other worker holds
// its lease. ran says whether this call ran it.
func (r *Runner) Check(ctx context.Context, name string) (ran bool, err error) {
	j := r.byName[name]
	if j == nil {
		return false, fmt.Errorf("worker: no job %q", name)
	}
	return r.tick(ctx, j, false)
}

// RunNow runs job name at once under its lease, due or not, and waits for
// it. ran is false when another worker holds the lease.
func (r *Runner) RunNow(ctx context.Context, name string) (ran bool, err error) {
	j := r.byName[name]
	if j == nil {
		return false, fmt.Errorf("worker: no job %q", name)
	}
	return r.tick(ctx, j, true)
}

// Request asks the workers to run job name at their next check (the Jobs
// page's "Run now").
func (r *Runner) Request(ctx context.Context, name string) error {
	j := r.byName[name]
	if j == nil {
		return fmt.Errorf("worker: no job %q", name)
	}
	if err := r.o.Redis.Set(ctx, r.key(j, "requested"), r.o.Instance, 24*time.Hour).Err(); err != nil {
		return fmt.Errorf("worker: request job %s: %w", name, err)
	}
	return nil
}

func (r *Runner) tick(ctx context.Context, j *Job, force bool) (bool, error) {
	s := slot(j, time.Now())
	if !force {
		due, err := r.due(ctx, j, s)
		if err != nil || !due {
			return false, err
		}
	}
	var ran bool
	_, err := lease.Run(ctx, r.o.Redis, r.key(j, "lease"), r.o.LeaseTTL, func(lctx context.Context) error {
		if !force {
			// Another worker may have run the tick between our check and
			// our lease.
			due, err := r.due(lctx, j, s)
			if err != nil || !due {
				return err
			}
		}
		ran = true
		r.execute(lctx, j, s)
		return nil
	})
	if errors.Is(err, lease.ErrLost) {
		// Recorded as a lost run already; the next worker redoes the tick.
		err = nil
	}
	return ran, err
}

// execute runs one tick of j under its lease and records it.
func (r *Runner) execute(lctx context.Context, j *Job, s int64) {
	log := r.o.Logger.With("job", j.Name, "tick", s)
	// The holder key names this worker for the Jobs page; it is only read
	// while the lease exists, so it never needs deleting.
	_ = r.o.Redis.Set(lctx, r.key(j, "holder"), r.o.Instance, j.timeout()+r.o.LeaseTTL).Err()
	_ = r.o.Redis.Del(lctx, r.key(j, "requested")).Err()
	started := time.Now()
	var runID int64
	if r.o.Runs != nil {
		// The bookkeeping outlives lctx: a run is recorded even when
		// shutdown or a lost lease ends lctx while it is being recorded.
		sctx, scancel := bookkeeping(lctx)
		id, err := r.o.Runs.StartJobRun(sctx, j.Name, r.o.Instance, s, started)
		scancel()
		if err != nil {
			log.Warn("worker: cannot record job run", "err", err)
		}
		runID = id
	}

	var summary string
	var err error
	if lctx.Err() == nil {
		jctx, cancel := context.WithTimeout(lctx, j.timeout())
		summary, err = safeRun(jctx, j)
		cancel()
	} else {
		// Stopped while the run was being recorded: it does not begin.
		err = context.Cause(lctx)
	}

	outcome, msg := store.JobOK, summary
	switch {
	case err != nil && lctx.Err() != nil:
		// Stopped (shutdown) or the lease was lost before the job finished:
		// the tick stays undone, for the next worker to redo.
		outcome = store.JobLost
		msg = "stopped before finishing: " + context.Cause(lctx).Error()
		if summary != "" {
			msg = summary + "; " + msg
		}
	case err != nil:
		outcome, msg = store.JobError, err.Error()
		if summary != "" {
			msg = summary + "; " + msg
		}
	}
	finished := time.Now()
	bctx, bcancel := bookkeeping(lctx)
	defer bcancel()
	if outcome != store.JobLost {
		if err := r.o.Redis.Set(bctx, r.key(j, "done"), s, 0).Err(); err != nil {
			log.Warn("worker: cannot mark job tick done", "err", err)
		}
	}
	if r.o.Runs != nil && runID != 0 {
		if err := r.o.Runs.FinishJobRun(bctx, runID, outcome, msg, finished); err != nil {
			log.Warn("worker: cannot record job run", "err", err)
		}
		if last := r.lastPrune.Load(); finished.Unix()-last > 3600 && r.lastPrune.CompareAndSwap(last, finished.Unix()) {
			if _, err := r.o.Runs.PruneJobRuns(bctx, finished.Add(-r.o.KeepRuns)); err != nil {
				log.Warn("worker: cannot prune job runs", "err", err)
			}
		}
	}
	level := slog.LevelDebug
	if outcome != store.JobOK {
		level = slog.LevelWarn
	}
	log.Log(bctx, level, "worker: job run", "outcome", outcome, "duration", finished.Sub(started), "summary", msg)
}

// bookkeeping is the context a run's records are written with: lctx's
// values without its end, and a bound of its own.
func bookkeeping(lctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(lctx), recordTimeout)
}

// recordTimeout bounds each write of a run's records.
var recordTimeout = 5 * time.Second

func safeRun(ctx context.Context, j *Job) (summary string, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic: %v", p)
		}
	}()
	return j.Run(ctx)
}

// Status is a job as the Jobs page shows it.
type Status struct {
	Name        string
	Description string
	Every       time.Duration
	// Holder is the worker holding the lease now, "" when nobody runs it.
	Holder string
	// LeaseLeft is how long the lease lasts without renewal.
	LeaseLeft time.Duration
	// Requested is set while a "Run now" waits for a worker.
	Requested bool
	// NextRun is when the next tick starts; zero when a run is due now.
	NextRun time.Time
}

// Jobs returns every job's lease and schedule, in registration order.
func (r *Runner) Jobs(ctx context.Context) ([]Status, error) {
	pipe := r.o.Redis.Pipeline()
	type cmds struct {
		done, holder, requested *redis.StringCmd
		ttl                     *redis.DurationCmd
	}
	cs := make([]cmds, len(r.jobs))
	for i, j := range r.jobs {
		cs[i] = cmds{
			done:      pipe.Get(ctx, r.key(j, "done")),
			holder:    pipe.Get(ctx, r.key(j, "holder")),
			requested: pipe.Get(ctx, r.key(j, "requested")),
			ttl:       pipe.PTTL(ctx, r.key(j, "lease")),
		}
	}
	_, err := pipe.Exec(ctx)
	if err != nil && !errors.Is(err, redis.Nil) {
		err = fmt.Errorf("worker: read job states: %w", err)
	} else {
		err = nil
	}
	now := time.Now()
	out := make([]Status, len(r.jobs))
	for i, j := range r.jobs {
		st := Status{Name: j.Name, Description: j.Description, Every: j.Every}
		if err == nil {
			if ttl := cs[i].ttl.Val(); ttl > 0 {
				st.Holder, st.LeaseLeft = cs[i].holder.Val(), ttl
				if st.Holder == "" {
					st.Holder = "unknown worker"
				}
			}
			st.Requested = cs[i].requested.Val() != ""
			if done, perr := strconv.ParseInt(cs[i].done.Val(), 10, 64); perr == nil && !st.Requested {
				if next := time.Unix(0, (done+1)*int64(j.Every)); next.After(now) {
					st.NextRun = next
				}
			}
		}
		out[i] = st
	}
	return out, err
}
