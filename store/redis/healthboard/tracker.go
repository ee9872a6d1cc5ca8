package healthboard

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"switchyard/routing/health"
)

// TrackerOptions configure a Tracker.
type TrackerOptions struct {
	// RefreshEvery is how often the down set is read from Redis (default 1s).
	RefreshEvery time.Duration
	// FlushEvery is how often live outcomes are written to Redis (default 1s).
	FlushEvery time.Duration
	Logger     *slog.Logger
}

// Tracker is the data plane's side of health: it implements routing.Health
// from a local copy of the down set, refreshed from Redis in the
// background, and aggregates live outcomes in memory until the next flush.
// Neither Down nor Record touches Redis. If Redis is unreachable the last
// known down set is kept and outcomes wait (bounded by deployments, not by
// requests) for the next successful flush.
type Tracker struct {
	board   *Board
	o       TrackerOptions
	down    atomic.Pointer[map[int64]struct{}]
	counts  sync.Map // deployment id → *counter
	redisOK atomic.Bool
}

type counter struct{ ok, failed atomic.Int64 }

// NewTracker returns a tracker over board. Run it for refreshes and flushes.
func NewTracker(board *Board, o TrackerOptions) *Tracker {
	if o.RefreshEvery <= 0 {
		o.RefreshEvery = time.Second
	}
	if o.FlushEvery <= 0 {
		o.FlushEvery = time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	t := &Tracker{board: board, o: o}
	empty := map[int64]struct{}{}
	t.down.Store(&empty)
	t.redisOK.Store(true)
	return t
}

// Board is the tracker's board.
func (t *Tracker) Board() *Board { return t.board }

// Down reports whether the worker found the deployment down (routing.Health).
func (t *Tracker) Down(deploymentID int64) bool {
	_, ok := (*t.down.Load())[deploymentID]
	return ok
}

// Record counts one live outcome of a deployment: ok for a success, !ok for
// a server, timeout or network failure. Other outcomes (429, auth, bad
// request, a cancelled client) say nothing about the deployment and must
// not be recorded.
func (t *Tracker) Record(deploymentID int64, ok bool) {
	v, found := t.counts.Load(deploymentID)
	if !found {
		v, _ = t.counts.LoadOrStore(deploymentID, new(counter))
	}
	c := v.(*counter)
	if ok {
		c.ok.Add(1)
	} else {
		c.failed.Add(1)
	}
}

// Flush writes the outcomes recorded since the last flush to Redis. On
// failure they are kept for the next one.
func (t *Tracker) Flush(ctx context.Context) error {
	batch := map[int64]health.Counts{}
	t.counts.Range(func(k, v any) bool {
		c := v.(*counter)
		ok, failed := c.ok.Swap(0), c.failed.Swap(0)
		if ok != 0 || failed != 0 {
			batch[k.(int64)] = health.Counts{OK: ok, Failed: failed}
		}
		return true
	})
	if len(batch) == 0 {
		return nil
	}
	if err := t.board.Add(ctx, batch); err != nil {
		for id, n := range batch {
			v, _ := t.counts.LoadOrStore(id, new(counter))
			c := v.(*counter)
			c.ok.Add(n.OK)
			c.failed.Add(n.Failed)
		}
		return err
	}
	return nil
}

// Refresh reloads the down set from Redis.
func (t *Tracker) Refresh(ctx context.Context) error {
	down, err := t.board.Down(ctx)
	if err != nil {
		return err
	}
	t.down.Store(&down)
	return nil
}

// Statuses is every deployment's evaluated health (for the console).
func (t *Tracker) Statuses(ctx context.Context) (map[int64]health.Status, error) {
	return t.board.Statuses(ctx)
}

// ProbeLedger is every deployment's probing over the last 24 hours (for
// the console).
func (t *Tracker) ProbeLedger(ctx context.Context) (map[int64]health.ProbeLedger, error) {
	return t.board.Ledger(ctx)
}

// Settings are the scoring window and thresholds (for the console).
func (t *Tracker) Settings() health.Settings { return t.board.Settings() }

// Run refreshes and flushes until ctx ends, then flushes once more.
func (t *Tracker) Run(ctx context.Context) {
	refresh := time.NewTicker(t.o.RefreshEvery)
	defer refresh.Stop()
	flush := time.NewTicker(t.o.FlushEvery)
	defer flush.Stop()
	t.note(t.Refresh(ctx))
	for {
		select {
		case <-ctx.Done():
			fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
			_ = t.Flush(fctx)
			cancel()
			return
		case <-refresh.C:
			t.note(t.Refresh(ctx))
		case <-flush.C:
			t.note(t.Flush(ctx))
		}
	}
}

// note logs Redis failing and recovering once per transition.
func (t *Tracker) note(err error) {
	if errors.Is(err, context.Canceled) {
		return
	}
	if err != nil {
		if t.redisOK.CompareAndSwap(true, false) {
			t.o.Logger.Warn("health: Redis unreachable; routing keeps the last known down set", "err", err)
		}
		return
	}
	if t.redisOK.CompareAndSwap(false, true) {
		t.o.Logger.Info("health: Redis reachable again")
	}
}
