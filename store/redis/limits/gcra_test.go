package limits

import (
	"context"
	"testing"
	"time"

	"github.com/go-redis/redis_rate/v10"
)

// step is one AllowN of a golden vector and what it must report, in the
// style of redis_rate's rate_test.go. remaining of a rejected step is what
// AllowN(0) reports right after it (Decision reports the untouched state);
// retry is 0 for an admitted step (redis_rate says -1).
const (
	kindRequests = "requests"
	kindTokens   = "tokens"
)

type step struct {
	cost      int64
	allowed   bool
	remaining int64
	retry     time.Duration
	reset     time.Duration
}

type vector struct {
	name  string
	kind  string // kindRequests: cost is always 1; kindTokens: cost is the estimate
	rate  int64
	burst int64
	steps []step
}

var goldenVectors = []vector{
	{name: "10 rpm", kind: kindRequests, rate: 10, burst: 10, steps: []step{
		{1, true, 9, 0, 6 * time.Second},
		{1, true, 8, 0, 12 * time.Second},
		{1, true, 7, 0, 18 * time.Second},
		{1, true, 6, 0, 24 * time.Second},
		{1, true, 5, 0, 30 * time.Second},
		{1, true, 4, 0, 36 * time.Second},
		{1, true, 3, 0, 42 * time.Second},
		{1, true, 2, 0, 48 * time.Second},
		{1, true, 1, 0, 54 * time.Second},
		{1, true, 0, 0, 60 * time.Second},
		{1, false, 0, 6 * time.Second, 60 * time.Second},
		{1, false, 0, 6 * time.Second, 60 * time.Second},
	}},
	{name: "60 rpm burst 3", kind: kindRequests, rate: 60, burst: 3, steps: []step{
		{1, true, 2, 0, 1 * time.Second},
		{1, true, 1, 0, 2 * time.Second},
		{1, true, 0, 0, 3 * time.Second},
		{1, false, 0, 1 * time.Second, 3 * time.Second},
	}},
	{name: "100 tpm", kind: kindTokens, rate: 100, burst: 100, steps: []step{
		{10, true, 90, 0, 6 * time.Second},
		{0, true, 90, 0, 6 * time.Second}, // AllowN(0) peeks
		{85, true, 5, 0, 57 * time.Second},
		{10, false, 5, 3 * time.Second, 57 * time.Second},
		{5, true, 0, 0, 60 * time.Second},
		{0, true, 0, 0, 60 * time.Second},
		{200, false, 0, 120 * time.Second, 60 * time.Second},
	}},
	{name: "100 tpm burst 20", kind: kindTokens, rate: 100, burst: 20, steps: []step{
		{0, true, 20, 0, 0},
		{20, true, 0, 0, 12 * time.Second},
		{1, false, 0, 600 * time.Millisecond, 12 * time.Second},
	}},
}

// tolerance absorbs the time that passes between steps; the vectors' rates
// are slow enough (an emission interval of ≥ 0.6 s) that it cannot change a
// remaining count.
const tolerance = 250 * time.Millisecond

func checkStep(t *testing.T, who string, i int, s step, allowed bool, remaining int64, retry, reset time.Duration) {
	t.Helper()
	if allowed != s.allowed || remaining != s.remaining {
		t.Errorf("%s step %d (cost %d): allowed=%v remaining=%d, want %v %d", who, i, s.cost, allowed, remaining, s.allowed, s.remaining)
	}
	if d := retry - s.retry; d < -tolerance || d > tolerance {
		t.Errorf("%s step %d (cost %d): retry after %v, want %v", who, i, s.cost, retry, s.retry)
	}
	if d := reset - s.reset; d < -tolerance || d > tolerance {
		t.Errorf("%s step %d (cost %d): reset after %v, want %v", who, i, s.cost, reset, s.reset)
	}
}

func (v vector) limits() Limits {
	if v.kind == kindRequests {
		return Limits{RPM: v.rate, RPMBurst: v.burst}
	}
	return Limits{TPM: v.rate, TPMBurst: v.burst}
}

func (v vector) window(d Decision) Window {
	if v.kind == kindRequests {
		return d.Requests
	}
	return d.Tokens
}

// TestGCRAGoldenVectors runs each vector three ways — redis_rate itself (the
// reference), our script through Check, and the local fallback on a fake
// clock — and holds all three to the same expected values.
func TestGCRAGoldenVectors(t *testing.T) {
	rdb, prefix := testRedis(t)
	ctx := context.Background()
	ref := redis_rate.NewLimiter(rdb)
	l := testLimiter(t, rdb, prefix, Options{})

	for vi, v := range goldenVectors {
		t.Run(v.name, func(t *testing.T) {
			refKey := prefix + ":ref:" + v.name
			limit := redis_rate.Limit{Rate: int(v.rate), Burst: int(v.burst), Period: time.Minute}
			for i, s := range v.steps {
				res, err := ref.AllowN(ctx, refKey, limit, int(s.cost))
				if err != nil {
					t.Fatal(err)
				}
				remaining, retry := res.Remaining, res.RetryAfter
				allowed := res.RetryAfter == -1
				if !allowed {
					peek, err := ref.AllowN(ctx, refKey, limit, 0)
					if err != nil {
						t.Fatal(err)
					}
					remaining = peek.Remaining
				} else {
					retry = 0
				}
				checkStep(t, "redis_rate", i, s, allowed, int64(remaining), retry, res.ResetAfter)
			}

			req := Request{CallerID: int64(vi), Tier: "standard", Limits: v.limits()}
			for i, s := range v.steps {
				req.EstimatedTokens = 0
				if v.kind == kindTokens {
					req.EstimatedTokens = s.cost
				}
				d, err := l.Check(ctx, req)
				if err != nil {
					t.Fatal(err)
				}
				if d.Local {
					t.Fatal("decided locally; Redis must decide")
				}
				w := v.window(d)
				checkStep(t, "script", i, s, d.Allowed, w.Remaining, d.RetryAfter, w.Reset)
				if !d.Allowed && d.Reason != ReasonRateLimited {
					t.Errorf("script step %d: reason %q, want rate_limited", i, d.Reason)
				}
			}

			clock := newFakeClock(time.Date(2026, 3, 14, 12, 0, 0, 0, time.UTC))
			ls := newLocalStore(clock.now)
			k := keySet{rpm: "rpm", tpm: "tpm", day: "day", month: "month"}
			lim := v.limits().WithDefaults()
			for i, s := range v.steps {
				est := int64(0)
				if v.kind == kindTokens {
					est = s.cost
				}
				d := l.decide(Request{EstimatedTokens: est}, lim, newCalendar(clock.now(), time.UTC),
					ls.check(k, lim, est, false), true, false)
				w := v.window(d)
				checkStep(t, "local", i, s, d.Allowed, w.Remaining, d.RetryAfter, w.Reset)
				clock.add(time.Millisecond)
			}
		})
	}
}

// TestGCRAReplenishes checks the passage of time on the local fallback
// (exact on a fake clock): a 60 rpm limit with burst 2 regains one request
// per second.
func TestGCRAReplenishes(t *testing.T) {
	clock := newFakeClock(time.Date(2026, 3, 14, 12, 0, 0, 0, time.UTC))
	ls := newLocalStore(clock.now)
	k := keySet{rpm: "rpm"}
	lim := Limits{RPM: 60, RPMBurst: 2}
	admit := func() bool { return ls.check(k, lim, 0, false).failed == 0 }
	if !admit() || !admit() || admit() {
		t.Fatal("burst of 2 not enforced")
	}
	clock.add(999 * time.Millisecond)
	if admit() {
		t.Fatal("admitted before a request's emission interval passed")
	}
	clock.add(time.Millisecond)
	if !admit() || admit() {
		t.Fatal("one request per second not regained")
	}
	clock.add(10 * time.Second)
	if !admit() || !admit() || admit() {
		t.Fatal("idle time must not accumulate beyond the burst")
	}
}

// TestLocalStoreForgets: expired counters and past TATs are swept, so the
// fallback's memory stays bounded by recent activity.
func TestLocalStoreForgets(t *testing.T) {
	clock := newFakeClock(time.Date(2026, 3, 14, 12, 0, 0, 0, time.UTC))
	ls := newLocalStore(clock.now)
	ls.observe("day:old", 10, time.Hour)
	ls.addPending("month:old", 5, time.Hour)
	ls.check(keySet{rpm: "rpm"}, Limits{RPM: 60, RPMBurst: 60}, 0, false)
	if !ls.hasPending() {
		t.Fatal("pending delta not recorded")
	}
	clock.add(2 * time.Hour)
	ls.observe("day:new", 1, time.Hour) // healthy traffic triggers the sweep
	if len(ls.counters) != 1 || len(ls.tats) != 0 || ls.hasPending() {
		t.Fatalf("after expiry: %d counters, %d TATs, pending=%v; want 1, 0, false", len(ls.counters), len(ls.tats), ls.hasPending())
	}
}
