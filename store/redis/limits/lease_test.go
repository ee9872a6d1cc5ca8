package limits

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"switchyard/store/storetest"
)

// threeInstances are three Limiters on the same Redis and prefix, each with
// a client of its own, as three gateway instances have.
func threeInstances(t *testing.T) (rdb redis.UniversalClient, prefix string, ls [3]*Limiter) {
	t.Helper()
	rdb, prefix = testRedis(t)
	ls[0] = testLimiter(t, rdb, prefix, Options{})
	ls[1] = testLimiter(t, storetest.SameRedis(t), prefix, Options{})
	ls[2] = testLimiter(t, storetest.SameRedis(t), prefix, Options{})
	return rdb, prefix, ls
}

// hammer runs workers goroutines per limiter checking req until stop, and
// returns the requests admitted and how many of them from a slice.
func hammer(t *testing.T, ls []*Limiter, req Request, workers int, stop func(admitted int64) bool) (admitted, leased int64) {
	t.Helper()
	var adm, lsd atomic.Int64
	var wg sync.WaitGroup
	for _, l := range ls {
		for range workers {
			wg.Go(func() {
				for !stop(adm.Load()) {
					d, err := l.Check(context.Background(), req)
					if err != nil {
						t.Error(err)
						return
					}
					if d.Allowed {
						adm.Add(1)
						if d.Leased {
							lsd.Add(1)
						}
					}
				}
			})
		}
	}
	wg.Wait()
	return adm.Load(), lsd.Load()
}

// TestLeasedQuotaExactAcrossInstances: three instances spend a daily quota
// at once, mostly from leased slices. No request is admitted beyond the
// quota; the quota refuses early by at most what the three hold unspent (a
// slice each: quota / leaseQuotaShare), and once they give their slices
// back the shared counter holds exactly what was admitted.
func TestLeasedQuotaExactAcrossInstances(t *testing.T) {
	rdb, prefix, ls := threeInstances(t)
	const quota, est = 256_000, 100
	req := Request{CallerID: 31, Tier: "standard", Limits: Limits{RPM: 1_000_000, DailyTokens: quota}, EstimatedTokens: est}
	refusedBy := time.Now().Add(5 * time.Second)
	admitted, leased := hammer(t, ls[:], req, 4, func(int64) bool {
		d, _ := ls[0].Peek(context.Background(), req)
		return !d.Allowed || time.Now().After(refusedBy)
	})
	bound := int64(3 * quota / leaseQuotaShare)
	switch spent := admitted * est; {
	case spent > quota:
		t.Fatalf("admitted %d requests of %d tokens against a quota of %d", admitted, est, quota)
	case spent < quota-bound-est:
		t.Fatalf("admitted %d tokens of a %d quota: refused more than the three slices (%d) early", spent, quota, bound)
	case leased < admitted/2:
		t.Fatalf("only %d of %d admitted requests were decided from a slice", leased, admitted)
	}
	for _, l := range ls {
		if err := l.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	day := l0Keys(ls[0], req).day
	if got, err := rdb.Get(context.Background(), day).Int64(); err != nil || got != admitted*est {
		t.Fatalf("daily counter %d (%v) after the slices were given back, want exactly the %d admitted", got, err, admitted*est)
	}
	t.Logf("%d admitted (%d from slices) of a quota of %d requests", admitted, leased, quota/est)
	_ = prefix
}

// TestLeasedRateNeverExceeded: three instances against one RPM limit. The
// admitted requests stay within what the GCRA allows in the time taken
// (the burst plus the rate), and at most three slices below it.
func TestLeasedRateNeverExceeded(t *testing.T) {
	_, _, ls := threeInstances(t)
	const rpm = 12_000 // 200 a second
	req := Request{CallerID: 32, Tier: "standard", Limits: Limits{RPM: rpm}}
	start := time.Now()
	refusals := 0
	var mu sync.Mutex
	admitted, leased := hammer(t, ls[:], req, 4, func(n int64) bool {
		if n < rpm {
			return false
		}
		mu.Lock()
		defer mu.Unlock()
		refusals++
		return refusals > 2000 // run on past the burst, at the rate
	})
	elapsed := time.Since(start)
	allowed := rpm + int64(elapsed.Seconds()*rpm/60) + 1
	bound := int64(3 * rpm / leaseShare)
	if admitted > allowed {
		t.Fatalf("admitted %d in %v: the GCRA allows %d", admitted, elapsed, allowed)
	}
	if admitted < rpm-bound {
		t.Fatalf("admitted %d: more than three slices (%d) short of the burst %d", admitted, bound, rpm)
	}
	if leased < admitted/2 {
		t.Fatalf("only %d of %d admitted requests were decided from a slice", leased, admitted)
	}
	t.Logf("%d admitted in %v (allowed %d), %d from slices", admitted, elapsed, allowed, leased)
}

// l0Keys is req's keys on l today.
func l0Keys(l *Limiter, req Request) keySet { return l.keys(req.CallerID, req.Tier, l.calendar()) }

// crash makes l stop as a killed instance would: its slices are never
// given back.
func crash(l *Limiter) {
	for _, ls := range l.leases.all() {
		ls.mu.Lock()
		if ls.timer != nil {
			ls.timer.Stop()
		}
		ls.mu.Unlock()
	}
}

// TestLeaseLostOnCrash: an instance killed with a slice loses it. Its
// daily tokens stay counted (at most quota / leaseQuotaShare); its
// requests come back as the window refills, and the other instances serve
// on meanwhile.
func TestLeaseLostOnCrash(t *testing.T) {
	rdb, _, ls := threeInstances(t)
	const quota, est, rpm = 640_000, 100, 60_000 // RPM: 1,000 a second
	req := Request{CallerID: 33, Tier: "standard", Limits: Limits{RPM: rpm, DailyTokens: quota}, EstimatedTokens: est}
	var admitted int64
	for range 200 {
		if d := mustCheck(t, ls[0], req); d.Allowed {
			admitted++
		}
	}
	heldR, heldT := settledSlice(t, ls[0], req)
	if heldR == 0 || heldT == 0 {
		t.Fatalf("instance 0 holds %d requests and %d tokens after 200 checks; want a slice", heldR, heldT)
	}
	crash(ls[0])
	k := l0Keys(ls[1], req)
	day, err := rdb.Get(context.Background(), k.day).Int64()
	if err != nil {
		t.Fatal(err)
	}
	if lost := day - admitted*est; lost != heldT || lost > quota/leaseQuotaShare {
		t.Fatalf("daily counter %d for %d admitted: %d tokens lost with the crash, want the %d held (at most %d)", day, admitted, lost, heldT, quota/leaseQuotaShare)
	}
	// The others serve on, and the crashed slice's requests come back
	// with the window: a Peek sees the remaining grow by them.
	before := peek(t, ls[1], req).Requests.Remaining
	time.Sleep(time.Duration(float64(heldR)/rpm*float64(time.Minute)) + 100*time.Millisecond)
	if after := peek(t, ls[1], req).Requests.Remaining; after < min(before+heldR, rpm-1) {
		t.Fatalf("remaining %d, then %d after the %d requests of the crashed slice should have refilled", before, after, heldR)
	}
	if d := mustCheck(t, ls[2], req); !d.Allowed {
		t.Fatalf("instance 2 refused after the crash: %+v", d)
	}
}

// settledSlice waits for a refresh in flight to land and returns what the
// slice of req holds.
func settledSlice(t *testing.T, l *Limiter, req Request) (reqs, toks int64) {
	t.Helper()
	ls := l.leases.get(keyID{req.CallerID, req.Tier})
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		ls.mu.Lock()
		reqs, toks, busy := ls.reqs, ls.toks, ls.refreshing
		ls.mu.Unlock()
		if !busy {
			return reqs, toks
		}
		if time.Now().After(deadline) {
			t.Fatal("a refresh did not land in 5 s")
		}
	}
}

func peek(t *testing.T, l *Limiter, req Request) Decision {
	t.Helper()
	d, err := l.Peek(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestLeaseThroughRedisOutage: when Redis stops answering, an instance
// spends what its slice holds (it was counted), then decides locally, and
// leases again once Redis is back.
func TestLeaseThroughRedisOutage(t *testing.T) {
	storetest.SingleNodeOnly(t)
	p := newFlakyProxy(t, redisAddr())
	rdb := redis.NewClient(&redis.Options{Addr: p.addr, ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = rdb.Close() })
	_, prefix := testRedis(t)
	l := New(rdb, Options{Prefix: prefix, Timeout: time.Second, ProbeInterval: 50 * time.Millisecond})
	t.Cleanup(func() { _ = l.Close(context.Background()) })
	req := Request{CallerID: 34, Tier: "standard", Limits: Limits{RPM: 60_000, TPM: 10_000_000}, EstimatedTokens: 50}
	for range 100 {
		if d := mustCheck(t, l, req); !d.Allowed || d.Local {
			t.Fatalf("before the outage: %+v", d)
		}
	}
	held, _ := settledSlice(t, l, req)
	p.setMode(modeRefuse)
	var leased, local int
	for range int(held) + 20 {
		d, err := l.Check(context.Background(), req)
		switch {
		case err != nil:
			t.Fatalf("check during the outage: %v", err)
		case !d.Allowed:
			t.Fatalf("refused during the outage: %+v", d)
		case d.Leased:
			leased++
		case d.Local:
			local++
		}
	}
	if int64(leased) > held || local == 0 {
		t.Fatalf("during the outage: %d from the slice of %d held, %d local; want the slice spent, then local decisions", leased, held, local)
	}
	p.setMode(modeForward)
	deadline := time.Now().Add(5 * time.Second)
	for {
		d := mustCheck(t, l, req)
		if d.Leased {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no leased decision 5 s after Redis came back; last %+v", d)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if l.Degraded() {
		t.Fatal("still degraded after Redis came back")
	}
}

// TestSmallLimitsAreNotLeased: a limit below leaseMinRPM, a burst smaller
// than leaseShare or a request larger than a slice is decided in Redis.
func TestSmallLimitsAreNotLeased(t *testing.T) {
	for _, c := range []struct {
		lim Limits
		est int64
	}{
		{Limits{RPM: leaseMinRPM - 1}, 0},
		{Limits{RPM: 6000, RPMBurst: leaseShare - 1}, 0},
		{Limits{TPM: 16_000, TPMBurst: 16_000}, 1001},
		{Limits{DailyTokens: 64_000}, 1001},
	} {
		if leasable(c.lim.WithDefaults(), c.est) {
			t.Errorf("%+v with an estimate of %d is leased", c.lim, c.est)
		}
	}
	if !leasable(Limits{RPM: leaseMinRPM, TPM: 16_000, DailyTokens: 64_000}.WithDefaults(), 1000) {
		t.Error("the smallest leasable limits are not leased")
	}
}
