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
			s, err := c.Acquire(context.Background(), Want{ID: id, MaxSlots: max})
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

func TestFullAnswersAtOnce(t *testing.T) {
	rdb, prefix := testRedis(t)
	c := newCounters(t, rdb, Options{Prefix: prefix})
	ctx := context.Background()
	const id, max = 2, 5

	var held []Slot
	defer func() {
		for _, s := range held {
			s.Release()
		}
	}()
	for i := range max { // every slot is usable: priority is the queues' business
		s, err := c.Acquire(ctx, Want{ID: id, MaxSlots: max})
		if err != nil {
			t.Fatalf("slot %d: %v", i+1, err)
		}
		held = append(held, s)
	}
	// Full: Acquire answers at once (the queue decides who waits), within
	// one Redis round trip, however long a slot stays taken.
	start := time.Now()
	if _, err := c.Acquire(ctx, Want{ID: id, MaxSlots: max}); !errors.Is(err, ErrFull) {
		t.Fatalf("over the cap = %v, want ErrFull", err)
	}
	if d := time.Since(start); d > 500*time.Millisecond {
		t.Fatalf("a full deployment answered after %s: Acquire must not wait", d)
	}
	if v := counter(t, rdb, c, id); v != max {
		t.Fatalf("counter = %d, want %d", v, max)
	}
}

// TestTokenCapAcrossInstances: two instances share one in-flight token
// counter beside the slot counter; a request whose estimate does not fit is
// refused with ErrTokensFull even with slots free, an idle deployment admits
// a request larger than the whole cap, and the last release clears both.
func TestTokenCapAcrossInstances(t *testing.T) {
	rdb, prefix := testRedis(t)
	ctx := context.Background()
	a := newCounters(t, rdb, Options{Prefix: prefix})
	b := newCounters(t, rdb, Options{Prefix: prefix})
	const id = 40
	want := func(tokens int64) Want {
		return Want{ID: id, MaxSlots: 20, MaxTokens: 20000, Tokens: tokens}
	}
	rag, err := a.Acquire(ctx, want(12000)) // one 12k-token RAG call
	if err != nil {
		t.Fatal(err)
	}
	if tk := tokensIn(t, rdb, a, id); tk != 12000 {
		t.Fatalf("token counter = %d, want 12000", tk)
	}
	var titles []Slot
	for i := range 8 { // eight 800-token title calls fit beside it
		s, err := b.Acquire(ctx, want(800))
		if err != nil {
			t.Fatalf("title %d: %v", i+1, err)
		}
		titles = append(titles, s)
	}
	// 18400 held: a 1700-token call on the other instance does not fit, though slots are free.
	if _, err := b.Acquire(ctx, want(1700)); !errors.Is(err, ErrTokensFull) {
		t.Fatalf("over the token cap = %v, want ErrTokensFull", err)
	}
	if n := counter(t, rdb, a, id); n != 9 {
		t.Fatalf("slot counter = %d after a refused acquire, want 9", n)
	}
	s, err := a.Acquire(ctx, want(1600))
	if err != nil {
		t.Fatalf("a request that fits exactly: %v", err)
	}
	s.Release()
	rag.Release()
	if tk := tokensIn(t, rdb, a, id); tk != 6400 {
		t.Fatalf("after the RAG call ended the token counter = %d, want 6400", tk)
	}
	for _, s := range titles {
		s.Release()
	}
	if rdb.Exists(ctx, a.key(id), a.key(id)+":tokens").Val() != 0 {
		t.Fatal("the last release left a counter behind")
	}
	// An idle deployment admits a request larger than its whole cap: it
	// could never run otherwise. A second one waits for it.
	huge, err := a.Acquire(ctx, want(50000))
	if err != nil {
		t.Fatalf("oversized request on an idle deployment: %v", err)
	}
	if _, err := b.Acquire(ctx, want(10)); !errors.Is(err, ErrTokensFull) {
		t.Fatalf("beside an oversized request = %v, want ErrTokensFull", err)
	}
	huge.Release()
	// Tokens left with no slot are drift: ignored, then overwritten.
	rdb.Set(ctx, a.key(id)+":tokens", 999999, time.Minute)
	s, err = b.Acquire(ctx, want(500))
	if err != nil {
		t.Fatalf("acquire over drifted tokens: %v", err)
	}
	if tk := tokensIn(t, rdb, a, id); tk != 500 {
		t.Fatalf("drifted token counter not reset: %d", tk)
	}
	if ttl := rdb.PTTL(ctx, a.key(id)+":tokens").Val(); ttl <= 0 {
		t.Fatalf("token counter without TTL (%s)", ttl)
	}
	s.Release()
}

func tokensIn(t testing.TB, rdb redis.UniversalClient, c *Counters, id int64) int64 {
	t.Helper()
	v, err := rdb.Get(context.Background(), c.key(id)+":tokens").Int64()
	if errors.Is(err, redis.Nil) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestReleaseTellsWhetherOthersWait: a release reports whether another
// instance was refused the deployment recently (so the queue lets every
// instance's waiters race fairly for the slot instead of handing it to a
// local waiter at once), and never counts the releasing instance itself.
func TestReleaseTellsWhetherOthersWait(t *testing.T) {
	rdb, prefix := testRedis(t)
	ctx := context.Background()
	type rel struct {
		id     int64
		others bool
	}
	seen := make(chan rel, 16)
	hook := func(id int64, others bool) { seen <- rel{id, others} }
	a := newCounters(t, rdb, Options{Prefix: prefix, InstanceID: "a", OnRelease: hook, DemandWindow: 300 * time.Millisecond})
	b := newCounters(t, rdb, Options{Prefix: prefix, InstanceID: "b"})
	const id = 41
	w := Want{ID: id, MaxSlots: 1}
	s, err := a.Acquire(ctx, w)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Acquire(ctx, w); !errors.Is(err, ErrFull) { // a's own demand
		t.Fatal(err)
	}
	s.Release()
	if r := <-seen; r.id != id || r.others {
		t.Fatalf("release with only this instance waiting = %+v, want others=false", r)
	}
	s, _ = a.Acquire(ctx, w)
	if _, err := b.Acquire(ctx, w); !errors.Is(err, ErrFull) { // b waits now
		t.Fatal(err)
	}
	s.Release()
	if r := <-seen; !r.others {
		t.Fatal("release did not report the other instance waiting")
	}
	time.Sleep(350 * time.Millisecond) // b stopped asking: its demand lapses
	s, _ = a.Acquire(ctx, w)
	s.Release()
	if r := <-seen; r.others {
		t.Fatal("stale demand still reported after DemandWindow")
	}
	// Uncapped deployments are not watched.
	s, _ = a.Acquire(ctx, Want{ID: 42})
	s.Release()
	select {
	case r := <-seen:
		t.Fatalf("release of an uncapped deployment reported %+v", r)
	default:
	}
}

func TestReleaseNeverBelowZero(t *testing.T) {
	rdb, prefix := testRedis(t)
	c := newCounters(t, rdb, Options{Prefix: prefix})
	ctx := context.Background()
	const id, max = 5, 10

	s1, _ := c.Acquire(ctx, Want{ID: id, MaxSlots: max})
	s2, _ := c.Acquire(ctx, Want{ID: id, MaxSlots: max})
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
	s3, _ := c.Acquire(ctx, Want{ID: id, MaxSlots: max})
	rdb.Del(ctx, c.key(id)) // the key expired
	s3.Release()
	if n := rdb.Exists(ctx, c.key(id)).Val(); n != 0 {
		t.Fatalf("release after expiry created the key (value %d)", counter(t, rdb, c, id))
	}

	// A counter that drifted negative is reset by the next acquire.
	rdb.Set(ctx, c.key(id), -3, 0)
	s4, err := c.Acquire(ctx, Want{ID: id, MaxSlots: max})
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
	before := ourGoroutines()

	c := New(rdb, Options{Prefix: prefix, OpTimeout: 10 * time.Second, Logger: quiet()})
	ids := []int64{10, 11, 12}
	var wg sync.WaitGroup
	var got, full, cancelled, panicked atomic.Int64
	for i := range 1000 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(i), 3))
			id := ids[r.IntN(len(ids))]
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

			// Retry a full deployment a few times, as a queued request's
			// re-polls would, on a timer and the caller's context.
			w := Want{ID: id, MaxSlots: 20, MaxTokens: 40000, Tokens: int64(r.IntN(4000))}
			s, err := c.Acquire(cctx, w)
			for try := 0; try < 20 && (errors.Is(err, ErrFull) || errors.Is(err, ErrTokensFull)); try++ {
				select {
				case <-cctx.Done():
				case <-time.After(time.Millisecond):
				}
				s, err = c.Acquire(cctx, w)
			}
			switch {
			case errors.Is(err, ErrFull), errors.Is(err, ErrTokensFull):
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
		if v := tokensIn(t, rdb, c, id); v != 0 {
			t.Errorf("deployment %d: redis token counter %d after all requests ended", id, v)
		}
		if n := c.InFlight(id); n != 0 {
			t.Errorf("deployment %d: local in-flight %d", id, n)
		}
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
		n := ourGoroutines()
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

// ourGoroutines counts the goroutines that are not go-redis's own
// housekeeping: on Redis Cluster the client starts a maintenance-
// notification cleanup loop for each node client it creates, lazily,
// whenever a test's traffic first reaches that node.
func ourGoroutines() int {
	buf := make([]byte, 1<<20)
	n := 0
	for _, g := range strings.Split(string(buf[:runtime.Stack(buf, true)]), "\n\n") {
		if !strings.Contains(g, "go-redis/v9/maintnotifications") {
			n++
		}
	}
	return n
}

func TestCrashedInstanceLoadExpires(t *testing.T) {
	rdb, prefix := testRedis(t)
	ctx := context.Background()
	const id, max = 6, 3
	const ttl = 600 * time.Millisecond // refreshed every 200ms, with slack for a loaded machine

	crashed := New(rdb, Options{Prefix: prefix, TTL: ttl, OpTimeout: 5 * time.Second, Logger: quiet()})
	for range max {
		if _, err := crashed.Acquire(ctx, Want{ID: id, MaxSlots: max}); err != nil {
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
	if _, err := survivor.Acquire(ctx, Want{ID: id, MaxSlots: max}); !errors.Is(err, ErrFull) {
		t.Fatalf("acquire right after the crash = %v, want ErrFull", err)
	}
	waitUntil(t, "the crashed instance's load expired", 2*ttl+time.Second, func() bool {
		return rdb.Exists(ctx, survivor.key(id)).Val() == 0
	})
	for i := range max {
		s, err := survivor.Acquire(ctx, Want{ID: id, MaxSlots: max})
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

	before, err := c.Acquire(ctx, Want{ID: id, MaxSlots: max}) // counted in Redis
	if err != nil {
		t.Fatal(err)
	}
	px.Cut() // connections refused from now on

	start := time.Now()
	s, err := c.Acquire(ctx, Want{ID: id, MaxSlots: max})
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
	if _, err := c.Acquire(ctx, Want{ID: id, MaxSlots: max}); !errors.Is(err, ErrFull) {
		t.Fatalf("3rd acquire of cap 2 = %v, want ErrFull", err)
	}
	if in, _ := c.Load(id); in != 2 {
		t.Fatalf("Load while degraded = %d, want 2", in)
	}
	s.Release()
	before.Release() // owed to Redis until it returns
	for range 5 {
		s, err := c.Acquire(ctx, Want{ID: id, MaxSlots: max})
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
	s, err = c.Acquire(ctx, Want{ID: id, MaxSlots: max})
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
	s, err := c.Acquire(ctx, Want{ID: 8, MaxSlots: 1})
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
	if _, err := c.Acquire(ctx, Want{ID: 8, MaxSlots: 1}); !errors.Is(err, ErrFull) {
		t.Fatalf("over the local cap = %v", err)
	}
	s.Release()
	for range 10 {
		s, err := c.Acquire(ctx, Want{ID: 8, MaxSlots: 1})
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
		s, err := c.Acquire(context.Background(), Want{ID: 9, MaxSlots: 0})
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
		s, err := a.Acquire(ctx, Want{ID: id, MaxSlots: max})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Release()
	}
	s, err := b.Acquire(ctx, Want{ID: id, MaxSlots: max})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Release()
	if in, _ := b.Load(id); in != 4 { // seen in the acquire's reply
		t.Fatalf("b.Load = %d, want 4", in)
	}
	s2, _ := a.Acquire(ctx, Want{ID: id, MaxSlots: max})
	waitUntil(t, "b sees a's new slot", time.Second, func() bool {
		in, _ := b.Load(id)
		return in == 5
	})
	s2.Release()
	waitUntil(t, "b sees a's release", time.Second, func() bool {
		in, _ := b.Load(id)
		return in == 4
	})
	// Tokens too, for a deployment with a token cap.
	tw := Want{ID: id + 1, MaxSlots: max, MaxTokens: 50000, Tokens: 12000}
	s3, err := a.Acquire(ctx, tw)
	if err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "b sees a's tokens", time.Second, func() bool {
		in, tk := b.Load(id + 1)
		return in == 1 && tk == 12000
	})
	s3.Release()
	waitUntil(t, "b sees a's tokens released", time.Second, func() bool {
		in, tk := b.Load(id + 1)
		return in == 0 && tk == 0
	})
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
	rdb.Set(ctx, c.key(30)+":tokens", 900, 0)     // tokens of a drifted counter
	rdb.Set(ctx, c.key(32)+":tokens", 400, 0)     // token counter lost its TTL

	if err := c.Repair(ctx); err != nil {
		t.Fatal(err)
	}
	if got := logs.all(); len(got) != 1 || got[0] != "loadcount: repaired drifted counters keys=4" {
		t.Fatalf("repair log = %q", got)
	}
	n, err := c.repair(ctx) // idempotent: nothing left to do
	if err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Fatalf("second repair fixed %d keys, want 0", n)
	}
	if rdb.Exists(ctx, c.key(30)).Val()+rdb.Exists(ctx, c.key(33)).Val()+rdb.Exists(ctx, c.key(30)+":tokens").Val() != 0 {
		t.Fatal("non-positive counters (or their tokens) not deleted")
	}
	if ttl := rdb.PTTL(ctx, c.key(32)+":tokens").Val(); ttl <= 0 {
		t.Fatalf("token counter without TTL got pttl %s", ttl)
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
		s, err := c.Acquire(ctx, Want{ID: 1, MaxSlots: 1000})
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

// Take counts an uncapped deployment's slots in memory only (what Load
// weighs by), and gives a capped one Acquire's slot and answers.
func TestTake(t *testing.T) {
	rdb, prefix := testRedis(t)
	c := newCounters(t, rdb, Options{Prefix: prefix})
	ctx := context.Background()
	const uncapped, capped = 31, 32
	var rel []func()
	for range 3 {
		r, err := c.Take(ctx, Want{ID: uncapped})
		if err != nil {
			t.Fatal(err)
		}
		rel = append(rel, r)
	}
	if slots, _ := c.Load(uncapped); slots != 3 {
		t.Fatalf("uncapped in flight = %d, want 3", slots)
	}
	for _, r := range rel {
		r()
	}
	if slots, _ := c.Load(uncapped); slots != 0 {
		t.Fatalf("uncapped in flight after release = %d, want 0", slots)
	}
	r1, err := c.Take(ctx, Want{ID: capped, MaxSlots: 1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Take(ctx, Want{ID: capped, MaxSlots: 1}); !errors.Is(err, ErrFull) {
		t.Fatalf("over the cap = %v, want ErrFull", err)
	}
	if v := counter(t, rdb, c, capped); v != 1 {
		t.Fatalf("counter = %d, want 1", v)
	}
	r1()
	if _, err := c.Take(ctx, Want{ID: capped, MaxSlots: 1}); err != nil {
		t.Fatalf("after release: %v", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := c.Take(cctx, Want{ID: uncapped}); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled Take = %v", err)
	}
}
