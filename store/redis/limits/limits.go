// Package limits enforces a caller's limits per tier — requests per minute,
// tokens per minute, a daily token quota — and its monthly budget across all
// tiers. The limits are shared by every gateway instance through Redis: all
// checks of one request run in one Lua script, so they cost one round trip and
// are atomic (if any check rejects, nothing is spent).
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
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// period is the window of RPM and TPM.
const period = time.Minute

// dayTTL is how long a daily counter outlives its last write.
const dayTTL = 48 * time.Hour

// ErrInvalidRequest reports a negative limit or estimate.
var ErrInvalidRequest = errors.New("limits: invalid request")

// Reason says which limit rejected a request; it doubles as the error code of
// the OpenAI-style error object.
type Reason string

// Reasons for a rejection.
const (
	ReasonNone           Reason = ""
	ReasonRateLimited    Reason = "rate_limited"
	ReasonQuotaExceeded  Reason = "quota_exceeded"
	ReasonBudgetExceeded Reason = "budget_exceeded"
)

// Limits are a caller's limits for one tier. Zero means unlimited and costs
// nothing (no Redis work for that limit).
type Limits struct {
	RPM      int64 // requests per minute
	RPMBurst int64 // requests admitted at once; 0 means RPM
	TPM      int64 // tokens per minute
	TPMBurst int64 // tokens admitted at once; 0 means TPM
	// DailyTokens is the token quota per local day (Options.Location). A
	// request is rejected when used + estimate > quota, and once the quota
	// is used up even without an estimate.
	DailyTokens int64
	// MonthlyBudgetMicros is the caller's budget for the local calendar month
	// across all tiers (pass the same value with every tier), in micro-units
	// of currency. A request is rejected once spent >= budget.
	MonthlyBudgetMicros int64
}

func (l Limits) unlimited() bool {
	return l.RPM == 0 && l.TPM == 0 && l.DailyTokens == 0 && l.MonthlyBudgetMicros == 0
}

func (l Limits) withDefaults() Limits {
	if l.RPMBurst == 0 {
		l.RPMBurst = l.RPM
	}
	if l.TPMBurst == 0 {
		l.TPMBurst = l.TPM
	}
	return l
}

// Request is one data-plane request to admit.
type Request struct {
	CallerID int64
	Tier     string
	Limits   Limits
	// EstimatedTokens is reserved in TPM and the daily quota until Settle.
	EstimatedTokens int64
}

func (r Request) validate() error {
	l := r.Limits
	for _, v := range []int64{l.RPM, l.RPMBurst, l.TPM, l.TPMBurst, l.DailyTokens, l.MonthlyBudgetMicros, r.EstimatedTokens} {
		if v < 0 {
			return fmt.Errorf("%w: negative limit or estimate for caller %d tier %q", ErrInvalidRequest, r.CallerID, r.Tier)
		}
	}
	return nil
}

// Window is the state of one rate (requests or tokens) after a decision, as
// OpenAI reports it. A zero Limit means the rate is unlimited.
type Window struct {
	Limit     int64
	Remaining int64
	// Reset is the time until the window is back to its full Limit.
	Reset time.Duration
}

// Decision is the outcome of Check.
type Decision struct {
	Allowed bool
	Reason  Reason
	// RetryAfter is, on rejection, the earliest time the request could pass
	// if nothing else were spent meanwhile: the longest wait of all failing
	// checks (local midnight for the quota, the month start for the budget).
	RetryAfter time.Duration
	Requests   Window
	Tokens     Window
	// Reservation is what an admitted request holds; pass it to Settle.
	Reservation Reservation
	// Local is set when the per-instance fallback decided (Redis down).
	Local bool

	// never is set when a failing check can never pass for this request (its
	// estimate exceeds the TPM burst or the whole daily quota).
	never bool
}

// ShouldRetry reports whether retrying the same request later can succeed
// soon, i.e. what `x-should-retry` should say: false for an exhausted quota or
// budget and for a request larger than a limit.
func (d Decision) ShouldRetry() bool {
	return d.Allowed || (d.Reason == ReasonRateLimited && !d.never)
}

// Reservation is what an admitted request holds until Settle. The zero value
// holds nothing.
type Reservation struct {
	callerID int64
	tier     string
	tokens   int64 // estimate held in TPM and the daily quota
	tpm      int64 // 0: TPM unlimited, nothing held there
	day      string
	daily    bool
	month    string
	monthTTL time.Duration
	budget   bool
	local    bool
}

// Tokens is the token estimate the reservation holds.
func (r Reservation) Tokens() int64 { return r.tokens }

func (r Reservation) empty() bool { return !r.daily && !r.budget && r.tpm == 0 }

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

	born        time.Time
	degraded    atomic.Bool
	lastAttempt atomic.Int64 // since born, of the last Redis attempt while degraded
	fallbacks   atomic.Uint64
	flushing    atomic.Bool
	local       *localStore
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
	return &Limiter{
		rdb:           rdb,
		ctxAware:      honoursContext(rdb),
		prefix:        opts.Prefix,
		loc:           opts.Location,
		timeout:       opts.Timeout,
		probeInterval: opts.ProbeInterval,
		log:           opts.Logger,
		clock:         opts.Clock,
		born:          time.Now(),
		local:         newLocalStore(time.Now),
	}
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
	if err := req.validate(); err != nil {
		return Decision{}, err
	}
	lim := req.Limits.withDefaults()
	if lim.unlimited() {
		return Decision{Allowed: true}, nil
	}
	cal := l.calendar()
	k := l.keys(req.CallerID, req.Tier, cal)
	if l.tryRedis() {
		out, err := l.checkRedis(ctx, k, lim, req.EstimatedTokens, cal, dry)
		if err == nil {
			l.up()
			return l.decide(req, lim, cal, out, false, dry), nil
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
	failed   int64
	rpm, tpm gcraView
	used     int64 // daily tokens used, after the reservation if admitted
	spent    int64 // month spent
}

type gcraView struct {
	remaining    int64
	retry, reset float64 // seconds
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
		d.Requests = Window{Limit: lim.RPM, Remaining: out.rpm.remaining, Reset: seconds(out.rpm.reset)}
	}
	if lim.TPM > 0 {
		d.Tokens = Window{Limit: lim.TPM, Remaining: out.tpm.remaining, Reset: seconds(out.tpm.reset)}
	}
	if out.failed == 0 {
		d.Allowed = true
		if dry {
			return d // nothing was reserved
		}
		d.Reservation = Reservation{
			callerID: req.CallerID,
			tier:     req.Tier,
			tokens:   req.EstimatedTokens,
			tpm:      lim.TPM,
			day:      cal.day,
			daily:    lim.DailyTokens > 0,
			month:    cal.month,
			monthTTL: cal.monthTTL(now),
			budget:   lim.MonthlyBudgetMicros > 0,
			local:    local,
		}
		return d
	}
	consider := func(bit int64, r Reason, wait time.Duration) {
		if out.failed&bit != 0 && (d.Reason == ReasonNone || wait > d.RetryAfter) {
			d.Reason, d.RetryAfter = r, wait
		}
	}
	consider(failRPM, ReasonRateLimited, seconds(out.rpm.retry))
	consider(failTPM, ReasonRateLimited, seconds(out.tpm.retry))
	consider(failQuota, ReasonQuotaExceeded, cal.midnight.Sub(now))
	consider(failBudget, ReasonBudgetExceeded, cal.monthEnd.Sub(now))
	d.never = (out.failed&failTPM != 0 && req.EstimatedTokens > lim.TPMBurst) ||
		(out.failed&failQuota != 0 && req.EstimatedTokens > lim.DailyTokens)
	return d
}

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
// not its values. An unreachable Redis is not an error: the daily and
// monthly deltas are kept in memory and replayed when Redis answers again.
func (l *Limiter) Settle(ctx context.Context, r Reservation, actualTokens, costMicros int64) error {
	if actualTokens < 0 || costMicros < 0 {
		return fmt.Errorf("%w: negative usage or cost for caller %d", ErrInvalidRequest, r.callerID)
	}
	if r.empty() {
		return nil
	}
	delta := actualTokens - r.tokens
	if !r.budget {
		costMicros = 0
	}
	k := l.keysFor(r.callerID, r.tier, r.day, r.month)
	if r.local {
		l.local.settle(k, r, delta, costMicros)
		return nil
	}
	if delta == 0 && costMicros == 0 {
		return nil
	}
	if l.tryRedis() {
		err := l.settleRedis(context.WithoutCancel(ctx), k, r, delta, costMicros)
		if err == nil {
			l.up()
			return nil
		}
		l.down(err)
	}
	// Redis missed this settlement: keep the counter deltas for the replay.
	// The TPM adjustment is dropped; that window expires on its own.
	if r.daily {
		l.local.addPending(k.day, delta, dayTTL)
	}
	if costMicros > 0 {
		l.local.addPending(k.month, costMicros, r.monthTTL)
	}
	return nil
}

// Usage returns a caller's daily tokens used in a tier and its spend this
// month, from Redis, or from the per-instance view while Redis is down.
func (l *Limiter) Usage(ctx context.Context, callerID int64, tier string) (Usage, error) {
	cal := l.calendar()
	k := l.keys(callerID, tier, cal)
	if l.tryRedis() {
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

// call runs a script within Timeout. Without ContextTimeoutEnabled the client
// would sit on a hung socket for its ReadTimeout, so the call is then
// abandoned by the timer (its goroutine ends when the client gives up).
func (l *Limiter) call(ctx context.Context, s *redis.Script, keys []string, args ...any) ([]any, error) {
	ctx, cancel := context.WithTimeout(ctx, l.timeout)
	defer cancel()
	if l.ctxAware {
		return s.Run(ctx, l.rdb, keys, args...).Slice()
	}
	type reply struct {
		v   []any
		err error
	}
	ch := make(chan reply, 1)
	go func() {
		v, err := s.Run(ctx, l.rdb, keys, args...).Slice()
		ch <- reply{v, err}
	}()
	select {
	case r := <-ch:
		return r.v, r.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (l *Limiter) checkRedis(ctx context.Context, k keySet, lim Limits, est int64, cal *calendar, dry bool) (outcome, error) {
	dryArg := "0"
	if dry {
		dryArg = "1"
	}
	v, err := l.call(ctx, checkScript,
		[]string{k.rpm, k.tpm, k.day, k.month},
		dryArg, period.Seconds(),
		lim.RPM, lim.RPMBurst, lim.TPM, lim.TPMBurst,
		est, lim.DailyTokens, int64(dayTTL/time.Second), lim.MonthlyBudgetMicros)
	if err != nil {
		return outcome{}, err
	}
	out, err := parseOutcome(v)
	if err != nil {
		return outcome{}, err
	}
	if lim.DailyTokens > 0 {
		l.local.observe(k.day, out.used, dayTTL)
	}
	if lim.MonthlyBudgetMicros > 0 {
		l.local.observe(k.month, out.spent, cal.monthTTL(l.clock()))
	}
	return out, nil
}

func parseOutcome(v []any) (outcome, error) {
	if len(v) != 9 {
		return outcome{}, fmt.Errorf("limits: check script returned %d values", len(v))
	}
	var out outcome
	var errs []error
	ints := []*int64{&out.failed, &out.rpm.remaining, nil, nil, &out.tpm.remaining, nil, nil, &out.used, &out.spent}
	floats := []*float64{nil, nil, &out.rpm.retry, &out.rpm.reset, nil, &out.tpm.retry, &out.tpm.reset, nil, nil}
	for i, x := range v {
		switch {
		case ints[i] != nil:
			n, ok := x.(int64)
			if !ok {
				errs = append(errs, fmt.Errorf("value %d is %T", i, x))
			}
			*ints[i] = n
		case floats[i] != nil:
			s, _ := x.(string)
			f, err := strconv.ParseFloat(s, 64)
			if err != nil {
				errs = append(errs, fmt.Errorf("value %d: %w", i, err))
			}
			*floats[i] = f
		}
	}
	if len(errs) > 0 {
		return outcome{}, fmt.Errorf("limits: check script reply: %w", errors.Join(errs...))
	}
	return out, nil
}

func (l *Limiter) settleRedis(ctx context.Context, k keySet, r Reservation, delta, cost int64) error {
	daily := "0"
	if r.daily {
		daily = "1"
	}
	v, err := l.call(ctx, settleScript,
		[]string{k.tpm, k.day, k.month},
		period.Seconds(), r.tpm, delta, daily, int64(dayTTL/time.Second),
		cost, int64(r.monthTTL/time.Second))
	if err != nil {
		return err
	}
	if len(v) != 2 {
		return fmt.Errorf("limits: settle script returned %d values", len(v))
	}
	if used, ok := v[0].(int64); ok && used >= 0 {
		l.local.observe(k.day, used, dayTTL)
	}
	if spent, ok := v[1].(int64); ok && spent >= 0 {
		l.local.observe(k.month, spent, r.monthTTL)
	}
	return nil
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
