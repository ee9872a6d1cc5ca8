package loadcount

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"switchyard/store/storetest"

	"github.com/redis/go-redis/v9"
)

func quiet() *slog.Logger { return slog.New(slog.DiscardHandler) }

func newCounters(t testing.TB, rdb redis.UniversalClient, opts Options) *Counters {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = quiet()
	}
	if opts.OpTimeout == 0 {
		// Tests not about outages must not trip the fallback because a
		// loaded CI machine (two cores, -race) stalled for 50ms.
		opts.OpTimeout = 5 * time.Second
	}
	c := New(rdb, opts)
	t.Cleanup(c.Close)
	return c
}

// bigPool is a client sized for a test's concurrency, so waiting for a
// pooled connection is not mistaken for a Redis outage.
func bigPool(t testing.TB) redis.UniversalClient {
	t.Helper()
	var rdb redis.UniversalClient
	if storetest.InCluster() {
		rdb = storetest.SharedCluster(t).Client() // pool of 128 (store/redis/connect)
	} else {
		rdb = redis.NewClient(&redis.Options{Addr: redisAddr(), ContextTimeoutEnabled: true, PoolSize: 128})
	}
	t.Cleanup(func() { _ = rdb.Close() })
	return rdb
}

// counter is the Redis counter of deployment id (0 when the key is absent).
func counter(t testing.TB, rdb redis.UniversalClient, c *Counters, id int64) int64 {
	t.Helper()
	v, err := rdb.Get(context.Background(), c.key(id)).Int64()
	if errors.Is(err, redis.Nil) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func waitUntil(t testing.TB, what string, within time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestLimitAndEffectiveWeight(t *testing.T) {
	limits := []struct {
		max   int
		class Class
		want  int
	}{
		{10, Interactive, 10}, {10, Batch, 8}, {5, Batch, 4}, {7, Batch, 6},
		// ceil(0.8 × 4) = 4 would leave interactive callers no headroom.
		{4, Batch, 3}, {2, Batch, 1},
		{1, Batch, 1}, // a single slot cannot be split
		{0, Batch, 0}, {0, Interactive, 0},
	}
	for _, tt := range limits {
		t.Run(fmt.Sprintf("limit %d %s", tt.max, tt.class), func(t *testing.T) {
			if got := Limit(tt.max, 0.8, tt.class); got != tt.want {
				t.Fatalf("Limit = %d, want %d", got, tt.want)
			}
		})
	}
	weights := []struct {
		name                  string
		weight, inFlight, max int
		want                  int
	}{
		{"idle", 100, 0, 10, 100},
		{"half busy", 100, 5, 10, 50},
		{"nearly full", 100, 9, 10, 10},
		{"full is floored, not dropped", 100, 10, 10, 1},
		{"over full is floored", 100, 12, 10, 1},
		{"unlimited keeps weight", 100, 50, 0, 100},
		{"parked stays parked", 0, 0, 10, 0},
		{"negative in-flight counts as idle", 100, -2, 10, 100},
	}
	for _, tt := range weights {
		t.Run(tt.name, func(t *testing.T) {
			if got := EffectiveWeight(tt.weight, tt.inFlight, tt.max); got != tt.want {
				t.Fatalf("EffectiveWeight(%d, %d, %d) = %d, want %d", tt.weight, tt.inFlight, tt.max, got, tt.want)
			}
		})
	}
}

func TestCapEnforcedAcrossInstances(t *testing.T) {
	_, prefix := testRedis(t)
	r1, r2 := bigPool(t), bigPool(t)
	logs := &logCounter{}
	// Under -race on two cores 200 acquirers queue for CPU for seconds; a
	// generous op timeout keeps this test about the cap, not about outages.
	opts := Options{Prefix: prefix, OpTimeout: 10 * time.Second, Logger: slog.New(logs)}
	a, b := newCounters(t, r1, opts), newCounters(t, r2, opts)
	const id, max = 1, 10

	var holders, peak, acquired atomic.Int64
	stop := make(chan struct{})
	var redisPeak atomic.Int64
	watched := make(chan struct{})
	go func() { // watch the Redis counter itself
		defer close(watched)
		for {
			select {
			case <-stop:
				return
			default:
			}
			if v, err := r1.Get(context.Background(), a.key(id)).Int64(); err == nil && v > redisPeak.Load() {
				redisPeak.Store(v)
			}
		}
	}()

	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range 200 {
		c := a
		if i%2 == 1 {
			c = b
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			s, err := c.Acquire(context.Background(), id, max, Interactive)
			if errors.Is(err, ErrFull) {
				return
			}
			if err != nil {
				t.Error(err)
				return
			}
			acquired.Add(1)
			n := holders.Add(1)
			for {
				p := peak.Load()
				if n <= p || peak.CompareAndSwap(p, n) {
					break
				}
			}
			// The upstream call: hold until the cap has been reached once
			// (bounded), so the peak shows the cap is usable in full.
			for i := 0; peak.Load() < max && i < 200; i++ {
				time.Sleep(10 * time.Millisecond)
			}
			time.Sleep(10 * time.Millisecond)
			holders.Add(-1)
			s.Release()
		}()
	}
	close(start)
	wg.Wait()
	close(stop)
	<-watched

	if a.Degraded() || b.Degraded() || logs.count("loadcount: redis unavailable") > 0 {
		t.Fatalf("counters degraded during the test: %v", logs.all())
	}
	if p := peak.Load(); p != max {
		t.Fatalf("peak concurrent holders = %d, want exactly %d", p, max)
	}
	if p := redisPeak.Load(); p > max {
		t.Fatalf("redis counter reached %d, cap %d", p, max)
	}
	if a.Degraded() || b.Degraded() {
		t.Fatal("counters degraded during the test")
	}
	if v := counter(t, r1, a, id); v != 0 {
		t.Fatalf("counter after all released = %d", v)
	}
	t.Logf("%d of 200 acquired a slot", acquired.Load())
}

func TestBatchShedBeforeInteractive(t *testing.T) {
	rdb, prefix := testRedis(t)
	c := newCounters(t, rdb, Options{Prefix: prefix, InteractiveWait: time.Second})
	ctx := context.Background()
	const id, max = 2, 5

	var held []Slot
	defer func() {
		for _, s := range held {
			s.Release()
		}
	}()
	for i := range 4 {
		s, err := c.Acquire(ctx, id, max, Batch)
		if err != nil {
			t.Fatalf("batch %d: %v", i+1, err)
		}
		held = append(held, s)
	}
	start := time.Now()
	if _, err := c.Acquire(ctx, id, max, Batch); !errors.Is(err, ErrFull) {
		t.Fatalf("5th batch = %v, want ErrFull", err)
	}
	if d := time.Since(start); d > 500*time.Millisecond {
		t.Fatalf("batch was not shed at once (%s)", d)
	}
	// The headroom is the interactive callers'.
	s, err := c.Acquire(ctx, id, max, Interactive)
	if err != nil {
		t.Fatalf("interactive with batch at its share: %v", err)
	}
	held = append(held, s)
	start = time.Now()
	if _, err := c.Acquire(ctx, id, max, Interactive); !errors.Is(err, ErrFull) {
		t.Fatalf("interactive over the cap = %v, want ErrFull", err)
	}
	if d := time.Since(start); d < time.Second {
		t.Fatalf("interactive gave up after %s, want it to wait InteractiveWait (1s)", d)
	}
	if v := counter(t, rdb, c, id); v != max {
		t.Fatalf("counter = %d, want %d", v, max)
	}
}

func TestInteractiveWaitsForFreedSlot(t *testing.T) {
	rdb, prefix := testRedis(t)
	a := newCounters(t, rdb, Options{Prefix: prefix})
	b := newCounters(t, rdb, Options{Prefix: prefix})
	ctx := context.Background()

	for _, tt := range []struct {
		name   string
		holder *Counters
	}{{"freed on this instance", a}, {"freed on another instance", b}} {
		t.Run(tt.name, func(t *testing.T) {
			const id, max = 3, 1
			s, err := tt.holder.Acquire(ctx, id, max, Interactive)
			if err != nil {
				t.Fatal(err)
			}
			time.AfterFunc(60*time.Millisecond, s.Release)
			start := time.Now()
			s2, err := a.Acquire(ctx, id, max, Interactive)
			d := time.Since(start)
			if err != nil {
				t.Fatalf("waiting interactive caller: %v after %s", err, d)
			}
			s2.Release()
			if d < 50*time.Millisecond {
				t.Fatalf("got the slot after %s, before it was released (60ms)", d)
			}
		})
	}

	t.Run("cancelled while waiting", func(t *testing.T) {
		const id, max = 4, 1
		s, err := a.Acquire(ctx, id, max, Interactive)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Release()
		cctx, cancel := context.WithCancel(ctx)
		time.AfterFunc(30*time.Millisecond, cancel)
		start := time.Now()
		if _, err := a.Acquire(cctx, id, max, Interactive); !errors.Is(err, context.Canceled) {
			t.Fatalf("Acquire = %v, want context.Canceled", err)
		}
		if d := time.Since(start); d > 150*time.Millisecond {
			t.Fatalf("cancel took %s to take effect", d)
		}
		if v := counter(t, rdb, a, id); v != 1 {
			t.Fatalf("counter = %d, want 1 (only the holder)", v)
		}
	})
}

func TestReleaseNeverBelowZero(t *testing.T) {
	rdb, prefix := testRedis(t)
	c := newCounters(t, rdb, Options{Prefix: prefix})
	ctx := context.Background()
	const id, max = 5, 10

	s1, _ := c.Acquire(ctx, id, max, Interactive)
	s2, _ := c.Acquire(ctx, id, max, Interactive)
	s1.Release()
	s1.Release() // double release
	if v := counter(t, rdb, c, id); v != 1 {
		t.Fatalf("after double release of one of two = %d, want 1", v)
	}
	s2.Release()
	s2.Release()
	if v := counter(t, rdb, c, id); v != 0 {
		t.Fatalf("after releasing both = %d, want 0", v)
	}
	if c.InFlight(id) != 0 {
		t.Fatalf("local in-flight = %d", c.InFlight(id))
	}
	Slot{}.Release() // the zero Slot is inert

	// Release after the key's TTL lapsed: nothing goes negative.
	s3, _ := c.Acquire(ctx, id, max, Interactive)
	rdb.Del(ctx, c.key(id)) // the key expired
	s3.Release()
	if n := rdb.Exists(ctx, c.key(id)).Val(); n != 0 {
		t.Fatalf("release after expiry created the key (value %d)", counter(t, rdb, c, id))
	}

	// A counter that drifted negative is reset by the next acquire.
	rdb.Set(ctx, c.key(id), -3, 0)
	s4, err := c.Acquire(ctx, id, max, Interactive)
	if err != nil {
		t.Fatal(err)
	}
	if v := counter(t, rdb, c, id); v != 1 {
		t.Fatalf("acquire on a negative counter = %d, want 1", v)
	}
	s4.Release()
	if v := counter(t, rdb, c, id); v != 0 {
		t.Fatalf("after release = %d", v)
	}
}

func TestNoLeaks(t *testing.T) {
	_, prefix := testRedis(t)
	rdb := bigPool(t)
	ctx := context.Background()
	if err := rdb.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	before := runtime.NumGoroutine()

	c := New(rdb, Options{Prefix: prefix, OpTimeout: 10 * time.Second, InstanceCap: 600, InteractiveWait: 50 * time.Millisecond, Logger: quiet()})
	ids := []int64{10, 11, 12}
	var wg sync.WaitGroup
	var got, full, cancelled, panicked atomic.Int64
	for i := range 1000 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(i), 3))
			id := ids[r.IntN(len(ids))]
			class := Interactive
			if r.IntN(3) == 0 {
				class = Batch
			}
			var cctx context.Context
			var cancel context.CancelFunc
			switch r.IntN(4) {
			case 0: // a caller that goes away at a random moment
				cctx, cancel = context.WithCancel(ctx)
				time.AfterFunc(time.Duration(r.IntN(3000))*time.Microsecond, cancel)
			case 1: // a request deadline
				cctx, cancel = context.WithTimeout(ctx, time.Duration(r.IntN(5000))*time.Microsecond)
			default:
				cctx, cancel = context.WithCancel(ctx)
			}
			defer cancel()

			admit, ok := c.AdmitInstance(class)
			if !ok {
				full.Add(1)
				return
			}
			defer admit()
			s, err := c.Acquire(cctx, id, 20, class)
			switch {
			case errors.Is(err, ErrFull):
				full.Add(1)
				return
			case err != nil:
				cancelled.Add(1)
				return
			}
			got.Add(1)
			if i%20 == 0 { // a handler that panics, releasing in a defer
				func() {
					defer func() {
						if recover() != nil {
							panicked.Add(1)
						}
					}()
					defer s.Release()
					panic("upstream adapter bug")
				}()
				return
			}
			defer s.Release()
			select { // the upstream call, cut short by the caller
			case <-time.After(time.Duration(r.IntN(2000)) * time.Microsecond):
			case <-cctx.Done():
			}
		}()
	}
	wg.Wait()
	t.Logf("acquired %d, full %d, cancelled %d, panicked %d", got.Load(), full.Load(), cancelled.Load(), panicked.Load())
	if got.Load() == 0 || cancelled.Load() == 0 || panicked.Load() == 0 {
		t.Fatal("the mix did not exercise acquire, cancel and panic")
	}
	if c.Degraded() {
		t.Fatal("degraded during the leak test")
	}
	for _, id := range ids {
		if v := counter(t, rdb, c, id); v != 0 {
			t.Errorf("deployment %d: redis counter %d after all requests ended", id, v)
		}
		if n := c.InFlight(id); n != 0 {
			t.Errorf("deployment %d: local in-flight %d", id, n)
		}
	}
	if n := c.InstanceInFlight(); n != 0 {
		t.Errorf("instance in-flight %d", n)
	}
	snap, err := c.Snapshot(ctx)
	if err != nil || len(snap) != 0 {
		t.Errorf("snapshot after the run = %v, %v; want empty", snap, err)
	}
	// Only the background goroutine remains, and it goes with Close.
	waitGoroutines(t, before+1)
	c.Close()
	waitGoroutines(t, before)
}

func waitGoroutines(t *testing.T, want int) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Second)
	for {
		n := runtime.NumGoroutine()
		if n <= want {
			return
		}
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<16)
			t.Fatalf("%d goroutines, want <= %d:\n%s", n, want, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestCrashedInstanceLoadExpires(t *testing.T) {
	rdb, prefix := testRedis(t)
	ctx := context.Background()
	const id, max = 6, 3
	const ttl = 600 * time.Millisecond // refreshed every 200ms, with slack for a loaded machine

	crashed := New(rdb, Options{Prefix: prefix, TTL: ttl, OpTimeout: 5 * time.Second, Logger: quiet()})
	for range max {
		if _, err := crashed.Acquire(ctx, id, max, Interactive); err != nil {
			t.Fatal(err)
		}
	}
	// While the instance lives its held load outlives the TTL.
	time.Sleep(3 * ttl)
	if v := counter(t, rdb, crashed, id); v != max {
		t.Fatalf("held load after 3×TTL = %d, want %d (TTL not refreshed)", v, max)
	}
	crashed.Close() // the process dies holding its slots

	survivor := newCounters(t, rdb, Options{Prefix: prefix, TTL: ttl})
	if _, err := survivor.Acquire(ctx, id, max, Batch); !errors.Is(err, ErrFull) {
		t.Fatalf("acquire right after the crash = %v, want ErrFull", err)
	}
	waitUntil(t, "the crashed instance's load expired", 2*ttl+time.Second, func() bool {
		return rdb.Exists(ctx, survivor.key(id)).Val() == 0
	})
	for i := range max {
		s, err := survivor.Acquire(ctx, id, max, Interactive)
		if err != nil {
			t.Fatalf("slot %d after expiry: %v", i+1, err)
		}
		defer s.Release()
	}
}

func TestRedisDownFallsBackToLocal(t *testing.T) {
	storetest.SingleNodeOnly(t)
	rdb, prefix := testRedis(t)
	ctx := context.Background()
	px := newProxy(t)
	flaky := newClient(px.Addr)
	defer flaky.Close()
	logs := &logCounter{}
	c := newCounters(t, flaky, Options{Prefix: prefix, OpTimeout: 100 * time.Millisecond, Logger: slog.New(logs)})
	const id, max = 7, 2

	before, err := c.Acquire(ctx, id, max, Interactive) // counted in Redis
	if err != nil {
		t.Fatal(err)
	}
	px.Cut() // connections refused from now on

	start := time.Now()
	s, err := c.Acquire(ctx, id, max, Interactive)
	if err != nil {
		t.Fatalf("acquire with redis down: %v", err)
	}
	if d := time.Since(start); d > 300*time.Millisecond {
		t.Fatalf("fallback took %s", d)
	}
	if !c.Degraded() {
		t.Fatal("not degraded with redis down")
	}
	// Same cap, per instance: the held Redis slot counts too.
	if _, err := c.Acquire(ctx, id, max, Batch); !errors.Is(err, ErrFull) {
		t.Fatalf("3rd acquire of cap 2 = %v, want ErrFull", err)
	}
	if in, m := c.Load(id); in != 2 || m != max {
		t.Fatalf("Load while degraded = %d/%d, want 2/%d", in, m, max)
	}
	s.Release()
	before.Release() // owed to Redis until it returns
	for range 5 {
		s, err := c.Acquire(ctx, id, max, Interactive)
		if err != nil {
			t.Fatal(err)
		}
		s.Release()
	}
	if n := logs.count("loadcount: redis unavailable"); n != 1 {
		t.Fatalf("outage logged %d times, want once", n)
	}

	px.Restore()
	waitUntil(t, "recovered", 3*time.Second, func() bool { return !c.Degraded() })
	waitUntil(t, "owed release settled", time.Second, func() bool { return counter(t, rdb, c, id) == 0 })
	s, err = c.Acquire(ctx, id, max, Interactive)
	if err != nil {
		t.Fatal(err)
	}
	if v := counter(t, rdb, c, id); v != 1 {
		t.Fatalf("after recovery the slot is not counted in redis (counter %d)", v)
	}
	s.Release()
	if v := counter(t, rdb, c, id); v != 0 {
		t.Fatalf("counter after release = %d", v)
	}
	if n := logs.count("loadcount: redis available again"); n != 1 {
		t.Fatalf("recovery logged %d times, want once", n)
	}
}

func TestRedisTimeoutFallsBackToLocal(t *testing.T) {
	hung := redis.NewClient(&redis.Options{Addr: blackhole(t), ContextTimeoutEnabled: true, MaxRetries: -1})
	defer hung.Close()
	c := newCounters(t, hung, Options{Prefix: "test:loadcount:hung", OpTimeout: 50 * time.Millisecond})
	ctx := context.Background()

	start := time.Now()
	s, err := c.Acquire(ctx, 8, 1, Interactive)
	if err != nil {
		t.Fatalf("acquire with redis hung: %v", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("first acquire took %s with a 50ms op timeout", d)
	}
	if !c.Degraded() {
		t.Fatal("not degraded with redis timing out")
	}
	start = time.Now()
	if _, err := c.Acquire(ctx, 8, 1, Batch); !errors.Is(err, ErrFull) {
		t.Fatalf("over the local cap = %v", err)
	}
	s.Release()
	for range 10 {
		s, err := c.Acquire(ctx, 8, 1, Interactive)
		if err != nil {
			t.Fatal(err)
		}
		s.Release()
	}
	if d := time.Since(start); d > 500*time.Millisecond { // 11 × 50ms if they did
		t.Fatalf("degraded acquires still wait on redis (%s for 11)", d)
	}
}

func TestUnlimitedMakesNoRedisCall(t *testing.T) {
	hung := redis.NewClient(&redis.Options{Addr: blackhole(t), ContextTimeoutEnabled: true})
	defer hung.Close()
	c := newCounters(t, hung, Options{Prefix: "test:loadcount:unlimited", OpTimeout: 50 * time.Millisecond})
	start := time.Now()
	var slots []Slot
	for range 100 {
		s, err := c.Acquire(context.Background(), 9, 0, Batch)
		if err != nil {
			t.Fatal(err)
		}
		slots = append(slots, s)
	}
	if d := time.Since(start); d > time.Second || c.Degraded() { // 100 × 50ms if they did
		t.Fatalf("unlimited acquires touched redis (%s, degraded %v)", d, c.Degraded())
	}
	if n := c.InFlight(9); n != 100 {
		t.Fatalf("in-flight = %d, want 100", n)
	}
	for _, s := range slots {
		s.Release()
		s.Release()
	}
	if n := c.InFlight(9); n != 0 {
		t.Fatalf("in-flight after release = %d", n)
	}
}

func TestLoadSeesOtherInstances(t *testing.T) {
	rdb, prefix := testRedis(t)
	ctx := context.Background()
	a := newCounters(t, rdb, Options{Prefix: prefix})
	b := newCounters(t, rdb, Options{Prefix: prefix, LoadRefresh: 50 * time.Millisecond})
	const id, max = 20, 10
	for range 3 {
		s, err := a.Acquire(ctx, id, max, Interactive)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Release()
	}
	s, err := b.Acquire(ctx, id, max, Interactive)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Release()
	if in, m := b.Load(id); in != 4 || m != max { // seen in the acquire's reply
		t.Fatalf("b.Load = %d/%d, want 4/%d", in, m, max)
	}
	s2, _ := a.Acquire(ctx, id, max, Interactive)
	waitUntil(t, "b sees a's new slot", time.Second, func() bool {
		in, _ := b.Load(id)
		return in == 5
	})
	s2.Release()
	waitUntil(t, "b sees a's release", time.Second, func() bool {
		in, _ := b.Load(id)
		return in == 4
	})
	if w := EffectiveWeight(100, 4, max); w != 60 {
		t.Fatalf("EffectiveWeight = %d", w)
	}
}

func TestAdmitInstance(t *testing.T) {
	rdb, prefix := testRedis(t)
	c := newCounters(t, rdb, Options{Prefix: prefix, InstanceCap: 10})
	var releases []func()
	for i := range 8 {
		r, ok := c.AdmitInstance(Batch)
		if !ok {
			t.Fatalf("batch %d refused under its share", i+1)
		}
		releases = append(releases, r)
	}
	if _, ok := c.AdmitInstance(Batch); ok {
		t.Fatal("9th batch admitted over 80% of the cap")
	}
	for i := range 2 {
		r, ok := c.AdmitInstance(Interactive)
		if !ok {
			t.Fatalf("interactive %d refused with headroom left", i+1)
		}
		releases = append(releases, r)
	}
	if _, ok := c.AdmitInstance(Interactive); ok {
		t.Fatal("interactive admitted over the cap")
	}
	releases[0]()
	releases[0]() // idempotent
	if n := c.InstanceInFlight(); n != 9 {
		t.Fatalf("in-flight = %d, want 9", n)
	}
	if _, ok := c.AdmitInstance(Batch); ok {
		t.Fatal("batch admitted at 9/10 (its share is 8)")
	}
	r, ok := c.AdmitInstance(Interactive)
	if !ok {
		t.Fatal("interactive refused at 9/10")
	}
	r()
	for _, r := range releases {
		r()
	}
	if n := c.InstanceInFlight(); n != 0 {
		t.Fatalf("in-flight after release = %d", n)
	}
	unlimited := newCounters(t, rdb, Options{Prefix: prefix})
	for range 1000 {
		if _, ok := unlimited.AdmitInstance(Batch); !ok {
			t.Fatal("InstanceCap 0 refused")
		}
	}
}

func TestRepairAndSnapshot(t *testing.T) {
	rdb, prefix := testRedis(t)
	ctx := context.Background()
	logs := &logCounter{}
	c := newCounters(t, rdb, Options{Prefix: prefix, Logger: slog.New(logs)})
	rdb.Set(ctx, c.key(30), -3, 0)                // drifted negative
	rdb.Set(ctx, c.key(31), 5, 0)                 // lost its TTL: would never expire
	rdb.Set(ctx, c.key(32), 2, time.Minute)       // healthy
	rdb.Set(ctx, c.key(33), 0, time.Minute)       // zero: clutter
	rdb.Set(ctx, prefix+":other", 1, time.Minute) // not a counter

	if err := c.Repair(ctx); err != nil {
		t.Fatal(err)
	}
	if got := logs.all(); len(got) != 1 || got[0] != "loadcount: repaired drifted counters keys=3" {
		t.Fatalf("repair log = %q", got)
	}
	n, err := c.repair(ctx) // idempotent: nothing left to do
	if err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Fatalf("second repair fixed %d keys, want 0", n)
	}
	if rdb.Exists(ctx, c.key(30)).Val()+rdb.Exists(ctx, c.key(33)).Val() != 0 {
		t.Fatal("non-positive counters not deleted")
	}
	if ttl := rdb.PTTL(ctx, c.key(31)).Val(); ttl <= 0 || ttl > 30*time.Second {
		t.Fatalf("counter without TTL got pttl %s", ttl)
	}
	snap, err := c.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(snap); got != "map[31:5 32:2]" {
		t.Fatalf("snapshot = %s", got)
	}
}

func BenchmarkAcquireRelease(b *testing.B) {
	rdb, prefix := testRedis(b)
	c := newCounters(b, rdb, Options{Prefix: prefix})
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		s, err := c.Acquire(ctx, 1, 1000, Interactive)
		if err != nil {
			b.Fatal(err)
		}
		s.Release()
	}
	if c.Degraded() {
		b.Fatal("degraded during the benchmark")
	}
}

// logCounter is a slog.Handler counting records by message.
type logCounter struct {
	mu   sync.Mutex
	msgs []string
}

func (l *logCounter) Enabled(context.Context, slog.Level) bool { return true }
func (l *logCounter) Handle(_ context.Context, r slog.Record) error {
	msg := r.Message
	r.Attrs(func(a slog.Attr) bool { msg += " " + a.String(); return true })
	l.mu.Lock()
	l.msgs = append(l.msgs, msg)
	l.mu.Unlock()
	return nil
}
func (l *logCounter) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *logCounter) WithGroup(string) slog.Handler      { return l }

func (l *logCounter) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.msgs...)
}

func (l *logCounter) count(prefix string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, m := range l.msgs {
		if strings.HasPrefix(m, prefix) {
			n++
		}
	}
	return n
}
