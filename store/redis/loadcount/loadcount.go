// Package loadcount keeps per-deployment in-flight counters in Redis, so N
// gateway instances enforce one max_concurrency and one max_inflight_tokens,
// and weigh deployments by their real load (protection: "Concurrency caps
// and weighted least-load", "Token-weighted load", "Priority classes").
//
// A deployment has two counters under one hash tag, so one Lua script reads
// and changes both in one round trip (and, on Redis Cluster, on one node):
// "<prefix>:load:{<id>}" counts slots and "<prefix>:load:{<id>}:tokens" the
// estimated tokens (prompt + expected output) of the requests holding them.
// Acquire checks both caps and takes both, or neither. Release never takes a
// counter below zero and deletes both when the last slot goes; tokens left
// over while no slot is held are drift and count as zero. Both keys carry
// the same TTL, refreshed by a single background goroutine while this
// instance holds slots, so a crashed instance's load expires.
//
// Acquire never waits: a full deployment answers ErrFull (slots) or
// ErrTokensFull at once, and the caller's priority queue decides who tries
// again when (routing/queue). So that the queue can be fair across
// instances, a refused Acquire records this instance's demand for the
// deployment ("<prefix>:load:{<id>}:waiting", instance → last refusal), and
// a release reports whether other instances are waiting for it (OnRelease).
//
// Every class counts alike here: who goes first at capacity is the priority
// queues' decision (10:3:1), not a share of the cap held back.
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
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// ErrFull is returned by Acquire when every slot of the deployment is taken.
var ErrFull = errors.New("loadcount: at max concurrency")

// ErrTokensFull is returned by Acquire when the request's estimated tokens
// do not fit under the deployment's in-flight token cap.
var ErrTokensFull = errors.New("loadcount: at max in-flight tokens")

// Options configure Counters.
type Options struct {
	// Prefix of the Redis keys; a deployment's counters are
	// "<Prefix>:load:{<id>}" and "<Prefix>:load:{<id>}:tokens"
	// (hash-tagged per deployment).
	Prefix string
	// TTL of a counter key, refreshed every TTL/3 while slots are held.
	// Default 30 s.
	TTL time.Duration
	// OpTimeout bounds one Redis operation on the request path. Default 50 ms.
	OpTimeout time.Duration
	// LoadRefresh is how often Load's cache is refreshed. Default 250 ms.
	LoadRefresh time.Duration
	// InstanceID names this instance in the demand record (default random).
	InstanceID string
	// DemandWindow is how long a refused Acquire counts as this instance
	// waiting for the deployment. Default 250 ms; waiters re-poll far more
	// often than that.
	DemandWindow time.Duration
	// OnRelease, when set, is called after a slot of a capped deployment is
	// released; othersWaiting reports that another instance was refused
	// that deployment within DemandWindow (always false when degraded).
	OnRelease func(id int64, othersWaiting bool)
	Logger    *slog.Logger
}

// Counters are the in-flight counters of every deployment. Safe for
// concurrent use; Close stops the background goroutine.
type Counters struct {
	rdb      redis.UniversalClient
	opts     Options
	ttlMS    any // TTL in milliseconds, boxed once for script calls
	demandMS any

	mu   sync.RWMutex
	deps map[int64]*dep

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
	keys []string // {slots, tokens, waiting}, for script calls

	inFlight    atomic.Int64 // slots held by this instance, every mode
	redisHeld   atomic.Int64 // of which counted in Redis
	localTokens atomic.Int64 // tokens of the slots held in local mode
	redisTokens atomic.Int64 // tokens of the slots counted in Redis

	cached       atomic.Int64 // Redis slot counter as last seen
	cachedTokens atomic.Int64 // Redis token counter as last seen
	cachedAt     atomic.Int64 // unix nanos; 0 = never
	wanted       atomic.Int64 // unix nanos of the last Load

	lmu sync.Mutex // serialises local-mode admission (two counters)

	releaseUncapped func() // Take's release of an uncapped slot, made once
}

// observe records counter values Redis just returned.
func (d *dep) observe(slots, tokens int64) {
	d.cached.Store(slots)
	d.cachedTokens.Store(tokens)
	d.cachedAt.Store(time.Now().UnixNano())
}

type pendingRelease struct {
	d      *dep
	tokens int64
	at     time.Time
}

const (
	modeUnlimited uint8 = iota
	modeRedis
	modeLocal
)

// probeEvery is how often a degraded Counters checks whether Redis is back.
const probeEvery = 500 * time.Millisecond

// wantedFor is how long after the last Load a deployment's cache is kept fresh.
const wantedFor = 10 * time.Second

// New returns Counters and starts their background goroutine.
func New(rdb redis.UniversalClient, opts Options) *Counters {
	if opts.TTL <= 0 {
		opts.TTL = 30 * time.Second
	}
	if opts.OpTimeout <= 0 {
		opts.OpTimeout = 50 * time.Millisecond
	}
	if opts.LoadRefresh <= 0 {
		opts.LoadRefresh = 250 * time.Millisecond
	}
	if opts.DemandWindow <= 0 {
		opts.DemandWindow = 250 * time.Millisecond
	}
	if opts.InstanceID == "" {
		b := make([]byte, 6)
		_, _ = rand.Read(b)
		opts.InstanceID = hex.EncodeToString(b)
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if cl, ok := rdb.(*redis.Client); ok && !cl.Options().ContextTimeoutEnabled {
		opts.Logger.Warn("loadcount: redis client without ContextTimeoutEnabled; OpTimeout cannot cut a hung read short")
	}
	c := &Counters{
		rdb:      rdb,
		opts:     opts,
		ttlMS:    opts.TTL.Milliseconds(),
		demandMS: opts.DemandWindow.Milliseconds(),
		deps:     make(map[int64]*dep),
		stop:     make(chan struct{}),
		done:     make(chan struct{}),
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
		d = &dep{id: id, keys: []string{k, k + ":tokens", k + ":waiting"}}
		d.releaseUncapped = func() { d.inFlight.Add(-1) }
		c.deps[id] = d
	}
	return d
}

// Slot is one acquired in-flight slot. Release it exactly when the request
// ends; Release is idempotent, and the zero Slot's Release does nothing.
type Slot struct{ s *slot }

type slot struct {
	c      *Counters
	d      *dep
	mode   uint8
	tokens int64 // counted with the slot (0 when the deployment has no token cap)
	once   sync.Once
}

// Release gives the slot back.
func (s Slot) Release() {
	if s.s != nil {
		s.s.once.Do(s.s.release)
	}
}

var (
	// acquireScript checks and takes a slot and the request's tokens, or
	// neither. KEYS: slots, tokens, waiting. ARGV[1] is the slot limit and
	// ARGV[2] the token limit (0: none), ARGV[3] the request's tokens,
	// ARGV[4] the TTL in ms, ARGV[5] this instance. A deployment with no
	// slot held admits a request of any size (tokens left with no slot are
	// drift). Returns {1, slots, tokens} when taken; {0, ...} when the slots
	// are full and {-1, ...} when the tokens do not fit, after recording
	// this instance's demand (Redis time, ms).
	acquireScript = redis.NewScript(`
local n = tonumber(redis.call('GET', KEYS[1]) or '0') or 0
if n < 0 then n = 0 end
local t = 0
if n > 0 then t = tonumber(redis.call('GET', KEYS[2]) or '0') or 0 end
if t < 0 then t = 0 end
local ls, lt, est = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local code = 1
if ls > 0 and n >= ls then
  code = 0
elseif lt > 0 and n > 0 and t + est > lt then
  code = -1
end
if code < 1 then
  local now = redis.call('TIME')
  redis.call('ZADD', KEYS[3], tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000), ARGV[5])
  redis.call('PEXPIRE', KEYS[3], ARGV[4])
  return {code, n, t}
end
n = n + 1
t = t + est
redis.call('SET', KEYS[1], n, 'PX', ARGV[4])
if t > 0 then
  redis.call('SET', KEYS[2], t, 'PX', ARGV[4])
else
  redis.call('DEL', KEYS[2])
end
return {1, n, t}`)
	// releaseScript gives back a slot and its tokens (ARGV[1]), never below
	// zero: the last slot (or a missing counter, e.g. expired) deletes both
	// counters. It then drops demand older than ARGV[3] ms and returns
	// {slots, tokens, other instances waiting} (ARGV[2] is this instance).
	releaseScript = redis.NewScript(`
local n = tonumber(redis.call('GET', KEYS[1]) or '0') or 0
local t = 0
if n <= 1 then
  redis.call('DEL', KEYS[1], KEYS[2])
  n = 0
else
  n = redis.call('DECR', KEYS[1])
  t = redis.call('DECRBY', KEYS[2], ARGV[1])
  if t <= 0 then
    redis.call('DEL', KEYS[2])
    t = 0
  end
end
local others = 0
if redis.call('EXISTS', KEYS[3]) == 1 then
  local now = redis.call('TIME')
  local ms = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)
  redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', ms - tonumber(ARGV[3]))
  others = redis.call('ZCARD', KEYS[3])
  if redis.call('ZSCORE', KEYS[3], ARGV[2]) then others = others - 1 end
end
return {n, t, others}`)
	// repairScript deletes a slot counter at or below zero (and its token
	// counter), and gives counters that lost their TTL a fresh one.
	// Returns 1 when it repaired something.
	repairScript = redis.NewScript(`
local raw = redis.call('GET', KEYS[1])
if not raw then return 0 end
local v = tonumber(raw)
if v == nil or v <= 0 then
  redis.call('DEL', KEYS[1], KEYS[2])
  return 1
end
local r = 0
if redis.call('PTTL', KEYS[1]) < 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
  r = 1
end
if redis.call('PTTL', KEYS[2]) == -1 then
  redis.call('PEXPIRE', KEYS[2], ARGV[1])
  r = 1
end
return r`)
)

// Want is what one request asks of a deployment.
type Want struct {
	ID        int64
	MaxSlots  int   // max_concurrency; 0 is unlimited
	MaxTokens int64 // max_inflight_tokens; 0 is unlimited
	// Tokens is the request's estimate (prompt + expected output), counted
	// against MaxTokens while the slot is held; ignored without a token cap.
	Tokens int64
}

// Acquire takes an in-flight slot of deployment w.ID, and w.Tokens of its
// token cap, without waiting. An uncapped deployment (both caps 0) makes no
// Redis call. At capacity it returns ErrFull or ErrTokensFull at once; a
// cancelled ctx returns its error and holds nothing.
func (c *Counters) Acquire(ctx context.Context, w Want) (Slot, error) {
	if err := ctx.Err(); err != nil {
		return Slot{}, err
	}
	d := c.dep(w.ID)
	if w.MaxSlots <= 0 && w.MaxTokens <= 0 {
		d.inFlight.Add(1)
		return Slot{&slot{c: c, d: d, mode: modeUnlimited}}, nil
	}
	tokens := max(w.Tokens, 0)
	if w.MaxTokens <= 0 {
		tokens = 0
	}
	s, err := c.try(ctx, d, max(w.MaxSlots, 0), max(w.MaxTokens, 0), tokens)
	if err == nil && ctx.Err() != nil { // the caller left while we were acquiring
		s.Release()
		return Slot{}, ctx.Err()
	}
	return s, err
}

// Take is Acquire for a caller that calls release exactly once (the
// router's contract): an uncapped deployment's slot is then only its
// in-flight count and one release function made per deployment, with no
// allocation per request. A capped one is Acquire's slot.
func (c *Counters) Take(ctx context.Context, w Want) (release func(), err error) {
	if w.MaxSlots <= 0 && w.MaxTokens <= 0 {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		d := c.dep(w.ID)
		d.inFlight.Add(1)
		return d.releaseUncapped, nil
	}
	s, err := c.Acquire(ctx, w)
	if err != nil {
		return nil, err
	}
	return s.Release, nil
}

// try makes one attempt, in Redis unless degraded.
func (c *Counters) try(ctx context.Context, d *dep, slots int, maxTokens, tokens int64) (Slot, error) {
	if !c.degraded.Load() {
		// Not cancelled by the caller mid-flight, so the outcome is known
		// unless Redis itself fails or times out.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.opts.OpTimeout)
		res, err := acquireScript.Run(rctx, c.rdb, d.keys, slots, maxTokens, tokens, c.ttlMS, c.opts.InstanceID).Int64Slice()
		cancel()
		if err == nil && len(res) == 3 {
			d.observe(res[1], res[2])
			switch res[0] {
			case 0:
				return Slot{}, ErrFull
			case -1:
				return Slot{}, ErrTokensFull
			}
			d.inFlight.Add(1)
			d.redisHeld.Add(1)
			d.redisTokens.Add(tokens)
			return Slot{&slot{c: c, d: d, mode: modeRedis, tokens: tokens}}, nil
		}
		if err == nil {
			err = fmt.Errorf("loadcount: acquire script answered %v", res)
		}
		if maybeExecuted(err) {
			// The increment may have happened: owe Redis a release.
			c.owe(d, tokens)
		}
		c.fail(err)
	}
	// Per-instance fallback with the same caps.
	d.lmu.Lock()
	defer d.lmu.Unlock()
	n, t := d.inFlight.Load(), d.localTokens.Load()+d.redisTokens.Load()
	switch {
	case slots > 0 && n >= int64(slots):
		return Slot{}, ErrFull
	case maxTokens > 0 && n > 0 && t+tokens > maxTokens:
		return Slot{}, ErrTokensFull
	}
	d.inFlight.Add(1)
	d.localTokens.Add(tokens)
	return Slot{&slot{c: c, d: d, mode: modeLocal, tokens: tokens}}, nil
}

func (s *slot) release() {
	d, c := s.d, s.c
	others := false
	switch s.mode {
	case modeRedis:
		d.inFlight.Add(-1)
		d.redisHeld.Add(-1)
		d.redisTokens.Add(-s.tokens)
		if c.degraded.Load() {
			c.owe(d, s.tokens)
		} else {
			ctx, cancel := context.WithTimeout(context.Background(), c.opts.OpTimeout)
			res, err := releaseScript.Run(ctx, c.rdb, d.keys, s.tokens, c.opts.InstanceID, c.demandMS).Int64Slice()
			cancel()
			if err != nil || len(res) != 3 {
				c.owe(d, s.tokens)
				if err != nil {
					c.fail(err)
				}
			} else {
				d.observe(res[0], res[1])
				others = res[2] > 0
			}
		}
	case modeLocal:
		d.lmu.Lock()
		d.inFlight.Add(-1)
		d.localTokens.Add(-s.tokens)
		d.lmu.Unlock()
	default:
		d.inFlight.Add(-1)
		return // nobody waits for an uncapped deployment
	}
	if c.opts.OnRelease != nil {
		c.opts.OnRelease(d.id, others)
	}
}

// owe records a Redis release to retry once Redis answers again.
func (c *Counters) owe(d *dep, tokens int64) {
	c.pmu.Lock()
	c.pending = append(c.pending, pendingRelease{d: d, tokens: tokens, at: time.Now()})
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

// Load returns deployment id's in-flight slots and estimated tokens across
// instances, from a cache refreshed in the background at most every
// LoadRefresh (for weighting; Acquire enforces the caps). When degraded it
// is this instance's count. Tokens are counted only for a deployment with a
// token cap.
func (c *Counters) Load(id int64) (slots int, tokens int64) {
	d := c.dep(id)
	d.wanted.Store(time.Now().UnixNano())
	if c.degraded.Load() || d.cachedAt.Load() == 0 {
		return int(d.inFlight.Load()), d.localTokens.Load() + d.redisTokens.Load()
	}
	// Redis never counts fewer than this instance holds there.
	return int(max(d.cached.Load(), d.redisHeld.Load())), max(d.cachedTokens.Load(), d.redisTokens.Load())
}

// InFlight is this instance's held slots of deployment id, every mode.
func (c *Counters) InFlight(id int64) int { return int(c.dep(id).inFlight.Load()) }

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
		n, err := repairScript.Run(ctx, c.rdb, []string{k, k + ":tokens"}, c.ttlMS).Int()
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
		err := releaseScript.Run(ctx, c.rdb, p.d.keys, p.tokens, c.opts.InstanceID, c.demandMS).Err()
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
			p.PExpire(ctx, d.keys[0], c.opts.TTL)
			p.PExpire(ctx, d.keys[1], c.opts.TTL)
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
	cmds := make([]*redis.SliceCmd, len(ds))
	_, err := c.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, d := range ds {
			cmds[i] = p.MGet(ctx, d.keys[0], d.keys[1]) // one hash slot
		}
		return nil
	})
	if err != nil {
		c.fail(err)
		return
	}
	for i, d := range ds {
		vals := cmds[i].Val()
		var slots, tokens int64 // missing: nobody holds a slot
		if len(vals) == 2 {
			slots, tokens = parseCount(vals[0]), parseCount(vals[1])
		}
		if slots <= 0 {
			tokens = 0
		}
		d.cached.Store(slots)
		d.cachedTokens.Store(tokens)
		d.cachedAt.Store(now.UnixNano())
	}
}

func parseCount(v any) int64 {
	s, ok := v.(string)
	if !ok {
		return 0
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0
	}
	return n
}
