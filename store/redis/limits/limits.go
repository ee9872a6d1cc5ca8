// Package limits enforces a caller's limits per tier — requests per minute,
// tokens per minute, a daily token quota — and its monthly budget across all
// tiers. The limits are shared by every gateway instance through Redis: all
// checks of one request run in one Lua script, so they are atomic (if any
// check rejects, nothing is spent), and the limit operations of concurrent
// requests share pipelines, one caller's as one script run, a settlement
// riding the next check (coalesce.go).
//
// Rates use GCRA with go-redis/redis_rate semantics, timed by Redis TIME so
// skewed instance clocks do not matter. Token limits are reserved with the
// caller's estimate at Check and settled with the actual usage afterwards.
//
// When Redis is unreachable (refused, or not answering within Options.Timeout)
// the Limiter keeps serving with per-instance limits of the same semantics,
// says so (Decision.Local, Degraded, a log line per transition) and probes
// Redis at most once per Options.ProbeInterval until it answers again. Daily
// and monthly counters spent meanwhile are replayed into Redis on recovery.
package limits

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"switchyard/routing/limit"

	"github.com/redis/go-redis/v9"
)

// period is the window of RPM and TPM.
const period = time.Minute

// dayTTL is how long a daily counter lives after the write that created it
// (or reset it to 0).
const dayTTL = 48 * time.Hour

// The journey's vocabulary of limits (see routing/limit).
type (
	Reason      = limit.Reason
	Limits      = limit.Limits
	Request     = limit.Request
	Window      = limit.Window
	Decision    = limit.Decision
	Reservation = limit.Reservation
)

// Rejection reasons and the invalid-input error (see routing/limit).
const (
	ReasonNone           = limit.ReasonNone
	ReasonRateLimited    = limit.ReasonRateLimited
	ReasonQuotaExceeded  = limit.ReasonQuotaExceeded
	ReasonBudgetExceeded = limit.ReasonBudgetExceeded
)

// ErrInvalidRequest reports a negative limit or estimate.
var ErrInvalidRequest = limit.ErrInvalidRequest

// Usage is a caller's spend as the console shows it. Counters of unlimited
// quotas and budgets are not kept and read 0.
type Usage struct {
	DailyTokens      int64
	MonthSpentMicros int64
	Local            bool // read from the per-instance fallback
}

// Options configure a Limiter.
type Options struct {
	// Prefix of every Redis key; default "switchyard:limits". It must not
	// contain '{' or '}' (keys carry a per-caller hash tag).
	Prefix string
	// Location decides local midnight and the month; default UTC.
	Location *time.Location
	// Timeout bounds every Redis call; default 50ms. Give the client
	// ContextTimeoutEnabled so a hung connection is released at once too.
	Timeout time.Duration
	// ProbeInterval is how often a degraded Limiter tries Redis; default 1s.
	ProbeInterval time.Duration
	Logger        *slog.Logger
	// Clock picks the local day and month (and the quota/budget reset
	// times) only; rates are timed by Redis TIME. Default time.Now.
	Clock func() time.Time
	// Exact decides every request in Redis: no leased slices (lease.go).
	Exact bool
}

// Limiter checks and settles limits. It is safe for concurrent use.
type Limiter struct {
	rdb           redis.UniversalClient
	ctxAware      bool // the client bounds socket I/O by the context
	prefix        string
	loc           *time.Location
	timeout       time.Duration
	probeInterval time.Duration
	log           *slog.Logger
	clock         func() time.Time
	cal           atomic.Pointer[calendar]
	kmu           sync.RWMutex
	kcache        map[keyID]keySet

	born        time.Time
	degraded    atomic.Bool
	lastAttempt atomic.Int64 // since born, of the last Redis attempt while degraded
	fallbacks   atomic.Uint64
	inRedis     atomic.Uint64
	flushing    atomic.Bool
	local       *localStore
	co          *coalescer
	bg          *background // slice refreshes and lingering settlements
	exact       bool
	leases      leaseBook
}

// New returns a Limiter on rdb. It panics if opts.Prefix contains a brace.
func New(rdb redis.UniversalClient, opts Options) *Limiter {
	if opts.Prefix == "" {
		opts.Prefix = "switchyard:limits"
	}
	if strings.ContainsAny(opts.Prefix, "{}") {
		panic("limits: Options.Prefix must not contain '{' or '}'")
	}
	if opts.Location == nil {
		opts.Location = time.UTC
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 50 * time.Millisecond
	}
	if opts.ProbeInterval <= 0 {
		opts.ProbeInterval = time.Second
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Clock == nil {
		opts.Clock = time.Now
	}
	ctxAware := honoursContext(rdb)
	l := &Limiter{
		rdb:           rdb,
		ctxAware:      ctxAware,
		prefix:        opts.Prefix,
		loc:           opts.Location,
		timeout:       opts.Timeout,
		probeInterval: opts.ProbeInterval,
		log:           opts.Logger,
		clock:         opts.Clock,
		born:          time.Now(),
		local:         newLocalStore(time.Now),
		exact:         opts.Exact,
	}
	l.bg = newBackground()
	l.co = newCoalescer(rdb, ctxAware, opts.Timeout, l.settled, l.bg)
	return l
}

// honoursContext reports whether the client's socket reads stop at the
// context's deadline; without it a call to a hung Redis is abandoned by a
// timer instead.
func honoursContext(rdb redis.UniversalClient) bool {
	switch c := rdb.(type) {
	case *redis.Client:
		return c.Options().ContextTimeoutEnabled
	case *redis.ClusterClient:
		return c.Options().ContextTimeoutEnabled
	case *redis.Ring:
		return c.Options().ContextTimeoutEnabled
	}
	return false
}

// Degraded reports whether the Limiter is deciding locally because Redis is
// unreachable.
func (l *Limiter) Degraded() bool { return l.degraded.Load() }

// FallbackDecisions counts decisions made by the per-instance fallback.
func (l *Limiter) FallbackDecisions() uint64 { return l.fallbacks.Load() }

// RedisDecisions counts checks decided in Redis.
func (l *Limiter) RedisDecisions() uint64 { return l.inRedis.Load() }

// Check decides whether req may proceed and, if so, spends its share of every
// limit: one request of RPM, the estimate of TPM and of the daily quota. The
// budget is only checked (cost is unknown beforehand). It fails fast and
// never waits for a limit. The error is non-nil only for an invalid request
// or when ctx ended; an unreachable Redis yields a local decision instead.
func (l *Limiter) Check(ctx context.Context, req Request) (Decision, error) {
	return l.check(ctx, req, false)
}

// Peek returns the decision Check would make now — windows as they would be
// after the request — spending nothing and reserving nothing (the Test route
// page).
func (l *Limiter) Peek(ctx context.Context, req Request) (Decision, error) {
	return l.check(ctx, req, true)
}

func (l *Limiter) check(ctx context.Context, req Request, dry bool) (Decision, error) {
	if err := req.Validate(); err != nil {
		return Decision{}, err
	}
	lim := req.Limits.WithDefaults()
	if lim.Unlimited() {
		return Decision{Allowed: true}, nil
	}
	cal := l.calendar()
	k := l.keys(req.CallerID, req.Tier, cal)
	sliced := !dry && !l.exact && leasable(lim, req.EstimatedTokens)
	if sliced {
		if d, ok := l.fromLease(req, lim, cal, k); ok {
			return d, nil
		}
	}
	if l.tryRedis() {
		ask := leaseAsk{peek: dry}
		var ls *lease
		if sliced {
			ls, ask.reqs, ask.toks, ask.lease = l.exactWants(req, lim)
		}
		out, err := l.checkRedis(ctx, k, req.CallerID, lim, req.EstimatedTokens, cal, ask)
		if err == nil {
			l.up()
			if !dry {
				l.inRedis.Add(1)
			}
			if ask.lease {
				l.granted(ls, lim, cal, k, out)
				out = out.unleased(lim)
			}
			return l.decide(req, lim, cal, out, false, dry), nil
		}
		if ask.lease {
			ls.askFailed()
		}
		if ctx.Err() != nil {
			return Decision{}, fmt.Errorf("limits: check caller %d: %w", req.CallerID, ctx.Err())
		}
		l.down(err)
	}
	out := l.local.check(k, lim, req.EstimatedTokens, dry)
	l.fallbacks.Add(1)
	return l.decide(req, lim, cal, out, true, dry), nil
}

// outcome is what the script (or the local store) reports: which checks
// failed (bits 1 RPM, 2 TPM, 4 daily quota, 8 budget) and the state of each
// limit.
type outcome struct {
	failed     int64
	rpm, tpm   gcraView
	used       int64 // daily tokens used, after the reservation if admitted
	spent      int64 // month spent
	gotR, gotT int64 // a lease's grant (lease.go)
}

// leaseAsk is what a check in Redis asks for beside its request.
type leaseAsk struct {
	peek       bool  // spend nothing
	lease      bool  // the 'l' operation: grant a slice too
	refresh    bool  // a lease with no request of its own
	reqs, toks int64 // the slice wanted
}

type gcraView struct {
	remaining    int64
	retry, reset time.Duration
}

const (
	failRPM    = 1
	failTPM    = 2
	failQuota  = 4
	failBudget = 8
)

func (l *Limiter) decide(req Request, lim Limits, cal *calendar, out outcome, local, dry bool) Decision {
	d := Decision{Local: local}
	now := l.clock()
	if lim.RPM > 0 {
		d.Requests = Window{Limit: lim.RPM, Remaining: out.rpm.remaining, Reset: out.rpm.reset}
	}
	if lim.TPM > 0 {
		d.Tokens = Window{Limit: lim.TPM, Remaining: out.tpm.remaining, Reset: out.tpm.reset}
	}
	if out.failed == 0 {
		d.Allowed = true
		if dry {
			return d // nothing was reserved
		}
		d.Reservation = Reservation{
			CallerID: req.CallerID,
			Tier:     req.Tier,
			Tokens:   req.EstimatedTokens,
			TPM:      lim.TPM,
			Day:      cal.day,
			Daily:    lim.DailyTokens > 0,
			Month:    cal.month,
			MonthTTL: cal.monthTTL(now),
			Budget:   lim.MonthlyBudgetMicros > 0,
			Local:    local,
		}
		return d
	}
	consider := func(bit int64, r Reason, k limit.Kind, value int64, wait time.Duration) {
		if out.failed&bit != 0 && (d.Reason == ReasonNone || wait > d.RetryAfter) {
			d.Reason, d.Limit, d.Value, d.RetryAfter = r, k, value, wait
		}
	}
	consider(failRPM, ReasonRateLimited, limit.KindRPM, lim.RPM, out.rpm.retry)
	consider(failTPM, ReasonRateLimited, limit.KindTPM, lim.TPM, out.tpm.retry)
	consider(failQuota, ReasonQuotaExceeded, limit.KindDaily, lim.DailyTokens, cal.midnight.Sub(now))
	consider(failBudget, ReasonBudgetExceeded, limit.KindBudget, lim.MonthlyBudgetMicros, cal.monthEnd.Sub(now))
	d.Never = (out.failed&failTPM != 0 && req.EstimatedTokens > lim.TPMBurst) ||
		(out.failed&failQuota != 0 && req.EstimatedTokens > lim.DailyTokens)
	return d
}

// seconds is a duration in seconds (of the local GCRA) as a Duration.
func seconds(s float64) time.Duration {
	if s <= 0 {
		return 0
	}
	return time.Duration(s * float64(time.Second))
}

// Settle ends a reservation with the request's actual token usage (0 for a
// failed call: the whole reservation is returned) and its cost in
// micro-units. Unused tokens move the TPM clock back (never below now) and
// return to the daily quota; extra tokens are spent on both. Settle ignores
// ctx's cancellation (accounting must happen after a client disconnect) but
// not its values. It does not wait for Redis: the settlement goes with the
// next pipeline (Flush waits for it). An unreachable Redis is not an error:
// the daily and monthly deltas are kept in memory and replayed when Redis
// answers again.
func (l *Limiter) Settle(ctx context.Context, r Reservation, actualTokens, costMicros int64) error {
	if actualTokens < 0 || costMicros < 0 {
		return fmt.Errorf("%w: negative usage or cost for caller %d", ErrInvalidRequest, r.CallerID)
	}
	if r.Empty() {
		return nil
	}
	delta := actualTokens - r.Tokens
	if !r.Budget {
		costMicros = 0
	}
	k := l.keysFor(r.CallerID, r.Tier, r.Day, r.Month)
	if r.Local {
		l.local.settle(k, r, delta, costMicros)
		return nil
	}
	if delta == 0 && costMicros == 0 {
		return nil
	}
	if l.tryRedis() {
		l.settleLater(k, r, delta, costMicros)
		return nil
	}
	l.keepForReplay(k, r.Daily, delta, costMicros, r.MonthTTL)
	return nil
}

// Flush returns once every settlement queued before it has reached Redis
// (or failed and been kept for the replay), or ctx ended. Usage flushes
// first; a shutting-down instance flushes so nothing it settled is lost.
func (l *Limiter) Flush(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 2*l.timeout)
	defer cancel()
	return l.co.flush(ctx)
}

// Usage returns a caller's daily tokens used in a tier and its spend this
// month, from Redis, or from the per-instance view while Redis is down.
func (l *Limiter) Usage(ctx context.Context, callerID int64, tier string) (Usage, error) {
	cal := l.calendar()
	k := l.keys(callerID, tier, cal)
	if l.tryRedis() {
		_ = l.Flush(ctx) // a settlement that failed is in the local view's pending deltas
		u, err := l.usageRedis(ctx, k)
		if err == nil {
			l.up()
			return u, nil
		}
		if ctx.Err() != nil {
			return Usage{}, fmt.Errorf("limits: usage of caller %d: %w", callerID, ctx.Err())
		}
		l.down(err)
	}
	return Usage{
		DailyTokens:      l.local.counterValue(k.day),
		MonthSpentMicros: l.local.counterValue(k.month),
		Local:            true,
	}, nil
}

// tryRedis reports whether this call should go to Redis: always while
// healthy; while degraded, one caller per ProbeInterval gets to probe.
func (l *Limiter) tryRedis() bool {
	if !l.degraded.Load() {
		return true
	}
	last := l.lastAttempt.Load()
	now := int64(time.Since(l.born))
	if now-last < int64(l.probeInterval) {
		return false
	}
	return l.lastAttempt.CompareAndSwap(last, now)
}

func (l *Limiter) down(err error) {
	l.lastAttempt.Store(int64(time.Since(l.born)))
	if l.degraded.CompareAndSwap(false, true) {
		l.log.Warn("limits: redis unreachable, enforcing per-instance limits", "err", err)
	}
}

func (l *Limiter) up() {
	if l.degraded.Load() && l.degraded.CompareAndSwap(true, false) {
		l.log.Info("limits: redis reachable again, shared limits resumed")
	}
	if l.local.hasPending() {
		l.replayPending()
	}
}

// replayPending writes the counter deltas spent while Redis was unreachable,
// in the background, one replay at a time.
func (l *Limiter) replayPending() {
	if !l.flushing.CompareAndSwap(false, true) {
		return
	}
	go func() {
		defer l.flushing.Store(false)
		batch := l.local.pendingBatch()
		if len(batch) == 0 {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*l.timeout)
		defer cancel()
		pipe := l.rdb.Pipeline()
		cmds := make([]*redis.IntCmd, len(batch))
		for i, p := range batch {
			cmds[i] = pipe.IncrBy(ctx, p.key, p.delta)
			pipe.Expire(ctx, p.key, p.ttl)
		}
		_, err := pipe.Exec(ctx)
		done := batch[:0]
		for i, p := range batch {
			if cmds[i].Err() == nil {
				done = append(done, p)
			}
		}
		l.local.ackPending(done)
		if err != nil {
			l.log.Warn("limits: replaying counters spent during the redis outage", "err", err, "replayed", len(done))
			return
		}
		l.log.Info("limits: counters spent during the redis outage replayed", "counters", len(done))
	}()
}

// script is a Lua script called by its hash, sent whole when Redis lacks
// it (EVALSHA, then EVAL on NOSCRIPT, as go-redis's Script.Run does).
type script struct {
	src, sha any // boxed once
}

func newScript(src string) *script {
	return &script{src: src, sha: redis.NewScript(src).Hash()}
}

func (l *Limiter) checkRedis(ctx context.Context, k keySet, callerID int64, lim Limits, est int64, cal *calendar, ask leaseAsk) (outcome, error) {
	cl := getCall()
	cl.op, cl.caller, cl.keys = opCheck, callerID, k.boxed[:]
	cl.argv = [10]int64{lim.RPM, lim.RPMBurst, lim.TPM, lim.TPMBurst, est, lim.DailyTokens, lim.MonthlyBudgetMicros}
	cl.nargv = 7
	switch {
	case ask.peek:
		cl.op = opPeek
	case ask.lease || ask.refresh:
		cl.op = opLease
		cl.argv[7], cl.argv[8], cl.argv[9] = 1, ask.reqs, ask.toks
		if ask.refresh {
			cl.argv[7] = 0
		}
		cl.nargv = 10
	}
	reply, err := l.co.do(ctx, cl, l.timeout)
	if err != nil {
		return outcome{}, err
	}
	out := outcomeOf(reply)
	if lim.DailyTokens > 0 {
		l.local.observe(k.day, out.used, dayTTL)
	}
	if lim.MonthlyBudgetMicros > 0 {
		l.local.observe(k.month, out.spent, cal.monthTTL(l.clock()))
	}
	return out, nil
}

// outcomeOf reads a check's reply (limitScript): integers, durations in
// nanoseconds.
func outcomeOf(r [leaseReplyLen]int64) outcome {
	return outcome{
		failed: r[0],
		rpm:    gcraView{remaining: r[1], retry: time.Duration(r[2]), reset: time.Duration(r[3])},
		tpm:    gcraView{remaining: r[4], retry: time.Duration(r[5]), reset: time.Duration(r[6])},
		used:   r[7],
		spent:  r[8],
		gotR:   r[9],
		gotT:   r[10],
	}
}

// settleLater queues a settlement for the next shared pipeline; its
// reply updates the local view (settled), and a failure keeps the counter
// deltas for the replay.
func (l *Limiter) settleLater(k keySet, r Reservation, delta, cost int64) {
	l.settleKeys(k, k.boxed[1:], r.TPM, delta, r.Daily, cost, r.MonthTTL)
}

// settleKeys queues a settlement on keys (a window's TAT, the daily
// counter, the monthly spend) of a window of rate: delta units on the
// window and, with daily, on the quota; cost on the spend.
func (l *Limiter) settleKeys(k keySet, keys []any, rate, delta int64, daily bool, cost int64, monthTTL time.Duration) {
	cl := getCall()
	cl.op, cl.caller, cl.keys = opSettle, k.caller, keys
	var d int64
	if daily {
		d = 1
	}
	cl.argv = [10]int64{rate, delta, d, cost, int64(monthTTL / time.Second)}
	cl.nargv = 5
	cl.settle = settlement{k: k, daily: daily, monthTTL: monthTTL, delta: delta, cost: cost}
	l.co.later(cl)
}

// settled applies a settlement's reply: {daily used, month spent}, -1
// where untouched.
func (l *Limiter) settled(cl *call) {
	s := &cl.settle
	if cl.err != nil {
		l.down(cl.err)
		l.keepForReplay(s.k, s.daily, s.delta, s.cost, s.monthTTL)
		return
	}
	l.up()
	if used := cl.reply[0]; used >= 0 {
		l.local.observe(s.k.day, used, dayTTL)
	}
	if spent := cl.reply[1]; spent >= 0 {
		l.local.observe(s.k.month, spent, s.monthTTL)
	}
}

// keepForReplay keeps a settlement Redis missed: its counter deltas are
// replayed when Redis answers again. The TPM adjustment is dropped; that
// window expires on its own.
func (l *Limiter) keepForReplay(k keySet, daily bool, delta, cost int64, monthTTL time.Duration) {
	if daily {
		l.local.addPending(k.day, delta, dayTTL)
	}
	if cost > 0 {
		l.local.addPending(k.month, cost, monthTTL)
	}
}

func (l *Limiter) usageRedis(ctx context.Context, k keySet) (Usage, error) {
	ctx, cancel := context.WithTimeout(ctx, l.timeout)
	defer cancel()
	var vals []any
	var err error
	if l.ctxAware {
		vals, err = l.rdb.MGet(ctx, k.day, k.month).Result()
	} else {
		ch := make(chan struct{})
		go func() {
			vals, err = l.rdb.MGet(ctx, k.day, k.month).Result()
			close(ch)
		}()
		select {
		case <-ch:
		case <-ctx.Done():
			return Usage{}, ctx.Err()
		}
	}
	if err != nil {
		return Usage{}, err
	}
	var u Usage
	for i, dst := range []*int64{&u.DailyTokens, &u.MonthSpentMicros} {
		if s, ok := vals[i].(string); ok {
			if *dst, err = strconv.ParseInt(s, 10, 64); err != nil {
				return Usage{}, fmt.Errorf("limits: usage counter %d: %w", i, err)
			}
		}
	}
	return u, nil
}
