// Package retrybudget is the retry budget of the request journey in Redis:
// per route group × tier, the attempts after a request's first may be at
// most a share of the first attempts over a sliding window, with a floor per
// second, counted across every gateway instance (routing.RetryBudget).
//
// First attempts are on every request's path, so First never waits on the
// network: it adds to a per-instance pending count. A retry is decided by
// one Lua script on one hash (hash-tagged, one slot), in one round trip,
// which first adds this instance's pending first attempts, so a decision
// sees its own instance exactly and the others at most FlushEvery late (a
// background loop flushes pending counts that often). A healthy tier never
// runs the script on the request path.
//
// The window is ten buckets of window/10, as fields of the hash
// ("f<bucket>" first attempts, "r<bucket>" retries, timed by Redis TIME),
// pruned by the script as they slide out; the key expires two windows after
// its last write.
//
// When Redis is unreachable (refused, or slower than Timeout), decisions
// are made per instance over the same window of this instance's own counts;
// the transition is logged, Degraded reports it, verdicts say Local, and a
// probe every ProbeInterval brings Redis back.
package retrybudget

import (
	"context"
	"errors"
	"log/slog"
	"math"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"switchyard/routing"
	"switchyard/routing/config"
)

// buckets is the number of buckets a window is cut into.
const buckets = 10

// Options configure a Budget.
type Options struct {
	// Prefix of the Redis keys: "<Prefix>:rb:{g<group>:<tier>}:<bucket ms>".
	// It must not contain '{' or '}'.
	Prefix string
	// Timeout bounds one Redis call; default 50 ms.
	Timeout time.Duration
	// FlushEvery is how often pending first attempts are written; default 100 ms.
	FlushEvery time.Duration
	// ProbeInterval is how often a degraded Budget tries Redis; default 1 s.
	ProbeInterval time.Duration
	Logger        *slog.Logger
}

// Budget implements routing.RetryBudget. Close stops its background loop.
type Budget struct {
	rdb  redis.UniversalClient
	opts Options

	mu      sync.RWMutex
	entries map[routing.TierKey]*entry

	degraded  atomic.Bool
	fallbacks atomic.Uint64

	stop, done chan struct{}
	once       sync.Once
}

var _ routing.RetryBudget = (*Budget)(nil)

// entry is one group × tier as this instance sees it.
type entry struct {
	pending atomic.Int64 // first attempts not yet in Redis (nor in local)

	mu       sync.Mutex
	settings config.RBudget // as last passed in
	keys     []string
	local    window // this instance's own counts, for the fallback
}

// window is the per-instance bucketed window, timed by this instance.
type window struct {
	width   int64 // bucket width in ms
	bucket  [buckets]int64
	firsts  [buckets]int64
	retries [buckets]int64
}

// New returns a Budget and starts its background loop.
func New(rdb redis.UniversalClient, opts Options) *Budget {
	if strings.ContainsAny(opts.Prefix, "{}") {
		panic("retrybudget: Options.Prefix must not contain '{' or '}'")
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 50 * time.Millisecond
	}
	if opts.FlushEvery <= 0 {
		opts.FlushEvery = 100 * time.Millisecond
	}
	if opts.ProbeInterval <= 0 {
		opts.ProbeInterval = time.Second
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	b := &Budget{rdb: rdb, opts: opts, entries: map[routing.TierKey]*entry{}, stop: make(chan struct{}), done: make(chan struct{})}
	go b.loop()
	return b
}

// Close flushes what is pending (once) and stops the background loop.
func (b *Budget) Close() {
	b.once.Do(func() {
		close(b.stop)
		<-b.done
	})
}

// Degraded reports whether decisions are per instance (Redis unreachable).
func (b *Budget) Degraded() bool { return b.degraded.Load() }

// FallbackDecisions counts retry decisions made per instance.
func (b *Budget) FallbackDecisions() uint64 { return b.fallbacks.Load() }

func bucketMS(s config.RBudget) int64 { return max(s.Window.Milliseconds()/buckets, 10) }

func (b *Budget) key(k routing.TierKey, s config.RBudget) string {
	return b.opts.Prefix + ":rb:{g" + strconv.FormatInt(k.Group, 10) + ":" + string(k.Tier) + "}:" + strconv.FormatInt(bucketMS(s), 10)
}

func (b *Budget) entry(k routing.TierKey, s config.RBudget) *entry {
	b.mu.RLock()
	e := b.entries[k]
	b.mu.RUnlock()
	if e == nil {
		b.mu.Lock()
		if e = b.entries[k]; e == nil {
			e = &entry{}
			b.entries[k] = e
		}
		b.mu.Unlock()
	}
	e.mu.Lock()
	if e.settings != s || e.keys == nil {
		e.settings, e.keys = s, []string{b.key(k, s)}
		e.local = window{width: bucketMS(s)}
	}
	e.mu.Unlock()
	return e
}

// First counts one first attempt; no network call.
func (b *Budget) First(k routing.TierKey, s config.RBudget) {
	b.mu.RLock()
	e := b.entries[k]
	b.mu.RUnlock()
	if e == nil {
		e = b.entry(k, s)
	}
	e.pending.Add(1)
}

// Retry spends one retry when the budget allows it, in one round trip; with
// Redis unreachable, per instance.
func (b *Budget) Retry(ctx context.Context, k routing.TierKey, s config.RBudget) (routing.BudgetVerdict, error) {
	return b.decide(ctx, k, s, true)
}

// Peek is the budget's state as a retry would find it now, spending nothing
// (the Test route page).
func (b *Budget) Peek(ctx context.Context, k routing.TierKey, s config.RBudget) (routing.BudgetVerdict, error) {
	return b.decide(ctx, k, s, false)
}

func (b *Budget) decide(ctx context.Context, k routing.TierKey, s config.RBudget, spend bool) (routing.BudgetVerdict, error) {
	e := b.entry(k, s)
	n := e.pending.Swap(0)
	now := time.Now()
	e.mu.Lock()
	e.local.add(now, n, 0)
	e.mu.Unlock()
	if !b.degraded.Load() {
		v, err := b.run(ctx, e, s, n, spend)
		if err == nil {
			if v.Allowed && spend {
				e.mu.Lock()
				e.local.add(now, 0, 1)
				e.mu.Unlock()
			}
			return v, nil
		}
		if ctx.Err() != nil && !errors.Is(err, context.DeadlineExceeded) {
			return routing.BudgetVerdict{Allowed: true}, ctx.Err()
		}
		b.fail(err)
	}
	b.fallbacks.Add(1)
	e.mu.Lock()
	defer e.mu.Unlock()
	f, r := e.local.sums(now)
	v := verdict(s, f, r)
	v.Local = true
	if v.Allowed && spend {
		e.local.add(now, 0, 1)
	}
	if !spend {
		v.Allowed = r < v.Allowance
	}
	return v, nil
}

// allowance is how many retries a window with f first attempts allows.
func allowance(s config.RBudget, f int64) int64 {
	byShare := f * int64(s.Percent) / 100
	floor := int64(math.Floor(float64(s.MinPerS) * s.Window.Seconds()))
	return max(byShare, floor)
}

func verdict(s config.RBudget, f, r int64) routing.BudgetVerdict {
	a := allowance(s, f)
	return routing.BudgetVerdict{Allowed: r < a, Firsts: f, Retries: r, Allowance: a}
}

// script adds ARGV[3] first attempts to the current bucket, prunes buckets
// older than the window, sums the window and, when ARGV[5] is 1 and the
// retries are under the allowance, spends one retry. KEYS[1] is the hash;
// ARGV: bucket width ms, buckets, first attempts to add, TTL ms, spend,
// percent, floor per window. Returns {allowed, firsts, retries, allowance}
// (before the retry).
var script = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local width = tonumber(ARGV[1])
local cur = math.floor(now / width)
local oldest = cur - tonumber(ARGV[2]) + 1
local add = tonumber(ARGV[3])
if add > 0 then
  redis.call('HINCRBY', KEYS[1], 'f' .. cur, add)
end
local all = redis.call('HGETALL', KEYS[1])
local f, r = 0, 0
for i = 1, #all, 2 do
  local b = tonumber(string.sub(all[i], 2))
  if b == nil or b < oldest then
    redis.call('HDEL', KEYS[1], all[i])
  elseif string.sub(all[i], 1, 1) == 'f' then
    f = f + tonumber(all[i + 1])
  else
    r = r + tonumber(all[i + 1])
  end
end
local allow = math.max(math.floor(f * tonumber(ARGV[6]) / 100), tonumber(ARGV[7]))
local ok = 0
if r < allow then
  ok = 1
  if ARGV[5] == '1' then
    redis.call('HINCRBY', KEYS[1], 'r' .. cur, 1)
  end
end
if add > 0 or (ok == 1 and ARGV[5] == '1') then
  redis.call('PEXPIRE', KEYS[1], ARGV[4])
end
return {ok, f, r, allow}`)

func (b *Budget) args(s config.RBudget, add int64, spend bool) []any {
	sp := "0"
	if spend {
		sp = "1"
	}
	return []any{bucketMS(s), buckets, add, 2 * s.Window.Milliseconds(), sp, s.Percent, allowance(s, 0)}
}

func (b *Budget) run(ctx context.Context, e *entry, s config.RBudget, add int64, spend bool) (routing.BudgetVerdict, error) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), b.opts.Timeout)
	defer cancel()
	e.mu.Lock()
	keys := e.keys
	e.mu.Unlock()
	vals, err := script.Run(rctx, b.rdb, keys, b.args(s, add, spend)...).Int64Slice()
	if err != nil {
		return routing.BudgetVerdict{}, err
	}
	if len(vals) != 4 {
		return routing.BudgetVerdict{}, errors.New("retrybudget: unexpected script reply")
	}
	return routing.BudgetVerdict{Allowed: vals[0] == 1, Firsts: vals[1], Retries: vals[2], Allowance: vals[3]}, nil
}

// fail switches to per-instance decisions, logging the transition once.
func (b *Budget) fail(err error) {
	if !b.degraded.Swap(true) {
		b.opts.Logger.Warn("retrybudget: redis unavailable, retry budgets are counted per instance", slog.Any("err", err))
	}
}

// loop flushes pending first attempts every FlushEvery and, while degraded,
// probes Redis every ProbeInterval.
func (b *Budget) loop() {
	defer close(b.done)
	t := time.NewTicker(b.opts.FlushEvery)
	defer t.Stop()
	var lastProbe time.Time
	for {
		select {
		case <-b.stop:
			b.flush()
			return
		case <-t.C:
		}
		if b.degraded.Load() {
			if time.Since(lastProbe) < b.opts.ProbeInterval {
				b.flushLocal()
				continue
			}
			lastProbe = time.Now()
			ctx, cancel := context.WithTimeout(context.Background(), b.opts.Timeout)
			err := b.rdb.Ping(ctx).Err()
			cancel()
			if err != nil {
				b.flushLocal()
				continue
			}
			b.degraded.Store(false)
			b.opts.Logger.Info("retrybudget: redis is back, retry budgets are shared again")
		}
		b.flush()
	}
}

func (b *Budget) snapshot() []*entry {
	b.mu.RLock()
	defer b.mu.RUnlock()
	out := make([]*entry, 0, len(b.entries))
	for _, e := range b.entries {
		out = append(out, e)
	}
	return out
}

// flushLocal moves pending first attempts into the local windows only.
func (b *Budget) flushLocal() {
	now := time.Now()
	for _, e := range b.snapshot() {
		if n := e.pending.Swap(0); n > 0 {
			e.mu.Lock()
			e.local.add(now, n, 0)
			e.mu.Unlock()
		}
	}
}

// flush writes pending first attempts to Redis, in one pipeline.
func (b *Budget) flush() {
	type item struct {
		e *entry
		n int64
	}
	var items []item
	now := time.Now()
	for _, e := range b.snapshot() {
		if n := e.pending.Swap(0); n > 0 {
			e.mu.Lock()
			e.local.add(now, n, 0)
			e.mu.Unlock()
			items = append(items, item{e, n})
		}
	}
	if len(items) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), b.opts.Timeout)
	defer cancel()
	_, err := b.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, it := range items {
			it.e.mu.Lock()
			s, keys := it.e.settings, it.e.keys
			it.e.mu.Unlock()
			// Eval, not Run: inside a pipeline Run cannot fall back from
			// EVALSHA when a node does not have the script yet (a fresh
			// node, a failed-over replica), and the whole flush would fail.
			script.Eval(ctx, p, keys, b.args(s, it.n, false)...)
		}
		return nil
	})
	if err != nil {
		// The first attempts stay in the local window; Redis misses them.
		b.fail(err)
	}
}

// add counts firsts and retries in the bucket of now.
func (w *window) add(now time.Time, firsts, retries int64) {
	if firsts == 0 && retries == 0 {
		return
	}
	cur := now.UnixMilli() / w.width
	i := cur % buckets
	if w.bucket[i] != cur {
		w.bucket[i], w.firsts[i], w.retries[i] = cur, 0, 0
	}
	w.firsts[i] += firsts
	w.retries[i] += retries
}

// sums adds up the buckets still in the window.
func (w *window) sums(now time.Time) (firsts, retries int64) {
	cur := now.UnixMilli() / w.width
	for i := range buckets {
		if w.bucket[i] > cur-buckets {
			firsts += w.firsts[i]
			retries += w.retries[i]
		}
	}
	return firsts, retries
}
