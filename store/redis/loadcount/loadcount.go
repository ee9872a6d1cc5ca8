// Package loadcount keeps per-deployment in-flight counters in Redis, so N
// gateway instances enforce one max_concurrency and weigh deployments by
// their real load (protection: "Concurrency caps and weighted least-load",
// "Priority classes").
//
// Acquire is INCR, check against the cap, DECR on overflow — in one Lua
// script. Release is a Lua script that never takes a counter below zero.
// Counter keys carry a TTL that a single background goroutine refreshes
// while this instance holds slots, so a crashed instance's load expires.
// Batch callers may use only ceil(BatchShare × max) slots, so interactive
// callers always find headroom and batch traffic is shed first.
//
// When Redis is unreachable (refused, or slower than OpTimeout) the counters
// fall back to per-instance counting with the same caps; the transition is
// logged once and Degraded reports it until a background probe succeeds.
//
// The Redis client should be created with ContextTimeoutEnabled, or the
// per-operation timeout cannot cut a hung socket read short.
package loadcount

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// Class is a caller's priority class.
type Class uint8

// Priority classes: interactive callers are never starved by batch callers.
const (
	Interactive Class = iota
	Batch
)

func (c Class) String() string {
	if c == Batch {
		return "batch"
	}
	return "interactive"
}

// ErrFull is returned by Acquire when the deployment is at its cap for the
// caller's class.
var ErrFull = errors.New("loadcount: at max concurrency")

// Options configure Counters.
type Options struct {
	// Prefix of the Redis keys; a deployment's counter is
	// "<Prefix>:load:{<id>}" (hash-tagged per deployment).
	Prefix string
	// TTL of a counter key, refreshed every TTL/3 while slots are held.
	// Default 30 s.
	TTL time.Duration
	// InstanceCap is this instance's in-flight cap for AdmitInstance;
	// 0 means unlimited.
	InstanceCap int
	// BatchShare is the share of a cap batch callers may use. Default 0.8.
	BatchShare float64
	// InteractiveWait is how long an interactive caller waits for a slot
	// of a full deployment before ErrFull. Default 200 ms.
	InteractiveWait time.Duration
	// OpTimeout bounds one Redis operation on the request path. Default 50 ms.
	OpTimeout time.Duration
	// LoadRefresh is how often Load's cache is refreshed. Default 250 ms.
	LoadRefresh time.Duration
	Logger      *slog.Logger
}

// Counters are the in-flight counters of every deployment. Safe for
// concurrent use; Close stops the background goroutine.
type Counters struct {
	rdb   redis.UniversalClient
	opts  Options
	ttlMS any // TTL in milliseconds, boxed once for script calls

	mu   sync.RWMutex
	deps map[int64]*dep

	instance atomic.Int64 // AdmitInstance in-flight
	degraded atomic.Bool

	pmu     sync.Mutex
	pending []pendingRelease // Redis decrements still owed

	stop chan struct{}
	done chan struct{}
	once sync.Once
}

// dep is one deployment's local view.
type dep struct {
	id   int64
	key  string
	keys []string // {key}, for script calls

	inFlight  atomic.Int64 // slots held by this instance, every mode
	redisHeld atomic.Int64 // of which counted in Redis
	max       atomic.Int64 // as last passed to Acquire

	cached   atomic.Int64 // Redis counter as last seen
	cachedAt atomic.Int64 // unix nanos; 0 = never
	wanted   atomic.Int64 // unix nanos of the last Load

	waiters  atomic.Int32
	released chan struct{} // one wake-up per local release while waiters > 0
}

// observe records a counter value Redis just returned.
func (d *dep) observe(v int64) {
	d.cached.Store(v)
	d.cachedAt.Store(time.Now().UnixNano())
}

type pendingRelease struct {
	d  *dep
	at time.Time
}

const (
	modeUnlimited uint8 = iota
	modeRedis
	modeLocal
)

// firstPoll is how long a waiting interactive caller waits before its first
// retry; the wait doubles after each retry so waiters do not hammer Redis
// when a deployment is saturated. A local release wakes one waiter sooner.
const firstPoll = 10 * time.Millisecond

// probeEvery is how often a degraded Counters checks whether Redis is back.
const probeEvery = 500 * time.Millisecond

// wantedFor is how long after the last Load a deployment's cache is kept fresh.
const wantedFor = 10 * time.Second

// New returns Counters and starts their background goroutine.
func New(rdb redis.UniversalClient, opts Options) *Counters {
	if opts.TTL <= 0 {
		opts.TTL = 30 * time.Second
	}
	if opts.BatchShare <= 0 || opts.BatchShare > 1 {
		opts.BatchShare = 0.8
	}
	if opts.InteractiveWait <= 0 {
		opts.InteractiveWait = 200 * time.Millisecond
	}
	if opts.OpTimeout <= 0 {
		opts.OpTimeout = 50 * time.Millisecond
	}
	if opts.LoadRefresh <= 0 {
		opts.LoadRefresh = 250 * time.Millisecond
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if cl, ok := rdb.(*redis.Client); ok && !cl.Options().ContextTimeoutEnabled {
		opts.Logger.Warn("loadcount: redis client without ContextTimeoutEnabled; OpTimeout cannot cut a hung read short")
	}
	c := &Counters{
		rdb:   rdb,
		opts:  opts,
		ttlMS: opts.TTL.Milliseconds(),
		deps:  make(map[int64]*dep),
		stop:  make(chan struct{}),
		done:  make(chan struct{}),
	}
	go c.loop()
	return c
}

// Close stops the background goroutine after one last attempt to settle
// owed Redis releases. Slots still held are not released.
func (c *Counters) Close() {
	c.once.Do(func() {
		close(c.stop)
		<-c.done
	})
}

// Degraded reports whether Redis is unreachable and limits are per instance.
func (c *Counters) Degraded() bool { return c.degraded.Load() }

// Limit is the number of slots of a cap of max a class may use: all of it
// for interactive callers; ceil(share × max) for batch callers, but never
// all of a cap of two or more, so interactive callers keep headroom.
func Limit(maxSlots int, share float64, class Class) int {
	if class != Batch || maxSlots <= 1 {
		return maxSlots
	}
	n := int(math.Ceil(share * float64(maxSlots)))
	return max(1, min(n, maxSlots-1))
}

// EffectiveWeight is weight × free slots / max slots for weighted
// least-load selection. max <= 0 (unlimited) keeps weight; weight <= 0
// (parked) stays 0. It is floored at 1 so a full deployment is ordered last
// rather than dropped: when it is the only choice it is still tried.
func EffectiveWeight(weight, inFlight, maxSlots int) int {
	if weight <= 0 {
		return 0
	}
	if maxSlots <= 0 {
		return weight
	}
	free := min(max(maxSlots-inFlight, 0), maxSlots)
	return max(weight*free/maxSlots, 1)
}

func (c *Counters) key(id int64) string {
	return c.opts.Prefix + ":load:{" + strconv.FormatInt(id, 10) + "}"
}

func (c *Counters) dep(id int64) *dep {
	c.mu.RLock()
	d := c.deps[id]
	c.mu.RUnlock()
	if d != nil {
		return d
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if d = c.deps[id]; d == nil {
		k := c.key(id)
		d = &dep{id: id, key: k, keys: []string{k}, released: make(chan struct{}, 1)}
		c.deps[id] = d
	}
	return d
}

// Slot is one acquired in-flight slot. Release it exactly when the request
// ends; Release is idempotent, and the zero Slot's Release does nothing.
type Slot struct{ s *slot }

type slot struct {
	c    *Counters
	d    *dep
	mode uint8
	once sync.Once
}

// Release gives the slot back.
func (s Slot) Release() {
	if s.s != nil {
		s.s.once.Do(s.s.release)
	}
}

var (
	// acquireScript: INCR, check, DECR on overflow. ARGV[1] is the limit,
	// ARGV[2] the TTL in ms. Returns the new count, or 0 when full. A
	// counter that drifted below zero is reset.
	acquireScript = redis.NewScript(`
local v = redis.call('INCR', KEYS[1])
if v < 1 then
  redis.call('SET', KEYS[1], 1)
  v = 1
end
if v > tonumber(ARGV[1]) then
  redis.call('DECR', KEYS[1])
  return 0
end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return v`)
	// releaseScript decrements, never below zero: a counter at one or
	// less (or missing, e.g. expired) is deleted. Returns the new count.
	releaseScript = redis.NewScript(`
local v = tonumber(redis.call('GET', KEYS[1]) or '0') or 0
if v <= 1 then
  redis.call('DEL', KEYS[1])
  return 0
end
return redis.call('DECR', KEYS[1])`)
	// repairScript deletes a counter at or below zero and gives one that
	// lost its TTL a fresh one. Returns 1 when it repaired something.
	repairScript = redis.NewScript(`
local raw = redis.call('GET', KEYS[1])
if not raw then return 0 end
local v = tonumber(raw)
if v == nil or v <= 0 then
  redis.call('DEL', KEYS[1])
  return 1
end
if redis.call('PTTL', KEYS[1]) < 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
  return 1
end
return 0`)
)

// Acquire takes an in-flight slot of deployment id whose cap is max (<= 0:
// unlimited, no Redis call). A batch caller over its share gets ErrFull at
// once; an interactive caller finding the deployment full waits up to
// InteractiveWait for a slot, then gets ErrFull. A cancelled ctx returns
// its error and holds nothing.
func (c *Counters) Acquire(ctx context.Context, id int64, max int, class Class) (Slot, error) {
	if err := ctx.Err(); err != nil {
		return Slot{}, err
	}
	d := c.dep(id)
	d.max.Store(int64(max))
	if max <= 0 {
		d.inFlight.Add(1)
		return Slot{&slot{c: c, d: d, mode: modeUnlimited}}, nil
	}
	limit := Limit(max, c.opts.BatchShare, class)

	var deadline time.Time
	var timer *time.Timer
	poll := firstPoll
	for {
		s, ok := c.try(ctx, d, limit)
		if ok {
			if ctx.Err() != nil { // the caller left while we were acquiring
				s.Release()
				return Slot{}, ctx.Err()
			}
			return s, nil
		}
		if class == Batch {
			return Slot{}, ErrFull
		}
		now := time.Now()
		if deadline.IsZero() {
			deadline = now.Add(c.opts.InteractiveWait)
		}
		left := deadline.Sub(now)
		if left <= 0 {
			return Slot{}, ErrFull
		}
		if timer == nil {
			timer = time.NewTimer(min(left, poll))
			defer timer.Stop()
		} else {
			timer.Reset(min(left, poll))
		}
		poll *= 2
		d.waiters.Add(1)
		select {
		case <-ctx.Done():
			d.waiters.Add(-1)
			return Slot{}, ctx.Err()
		case <-d.released:
		case <-timer.C:
		}
		d.waiters.Add(-1)
	}
}

// try makes one attempt, in Redis unless degraded.
func (c *Counters) try(ctx context.Context, d *dep, limit int) (Slot, bool) {
	if !c.degraded.Load() {
		// Not cancelled by the caller mid-flight, so the outcome is known
		// unless Redis itself fails or times out.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.opts.OpTimeout)
		v, err := acquireScript.Run(rctx, c.rdb, d.keys, limit, c.ttlMS).Int64()
		cancel()
		if err == nil {
			if v == 0 {
				return Slot{}, false
			}
			d.inFlight.Add(1)
			d.redisHeld.Add(1)
			d.observe(v)
			return Slot{&slot{c: c, d: d, mode: modeRedis}}, true
		}
		if maybeExecuted(err) {
			// The increment may have happened: owe Redis a release.
			c.owe(d)
		}
		c.fail(err)
	}
	// Per-instance fallback with the same cap.
	for {
		n := d.inFlight.Load()
		if n >= int64(limit) {
			return Slot{}, false
		}
		if d.inFlight.CompareAndSwap(n, n+1) {
			return Slot{&slot{c: c, d: d, mode: modeLocal}}, true
		}
	}
}

func (s *slot) release() {
	d, c := s.d, s.c
	d.inFlight.Add(-1)
	if s.mode == modeRedis {
		d.redisHeld.Add(-1)
		if c.degraded.Load() {
			c.owe(d)
		} else {
			ctx, cancel := context.WithTimeout(context.Background(), c.opts.OpTimeout)
			v, err := releaseScript.Run(ctx, c.rdb, d.keys).Int64()
			cancel()
			if err != nil {
				c.owe(d)
				c.fail(err)
			} else {
				d.observe(v)
			}
		}
	}
	if d.waiters.Load() > 0 {
		select {
		case d.released <- struct{}{}:
		default:
		}
	}
}

// owe records a Redis release to retry once Redis answers again.
func (c *Counters) owe(d *dep) {
	c.pmu.Lock()
	c.pending = append(c.pending, pendingRelease{d: d, at: time.Now()})
	c.pmu.Unlock()
}

// maybeExecuted reports whether a failed script call may still have run.
func maybeExecuted(err error) bool {
	var op *net.OpError
	switch {
	case errors.As(err, &op) && op.Op == "dial",
		errors.Is(err, redis.ErrPoolTimeout), errors.Is(err, redis.ErrPoolExhausted),
		errors.Is(err, redis.ErrClosed), errors.Is(err, context.DeadlineExceeded),
		errors.Is(err, context.Canceled):
		return false
	}
	return true
}

// fail switches to per-instance limits, logging the transition once.
func (c *Counters) fail(err error) {
	if !c.degraded.Swap(true) {
		c.opts.Logger.Warn("loadcount: redis unavailable, enforcing concurrency caps per instance", slog.Any("err", err))
	}
}

// Load returns deployment id's in-flight count across instances and the max
// last passed to Acquire, from a cache refreshed in the background at most
// every LoadRefresh (for weighting; Acquire enforces the cap). When degraded
// it is this instance's count.
func (c *Counters) Load(id int64) (inFlight, max int) {
	d := c.dep(id)
	d.wanted.Store(time.Now().UnixNano())
	max = int(d.max.Load())
	local := d.inFlight.Load()
	if c.degraded.Load() || d.cachedAt.Load() == 0 {
		return int(local), max
	}
	// Redis never counts fewer than this instance holds there.
	return int(max64(d.cached.Load(), d.redisHeld.Load())), max
}

func max64(a, b int64) int64 {
	if a > b {
		return a
	}
	return b
}

// InFlight is this instance's held slots of deployment id, every mode.
func (c *Counters) InFlight(id int64) int { return int(c.dep(id).inFlight.Load()) }

// AdmitInstance is the instance-level saturation gate: it admits a request
// while this instance's in-flight count is under InstanceCap (batch
// requests only under their share of it). release must be called when the
// request ends; it is idempotent.
func (c *Counters) AdmitInstance(class Class) (release func(), ok bool) {
	limit := int64(Limit(c.opts.InstanceCap, c.opts.BatchShare, class))
	for {
		n := c.instance.Load()
		if limit > 0 && n >= limit {
			return nil, false
		}
		if c.instance.CompareAndSwap(n, n+1) {
			break
		}
	}
	var done atomic.Bool
	return func() {
		if done.CompareAndSwap(false, true) {
			c.instance.Add(-1)
		}
	}, true
}

// InstanceInFlight is the number of requests AdmitInstance has admitted and
// not yet released.
func (c *Counters) InstanceInFlight() int { return int(c.instance.Load()) }

// Repair is the worker's drift repair (run it under a lease): counters at
// or below zero are deleted and counters that lost their TTL get one back,
// so no counter can outlive its holders. Repairs are logged.
func (c *Counters) Repair(ctx context.Context) error {
	_, err := c.repair(ctx)
	return err
}

func (c *Counters) repair(ctx context.Context) (int, error) {
	keys, err := c.scan(ctx)
	if err != nil {
		return 0, err
	}
	repaired := 0
	for _, k := range keys {
		n, err := repairScript.Run(ctx, c.rdb, []string{k}, c.ttlMS).Int()
		if err != nil {
			return repaired, fmt.Errorf("loadcount: repair %s: %w", k, err)
		}
		repaired += n
	}
	if repaired > 0 {
		c.opts.Logger.Info("loadcount: repaired drifted counters", slog.Int("keys", repaired))
	}
	return repaired, nil
}

// Snapshot returns every deployment's in-flight count in Redis, for the
// console. If Redis fails it returns this instance's counts and the error.
func (c *Counters) Snapshot(ctx context.Context) (map[int64]int64, error) {
	out, err := c.snapshotRedis(ctx)
	if err == nil {
		return out, nil
	}
	out = make(map[int64]int64)
	c.mu.RLock()
	for id, d := range c.deps {
		if n := d.inFlight.Load(); n != 0 {
			out[id] = n
		}
	}
	c.mu.RUnlock()
	return out, err
}

func (c *Counters) snapshotRedis(ctx context.Context) (map[int64]int64, error) {
	keys, err := c.scan(ctx)
	if err != nil {
		return nil, err
	}
	out := make(map[int64]int64, len(keys))
	if len(keys) == 0 {
		return out, nil
	}
	cmds := make([]*redis.StringCmd, len(keys))
	_, err = c.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, k := range keys {
			cmds[i] = p.Get(ctx, k)
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("loadcount: snapshot: %w", err)
	}
	head := c.opts.Prefix + ":load:{"
	for i, k := range keys {
		v, err := cmds[i].Int64()
		if err != nil {
			continue
		}
		id, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimPrefix(k, head), "}"), 10, 64)
		if err != nil {
			continue
		}
		out[id] = v
	}
	return out, nil
}

func (c *Counters) scan(ctx context.Context) ([]string, error) {
	pattern := globEscape(c.opts.Prefix) + ":load:{*}"
	// On Redis Cluster each counter lives on the master of its own slot and
	// SCAN walks one node: walk every master.
	if cc, ok := c.rdb.(*redis.ClusterClient); ok {
		var mu sync.Mutex
		var keys []string
		err := cc.ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error {
			ks, err := scanNode(ctx, n, pattern)
			mu.Lock()
			keys = append(keys, ks...)
			mu.Unlock()
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("loadcount: scan counters: %w", err)
		}
		return keys, nil
	}
	keys, err := scanNode(ctx, c.rdb, pattern)
	if err != nil {
		return nil, fmt.Errorf("loadcount: scan counters: %w", err)
	}
	return keys, nil
}

func scanNode(ctx context.Context, rdb redis.Cmdable, pattern string) ([]string, error) {
	var keys []string
	iter := rdb.Scan(ctx, 0, pattern, 500).Iterator()
	for iter.Next(ctx) {
		keys = append(keys, iter.Val())
	}
	return keys, iter.Err()
}

func globEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`*?[]\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// loop is the one background goroutine: it refreshes Load's cache and the
// TTL of counters this instance holds, settles owed releases, and probes
// Redis while degraded.
func (c *Counters) loop() {
	defer close(c.done)
	t := time.NewTicker(max(min(c.opts.LoadRefresh, c.opts.TTL/3, probeEvery), time.Millisecond))
	defer t.Stop()
	var lastTTL, lastProbe time.Time
	for {
		select {
		case <-c.stop:
			if !c.degraded.Load() {
				c.settle()
			}
			return
		case <-t.C:
		}
		now := time.Now()
		if c.degraded.Load() {
			if now.Sub(lastProbe) < probeEvery {
				continue
			}
			lastProbe = now
			ctx, cancel := context.WithTimeout(context.Background(), c.opts.OpTimeout)
			err := c.rdb.Ping(ctx).Err()
			cancel()
			if err != nil {
				continue
			}
			c.degraded.Store(false)
			c.opts.Logger.Info("loadcount: redis available again, concurrency caps are shared")
			lastTTL = time.Time{} // refresh TTLs at once
		}
		c.settle()
		if now.Sub(lastTTL) >= c.opts.TTL/3 {
			lastTTL = now
			c.refreshTTL()
		}
		c.refreshCache(now)
	}
}

// settle retries owed releases. A release owed for longer than TTL is
// dropped: the counter has expired meanwhile (nobody refreshed it for us),
// and decrementing a re-created one would undercount.
func (c *Counters) settle() {
	c.pmu.Lock()
	owed := c.pending
	c.pending = nil
	c.pmu.Unlock()
	if len(owed) == 0 {
		return
	}
	var keep []pendingRelease
	for i, p := range owed {
		if time.Since(p.at) > c.opts.TTL {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), c.opts.OpTimeout)
		err := releaseScript.Run(ctx, c.rdb, p.d.keys).Err()
		cancel()
		if err != nil {
			keep = append(keep, owed[i:]...)
			c.fail(err)
			break
		}
	}
	if len(keep) > 0 {
		c.pmu.Lock()
		c.pending = append(keep, c.pending...)
		c.pmu.Unlock()
	}
}

func (c *Counters) held() []*dep {
	c.mu.RLock()
	defer c.mu.RUnlock()
	var out []*dep
	for _, d := range c.deps {
		if d.redisHeld.Load() > 0 {
			out = append(out, d)
		}
	}
	return out
}

func (c *Counters) refreshTTL() {
	ds := c.held()
	if len(ds) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*c.opts.OpTimeout)
	defer cancel()
	_, err := c.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, d := range ds {
			p.PExpire(ctx, d.key, c.opts.TTL)
		}
		return nil
	})
	if err != nil {
		c.fail(err)
	}
}

func (c *Counters) refreshCache(now time.Time) {
	c.mu.RLock()
	var ds []*dep
	for _, d := range c.deps {
		if now.UnixNano()-d.wanted.Load() < int64(wantedFor) {
			ds = append(ds, d)
		}
	}
	c.mu.RUnlock()
	if len(ds) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*c.opts.OpTimeout)
	defer cancel()
	cmds := make([]*redis.StringCmd, len(ds))
	_, err := c.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, d := range ds {
			cmds[i] = p.Get(ctx, d.key)
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		c.fail(err)
		return
	}
	for i, d := range ds {
		v, err := cmds[i].Int64()
		if err != nil {
			v = 0 // missing: nobody holds a slot
		}
		d.cached.Store(v)
		d.cachedAt.Store(now.UnixNano())
	}
}
