package limits

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	_ "time/tzdata" // the quota tests use non-UTC zones on any machine

	"switchyard/store/storetest"

	"github.com/redis/go-redis/v9"
)

func mustCheck(t *testing.T, l *Limiter, req Request) Decision {
	t.Helper()
	d, err := l.Check(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func mustPeek(t *testing.T, l *Limiter, req Request) Decision {
	t.Helper()
	d, err := l.Peek(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func mustSettle(t *testing.T, l *Limiter, r Reservation, actual, cost int64) {
	t.Helper()
	if err := l.Settle(context.Background(), r, actual, cost); err != nil {
		t.Fatal(err)
	}
	if err := l.Flush(context.Background()); err != nil { // the tests read Redis next
		t.Fatal(err)
	}
}

func mustUsage(t *testing.T, l *Limiter, caller int64, tier string) Usage {
	t.Helper()
	u, err := l.Usage(context.Background(), caller, tier)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// TestTokenSettlement covers the TPM reserve/settle arithmetic, on Redis and
// on the local fallback. TPM 30 is one token per 2 s, so the few hundred
// milliseconds the test takes cannot replenish a token.
func TestTokenSettlement(t *testing.T) {
	rdb, prefix := testRedis(t)
	for _, b := range []struct {
		name string
		l    *Limiter
	}{
		{"redis", testLimiter(t, rdb, prefix, Options{})},
		{"local", localLimiter(t)},
	} {
		t.Run(b.name, func(t *testing.T) {
			l := b.l
			req := Request{CallerID: 7, Tier: "standard", Limits: Limits{TPM: 30, DailyTokens: 1000}}
			peek := func() (tokens, daily int64) {
				t.Helper()
				r := req
				r.EstimatedTokens = 0
				return mustPeek(t, l, r).Tokens.Remaining, mustUsage(t, l, 7, "standard").DailyTokens
			}
			tests := []struct {
				name                 string
				estimate, actual     int64
				afterCheck           int64
				afterSettle, dailyed int64
			}{
				{"under-use returns the rest", 10, 4, 20, 26, 4},
				{"over-use spends the extra", 10, 20, 16, 6, 24},
				{"failed call returns everything", 5, 0, 1, 6, 24},
				{"exact use changes nothing", 6, 6, 0, 0, 30},
			}
			for _, tt := range tests {
				req.EstimatedTokens = tt.estimate
				d := mustCheck(t, l, req)
				if !d.Allowed {
					t.Fatalf("%s: rejected: %+v", tt.name, d)
				}
				if d.Tokens.Remaining != tt.afterCheck || d.Reservation.Tokens != tt.estimate {
					t.Fatalf("%s: after check: remaining %d reserved %d, want %d %d", tt.name, d.Tokens.Remaining, d.Reservation.Tokens, tt.afterCheck, tt.estimate)
				}
				mustSettle(t, l, d.Reservation, tt.actual, 0)
				if tokens, daily := peek(); tokens != tt.afterSettle || daily != tt.dailyed {
					t.Fatalf("%s: after settle: remaining %d daily %d, want %d %d", tt.name, tokens, daily, tt.afterSettle, tt.dailyed)
				}
			}
			// In debt: even a request without an estimate waits.
			req.EstimatedTokens = 1
			if d := mustCheck(t, l, req); d.Allowed || d.Tokens.Remaining != 0 {
				t.Fatalf("admitted with no tokens left: %+v", d)
			}
		})
	}
}

// TestReturnedTokensNeverPassNow: a reservation returned after its time has
// passed leaves no credit behind (the TAT is never set below now).
func TestReturnedTokensNeverPassNow(t *testing.T) {
	rdb, prefix := testRedis(t)
	l := testLimiter(t, rdb, prefix, Options{})
	req := Request{CallerID: 8, Tier: "fast", Limits: Limits{TPM: 60000}, EstimatedTokens: 100} // 1 ms a token
	d := mustCheck(t, l, req)
	key := prefix + ":{c8}:tpm:fast"
	if rdb.Exists(context.Background(), key).Val() != 1 {
		t.Fatal("no TPM key after a reservation")
	}
	time.Sleep(150 * time.Millisecond) // the 100 ms reservation has drained
	mustSettle(t, l, d.Reservation, 0, 0)
	if n := rdb.Exists(context.Background(), key).Val(); n != 0 {
		t.Fatalf("TPM key %s = %s after returning a drained reservation, want it deleted (TAT = now)", key, rdb.Get(context.Background(), key).Val())
	}
}

// TestFailingBurstConsumesRequestsNotTokens: failed calls still count for
// RPM, but settle with 0 tokens and give their whole reservation back.
func TestFailingBurstConsumesRequestsNotTokens(t *testing.T) {
	rdb, prefix := testRedis(t)
	l := testLimiter(t, rdb, prefix, Options{})
	req := Request{CallerID: 1, Tier: "fast", Limits: Limits{RPM: 5, TPM: 30, DailyTokens: 100}, EstimatedTokens: 5}
	for i := range 5 {
		d := mustCheck(t, l, req)
		if !d.Allowed {
			t.Fatalf("request %d rejected: %+v", i, d)
		}
		mustSettle(t, l, d.Reservation, 0, 0) // the vendor call failed
	}
	d := mustCheck(t, l, req)
	if d.Allowed || d.Reason != ReasonRateLimited {
		t.Fatalf("6th request: %+v, want rate_limited", d)
	}
	if d.Requests.Remaining != 0 || d.Tokens.Remaining != 30 {
		t.Fatalf("requests remaining %d tokens remaining %d, want 0 and 30", d.Requests.Remaining, d.Tokens.Remaining)
	}
	if d.RetryAfter < 11*time.Second || d.RetryAfter > 12*time.Second {
		t.Fatalf("retry after %v, want ~12s (one request per 12 s)", d.RetryAfter)
	}
	if !d.ShouldRetry() {
		t.Fatal("a rate limit is worth retrying")
	}
	if u := mustUsage(t, l, 1, "fast"); u.DailyTokens != 0 {
		t.Fatalf("daily tokens %d after only failed calls, want 0", u.DailyTokens)
	}
}

// TestRejectionSpendsNothing: the script checks everything first; when any
// check fails, no limit is spent, and the reason is the longest wait.
func TestRejectionSpendsNothing(t *testing.T) {
	rdb, prefix := testRedis(t)
	noon := time.Date(2026, 3, 14, 12, 0, 0, 0, time.UTC) // midnight is far off
	l := testLimiter(t, rdb, prefix, Options{Clock: func() time.Time { return noon }})
	lim := Limits{RPM: 10, TPM: 120, DailyTokens: 100, MonthlyBudgetMicros: 1000}
	req := Request{CallerID: 2, Tier: "deep", Limits: lim, EstimatedTokens: 60}

	d := mustCheck(t, l, req)
	if !d.Allowed {
		t.Fatalf("first request rejected: %+v", d)
	}
	before := mustPeek(t, l, Request{CallerID: 2, Tier: "deep", Limits: lim})

	req.EstimatedTokens = 50 // 60 + 50 > 100: the daily quota rejects
	d = mustCheck(t, l, req)
	if d.Allowed || d.Reason != ReasonQuotaExceeded {
		t.Fatalf("second request: %+v, want quota_exceeded", d)
	}
	after := mustPeek(t, l, Request{CallerID: 2, Tier: "deep", Limits: lim})
	if after.Requests.Remaining != before.Requests.Remaining || after.Tokens.Remaining != before.Tokens.Remaining {
		t.Fatalf("a rejected request spent: requests %d→%d tokens %d→%d",
			before.Requests.Remaining, after.Requests.Remaining, before.Tokens.Remaining, after.Tokens.Remaining)
	}
	if u := mustUsage(t, l, 2, "deep"); u.DailyTokens != 60 {
		t.Fatalf("daily tokens %d, want 60", u.DailyTokens)
	}

	// RPM and quota both fail: the quota's wait (until midnight) is longer,
	// so it is the reason, and no retry helps today.
	lim.RPM = 1
	d = mustCheck(t, l, Request{CallerID: 2, Tier: "deep", Limits: lim, EstimatedTokens: 50})
	if d.Allowed || d.Reason != ReasonQuotaExceeded || d.ShouldRetry() {
		t.Fatalf("RPM and quota exceeded: %+v, want quota_exceeded, no retry", d)
	}
}

// TestDailyQuotaRollsOverAtLocalMidnight uses Asia/Shanghai (UTC+8): the day
// changes at 16:00 UTC. Only the day computation uses the fake clock.
func TestDailyQuotaRollsOverAtLocalMidnight(t *testing.T) {
	rdb, prefix := testRedis(t)
	shanghai, err := time.LoadLocation("Asia/Shanghai")
	if err != nil {
		t.Fatal(err)
	}
	clock := newFakeClock(time.Date(2026, 3, 14, 23, 59, 30, 0, shanghai))
	l := testLimiter(t, rdb, prefix, Options{Location: shanghai, Clock: clock.now})
	req := Request{CallerID: 3, Tier: "standard", Limits: Limits{DailyTokens: 100}}
	check := func(est int64) Decision {
		t.Helper()
		req.EstimatedTokens = est
		return mustCheck(t, l, req)
	}

	first := check(60)
	if !first.Allowed {
		t.Fatalf("60 of 100 rejected: %+v", first)
	}
	d := check(50)
	if d.Allowed || d.Reason != ReasonQuotaExceeded {
		t.Fatalf("60+50 of 100: %+v, want quota_exceeded", d)
	}
	if d.RetryAfter != 30*time.Second || d.ShouldRetry() {
		t.Fatalf("retry after %v should-retry %v, want 30s (local midnight) and false", d.RetryAfter, d.ShouldRetry())
	}
	if !check(40).Allowed {
		t.Fatal("60+40 of 100 rejected: the boundary is inclusive")
	}
	if d := check(0); d.Allowed {
		t.Fatalf("an exhausted quota admitted a request without estimate: %+v", d)
	}
	if d := check(101); d.ShouldRetry() {
		t.Fatalf("an estimate above the whole quota must not be retried: %+v", d)
	}

	dayKey := prefix + ":{c3}:day:standard:2026-03-14"
	if ttl := rdb.TTL(context.Background(), dayKey).Val(); ttl < 47*time.Hour || ttl > 48*time.Hour {
		t.Fatalf("TTL of %s is %v, want ~48h", dayKey, ttl)
	}

	// Local midnight passes (16:00 UTC): a fresh quota on a fresh key.
	clock.add(35 * time.Second)
	if !check(100).Allowed {
		t.Fatal("the quota did not roll over at local midnight")
	}
	if u := mustUsage(t, l, 3, "standard"); u.DailyTokens != 100 {
		t.Fatalf("today's usage %d, want 100", u.DailyTokens)
	}
	// Yesterday's reservation settles against yesterday's counter.
	mustSettle(t, l, first.Reservation, 10, 0)
	if got := rdb.Get(context.Background(), dayKey).Val(); got != "50" {
		t.Fatalf("yesterday's counter %s, want 50 (60+40 reserved, 60 settled as 10)", got)
	}
	if exists := rdb.Exists(context.Background(), prefix+":{c3}:day:standard:2026-03-15").Val(); exists != 1 {
		t.Fatal("today's counter is missing")
	}
}

func TestMonthlyBudget(t *testing.T) {
	rdb, prefix := testRedis(t)
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 3, 31, 23, 0, 0, 0, ny)
	l := testLimiter(t, rdb, prefix, Options{Location: ny, Clock: func() time.Time { return now }})
	lim := Limits{MonthlyBudgetMicros: 1000}

	d := mustCheck(t, l, Request{CallerID: 4, Tier: "fast", Limits: lim, EstimatedTokens: 10})
	if !d.Allowed {
		t.Fatalf("rejected below budget: %+v", d)
	}
	mustSettle(t, l, d.Reservation, 10, 600)
	d = mustCheck(t, l, Request{CallerID: 4, Tier: "deep", Limits: lim})
	if !d.Allowed {
		t.Fatalf("600 of 1000 spent, rejected: %+v", d)
	}
	mustSettle(t, l, d.Reservation, 10, 500) // cost is unknown beforehand: it may overshoot
	for _, tier := range []string{"fast", "standard", "deep"} {
		d = mustCheck(t, l, Request{CallerID: 4, Tier: tier, Limits: lim})
		if d.Allowed || d.Reason != ReasonBudgetExceeded || d.ShouldRetry() {
			t.Fatalf("tier %s after 1100 of 1000: %+v, want budget_exceeded", tier, d)
		}
		if d.RetryAfter != time.Hour {
			t.Fatalf("retry after %v, want 1h (April 1st in New York)", d.RetryAfter)
		}
	}
	if u := mustUsage(t, l, 4, "standard"); u.MonthSpentMicros != 1100 || u.Local {
		t.Fatalf("usage %+v, want 1100 micros from Redis", u)
	}
	if n := rdb.Exists(context.Background(), prefix+":{c4}:month:2026-03").Val(); n != 1 {
		t.Fatal("the monthly key is not named after the local month")
	}
}

// TestUnlimitedCostsNothing: limits of 0 never reach Redis.
func TestUnlimitedCostsNothing(t *testing.T) {
	rdb, prefix := testRedis(t)
	counter := &commandCounter{}
	rdb.AddHook(counter)
	l := testLimiter(t, rdb, prefix, Options{})
	d := mustCheck(t, l, Request{CallerID: 5, Tier: "fast", EstimatedTokens: 1000})
	if !d.Allowed {
		t.Fatalf("unlimited caller rejected: %+v", d)
	}
	mustSettle(t, l, d.Reservation, 5000, 0)
	if names, pipes := counter.take(); len(names) != 0 || pipes != 0 {
		t.Fatalf("unlimited check sent %v and %d pipelines", names, pipes)
	}

	// Only RPM set: the other keys stay untouched.
	mustCheck(t, l, Request{CallerID: 5, Tier: "fast", Limits: Limits{RPM: 10}, EstimatedTokens: 1000})
	keys := storetest.Keys(t, rdb, prefix+"*")
	if len(keys) != 1 || !strings.HasSuffix(keys[0], ":rpm:fast") {
		t.Fatalf("keys %v, want only the RPM key", keys)
	}
}

// TestOneRoundTrip counts what the client sends: a Check is one round
// trip, and a Settle none of its own: it rides the next Check of its
// caller in the same script run, or goes alone when no Check comes within
// settleLinger.
func TestOneRoundTrip(t *testing.T) {
	rdb, prefix := testRedis(t)
	l := testLimiter(t, rdb, prefix, Options{})
	all := Limits{RPM: 100, TPM: 10000, DailyTokens: 100000, MonthlyBudgetMicros: 1e9}
	// Warm the script cache (the first call may meet NOSCRIPT).
	mustCheck(t, l, Request{CallerID: 6, Tier: "fast", Limits: all, EstimatedTokens: 1})
	mustSettle(t, l, mustCheck(t, l, Request{CallerID: 6, Tier: "fast", Limits: all, EstimatedTokens: 1}).Reservation, 2, 3)

	counter := &commandCounter{}
	rdb.AddHook(counter)
	ctx := context.Background()
	for i := range 5 {
		d := mustCheck(t, l, Request{CallerID: 6, Tier: "fast", Limits: all, EstimatedTokens: 100})
		names, pipes := counter.take()
		ops := strings.Join(counter.takeOps(), " ")
		switch {
		case strings.Join(names, ",") != "evalsha" || pipes != 0:
			t.Fatalf("Check %d sent %v and %d pipelines, want one evalsha", i, names, pipes)
		case i == 0 && ops != "c":
			t.Fatalf("first Check ran %q, want the check alone", ops)
		case i > 0 && ops != "s,c":
			t.Fatalf("Check %d ran %q, want the previous settlement and the check in one script run", i, ops)
		}
		if err := l.Settle(ctx, d.Reservation, 150, 42); err != nil {
			t.Fatal(err)
		}
		if names, pipes := counter.take(); len(names) != 0 || pipes != 0 {
			t.Fatalf("Settle sent %v and %d pipelines at once, want nothing until the next check", names, pipes)
		}
	}
	// No check comes: the last settlement goes alone after the linger.
	time.Sleep(20 * settleLinger)
	if names, pipes := counter.take(); strings.Join(names, ",") != "evalsha" || pipes != 0 {
		t.Fatalf("a lone settlement sent %v and %d pipelines, want one evalsha", names, pipes)
	}
	if ops := counter.takeOps(); strings.Join(ops, " ") != "s" {
		t.Fatalf("a lone settlement ran %q", ops)
	}
	if u := mustUsage(t, l, 6, "fast"); u.DailyTokens != 2+1+5*150 || u.MonthSpentMicros != 3+5*42 {
		t.Fatalf("usage %+v after the settlements, want %d tokens and %d micros", u, 2+1+5*150, 3+5*42)
	}
}

// TestConcurrentCallsShareRoundTrips: checks made at the same time travel
// in shared pipelines, each answered with its own decision.
func TestConcurrentCallsShareRoundTrips(t *testing.T) {
	rdb, prefix := testRedis(t)
	l := testLimiter(t, rdb, prefix, Options{})
	mustCheck(t, l, Request{CallerID: 1, Tier: "fast", Limits: Limits{RPM: 50}}) // warm the script cache
	counter := &commandCounter{}
	rdb.AddHook(counter)
	const callers, each = 32, 20
	var wg sync.WaitGroup
	var admitted [callers]int
	for c := range callers {
		wg.Go(func() {
			for range each {
				d, err := l.Check(context.Background(), Request{CallerID: int64(100 + c), Tier: "fast", Limits: Limits{RPM: 15}})
				if err != nil || d.Local {
					t.Errorf("caller %d: %+v %v", c, d, err)
					return
				}
				if d.Allowed {
					admitted[c]++
				}
			}
		})
	}
	wg.Wait()
	for c, n := range admitted {
		if n != 15 {
			t.Errorf("caller %d admitted %d of %d, want its RPM of 15", c, n, each)
		}
	}
	names, _ := counter.take()
	roundTrips := counter.takeTrips()
	if n := strings.Count(strings.Join(names, ","), "evalsha"); n != callers*each {
		t.Fatalf("%d evalsha sent for %d checks", n, callers*each)
	}
	if roundTrips >= callers*each {
		t.Fatalf("%d round trips for %d concurrent checks: nothing was shared", roundTrips, callers*each)
	}
	t.Logf("%d concurrent checks in %d round trips", callers*each, roundTrips)
}

// TestNoScriptFallback runs on a private Redis whose script cache can be
// flushed without disturbing other packages' tests.
func TestNoScriptFallback(t *testing.T) {
	rdb := privateRedis(t)
	ctx := context.Background()
	counter := &commandCounter{}
	rdb.AddHook(counter)
	l := testLimiter(t, rdb, "nsf", Options{})
	req := Request{CallerID: 1, Tier: "fast", Limits: Limits{RPM: 3}}

	for round := range 2 {
		if err := rdb.ScriptFlush(ctx).Err(); err != nil {
			t.Fatal(err)
		}
		counter.take()
		if d := mustCheck(t, l, req); !d.Allowed {
			t.Fatalf("round %d: rejected %+v", round, d)
		}
		if names, _ := counter.take(); strings.Join(names, ",") != "evalsha,eval" {
			t.Fatalf("round %d: after SCRIPT FLUSH the check sent %v, want evalsha then eval", round, names)
		}
		mustCheck(t, l, req)
		if names, _ := counter.take(); strings.Join(names, ",") != "evalsha" {
			t.Fatalf("round %d: with the script cached the check sent %v", round, names)
		}
	}
	if d := mustPeek(t, l, req); d.Allowed {
		t.Fatalf("4 requests against RPM 3 and the 5th would pass: %+v", d)
	}
}

// TestExactlyNAdmitted: two Limiters on two clients, as two gateway
// processes, race 2×N requests against RPM = N; exactly N pass.
func TestExactlyNAdmitted(t *testing.T) {
	const n = 50
	rdbA, prefix := testRedis(t)
	rdbB := storetest.SameRedis(t)
	limiters := []*Limiter{testLimiter(t, rdbA, prefix, Options{}), testLimiter(t, rdbB, prefix, Options{})}
	req := Request{CallerID: 9, Tier: "standard", Limits: Limits{RPM: n, TPM: 1e6}, EstimatedTokens: 10}

	var allowed atomic.Int64
	var start, wg sync.WaitGroup
	start.Add(1)
	for i := range 2 * n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			start.Wait()
			d, err := limiters[i%2].Check(context.Background(), req)
			if err != nil {
				t.Error(err)
				return
			}
			if d.Allowed {
				allowed.Add(1)
			}
		}()
	}
	start.Done()
	wg.Wait()
	for i, l := range limiters {
		if f := l.FallbackDecisions(); f != 0 {
			t.Fatalf("limiter %d decided %d requests locally", i, f)
		}
	}
	if got := allowed.Load(); got != n {
		t.Fatalf("%d of %d requests admitted against RPM %d, want exactly %d", got, 2*n, n, n)
	}
}

func TestPeekSpendsNothing(t *testing.T) {
	rdb, prefix := testRedis(t)
	l := testLimiter(t, rdb, prefix, Options{})
	req := Request{CallerID: 10, Tier: "fast", Limits: Limits{RPM: 2, TPM: 100, DailyTokens: 100, MonthlyBudgetMicros: 10}, EstimatedTokens: 50}
	for range 3 {
		d := mustPeek(t, l, req)
		if !d.Allowed || d.Requests.Remaining != 1 || d.Tokens.Remaining != 50 || d.Reservation != (Reservation{}) {
			t.Fatalf("peek: %+v", d)
		}
	}
	if keys := storetest.Keys(t, rdb, prefix+"*"); len(keys) != 0 {
		t.Fatalf("Peek wrote %v", keys)
	}
}

func TestInvalidRequest(t *testing.T) {
	rdb, prefix := testRedis(t)
	l := testLimiter(t, rdb, prefix, Options{})
	for _, req := range []Request{
		{Limits: Limits{RPM: -1}},
		{Limits: Limits{TPM: 10}, EstimatedTokens: -5},
		{Limits: Limits{MonthlyBudgetMicros: -1}},
	} {
		if _, err := l.Check(context.Background(), req); !errors.Is(err, ErrInvalidRequest) {
			t.Errorf("Check(%+v) = %v, want ErrInvalidRequest", req, err)
		}
	}
	if err := l.Settle(context.Background(), Reservation{}, -1, 0); !errors.Is(err, ErrInvalidRequest) {
		t.Errorf("Settle(-1) = %v, want ErrInvalidRequest", err)
	}
}

func TestCancelledContextIsNotAnOutage(t *testing.T) {
	rdb, prefix := testRedis(t)
	l := testLimiter(t, rdb, prefix, Options{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := l.Check(ctx, Request{CallerID: 1, Limits: Limits{RPM: 1}})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Check on a cancelled context = %v, want context.Canceled", err)
	}
	if l.Degraded() || l.FallbackDecisions() != 0 {
		t.Fatal("a cancelled caller degraded the limiter")
	}
}

func TestKeysShareOneHashTag(t *testing.T) {
	l := New(redis.NewClient(&redis.Options{}), Options{Prefix: "p"})
	k := l.keysFor(42, "fast", "2026-03-14", "2026-03")
	for _, key := range []string{k.rpm, k.tpm, k.day, k.month} {
		if !strings.HasPrefix(key, "p:{c42}:") {
			t.Errorf("key %q lacks the caller's hash tag", key)
		}
	}
	defer func() {
		if recover() == nil {
			t.Error("a prefix with a brace was accepted")
		}
	}()
	New(nil, Options{Prefix: "a{b}"})
}

func TestCalendar(t *testing.T) {
	ny, _ := time.LoadLocation("America/New_York")
	sh, _ := time.LoadLocation("Asia/Shanghai")
	tests := []struct {
		name          string
		now           time.Time
		loc           *time.Location
		day, month    string
		untilMidnight time.Duration
		untilMonthEnd time.Duration
	}{
		{"utc noon", time.Date(2026, 3, 14, 12, 0, 0, 0, time.UTC), time.UTC, "2026-03-14", "2026-03", 12 * time.Hour, 17*24*time.Hour + 12*time.Hour},
		{"shanghai is already tomorrow", time.Date(2026, 3, 14, 16, 30, 0, 0, time.UTC), sh, "2026-03-15", "2026-03", 23*time.Hour + 30*time.Minute, 16*24*time.Hour + 23*time.Hour + 30*time.Minute},
		{"new year's eve", time.Date(2026, 12, 31, 23, 0, 0, 0, ny), ny, "2026-12-31", "2026-12", time.Hour, time.Hour},
		// 2026-03-08 has 23 hours in New York (DST starts at 02:00).
		{"dst day", time.Date(2026, 3, 8, 0, 0, 0, 0, ny), ny, "2026-03-08", "2026-03", 23 * time.Hour, 23*24*time.Hour + 23*time.Hour},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newCalendar(tt.now, tt.loc)
			if c.day != tt.day || c.month != tt.month {
				t.Errorf("day %s month %s, want %s %s", c.day, c.month, tt.day, tt.month)
			}
			if got := c.midnight.Sub(tt.now); got != tt.untilMidnight {
				t.Errorf("until midnight %v, want %v", got, tt.untilMidnight)
			}
			if got := c.monthEnd.Sub(tt.now); got != tt.untilMonthEnd {
				t.Errorf("until month end %v, want %v", got, tt.untilMonthEnd)
			}
		})
	}
}

// TestHugeLimitsStayInRedis: a limit so high that one request moves its
// clock by less than a float's resolution of Redis time (make bench's
// callers: 100M RPM, 1T TPM) must not hand SET an expiry of 0 — Redis
// refuses it, and the Limiter would fall back to per-instance limits.
func TestHugeLimitsStayInRedis(t *testing.T) {
	rdb, prefix := testRedis(t)
	l := testLimiter(t, rdb, prefix, Options{})
	req := Request{CallerID: 9, Tier: "standard",
		Limits: Limits{RPM: 100_000_000, TPM: 1_000_000_000_000, DailyTokens: 1_000_000_000_000, MonthlyBudgetMicros: 1 << 50}}
	for i := range 20 {
		req.EstimatedTokens = int64(1 + i%2*529) // 1 token moves the TPM clock by 6e-11 s
		d := mustCheck(t, l, req)
		if !d.Allowed || d.Local {
			t.Fatalf("decision %+v: want allowed by Redis", d)
		}
		mustSettle(t, l, d.Reservation, 400, 10)
	}
	if l.Degraded() || l.FallbackDecisions() != 0 {
		t.Fatalf("degraded %v after %d fallback decisions", l.Degraded(), l.FallbackDecisions())
	}
}
