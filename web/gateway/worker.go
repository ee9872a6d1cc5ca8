package gateway

import (
	"context"
	"sync"
	"time"

	"switchyard/handlers"
	"switchyard/routing/health"
	"switchyard/store"
	"switchyard/store/redis/healthboard"
	"switchyard/web/worker"
)

// WorkerOptions configure health scoring and the worker role's jobs.
type WorkerOptions struct {
	// RunJobs runs the singleton jobs (APP_ROLE worker or all). Without it
	// the instance still tracks health for its router and shows the Jobs
	// page (APP_ROLE api).
	RunJobs bool
	// Prefix is the instance's Redis prefix (Options.RedisPrefix); default "sy".
	Prefix string
	// ProbeEvery is the probe interval (SWITCHYARD_PROBE_INTERVAL, default 60s).
	ProbeEvery time.Duration
	// ProbeTimeout bounds one probe (default 10s).
	ProbeTimeout time.Duration
	// ProbeConcurrency bounds the probes in flight
	// (SWITCHYARD_PROBE_CONCURRENCY, default 8); a round's probes are
	// spread over ProbeEvery.
	ProbeConcurrency int
	// Retention is the call-log retention (SWITCHYARD_CALLLOG_RETENTION_DAYS);
	// 0 keeps every partition.
	Retention time.Duration
	// PartitionsEvery (default 1h) and PartitionsAhead (default 3 days)
	// schedule call-log partition maintenance.
	PartitionsEvery time.Duration
	PartitionsAhead int
	// AlertEvery is how often the alert rules are evaluated and webhook
	// deliveries retried (SWITCHYARD_ALERT_INTERVAL, default 10s).
	AlertEvery time.Duration
	// RepairEvery schedules load-counter repair (default 1 min).
	RepairEvery time.Duration
	// LeaseTTL is how long a dead worker's job lease outlives it (default 30s).
	LeaseTTL time.Duration
	// Poll caps the wait between a worker's checks of a job (default 1s).
	Poll time.Duration
	// Health is the scoring window and thresholds.
	Health health.Settings
	// Refresh is how often every instance re-reads the down set, and
	// flushes its live outcomes (default 1s).
	Refresh time.Duration
}

// Worker is an instance's health plumbing and worker-role jobs.
type Worker struct {
	// Tracker answers routing's Down and takes live outcomes (every role).
	Tracker *healthboard.Tracker
	// Runner runs the singleton jobs (worker role) and reports them to the
	// Jobs page (every role).
	Runner *worker.Runner
	// Prober is the health-probe job.
	Prober  *worker.Prober
	runJobs bool
}

// AttachWorker builds the health tracker and the job runner and wires them
// in: the router skips deployments the worker found down ("unhealthy"),
// every attempt's outcome feeds the health score, and the console's Health
// and Jobs pages read them. Call it from New once the console exists and
// before serving; then run Worker.Run from Start. Attaching again replaces
// the previous attachment in the router and the console.
func (g *Gateway) AttachWorker(st *store.Store, o WorkerOptions) *Worker {
	if o.Prefix == "" {
		o.Prefix = "sy"
	}
	if o.ProbeEvery <= 0 {
		o.ProbeEvery = time.Minute
	}
	if o.PartitionsEvery <= 0 {
		o.PartitionsEvery = time.Hour
	}
	if o.PartitionsAhead <= 0 {
		o.PartitionsAhead = 3
	}
	if o.AlertEvery <= 0 {
		o.AlertEvery = 10 * time.Second
	}
	if o.RepairEvery <= 0 {
		o.RepairEvery = time.Minute
	}
	board := healthboard.NewBoard(g.redis, o.Prefix, o.Health)
	w := &Worker{
		runJobs: o.RunJobs,
		Tracker: healthboard.NewTracker(board, healthboard.TrackerOptions{RefreshEvery: o.Refresh, FlushEvery: o.Refresh, Logger: g.log}),
	}
	w.Prober = &worker.Prober{
		Runtime: g.Holder.Current, Adapters: Adapters(), Client: g.Exec.Client, Keys: g.Keys,
		Board: board, Log: st, Timeout: o.ProbeTimeout, Concurrency: o.ProbeConcurrency, Interval: o.ProbeEvery,
	}
	w.Runner = worker.New(worker.Options{
		Redis: g.redis, Prefix: o.Prefix, Instance: g.Reporter.InstanceID(), LeaseTTL: o.LeaseTTL, Poll: o.Poll,
		Runs: st, Logger: g.log,
	},
		w.Prober.Job(o.ProbeEvery),
		worker.PartitionsJob(st.DB(), o.PartitionsEvery, o.PartitionsAhead, o.Retention),
		worker.LoadRepairJob(g.Load, o.RepairEvery),
		worker.RotationSweepJob(st, time.Minute),
		(&worker.Alerter{Store: st, Source: alertSource{g: g, calls: st}, Log: g.log}).Job(o.AlertEvery),
	)
	g.Exec.State = WithHealth(g.Exec.State, w.Tracker)
	if g.Console != nil {
		g.Console.Health = w.Tracker
		g.Console.Jobs = JobsOps{w.Runner}
	}
	return w
}

// Run keeps the tracker current until ctx ends; with RunJobs it also runs
// the singleton jobs.
func (w *Worker) Run(ctx context.Context) {
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); w.Tracker.Run(ctx) }()
	if w.runJobs {
		wg.Add(1)
		go func() { defer wg.Done(); w.Runner.Run(ctx) }()
	}
	wg.Wait()
}

// JobsOps adapts the worker role's runner to what the console's Jobs page
// reads.
type JobsOps struct{ R *worker.Runner }

// Jobs lists every job with its lease and schedule.
func (j JobsOps) Jobs(ctx context.Context) ([]handlers.JobStatus, error) {
	list, err := j.R.Jobs(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]handlers.JobStatus, len(list))
	for i, s := range list {
		out[i] = handlers.JobStatus(s)
	}
	return out, nil
}

// Request asks the workers to run a job at their next check.
func (j JobsOps) Request(ctx context.Context, name string) error { return j.R.Request(ctx, name) }
