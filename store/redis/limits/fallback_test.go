package limits

import (
	"context"
	"strconv"
	"testing"
	"time"

	"switchyard/store/storetest"

	"github.com/redis/go-redis/v9"
)

const outageTimeout = 50 * time.Millisecond

// timedCheck runs Check and reports how long it took.
func timedCheck(t *testing.T, l *Limiter, req Request) (Decision, time.Duration) {
	t.Helper()
	start := time.Now()
	d, err := l.Check(context.Background(), req)
	if err != nil {
		t.Fatalf("Check during an outage = %v; the limiter must fall back, not fail", err)
	}
	return d, time.Since(start)
}

func TestFallbackOnRefusedConnection(t *testing.T) {
	rdb := newClient(t, closedAddr(t))
	counter := &commandCounter{}
	rdb.AddHook(counter)
	var logs logBuffer
	l := New(rdb, Options{Prefix: "refused", Timeout: outageTimeout, ProbeInterval: time.Hour, Logger: logs.logger()})
	req := Request{CallerID: 1, Tier: "fast", Limits: Limits{RPM: 2}}

	d, took := timedCheck(t, l, req)
	if !d.Allowed || !d.Local || !l.Degraded() {
		t.Fatalf("first check on a refused Redis: %+v degraded=%v", d, l.Degraded())
	}
	if took > 5*outageTimeout {
		t.Fatalf("refused connection took %v to fall back", took)
	}
	counter.take()
	if d, _ := timedCheck(t, l, req); !d.Allowed || !d.Local {
		t.Fatalf("second check: %+v", d)
	}
	if d, _ := timedCheck(t, l, req); d.Allowed || !d.Local || d.Reason != ReasonRateLimited {
		t.Fatalf("third check against local RPM 2: %+v, want a local rate_limited", d)
	}
	if names, _ := counter.take(); len(names) != 0 {
		t.Fatalf("a degraded limiter hammered Redis between probes: %v", names)
	}
	if n := l.FallbackDecisions(); n != 3 {
		t.Fatalf("FallbackDecisions = %d, want 3", n)
	}
	if n := logs.count("redis unreachable"); n != 1 {
		t.Fatalf("logged the outage %d times, want once per transition", n)
	}
}

func TestFallbackOnHangingRedis(t *testing.T) {
	storetest.SingleNodeOnly(t)
	for _, ctxAware := range []bool{true, false} {
		t.Run("ContextTimeoutEnabled="+strconv.FormatBool(ctxAware), func(t *testing.T) {
			p := newFlakyProxy(t, redisAddr())
			p.setMode(modeHang)
			rdb := redis.NewClient(&redis.Options{Addr: p.addr, ContextTimeoutEnabled: ctxAware})
			t.Cleanup(func() { _ = rdb.Close() })
			counter := &commandCounter{}
			rdb.AddHook(counter)
			var logs logBuffer
			l := New(rdb, Options{Prefix: "hang", Timeout: outageTimeout, ProbeInterval: time.Hour, Logger: logs.logger()})
			req := Request{CallerID: 1, Tier: "fast", Limits: Limits{RPM: 60, TPM: 1000}, EstimatedTokens: 10}

			d, took := timedCheck(t, l, req)
			if !d.Allowed || !d.Local || !l.Degraded() {
				t.Fatalf("check on a hanging Redis: %+v degraded=%v", d, l.Degraded())
			}
			if took < outageTimeout || took > 5*outageTimeout {
				t.Fatalf("hanging Redis: fell back after %v, want about the %v timeout", took, outageTimeout)
			}
			counter.take()
			for range 10 {
				d, took = timedCheck(t, l, req)
				if !d.Local || took > outageTimeout/2 {
					t.Fatalf("degraded check took %v (local=%v): it must not wait for Redis", took, d.Local)
				}
			}
			if names, _ := counter.take(); len(names) != 0 {
				t.Fatalf("a degraded limiter hammered Redis between probes: %v", names)
			}
			if n := logs.count("redis unreachable"); n != 1 {
				t.Fatalf("logged the outage %d times, want once", n)
			}
		})
	}
}

// TestRecovery takes Redis away (hanging, then refusing) and brings it back:
// the limiter falls back, probes no more than once per interval, resumes the
// shared limits, and replays the counters spent meanwhile.
func TestRecovery(t *testing.T) {
	storetest.SingleNodeOnly(t)
	direct, prefix := testRedis(t)
	ctx := context.Background()
	p := newFlakyProxy(t, redisAddr())
	rdb := newClient(t, p.addr)
	counter := &commandCounter{}
	rdb.AddHook(counter)
	var logs logBuffer
	const probe = 200 * time.Millisecond
	l := New(rdb, Options{Prefix: prefix, Timeout: outageTimeout, ProbeInterval: probe, Logger: logs.logger()})
	lim := Limits{RPM: 1000, DailyTokens: 1000, MonthlyBudgetMicros: 1000}
	req := Request{CallerID: 5, Tier: "standard", Limits: lim, EstimatedTokens: 20}
	dayKey := prefix + ":{c5}:day:standard:" + time.Now().UTC().Format("2006-01-02")
	monthKey := prefix + ":{c5}:month:" + time.Now().UTC().Format("2006-01")
	counters := func() (day, month int64) {
		t.Helper()
		day, _ = direct.Get(ctx, dayKey).Int64()
		month, _ = direct.Get(ctx, monthKey).Int64()
		return day, month
	}

	// Dial first: on a loaded machine a fresh connection through the proxy
	// can take longer than the 50 ms outage timeout, which would make the
	// healthy check below fall back.
	if err := rdb.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	d, _ := timedCheck(t, l, req)
	if !d.Allowed || d.Local {
		t.Fatalf("healthy check: %+v", d)
	}
	if err := l.Settle(ctx, d.Reservation, 50, 100); err != nil {
		t.Fatal(err)
	}
	if err := l.Flush(ctx); err != nil { // counters() reads Redis
		t.Fatal(err)
	}

	for round, outage := range []proxyMode{modeHang, modeRefuse} {
		day, month := counters()
		p.setMode(outage)
		// The local view starts from what Redis last said, not from zero.
		req.EstimatedTokens = 1000 - day + 1
		if d, _ := timedCheck(t, l, req); d.Allowed || !d.Local || d.Reason != ReasonQuotaExceeded {
			t.Fatalf("round %d: local check of %d more than %d used: %+v, want a local quota_exceeded", round, req.EstimatedTokens, day, d)
		}
		req.EstimatedTokens = 20
		d, _ := timedCheck(t, l, req)
		if !d.Allowed || !d.Local {
			t.Fatalf("round %d: local check of 20 more: %+v", round, d)
		}
		if err := l.Settle(ctx, d.Reservation, 5, 7); err != nil {
			t.Fatal(err)
		}
		if u := mustUsage(t, l, 5, "standard"); !u.Local || u.DailyTokens != day+5 || u.MonthSpentMicros != month+7 {
			t.Fatalf("round %d: usage during the outage %+v, want %d and %d", round, u, day+5, month+7)
		}

		// Between probes Redis is left alone; after the interval one probe
		// finds it back.
		counter.take()
		timedCheck(t, l, req) // 20 more, reserved locally and never settled
		if names, _ := counter.take(); len(names) != 0 {
			t.Fatalf("round %d: sent %v before the probe interval passed", round, names)
		}
		p.setMode(modeForward)
		time.Sleep(probe + 50*time.Millisecond)
		d, _ = timedCheck(t, l, req) // 20 more, in Redis
		if d.Local || l.Degraded() {
			t.Fatalf("round %d: Redis is back but the check was local=%v degraded=%v", round, d.Local, l.Degraded())
		}

		// What was spent during the outage reaches Redis.
		wantDay, wantMonth := day+5+20+20, month+7
		deadline := time.Now().Add(2 * time.Second)
		for {
			gotDay, gotMonth := counters()
			if gotDay == wantDay && gotMonth == wantMonth {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("round %d: Redis has daily %d month %d, want %d %d after the replay", round, gotDay, gotMonth, wantDay, wantMonth)
			}
			time.Sleep(10 * time.Millisecond)
		}
		for l.local.hasPending() && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond) // the replay acknowledges after Redis answered
		}
		if l.local.hasPending() {
			t.Fatalf("round %d: pending counters left after the replay", round)
		}
	}
	if down, up := logs.count("redis unreachable"), logs.count("shared limits resumed"); down != 2 || up != 2 {
		t.Fatalf("logged %d outages and %d recoveries, want 2 each", down, up)
	}
}
