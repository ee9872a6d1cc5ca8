package retrybudget

import (
	"context"
	"log/slog"
	"math"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"switchyard/routing"
	"switchyard/routing/config"
	"switchyard/store/storetest"
)

func newBudget(t testing.TB, rdb redis.UniversalClient, prefix string) *Budget {
	t.Helper()
	// A generous timeout: a loaded test machine must not look like an outage.
	b := New(rdb, Options{Prefix: prefix, Timeout: 2 * time.Second, FlushEvery: 20 * time.Millisecond, Logger: slog.New(slog.DiscardHandler)})
	t.Cleanup(b.Close)
	return b
}

var key = routing.TierKey{Group: 7, Tier: config.TierFast}

// Two instances sharing one budget, every request failing and wanting to
// walk a four-step chain: the retries they are allowed together stay within
// ±10 % of 20 % of their first attempts.
func TestTwoInstancesHoldTheShare(t *testing.T) {
	t.Parallel()
	rdb, prefix := storetest.TestRedis(t, "retrybudget")
	a, b := newBudget(t, rdb, prefix), newBudget(t, rdb, prefix)
	s := config.RBudget{Percent: 20, MinPerS: 1, Window: time.Second}
	var firsts, retries atomic.Int64
	var wg sync.WaitGroup
	ctx := context.Background()
	const perInstance, workers = 400, 4 // req/s per instance, concurrent callers each
	for _, inst := range []*Budget{a, b} {
		for w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				every := time.Second * workers / perInstance
				next := time.Now().Add(time.Duration(w) * every / workers)
				end := time.Now().Add(2500 * time.Millisecond)
				for next.Before(end) {
					time.Sleep(time.Until(next))
					next = next.Add(every)
					inst.First(key, s)
					firsts.Add(1)
					for range 3 {
						v, err := inst.Retry(ctx, key, s)
						if err != nil {
							t.Error(err)
							return
						}
						if !v.Allowed {
							break
						}
						retries.Add(1)
					}
				}
			}()
		}
	}
	wg.Wait()
	if a.FallbackDecisions()+b.FallbackDecisions() > 0 {
		t.Fatalf("%d decisions fell back to per-instance counting", a.FallbackDecisions()+b.FallbackDecisions())
	}
	ratio := float64(retries.Load()) / float64(firsts.Load())
	t.Logf("%d first attempts, %d retries: %.1f%% (budget 20%%)", firsts.Load(), retries.Load(), 100*ratio)
	if firsts.Load() < 1000 || math.Abs(ratio-0.20) > 0.02 {
		t.Fatalf("retries are %.1f%% of %d first attempts, want 20%% ± 10%% of it", 100*ratio, firsts.Load())
	}
}

// Healthy traffic spends nothing and makes no round trip on the request
// path; the first attempts reach Redis by the background flush.
func TestHealthyTrafficSpendsNothing(t *testing.T) {
	t.Parallel()
	rdb, prefix := storetest.TestRedis(t, "retrybudget")
	b := newBudget(t, rdb, prefix)
	s := config.RBudget{Percent: 20, MinPerS: 3, Window: 10 * time.Second}
	var calls atomic.Int64
	rdb.AddHook(countHook{&calls})
	for range 500 {
		b.First(key, s)
	}
	if n := calls.Load(); n > 2 {
		t.Fatalf("500 first attempts made %d Redis calls on the request path", n)
	}
	deadline := time.Now().Add(2 * time.Second)
	for {
		v, err := newBudget(t, rdb, prefix).Peek(context.Background(), key, s)
		if err != nil {
			t.Fatal(err)
		}
		if v.Firsts == 500 {
			if v.Retries != 0 || v.Allowance != 100 || !v.Allowed {
				t.Fatalf("healthy window: %+v", v)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the flush did not write the first attempts: %+v", v)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

type countHook struct{ n *atomic.Int64 }

func (countHook) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h countHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error { h.n.Add(1); return next(ctx, cmd) }
}
func (h countHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error { h.n.Add(1); return next(ctx, cmds) }
}

// The floor lets a quiet tier fail over; the window slides.
func TestFloorAndWindow(t *testing.T) {
	t.Parallel()
	rdb, prefix := storetest.TestRedis(t, "retrybudget")
	b := newBudget(t, rdb, prefix)
	s := config.RBudget{Percent: 20, MinPerS: 2, Window: time.Second} // floor: 2 per window
	ctx := context.Background()
	allowed := 0
	for range 5 {
		b.First(key, s)
		if v, _ := b.Retry(ctx, key, s); v.Allowed {
			allowed++
		}
	}
	if allowed != 2 {
		t.Fatalf("5 failing requests in a quiet second got %d retries, want the floor of 2", allowed)
	}
	time.Sleep(1200 * time.Millisecond) // the window slides past them
	if v, _ := b.Retry(ctx, key, s); !v.Allowed || v.Retries != 0 || v.Firsts != 0 {
		t.Fatalf("after the window: %+v", v)
	}
}

// With Redis unreachable the budget is kept per instance with the same
// rule, says so, and is shared again once Redis answers.
func TestUnreachableRedisDecidesPerInstance(t *testing.T) {
	if storetest.InCluster() {
		t.Skip("the proxy stands for one node; the fallback is topology-independent")
	}
	t.Parallel()
	px := storetest.NewProxy(t, storetest.RedisAddr())
	rdb := storetest.NewRedisClient(px.Addr)
	t.Cleanup(func() { _ = rdb.Close() })
	_, prefix := storetest.TestRedis(t, "retrybudget")
	b := New(rdb, Options{Prefix: prefix, Timeout: 200 * time.Millisecond, FlushEvery: 20 * time.Millisecond, ProbeInterval: 50 * time.Millisecond, Logger: slog.New(slog.DiscardHandler)})
	t.Cleanup(b.Close)
	s := config.RBudget{Percent: 50, MinPerS: 1, Window: 2 * time.Second} // floor 2 per window
	ctx := context.Background()
	px.Cut()
	allowed := 0
	for range 20 {
		b.First(key, s)
	}
	for range 20 {
		v, err := b.Retry(ctx, key, s)
		if err != nil {
			t.Fatal(err)
		}
		if !v.Local {
			t.Fatalf("a decision without Redis is not marked local: %+v", v)
		}
		if v.Allowed {
			allowed++
		}
	}
	if !b.Degraded() || allowed != 10 {
		t.Fatalf("per instance: degraded %v, %d of 20 retries allowed, want 10 (50%% of 20 first attempts)", b.Degraded(), allowed)
	}
	px.Restore()
	deadline := time.Now().Add(3 * time.Second)
	for b.Degraded() && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if b.Degraded() {
		t.Fatal("still degraded after Redis came back")
	}
	if v, err := b.Retry(ctx, key, s); err != nil || v.Local {
		t.Fatalf("after recovery: %+v %v", v, err)
	}
}
