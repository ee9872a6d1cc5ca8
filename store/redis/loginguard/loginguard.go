// Package loginguard throttles failed sign-ins: console logins per username
// and per client address, and bad admin API tokens per client address.
//
// Every failure counts against its subjects. From Limits.BackoffAfter
// failures on, the subject must wait before its next attempt (BackoffBase,
// doubled per further failure); at Limits.LockoutAfter it is locked out for
// LockoutFor, which an admin can clear (Clear). While a subject waits, its
// attempts are refused before any password or token is checked (Check), so
// guessing costs the attacker time and us no bcrypt. Failures are forgotten
// LockoutFor after the last one; a lockout ends with a clean slate, and a
// successful login clears the username's count (Succeed) but not the
// address's, so one valid account cannot launder guesses at others.
//
// State is shared by every instance through Redis. All keys carry the hash
// tag {loginguard}, so each script runs unchanged on Redis Cluster (sign-in
// failures are rare enough for one slot):
//
//	<prefix>:{loginguard}:user:<base64url(username)>  hash n, until (ms), locked
//	<prefix>:{loginguard}:ip:<base64url(address)>     hash n, until (ms), locked
//	<prefix>:{loginguard}:locks                       zset "<kind>:<subject>" -> until (ms)
//
// When Redis is unreachable the guard fails open per instance: it does not
// refuse every sign-in, but keeps the same counting in memory on this
// instance (Verdict.Local), so an attacker is still throttled by each
// instance they reach, and probes Redis at most once per ProbeInterval.
package loginguard

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/redis/go-redis/v9"
)

// Kind is what a throttle counts: a username or a client address.
type Kind string

// The kinds of subject.
const (
	User Kind = "user"
	IP   Kind = "ip"
)

// Valid reports whether k is a known kind.
func (k Kind) Valid() bool { return k == User || k == IP }

// Limits are the thresholds of one kind of subject.
type Limits struct {
	// BackoffAfter failures make every further attempt wait (BackoffBase,
	// doubled per failure beyond it).
	BackoffAfter int
	// LockoutAfter failures lock the subject out for Settings.LockoutFor.
	LockoutAfter int
}

// Settings are the throttle's thresholds.
type Settings struct {
	// User limits failures per username (default 5 → back-off, 10 → lockout).
	User Limits
	// IP limits failures per client address, console logins and bad admin
	// API tokens together (default 10 → back-off, 30 → lockout: higher,
	// because several people may share an address).
	IP Limits
	// BackoffBase is the first wait (default 1s).
	BackoffBase time.Duration
	// LockoutFor is how long a lockout lasts and how long failures are
	// remembered after the last one (default 15m). No wait exceeds it.
	LockoutFor time.Duration
}

// Defaults of Settings.
const (
	DefaultUserBackoffAfter = 5
	DefaultUserLockoutAfter = 10
	DefaultIPBackoffAfter   = 10
	DefaultIPLockoutAfter   = 30
	DefaultBackoffBase      = time.Second
	DefaultLockoutFor       = 15 * time.Minute
)

// WithDefaults fills zero fields with the defaults.
func (s Settings) WithDefaults() Settings {
	if s.User.BackoffAfter == 0 {
		s.User.BackoffAfter = DefaultUserBackoffAfter
	}
	if s.User.LockoutAfter == 0 {
		s.User.LockoutAfter = DefaultUserLockoutAfter
	}
	if s.IP.BackoffAfter == 0 {
		s.IP.BackoffAfter = DefaultIPBackoffAfter
	}
	if s.IP.LockoutAfter == 0 {
		s.IP.LockoutAfter = DefaultIPLockoutAfter
	}
	if s.BackoffBase == 0 {
		s.BackoffBase = DefaultBackoffBase
	}
	if s.LockoutFor == 0 {
		s.LockoutFor = DefaultLockoutFor
	}
	return s
}

// Validate reports settings that cannot work (after WithDefaults).
func (s Settings) Validate() error {
	var errs []string
	for _, l := range []struct {
		name string
		l    Limits
	}{{"user", s.User}, {"ip", s.IP}} {
		if l.l.BackoffAfter < 1 || l.l.LockoutAfter < 1 {
			errs = append(errs, l.name+" thresholds must be at least 1")
		} else if l.l.LockoutAfter < l.l.BackoffAfter {
			errs = append(errs, l.name+" lockout threshold must not be below the back-off threshold")
		}
	}
	if s.BackoffBase < time.Millisecond {
		errs = append(errs, "back-off must be at least 1ms")
	}
	if s.LockoutFor < time.Second {
		errs = append(errs, "lockout must be at least 1s")
	}
	if s.BackoffBase > s.LockoutFor {
		errs = append(errs, "back-off must not exceed the lockout")
	}
	if len(errs) > 0 {
		return errors.New("loginguard: " + strings.Join(errs, "; "))
	}
	return nil
}

func (s Settings) limits(k Kind) Limits {
	if k == IP {
		return s.IP
	}
	return s.User
}

// Options configure a Guard.
type Options struct {
	// Prefix of every key (the instance's Redis prefix); default "sy". It
	// must not contain '{' or '}'.
	Prefix   string
	Settings Settings
	// Timeout bounds every Redis call (default 50ms).
	Timeout time.Duration
	// ProbeInterval is how often a degraded guard tries Redis (default 1s).
	ProbeInterval time.Duration
	Logger        *slog.Logger
	// Clock, when set, times the throttle (tests). By default Redis TIME
	// does, so instances with skewed clocks agree; the in-memory fallback
	// uses time.Now.
	Clock func() time.Time
}

// Verdict is the throttle's answer for an attempt.
type Verdict struct {
	// Blocked means the attempt must not be checked: answer 429.
	Blocked bool
	// Kind is the subject that blocks (the longer wait when both do).
	Kind Kind
	// RetryAfter is how long until the next attempt is allowed.
	RetryAfter time.Duration
	// Locked means a lockout (an admin can clear it), not a back-off.
	Locked bool
	// Failures is the blocking subject's failure count (Fail only).
	Failures int
	// Local means this instance decided alone: Redis is unreachable.
	Local bool
}

// RetryAfterSeconds is RetryAfter rounded up to whole seconds, at least 1:
// the value of a Retry-After header.
func (v Verdict) RetryAfterSeconds() int64 {
	s := int64((v.RetryAfter + time.Second - 1) / time.Second)
	return max(s, 1)
}

// Lock is a subject that is locked out now.
type Lock struct {
	Kind    Kind
	Subject string
	Until   time.Time
	// Local is a lockout this instance keeps alone (Redis unreachable).
	Local bool
}

// Guard is the throttle. It is safe for concurrent use.
type Guard struct {
	rdb      redis.UniversalClient
	prefix   string
	set      Settings
	timeout  time.Duration
	probe    time.Duration
	log      *slog.Logger
	clock    func() time.Time
	local    *localStore
	degraded atomic.Bool
	lastTry  atomic.Int64 // unix nanoseconds of the last Redis attempt while degraded
}

// New returns a Guard on rdb. It panics on a prefix with braces and on
// settings that fail Validate (the caller validates configuration first).
func New(rdb redis.UniversalClient, opts Options) *Guard {
	if opts.Prefix == "" {
		opts.Prefix = "sy"
	}
	if strings.ContainsAny(opts.Prefix, "{}") {
		panic("loginguard: Options.Prefix must not contain '{' or '}'")
	}
	set := opts.Settings.WithDefaults()
	if err := set.Validate(); err != nil {
		panic(err.Error())
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
	localClock := opts.Clock
	if localClock == nil {
		localClock = time.Now
	}
	return &Guard{rdb: rdb, prefix: opts.Prefix, set: set, timeout: opts.Timeout, probe: opts.ProbeInterval,
		log: opts.Logger, clock: opts.Clock, local: newLocalStore(localClock)}
}

// Settings are the thresholds in force.
func (g *Guard) Settings() Settings { return g.set }

// Degraded reports whether the last Redis call failed, i.e. the throttle is
// per instance.
func (g *Guard) Degraded() bool { return g.degraded.Load() }

// subject is one thing being counted.
type subject struct {
	kind Kind
	name string // normalised
}

func (s subject) member() string { return string(s.kind) + ":" + s.name }

// subjects are the non-empty subjects of an attempt.
func subjects(user, ip string) []subject {
	var out []subject
	if u := Normalize(user); u != "" {
		out = append(out, subject{User, u})
	}
	if a := Normalize(ip); a != "" {
		out = append(out, subject{IP, a})
	}
	return out
}

// maxSubject bounds a subject's length in bytes.
const maxSubject = 128

// Normalize is the form a subject is counted and shown under: valid UTF-8
// without control characters, at most 128 bytes. Anything longer is not a
// valid username anyway, so truncated names sharing a count is harmless.
func Normalize(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return -1
		}
		return r
	}, s)
	if len(s) > maxSubject {
		cut := maxSubject
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut]
	}
	return s
}

func (g *Guard) key(s subject) string {
	return g.prefix + ":{loginguard}:" + string(s.kind) + ":" + base64.RawURLEncoding.EncodeToString([]byte(s.name))
}

func (g *Guard) locksKey() string { return g.prefix + ":{loginguard}:locks" }

// nowArg is the script's clock: 0 makes it read Redis TIME.
func (g *Guard) nowArg() int64 {
	if g.clock == nil {
		return 0
	}
	return g.clock().UnixMilli()
}

// redisCtx bounds a Redis call. It ignores the caller's cancellation: a
// client hanging up right after a wrong password must still be counted.
func (g *Guard) redisCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), g.timeout)
}

// tryRedis says whether to call Redis: always when healthy, once per
// ProbeInterval when degraded.
func (g *Guard) tryRedis() bool {
	if !g.degraded.Load() {
		return true
	}
	now := time.Now().UnixNano()
	last := g.lastTry.Load()
	return now-last >= int64(g.probe) && g.lastTry.CompareAndSwap(last, now)
}

// note records a Redis call's outcome and logs transitions.
func (g *Guard) note(err error) {
	if err != nil {
		g.lastTry.Store(time.Now().UnixNano())
		if !g.degraded.Swap(true) {
			g.log.Warn("sign-in throttle: redis unavailable, failed sign-ins are counted per instance", "err", err)
		}
		return
	}
	if g.degraded.Swap(false) {
		g.log.Info("sign-in throttle: redis available again, failed sign-ins are counted across instances")
	}
}

// checkScript reads each subject's wait: {wait ms, locked} per key.
var checkScript = redis.NewScript(`
local now = tonumber(ARGV[1])
if now == 0 then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local out = {}
for i = 1, #KEYS do
  local v = redis.call('HMGET', KEYS[i], 'until', 'locked')
  local wait = (tonumber(v[1]) or 0) - now
  if wait < 0 then wait = 0 end
  local locked = 0
  if wait > 0 and v[2] == '1' then locked = 1 end
  out[#out + 1] = {wait, locked}
end
return out`)

// failScript counts a failure against each subject. KEYS[1] is the lock
// index, KEYS[2..] the subjects; ARGV is now (0: Redis TIME), the back-off
// base and the lockout in ms, then per subject its back-off threshold,
// lockout threshold and index member. It returns {failures, wait ms, locked,
// newly locked} per subject. Numbers are formatted with %.0f so Lua never
// writes a timestamp in exponent notation.
var failScript = redis.NewScript(`
local now = tonumber(ARGV[1])
if now == 0 then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local base, lockout = tonumber(ARGV[2]), tonumber(ARGV[3])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', string.format('%.0f', now))
local out = {}
for i = 2, #KEYS do
  local j = 4 + (i - 2) * 3
  local soft, hard, member = tonumber(ARGV[j]), tonumber(ARGV[j + 1]), ARGV[j + 2]
  local was = redis.call('HMGET', KEYS[i], 'until', 'locked')
  local wasLocked = was[2] == '1' and (tonumber(was[1]) or 0) > now
  local n = redis.call('HINCRBY', KEYS[i], 'n', 1)
  local wait, locked = 0, 0
  if n >= hard then
    wait, locked = lockout, 1
  elseif n >= soft then
    wait = base
    for _ = 1, n - soft do
      wait = wait * 2
      if wait >= lockout then wait = lockout break end
    end
  end
  if wait > 0 then
    redis.call('HSET', KEYS[i], 'until', string.format('%.0f', now + wait), 'locked', locked)
  end
  if locked == 1 then
    -- A lockout ends with a clean slate: the key goes when it does.
    redis.call('PEXPIRE', KEYS[i], string.format('%.0f', wait))
    redis.call('ZADD', KEYS[1], string.format('%.0f', now + wait), member)
  else
    redis.call('PEXPIRE', KEYS[i], string.format('%.0f', lockout))
  end
  local newly = 0
  if locked == 1 and not wasLocked then newly = 1 end
  out[#out + 1] = {n, wait, locked, newly}
end
return out`)

// Check says whether an attempt by user (may be empty) from ip may be
// checked at all. It never fails: with Redis unreachable the in-memory
// fallback answers.
func (g *Guard) Check(ctx context.Context, user, ip string) Verdict {
	subs := subjects(user, ip)
	if len(subs) == 0 {
		return Verdict{}
	}
	if g.tryRedis() {
		v, err := g.checkRedis(ctx, subs)
		g.note(err)
		if err == nil {
			return v
		}
	}
	return g.local.check(subs)
}

func (g *Guard) checkRedis(ctx context.Context, subs []subject) (Verdict, error) {
	keys := make([]string, len(subs))
	for i, s := range subs {
		keys[i] = g.key(s)
	}
	rctx, cancel := g.redisCtx(ctx)
	defer cancel()
	res, err := checkScript.Run(rctx, g.rdb, keys, g.nowArg()).Slice()
	if err != nil {
		return Verdict{}, fmt.Errorf("loginguard: check: %w", err)
	}
	var v Verdict
	for i, r := range res {
		pair, ok := r.([]any)
		if !ok || len(pair) != 2 || i >= len(subs) {
			return Verdict{}, fmt.Errorf("loginguard: check: unexpected reply %v", res)
		}
		wait, _ := pair[0].(int64)
		locked, _ := pair[1].(int64)
		v = longer(v, Verdict{Blocked: wait > 0, Kind: subs[i].kind, RetryAfter: time.Duration(wait) * time.Millisecond, Locked: locked == 1})
	}
	return v, nil
}

// longer is the verdict that blocks longer.
func longer(a, b Verdict) Verdict {
	if !b.Blocked {
		return a
	}
	if !a.Blocked || b.RetryAfter > a.RetryAfter {
		return b
	}
	return a
}

// Fail counts a failed attempt by user (may be empty) from ip and returns
// the verdict for the next attempt. A fresh lockout is logged (subject and
// count, never a password or token).
func (g *Guard) Fail(ctx context.Context, user, ip string) Verdict {
	subs := subjects(user, ip)
	if len(subs) == 0 {
		return Verdict{}
	}
	if g.tryRedis() {
		v, newly, err := g.failRedis(ctx, subs)
		g.note(err)
		if err == nil {
			g.logLocks(newly, false)
			return v
		}
	}
	v, newly := g.local.fail(subs, g.set)
	g.logLocks(newly, true)
	return v
}

func (g *Guard) failRedis(ctx context.Context, subs []subject) (Verdict, []failed, error) {
	keys := []string{g.locksKey()}
	args := []any{g.nowArg(), g.set.BackoffBase.Milliseconds(), g.set.LockoutFor.Milliseconds()}
	for _, s := range subs {
		l := g.set.limits(s.kind)
		keys = append(keys, g.key(s))
		args = append(args, l.BackoffAfter, l.LockoutAfter, s.member())
	}
	rctx, cancel := g.redisCtx(ctx)
	defer cancel()
	res, err := failScript.Run(rctx, g.rdb, keys, args...).Slice()
	if err != nil {
		return Verdict{}, nil, fmt.Errorf("loginguard: fail: %w", err)
	}
	var v Verdict
	var out []failed
	for i, r := range res {
		row, ok := r.([]any)
		if !ok || len(row) != 4 || i >= len(subs) {
			return Verdict{}, nil, fmt.Errorf("loginguard: fail: unexpected reply %v", res)
		}
		n, _ := row[0].(int64)
		wait, _ := row[1].(int64)
		locked, _ := row[2].(int64)
		newly, _ := row[3].(int64)
		f := failed{sub: subs[i], failures: int(n), wait: time.Duration(wait) * time.Millisecond, locked: locked == 1, newly: newly == 1}
		out = append(out, f)
		v = longer(v, f.verdict())
	}
	return v, out, nil
}

// failed is one subject's state after a failure.
type failed struct {
	sub      subject
	failures int
	wait     time.Duration
	locked   bool
	newly    bool
}

func (f failed) verdict() Verdict {
	return Verdict{Blocked: f.wait > 0, Kind: f.sub.kind, RetryAfter: f.wait, Locked: f.locked, Failures: f.failures}
}

func (g *Guard) logLocks(fs []failed, local bool) {
	for _, f := range fs {
		if f.newly {
			g.log.Warn("sign-in lockout", "kind", string(f.sub.kind), "subject", f.sub.name, "failures", f.failures,
				"for", g.set.LockoutFor.String(), "per_instance", local)
		}
	}
}

// Succeed clears user's failures after a successful sign-in. The client
// address keeps its count.
func (g *Guard) Succeed(ctx context.Context, user string) {
	if u := Normalize(user); u != "" {
		_ = g.clear(ctx, subject{User, u})
	}
}

// Clear lifts a lockout (or back-off) of one subject, as an admin does from
// the console. It clears this instance's fallback state too.
func (g *Guard) Clear(ctx context.Context, kind Kind, name string) error {
	if !kind.Valid() {
		return fmt.Errorf("loginguard: unknown kind %q", kind)
	}
	s := subject{kind, Normalize(name)}
	if s.name == "" {
		return errors.New("loginguard: empty subject")
	}
	return g.clear(ctx, s)
}

func (g *Guard) clear(ctx context.Context, s subject) error {
	g.local.clear(s)
	rctx, cancel := g.redisCtx(ctx)
	defer cancel()
	pipe := g.rdb.TxPipeline()
	pipe.Del(rctx, g.key(s))
	pipe.ZRem(rctx, g.locksKey(), s.member())
	_, err := pipe.Exec(rctx)
	g.note(err)
	if err != nil {
		return fmt.Errorf("loginguard: clear: %w", err)
	}
	return nil
}

// Locks lists the subjects locked out now: the shared ones, or, while Redis
// is unreachable, this instance's own (with a non-nil error saying so).
func (g *Guard) Locks(ctx context.Context) ([]Lock, error) {
	rctx, cancel := g.redisCtx(ctx)
	defer cancel()
	now := time.Now()
	if g.clock != nil {
		now = g.clock()
	}
	zs, err := g.rdb.ZRangeByScoreWithScores(rctx, g.locksKey(), &redis.ZRangeBy{Min: "(" + strconv.FormatInt(now.UnixMilli(), 10), Max: "+inf"}).Result()
	g.note(err)
	if err != nil {
		// Local state only decides while Redis is unreachable.
		return g.local.locks(), fmt.Errorf("loginguard: locks: %w", err)
	}
	var out []Lock
	for _, z := range zs {
		m, _ := z.Member.(string)
		kind, name, ok := strings.Cut(m, ":")
		if !ok || !Kind(kind).Valid() {
			continue
		}
		out = append(out, Lock{Kind: Kind(kind), Subject: name, Until: time.UnixMilli(int64(z.Score))})
	}
	return out, nil
}
