package keypool

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"switchyard/routing"
	"switchyard/routing/adapter"
	"switchyard/store/storetest"
)

type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func newFakeClock() *fakeClock { return &fakeClock{now: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

func quiet() *slog.Logger { return slog.New(slog.DiscardHandler) }

func newPool(t testing.TB, opts Options) *Pool {
	t.Helper()
	rdb, prefix := testRedis(t)
	if opts.Prefix == "" {
		opts.Prefix = prefix
	}
	if opts.Logger == nil {
		opts.Logger = quiet()
	}
	p := New(rdb, opts)
	t.Cleanup(p.Close)
	return p
}

func picks(t *testing.T, p *Pool, provider int64, keys []int64, n int) []int64 {
	t.Helper()
	var got []int64
	for range n {
		id, skip, ok := p.Pick(provider, keys, nil)
		if !ok {
			t.Fatalf("Pick: no key (%s)", skip)
		}
		got = append(got, id)
	}
	return got
}

func TestLRUOrder(t *testing.T) {
	p := newPool(t, Options{})
	keys := []int64{10, 11, 12}
	if got, want := fmt.Sprint(picks(t, p, 1, keys, 7)), "[10 11 12 10 11 12 10]"; got != want {
		t.Fatalf("picks = %s, want %s", got, want)
	}
	// LRU is per provider: another provider's picks do not disturb it.
	picks(t, p, 2, []int64{20, 21}, 3)
	if got := picks(t, p, 1, keys, 1)[0]; got != 11 {
		t.Fatalf("next pick = %d, want 11", got)
	}
}

func TestNeverUsedKeyComesFirst(t *testing.T) {
	p := newPool(t, Options{})
	keys := []int64{1, 2, 3}
	picks(t, p, 1, keys, 30) // a pool with plenty of history

	// The article's bug: ORDER BY last_used NULLS LAST starves a new key.
	keys = append(keys, 4)
	if got := picks(t, p, 1, keys, 1)[0]; got != 4 {
		t.Fatalf("pick after adding key 4 = %d, want 4 (never used comes first)", got)
	}
	// Several new keys come first in configured order, wherever they sit.
	keys = append([]int64{5}, append(keys, 6)...)
	if got, want := fmt.Sprint(picks(t, p, 1, keys, 3)), "[5 6 1]"; got != want {
		t.Fatalf("picks = %s, want %s", got, want)
	}
}

func TestSkipReasons(t *testing.T) {
	clock := newFakeClock()
	p := newPool(t, Options{Clock: clock.Now})
	keys := []int64{1, 2, 3}
	tried := func(ids ...int64) []int64 { return ids }
	if _, skip, ok := p.Pick(1, nil, nil); ok || skip != SkipNoKeys {
		t.Fatalf("no keys: %q %v", skip, ok)
	}
	if id, _, ok := p.Pick(1, keys, tried(1, 2)); !ok || id != 3 {
		t.Fatalf("with 1,2 tried: %d %v, want 3", id, ok)
	}
	if _, skip, ok := p.Pick(1, keys, tried(1, 2, 3)); ok || skip != SkipAllTried {
		t.Fatalf("all tried: %q %v", skip, ok)
	}
	p.Quarantine(1, routing.KeyFault{Class: adapter.ClassAuth, Status: 401, Detail: "invalid api key"})
	p.Quarantine(2, routing.KeyFault{Class: adapter.ClassAuth, Status: 402, Detail: "insufficient balance"})
	p.Quarantine(3, routing.KeyFault{Class: adapter.ClassAuth, Status: 403, Detail: "forbidden"})
	if _, skip, ok := p.Pick(1, keys, nil); ok || skip != SkipAllQuarantined {
		t.Fatalf("all quarantined: %q %v", skip, ok)
	}
	p2 := newPool(t, Options{Clock: clock.Now})
	p2.Cool(1, 3*time.Second)
	p2.Cool(2, time.Second)
	p2.Cool(3, 2*time.Second)
	// The skip says when the first key is usable again: key 2, in 1 s.
	want := SkipAllCooling
	want.Until = clock.Now().Add(time.Second).UnixMilli()
	if _, skip, ok := p2.Pick(1, keys, nil); ok || skip != want {
		t.Fatalf("all cooling: %+v %v, want %+v", skip, ok, want)
	}
	if skip, ok := p2.Usable(keys); ok || skip != want {
		t.Fatalf("Usable, all cooling: %+v %v, want %+v", skip, ok, want)
	}
	// Tried and blocked keys together: the blocked state is the reason,
	// and the first untried key's end of cooling is when it passes.
	want.Until = clock.Now().Add(2 * time.Second).UnixMilli()
	if _, skip, ok := p2.Pick(1, keys, tried(2)); ok || skip != want {
		t.Fatalf("tried + cooling: %+v %v, want %+v", skip, ok, want)
	}
}

func TestCoolingHonoursRetryAfter(t *testing.T) {
	clock := newFakeClock()
	p := newPool(t, Options{Clock: clock.Now})
	keys := []int64{1, 2, 3}
	picks(t, p, 1, keys, 3)

	p.Cool(1, 2*time.Second) // a 429 with Retry-After: 2
	if got := fmt.Sprint(picks(t, p, 1, keys, 4)); got != "[2 3 2 3]" {
		t.Fatalf("picks while 1 cools = %s", got)
	}
	clock.Advance(2*time.Second - time.Millisecond)
	if got := picks(t, p, 1, keys, 1)[0]; got == 1 {
		t.Fatal("key 1 back before its Retry-After")
	}
	clock.Advance(time.Millisecond)
	// Back, and first: it is the least recently used.
	if got := picks(t, p, 1, keys, 1)[0]; got != 1 {
		t.Fatalf("pick after cooling = %d, want 1", got)
	}

	// Unknown Retry-After: DefaultCool (5 s).
	p.Cool(2, 0)
	clock.Advance(4 * time.Second)
	for _, id := range picks(t, p, 1, keys, 4) {
		if id == 2 {
			t.Fatal("key 2 back before the default 5s")
		}
	}
	clock.Advance(time.Second)
	if got := fmt.Sprint(picks(t, p, 1, keys, 3)); !strings.Contains(got, "2") {
		t.Fatalf("key 2 not back after 5s: %s", got)
	}

	// A shorter cooling does not cut a longer one short.
	p.Cool(3, 10*time.Second)
	p.Cool(3, time.Second)
	clock.Advance(2 * time.Second)
	for _, id := range picks(t, p, 1, keys, 4) {
		if id == 3 {
			t.Fatal("a shorter Retry-After cut a longer cooling short")
		}
	}
}

func TestQuarantineSharedWithinOneSync(t *testing.T) {
	rdb, prefix := testRedis(t)
	const interval = 100 * time.Millisecond
	a := New(rdb, Options{Prefix: prefix, SyncInterval: interval, Logger: quiet()})
	b := New(rdb, Options{Prefix: prefix, SyncInterval: interval, Logger: quiet()})
	defer a.Close()
	defer b.Close()
	keys := []int64{1, 2}

	a.Quarantine(1, routing.KeyFault{Class: adapter.ClassAuth, Status: 401, Detail: "invalid api key"})
	start := time.Now()
	for {
		blocked := true
		for range 4 {
			if id, _, _ := b.Pick(9, keys, nil); id == 1 {
				blocked = false
			}
		}
		if blocked {
			break
		}
		// Written through at once, pulled on b's next tick.
		if time.Since(start) > 2*interval+time.Second { // slack for a loaded machine
			t.Fatalf("instance b still picks key 1 %s after a quarantined it", time.Since(start))
		}
		time.Sleep(5 * time.Millisecond)
	}
	st, err := b.States(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got := st[1]; got.Status != StatusQuarantined || got.Fault == nil || *got.Fault != (routing.KeyFault{Class: adapter.ClassAuth, Status: 401, Detail: "invalid api key"}) || got.Since.IsZero() {
		t.Fatalf("b's view of key 1 = %+v", got)
	}
	// Cooling is shared the same way.
	a.Cool(2, time.Minute)
	if err := a.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := b.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, skip, ok := b.Pick(9, keys, nil); ok || skip.Code != SkipAllCooling.Code || skip.Until == 0 {
		t.Fatalf("b after a cooled key 2: %+v %v", skip, ok)
	}
}

func TestCoolingNeverReplacesQuarantine(t *testing.T) {
	rdb, prefix := testRedis(t)
	ctx := context.Background()
	a := New(rdb, Options{Prefix: prefix, SyncInterval: time.Hour, Logger: quiet()})
	b := New(rdb, Options{Prefix: prefix, SyncInterval: time.Hour, Logger: quiet()})
	defer a.Close()
	defer b.Close()

	a.Quarantine(1, routing.KeyFault{Class: adapter.ClassAuth, Status: 403})
	if err := a.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	b.Cool(1, time.Second) // b has not pulled yet: it sees the key active
	if err := b.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if err := a.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	for name, p := range map[string]*Pool{"a": a, "b": b} {
		st, err := p.States(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if st[1].Status != StatusQuarantined {
			t.Fatalf("%s sees key 1 as %+v, want quarantined", name, st[1])
		}
	}
}

func TestReenableClearsEverywhere(t *testing.T) {
	rdb, prefix := testRedis(t)
	ctx := context.Background()
	a := New(rdb, Options{Prefix: prefix, SyncInterval: time.Hour, Logger: quiet()})
	b := New(rdb, Options{Prefix: prefix, SyncInterval: time.Hour, Logger: quiet()})
	defer a.Close()
	defer b.Close()
	keys := []int64{1}

	a.Quarantine(1, routing.KeyFault{Class: adapter.ClassAuth, Status: 401})
	a.Cool(1, time.Minute)
	if err := a.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if err := b.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if _, skip, ok := b.Pick(1, keys, nil); ok || skip != SkipAllQuarantined {
		t.Fatalf("b before re-enable: %q %v", skip, ok)
	}

	// The operator re-enables the key on b's console.
	if err := b.Reenable(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if _, _, ok := b.Pick(1, keys, nil); !ok {
		t.Fatal("b still blocks key 1 after re-enabling it")
	}
	if err := a.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if _, skip, ok := a.Pick(1, keys, nil); !ok {
		t.Fatalf("a still blocks key 1 after the re-enable synced: %s", skip)
	}
	st, err := a.States(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st[1].Status != StatusActive || st[1].LastUsed.IsZero() {
		t.Fatalf("a's view of key 1 = %+v", st[1])
	}
}

func TestRedisDownKeepsLocalState(t *testing.T) {
	storetest.SingleNodeOnly(t)
	rdb, prefix := testRedis(t)
	ctx := context.Background()
	px := newProxy(t)
	flaky := newClient(px.Addr)
	defer flaky.Close()

	var logged logCounter
	a := New(flaky, Options{Prefix: prefix, SyncInterval: 20 * time.Millisecond, Timeout: 100 * time.Millisecond,
		Logger: slog.New(&logged)})
	defer a.Close()
	other := New(rdb, Options{Prefix: prefix, SyncInterval: time.Hour, Logger: quiet()})
	defer other.Close()

	px.Cut()
	a.Quarantine(1, routing.KeyFault{Class: adapter.ClassAuth, Status: 401})
	if _, skip, ok := a.Pick(1, []int64{1}, nil); ok || skip != SkipAllQuarantined {
		t.Fatalf("local quarantine not honoured while redis is down: %q %v", skip, ok)
	}
	waitUntil(t, "degraded", a.Degraded)
	time.Sleep(100 * time.Millisecond) // several failing syncs
	if n := logged.count("keypool: redis unavailable"); n != 1 {
		t.Fatalf("outage logged %d times, want once", n)
	}
	if _, err := a.States(ctx); err == nil {
		t.Fatal("States hid the redis failure")
	}

	// Redis returns: the pending quarantine is written and others see it.
	px.Restore()
	waitUntil(t, "recovered", func() bool { return !a.Degraded() })
	waitUntil(t, "quarantine shared after recovery", func() bool {
		_ = other.Sync(ctx)
		_, _, ok := other.Pick(1, []int64{1}, nil)
		return !ok
	})
	if n := logged.count("keypool: redis available again"); n != 1 {
		t.Fatalf("recovery logged %d times, want once", n)
	}
}

func TestConcurrentUse(t *testing.T) {
	rdb, prefix := testRedis(t)
	a := New(rdb, Options{Prefix: prefix, SyncInterval: 10 * time.Millisecond, DefaultCool: time.Millisecond, Logger: quiet()})
	b := New(rdb, Options{Prefix: prefix, SyncInterval: 10 * time.Millisecond, DefaultCool: time.Millisecond, Logger: quiet()})
	defer a.Close()
	defer b.Close()
	keys := []int64{1, 2, 3, 4, 5, 6}

	var picked atomic.Int64
	var wg sync.WaitGroup
	for g := range 8 {
		p := a
		if g%2 == 1 {
			p = b
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(g), 2))
			var seen []int64
			for range 2000 {
				id, _, ok := p.Pick(int64(g%3), keys, seen)
				if ok {
					picked.Add(1)
					seen = append(seen, id)
					if len(seen) == len(keys) {
						seen = seen[:0]
					}
				}
				switch r.IntN(200) {
				case 0:
					p.Cool(keys[r.IntN(len(keys))], 0)
				case 1:
					p.Quarantine(keys[r.IntN(len(keys))], routing.KeyFault{Class: adapter.ClassAuth, Status: 401})
				case 2:
					_ = p.Reenable(context.Background(), keys[r.IntN(len(keys))])
				case 3:
					_, _ = p.States(context.Background())
				}
			}
		}()
	}
	wg.Wait()
	if picked.Load() == 0 {
		t.Fatal("nothing picked")
	}
}

func BenchmarkPick(b *testing.B) {
	p := newPool(b, Options{SyncInterval: time.Hour})
	keys := []int64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	p.Cool(3, time.Hour)
	p.Quarantine(7, routing.KeyFault{Class: adapter.ClassAuth, Status: 401})
	var tried []int64
	b.ReportAllocs()
	for b.Loop() {
		if _, _, ok := p.Pick(1, keys, tried); !ok {
			b.Fatal("no key")
		}
	}
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// logCounter is a slog.Handler counting records by message.
type logCounter struct {
	mu   sync.Mutex
	msgs []string
}

func (l *logCounter) Enabled(context.Context, slog.Level) bool { return true }
func (l *logCounter) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	l.msgs = append(l.msgs, r.Message)
	l.mu.Unlock()
	return nil
}
func (l *logCounter) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *logCounter) WithGroup(string) slog.Handler      { return l }

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

func TestUsableHasNoSideEffect(t *testing.T) {
	rdb, prefix := testRedis(t)
	p := New(rdb, Options{Prefix: prefix})
	defer p.Close()
	if skip, ok := p.Usable(nil); ok || skip != SkipNoKeys {
		t.Fatalf("no keys: %q %v", skip, ok)
	}
	p.Quarantine(1, routing.KeyFault{Class: adapter.ClassAuth, Status: 401})
	p.Cool(2, time.Minute)
	if skip, ok := p.Usable([]int64{1, 2}); ok || skip.Code != SkipAllCooling.Code || skip.Until == 0 {
		t.Fatalf("one quarantined, one cooling: %+v %v", skip, ok)
	}
	if skip, ok := p.Usable([]int64{1}); ok || skip != SkipAllQuarantined {
		t.Fatalf("quarantined: %q %v", skip, ok)
	}
	// Asking must not spend a key's turn: 3 stays the least recently used.
	for range 3 {
		if _, ok := p.Usable([]int64{3, 4}); !ok {
			t.Fatal("usable keys reported unusable")
		}
	}
	if id, _, _ := p.Pick(9, []int64{3, 4}, nil); id != 3 {
		t.Fatalf("Pick after Usable chose %d, want 3", id)
	}
}
