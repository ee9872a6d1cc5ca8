package loginguard

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"switchyard/store/storetest"
)

// fakeClock is a settable clock for the scripts' ARGV time.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

var small = Settings{User: Limits{BackoffAfter: 3, LockoutAfter: 5}, IP: Limits{BackoffAfter: 4, LockoutAfter: 8},
	BackoffBase: time.Second, LockoutFor: time.Minute}

func newGuard(t *testing.T, set Settings) (*Guard, *fakeClock, redis.UniversalClient, string) {
	t.Helper()
	rdb, prefix := storetest.TestRedis(t, "loginguard")
	clk := &fakeClock{t: time.Date(2026, 3, 14, 9, 0, 0, 0, time.UTC)}
	g := New(rdb, Options{Prefix: prefix, Settings: set, Timeout: time.Second, Clock: clk.now})
	return g, clk, rdb, prefix
}

func TestGuardBacksOffThenLocksOutThenForgets(t *testing.T) {
	g, clk, _, _ := newGuard(t, small)
	ctx := context.Background()
	ip := "203.0.113.7"

	for i := 1; i <= 2; i++ {
		if v := g.Fail(ctx, "alice", ip); v.Blocked {
			t.Fatalf("failure %d blocks already: %+v", i, v)
		}
	}
	// The third failure starts the back-off: 1 s, then 2 s.
	v := g.Fail(ctx, "alice", ip)
	if !v.Blocked || v.Kind != User || v.Locked || v.RetryAfter != time.Second || v.Failures != 3 {
		t.Fatalf("third failure: %+v, want a 1s back-off of the user", v)
	}
	if c := g.Check(ctx, "alice", ip); !c.Blocked || c.RetryAfter != time.Second || c.Kind != User {
		t.Fatalf("check during back-off: %+v", c)
	}
	if c := g.Check(ctx, "bob", ip); c.Blocked {
		t.Fatalf("another user from the same address is blocked: %+v", c)
	}
	clk.add(time.Second)
	if c := g.Check(ctx, "alice", ip); c.Blocked {
		t.Fatalf("back-off did not end: %+v", c)
	}
	if v := g.Fail(ctx, "alice", ip); v.RetryAfter != 2*time.Second || v.Locked {
		t.Fatalf("fourth failure: %+v, want a 2s back-off", v)
	}
	clk.add(2 * time.Second)
	// The fifth locks the user out for LockoutFor.
	v = g.Fail(ctx, "alice", ip)
	if !v.Blocked || !v.Locked || v.Kind != User || v.RetryAfter != time.Minute {
		t.Fatalf("fifth failure: %+v, want a 1m lockout", v)
	}
	clk.add(30 * time.Second)
	if c := g.Check(ctx, "alice", ip); !c.Blocked || !c.Locked || c.RetryAfter != 30*time.Second {
		t.Fatalf("check during lockout: %+v", c)
	}
	locks, err := g.Locks(ctx)
	if err != nil || len(locks) != 1 || locks[0].Kind != User || locks[0].Subject != "alice" || locks[0].Local {
		t.Fatalf("locks = %+v, %v", locks, err)
	}
	// The lockout ends with a clean slate.
	clk.add(30 * time.Second)
	if c := g.Check(ctx, "alice", ip); c.Blocked {
		t.Fatalf("lockout did not end: %+v", c)
	}
	if locks, _ := g.Locks(ctx); len(locks) != 0 {
		t.Fatalf("expired lockout still listed: %+v", locks)
	}
}

func TestGuardWaitNeverExceedsLockout(t *testing.T) {
	set := Settings{User: Limits{BackoffAfter: 1, LockoutAfter: 40}, IP: Limits{BackoffAfter: 100, LockoutAfter: 100},
		BackoffBase: time.Second, LockoutFor: 10 * time.Second}
	g, clk, _, _ := newGuard(t, set)
	ctx := context.Background()
	var last time.Duration
	for i := 0; i < 30; i++ {
		v := g.Fail(ctx, "carol", "")
		if v.RetryAfter > set.LockoutFor || v.RetryAfter < last {
			t.Fatalf("failure %d waits %s (before: %s)", i+1, v.RetryAfter, last)
		}
		last = v.RetryAfter
		clk.add(v.RetryAfter)
	}
	if last != set.LockoutFor {
		t.Fatalf("back-off capped at %s, want %s", last, set.LockoutFor)
	}
}

func TestGuardSuccessResetsUserButNotAddress(t *testing.T) {
	g, _, _, _ := newGuard(t, small)
	ctx := context.Background()
	ip := "198.51.100.9"
	for range 3 {
		g.Fail(ctx, "dave", ip)
	}
	g.Succeed(ctx, "dave")
	if c := g.Check(ctx, "dave", ip); c.Blocked {
		t.Fatalf("success did not clear the user's back-off: %+v", c)
	}
	// The address has 3 failures: the next one starts its back-off (4).
	v := g.Fail(ctx, "dave", ip)
	if !v.Blocked || v.Kind != IP || v.Failures != 4 {
		t.Fatalf("address count was reset by a success: %+v", v)
	}
}

func TestGuardAddressCountsAcrossUsernames(t *testing.T) {
	g, _, _, _ := newGuard(t, small)
	ctx := context.Background()
	ip := "192.0.2.44"
	var v Verdict
	for i, u := range []string{"u1", "u2", "u3", "u4", "u5", "u6", "u7", "u8"} {
		v = g.Fail(ctx, u, ip)
		if i < 3 && v.Blocked {
			t.Fatalf("spray %d blocked early: %+v", i, v)
		}
	}
	if !v.Blocked || !v.Locked || v.Kind != IP {
		t.Fatalf("eight usernames from one address: %+v, want the address locked", v)
	}
	if c := g.Check(ctx, "fresh-user", ip); !c.Blocked || c.Kind != IP {
		t.Fatalf("a new username from the locked address: %+v", c)
	}
	if c := g.Check(ctx, "fresh-user", "192.0.2.45"); c.Blocked {
		t.Fatalf("another address is blocked: %+v", c)
	}
	// Token failures carry no username: only the address counts.
	if c := g.Check(ctx, "", ip); !c.Blocked || c.Kind != IP {
		t.Fatalf("token check from the locked address: %+v", c)
	}
}

func TestGuardClearLiftsLockoutForEveryInstance(t *testing.T) {
	g, clk, rdb, prefix := newGuard(t, small)
	other := New(rdb, Options{Prefix: prefix, Settings: small, Timeout: time.Second, Clock: clk.now})
	ctx := context.Background()
	for range 5 {
		g.Fail(ctx, "erin", "")
	}
	if c := other.Check(ctx, "erin", ""); !c.Locked {
		t.Fatalf("the other instance does not see the lockout: %+v", c)
	}
	if err := other.Clear(ctx, User, "erin"); err != nil {
		t.Fatal(err)
	}
	if c := g.Check(ctx, "erin", ""); c.Blocked {
		t.Fatalf("cleared lockout still blocks: %+v", c)
	}
	if locks, _ := g.Locks(ctx); len(locks) != 0 {
		t.Fatalf("cleared lockout still listed: %+v", locks)
	}
	if err := g.Clear(ctx, Kind("bogus"), "x"); err == nil {
		t.Fatal("unknown kind accepted")
	}
}

func TestGuardKeysAreHashTaggedUnderPrefix(t *testing.T) {
	g, _, rdb, prefix := newGuard(t, small)
	ctx := context.Background()
	for range 5 {
		g.Fail(ctx, "frank\x00\n", "10.0.0.1")
	}
	keys := storetest.Keys(t, rdb, prefix+"*")
	want := map[string]bool{
		prefix + ":{loginguard}:user:ZnJhbms":   true, // base64url("frank"): control characters dropped
		prefix + ":{loginguard}:ip:MTAuMC4wLjE": true,
		prefix + ":{loginguard}:locks":          true,
	}
	if len(keys) != len(want) {
		t.Fatalf("keys %q, want %v", keys, want)
	}
	for _, k := range keys {
		if !want[k] {
			t.Fatalf("unexpected key %q (all: %q)", k, keys)
		}
		if ttl := rdb.PTTL(ctx, k).Val(); k != prefix+":{loginguard}:locks" && ttl <= 0 {
			t.Errorf("key %s has no expiry (%s)", k, ttl)
		}
	}
}

func TestGuardFallsBackPerInstanceWhenRedisIsDown(t *testing.T) {
	rdb := storetest.NewRedisClient(storetest.Blackhole(t))
	t.Cleanup(func() { rdb.Close() })
	g := New(rdb, Options{Prefix: "down", Settings: small, Timeout: 20 * time.Millisecond, ProbeInterval: time.Hour})
	ctx := context.Background()
	for i := 1; i <= 2; i++ {
		if v := g.Fail(ctx, "gina", "10.1.1.1"); v.Blocked || !v.Local {
			t.Fatalf("failure %d: %+v", i, v)
		}
	}
	if !g.Degraded() {
		t.Fatal("not degraded with Redis timing out")
	}
	// Fail open does not mean no throttle: this instance still counts.
	if v := g.Fail(ctx, "gina", "10.1.1.1"); !v.Blocked || !v.Local || v.Kind != User {
		t.Fatalf("third failure with Redis down: %+v, want a local back-off", v)
	}
	if c := g.Check(ctx, "gina", "10.1.1.1"); !c.Blocked || !c.Local {
		t.Fatalf("check with Redis down: %+v", c)
	}
	g.Fail(ctx, "gina", "10.1.1.1")
	g.Fail(ctx, "gina", "10.1.1.1")
	locks, err := g.Locks(ctx)
	if err == nil || len(locks) != 1 || !locks[0].Local || locks[0].Subject != "gina" {
		t.Fatalf("local locks = %+v, %v", locks, err)
	}
	if err := g.Clear(ctx, User, "gina"); err == nil {
		t.Fatal("clear reported success with Redis down")
	}
	if c := g.Check(ctx, "gina", ""); c.Blocked {
		t.Fatalf("clear did not lift the local lockout: %+v", c)
	}
}

func TestNormalize(t *testing.T) {
	long := ""
	for range 50 {
		long += "é" // 2 bytes each
	}
	for in, want := range map[string]string{
		"alice":          "alice",
		"al\x00ice\t":    "alice",
		"bad\xffutf8":    "bad\uFFFDutf8",
		"":               "",
		long + long:      long + long[:28],
		"\u202eevil\r\n": "\u202eevil",
	} {
		if got := Normalize(in); got != want {
			t.Errorf("Normalize(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestSettingsValidate(t *testing.T) {
	if err := (Settings{}).WithDefaults().Validate(); err != nil {
		t.Fatalf("defaults invalid: %v", err)
	}
	d := Settings{}.WithDefaults()
	if d.User.BackoffAfter != 5 || d.User.LockoutAfter != 10 || d.LockoutFor != 15*time.Minute || d.BackoffBase != time.Second {
		t.Fatalf("defaults %+v", d)
	}
	for name, s := range map[string]Settings{
		"lockout below back-off": {User: Limits{BackoffAfter: 5, LockoutAfter: 3}},
		"negative threshold":     {IP: Limits{BackoffAfter: -1, LockoutAfter: 3}},
		"base above lockout":     {BackoffBase: time.Hour, LockoutFor: time.Minute},
	} {
		if err := s.WithDefaults().Validate(); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
