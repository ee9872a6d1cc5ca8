package limits

import (
	"context"
	_ "embed"
	"errors"
	"math"
	"strconv"
	"testing"
	"time"

	"switchyard/routing/limit"

	"github.com/redis/go-redis/v9"
)

// TestCounterExpiry: a daily or monthly counter gets its expiry when a
// write creates it, and when a settlement resets it to 0 (SET clears an
// expiry); other writes leave the expiry alone.
func TestCounterExpiry(t *testing.T) {
	rdb, prefix := testRedis(t)
	ctx := context.Background()
	noon := time.Date(2026, 3, 31, 12, 0, 0, 0, time.UTC)
	l := testLimiter(t, rdb, prefix, Options{Clock: func() time.Time { return noon }, Exact: true})
	lim := Limits{DailyTokens: 1000, MonthlyBudgetMicros: 1e6}
	const monthTTL = 12*time.Hour + dayTTL // to April 1st, then two days
	keys := func(caller int64) (day, month string) {
		base := prefix + ":{c" + strconv.FormatInt(caller, 10) + "}:"
		return base + "day:fast:2026-03-31", base + "month:2026-03"
	}
	ttl := func(key string) time.Duration {
		t.Helper()
		d, err := rdb.TTL(ctx, key).Result()
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	value := func(key string) string {
		t.Helper()
		return rdb.Get(ctx, key).Val()
	}
	about := func(got, want time.Duration) bool { return got <= want && got > want-time.Minute }
	check := func(caller, est int64) Reservation {
		t.Helper()
		d := mustCheck(t, l, Request{CallerID: caller, Tier: "fast", Limits: lim, EstimatedTokens: est})
		if !d.Allowed {
			t.Fatalf("rejected: %+v", d)
		}
		return d.Reservation
	}

	t.Run("new counters", func(t *testing.T) {
		day, month := keys(1)
		r := check(1, 10)
		if got := ttl(day); value(day) != "10" || !about(got, dayTTL) {
			t.Fatalf("daily counter %q with TTL %v, want 10 and %v", value(day), got, dayTTL)
		}
		mustSettle(t, l, r, 10, 500)
		if got := ttl(month); value(month) != "500" || !about(got, monthTTL) {
			t.Fatalf("monthly counter %q with TTL %v, want 500 and %v", value(month), got, monthTTL)
		}
	})
	t.Run("later writes keep the expiry", func(t *testing.T) {
		day, month := keys(2)
		mustSettle(t, l, check(2, 10), 10, 500)
		for _, k := range []string{day, month} {
			rdb.Expire(ctx, k, 100*time.Second)
		}
		mustSettle(t, l, check(2, 10), 30, 500)
		if got := ttl(day); value(day) != "40" || got > 100*time.Second || got <= 0 {
			t.Fatalf("daily counter %q with TTL %v, want 40 and the 100s it had", value(day), got)
		}
		if got := ttl(month); value(month) != "1000" || got > 100*time.Second || got <= 0 {
			t.Fatalf("monthly counter %q with TTL %v, want 1000 and the 100s it had", value(month), got)
		}
	})
	t.Run("a lost counter reset to 0", func(t *testing.T) {
		day, _ := keys(3)
		r := check(3, 50)
		rdb.Del(ctx, day) // lost in a failover, say
		mustSettle(t, l, r, 20, 0)
		if got := ttl(day); value(day) != "0" || !about(got, dayTTL) {
			t.Fatalf("daily counter %q with TTL %v after returning 30 tokens to nothing, want 0 and %v", value(day), got, dayTTL)
		}
		// A reset counter that had an expiry gets dayTTL again (SET cleared it).
		rdb.Set(ctx, day, 5, 100*time.Second)
		mustSettle(t, l, r, 20, 0)
		if got := ttl(day); value(day) != "0" || !about(got, dayTTL) {
			t.Fatalf("daily counter %q with TTL %v after a reset, want 0 and %v", value(day), got, dayTTL)
		}
	})
	t.Run("a lost counter recreated", func(t *testing.T) {
		day, month := keys(4)
		r := check(4, 50)
		rdb.Del(ctx, day, month)
		mustSettle(t, l, r, 80, 7)
		if got := ttl(day); value(day) != "30" || !about(got, dayTTL) {
			t.Fatalf("daily counter %q with TTL %v, want 30 and %v", value(day), got, dayTTL)
		}
		if got := ttl(month); value(month) != "7" || !about(got, monthTTL) {
			t.Fatalf("monthly counter %q with TTL %v, want 7 and %v", value(month), got, monthTTL)
		}
	})
}

// TestDurationsInNanoseconds: the script returns durations as integer
// nanoseconds, rounded, not truncated to seconds or microseconds.
func TestDurationsInNanoseconds(t *testing.T) {
	rdb, prefix := testRedis(t)
	l := testLimiter(t, rdb, prefix, Options{})
	d := mustCheck(t, l, Request{CallerID: 1, Tier: "fast", Limits: Limits{RPM: 7}})
	want := time.Duration(8_571_428_571) // 60/7 s: one request's emission interval
	if diff := d.Requests.Reset - want; diff < -time.Microsecond || diff > time.Microsecond {
		t.Fatalf("reset %v, want %v", d.Requests.Reset, want)
	}
}

// TestHugeDurationsAreCapped: a window pushed centuries ahead (a burst far
// above the rate) reports maxReplyDuration, not an overflowed integer.
func TestHugeDurationsAreCapped(t *testing.T) {
	rdb, prefix := testRedis(t)
	l := testLimiter(t, rdb, prefix, Options{})
	lim := Limits{TPM: 1, TPMBurst: 1_000_000_000_000}
	d := mustCheck(t, l, Request{CallerID: 1, Tier: "fast", Limits: lim, EstimatedTokens: 100_000_000_000})
	// At 6e12 seconds a float of time is coarse: 9e11 left, give or take one.
	if rem := d.Tokens.Remaining; !d.Allowed || d.Tokens.Reset != maxReplyDuration || rem < 900_000_000_000-1 || rem > 900_000_000_000 {
		t.Fatalf("first check: %+v, want admitted, 9e11 left, reset %v", d, maxReplyDuration)
	}
	// 6e12 seconds ahead, stored as float seconds since 2017 as always.
	tat, err := rdb.Get(context.Background(), prefix+":{c1}:tpm:fast").Float64()
	if err != nil {
		t.Fatal(err)
	}
	if want := gcraSeconds(time.Now()) + 6e12; math.Abs(tat-want) > 10 {
		t.Fatalf("TAT %f, want about %f", tat, want)
	}
	d = mustCheck(t, l, Request{CallerID: 1, Tier: "fast", Limits: lim, EstimatedTokens: 1_000_000_000_000})
	if d.Allowed || d.Limit != limit.KindTPM || d.RetryAfter != maxReplyDuration || d.Tokens.Reset != maxReplyDuration {
		t.Fatalf("second check: %+v, want rejected by TPM, retry after %v", d, maxReplyDuration)
	}
}

var (
	//go:embed testdata/previous_check.lua
	previousCheckScript string
	//go:embed testdata/previous_settle.lua
	previousSettleScript string
)

// TestRollingUpgradeSharesKeys: during a rolling upgrade instances of the
// previous release (its scripts, kept in testdata) and of this one work on
// the same keys, each reading what the other wrote.
func TestRollingUpgradeSharesKeys(t *testing.T) {
	rdb, prefix := testRedis(t)
	ctx := context.Background()
	l := testLimiter(t, rdb, prefix, Options{})
	// 4 s a request, 1 s a token: the test's milliseconds move nothing.
	lim := Limits{RPM: 15, TPM: 60, DailyTokens: 1000, MonthlyBudgetMicros: 10000}
	cal := l.calendar()
	k := l.keysFor(1, "fast", cal.day, cal.month)
	monthTTL := int64(cal.monthTTL(time.Now()) / time.Second)
	previousCheck := func(dry string, est int64) []any {
		t.Helper()
		v, err := rdb.Eval(ctx, previousCheckScript, []string{k.rpm, k.tpm, k.day, k.month},
			dry, 60, lim.RPM, lim.RPM, lim.TPM, lim.TPM, est, lim.DailyTokens, 172800, lim.MonthlyBudgetMicros).Slice()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	previousSettle := func(delta, cost int64) {
		t.Helper()
		err := rdb.Eval(ctx, previousSettleScript, []string{k.tpm, k.day, k.month},
			60, lim.TPM, delta, "1", 172800, cost, monthTTL).Err()
		if err != nil {
			t.Fatal(err)
		}
	}
	req := Request{CallerID: 1, Tier: "fast", Limits: lim, EstimatedTokens: 10}

	d := mustCheck(t, l, req)
	if !d.Allowed || d.Requests.Remaining != 14 || d.Tokens.Remaining != 50 {
		t.Fatalf("this release's check: %+v", d)
	}
	if v := previousCheck("0", 10); v[0] != int64(0) || v[1] != int64(13) || v[4] != int64(40) || v[7] != int64(20) {
		t.Fatalf("the previous release's check after this one's: %v, want admitted, 13 requests and 40 tokens left, 20 used", v)
	}
	mustSettle(t, l, d.Reservation, 4, 100) // 6 tokens back
	previousSettle(-5, 50)                  // 5 tokens back
	d = mustPeek(t, l, Request{CallerID: 1, Tier: "fast", Limits: lim})
	if !d.Allowed || d.Requests.Remaining != 12 || d.Tokens.Remaining != 51 {
		t.Fatalf("this release's peek after both: %+v, want 12 requests and 51 tokens left", d)
	}
	if u := mustUsage(t, l, 1, "fast"); u.DailyTokens != 9 || u.MonthSpentMicros != 150 {
		t.Fatalf("usage %+v, want 9 tokens and 150 micros", u)
	}
	if v := previousCheck("1", 0); v[0] != int64(0) || v[1] != int64(12) || v[4] != int64(51) || v[7] != int64(9) || v[8] != int64(150) {
		t.Fatalf("the previous release's peek after both: %v", v)
	}
	// What the keys hold: TATs as float seconds since 2017, counters as integers.
	for _, key := range []string{k.rpm, k.tpm} {
		tat, err := rdb.Get(ctx, key).Float64()
		if now := gcraSeconds(time.Now()); err != nil || tat < now || tat > now+60 {
			t.Fatalf("%s holds %v (%v), want a TAT within a minute of %f", key, tat, err, now)
		}
	}
	if day, month := rdb.Get(ctx, k.day).Val(), rdb.Get(ctx, k.month).Val(); day != "9" || month != "150" {
		t.Fatalf("counters hold %q and %q", day, month)
	}
}

func TestOutcomeOf(t *testing.T) {
	r := [leaseReplyLen]int64{failRPM | failBudget, 0, 1, int64(maxReplyDuration), math.MaxInt64, 0, 999_999_999, 0, math.MaxInt64}
	want := outcome{
		failed: failRPM | failBudget,
		rpm:    gcraView{remaining: 0, retry: time.Nanosecond, reset: maxReplyDuration},
		tpm:    gcraView{remaining: math.MaxInt64, retry: 0, reset: 999_999_999 * time.Nanosecond},
		used:   0,
		spent:  math.MaxInt64,
	}
	if got := outcomeOf(r); got != want {
		t.Fatalf("outcomeOf(%v) = %+v, want %+v", r, got, want)
	}
}

// TestDistribute: each call of a script run gets its own part of the
// reply, and all of them an error when the reply does not fit.
func TestDistribute(t *testing.T) {
	calls := func() []*call {
		return []*call{{op: opSettle}, {op: opCheck}, {op: opPeek}, {op: opSettle}}
	}
	reply := func(n int) []int64 {
		v := make([]int64, n)
		for i := range v {
			v[i] = int64(i + 1)
		}
		return v
	}
	tests := []struct {
		name  string
		val   []int64
		err   error
		check func(t *testing.T, cs []*call)
	}{
		{"fits", reply(2 + 9 + 9 + 2), nil, func(t *testing.T, cs []*call) {
			for i, want := range [][]int64{{1, 2}, {3, 4, 5, 6, 7, 8, 9, 10, 11}, {12, 13, 14, 15, 16, 17, 18, 19, 20}, {21, 22}} {
				if cs[i].err != nil || !equalPrefix(cs[i].reply[:], want) {
					t.Errorf("call %d: %v %v, want %v", i, cs[i].reply, cs[i].err, want)
				}
			}
		}},
		{"one value short", reply(2 + 9 + 9 + 1), nil, nil},
		{"one value too many", reply(2 + 9 + 9 + 3), nil, nil},
		{"empty", []int64{}, nil, nil},
		{"an error", nil, errors.New("ERR boom"), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmd := redis.NewIntSliceCmd(context.Background())
			cmd.SetVal(tt.val)
			cmd.SetErr(tt.err)
			cs := calls()
			distribute(cs, cmd)
			if tt.check != nil {
				tt.check(t, cs)
				return
			}
			for i, cl := range cs {
				if cl.err == nil || cl.reply != [leaseReplyLen]int64{} {
					t.Errorf("call %d: reply %v err %v, want an error and no reply", i, cl.reply, cl.err)
				}
			}
		})
	}
}

func equalPrefix(got, want []int64) bool {
	for i, w := range want {
		if got[i] != w {
			return false
		}
	}
	for _, g := range got[len(want):] {
		if g != 0 {
			return false
		}
	}
	return true
}
