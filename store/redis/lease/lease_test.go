package lease

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"switchyard/store/storetest"
)

// testRedis is the real Redis under a fresh prefix (see store/storetest).
func testRedis(t testing.TB) (redis.UniversalClient, string) { return storetest.TestRedis(t, "lease") }

func TestTwoContendersOnlyOneHolds(t *testing.T) {
	rdb, prefix := testRedis(t)
	ctx := context.Background()
	name := prefix + ":health"

	var holders atomic.Int32
	var wg sync.WaitGroup
	for range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, held, err := Acquire(ctx, rdb, name, 5*time.Second)
			if err != nil {
				t.Error(err)
			}
			if held {
				holders.Add(1)
			}
		}()
	}
	wg.Wait()
	if n := holders.Load(); n != 1 {
		t.Fatalf("%d contenders hold the lease, want exactly 1", n)
	}
}

func TestNonOwnerCannotRenewOrRelease(t *testing.T) {
	rdb, prefix := testRedis(t)
	ctx := context.Background()
	name := prefix + ":reconcile"

	owner, held, err := Acquire(ctx, rdb, name, 5*time.Second)
	if err != nil || !held {
		t.Fatalf("Acquire = %v, %v", held, err)
	}
	impostor := &Lease{rdb: rdb, name: name, token: "not-the-owner", ttl: time.Minute}
	if err := impostor.Renew(ctx); !errors.Is(err, ErrNotHeld) {
		t.Fatalf("impostor Renew = %v, want ErrNotHeld", err)
	}
	if err := impostor.Release(ctx); !errors.Is(err, ErrNotHeld) {
		t.Fatalf("impostor Release = %v, want ErrNotHeld", err)
	}
	// The impostor's renew must not have changed the owner's ttl.
	if ttl := rdb.PTTL(ctx, name).Val(); ttl > 5*time.Second {
		t.Fatalf("ttl %s after impostor renew, want <= 5s", ttl)
	}
	if err := owner.Renew(ctx); err != nil {
		t.Fatalf("owner Renew: %v", err)
	}
	if err := owner.Release(ctx); err != nil {
		t.Fatalf("owner Release: %v", err)
	}
	if err := owner.Release(ctx); !errors.Is(err, ErrNotHeld) {
		t.Fatalf("second Release = %v, want ErrNotHeld", err)
	}
	if n := rdb.Exists(ctx, name).Val(); n != 0 {
		t.Fatal("lease key still exists after release")
	}
}

func TestExpiryLetsAnotherTakeOver(t *testing.T) {
	rdb, prefix := testRedis(t)
	ctx := context.Background()
	name := prefix + ":rollup"

	first, held, err := Acquire(ctx, rdb, name, 100*time.Millisecond)
	if err != nil || !held {
		t.Fatalf("first Acquire = %v, %v", held, err)
	}
	if _, held, _ := Acquire(ctx, rdb, name, time.Second); held {
		t.Fatal("second contender took a live lease")
	}
	time.Sleep(150 * time.Millisecond)
	second, held, err := Acquire(ctx, rdb, name, 5*time.Second)
	if err != nil || !held {
		t.Fatalf("Acquire after expiry = %v, %v", held, err)
	}
	// The first owner's late renew and release must not touch the new owner.
	if err := first.Renew(ctx); !errors.Is(err, ErrNotHeld) {
		t.Fatalf("stale Renew = %v, want ErrNotHeld", err)
	}
	if err := first.Release(ctx); !errors.Is(err, ErrNotHeld) {
		t.Fatalf("stale Release = %v, want ErrNotHeld", err)
	}
	if err := second.Renew(ctx); err != nil {
		t.Fatalf("new owner Renew: %v", err)
	}
}

func TestRunRenewsLongJob(t *testing.T) {
	rdb, prefix := testRedis(t)
	ctx := context.Background()
	name := prefix + ":partitions"
	// Renewals come every ttl/3; the ttl leaves room for a loaded machine.
	const ttl = 400 * time.Millisecond

	started := make(chan struct{})
	var contenderRan atomic.Bool
	done := make(chan struct{})
	go func() {
		defer close(done)
		<-started
		// While the long job runs (3× the ttl), nobody else may run it.
		for range 10 {
			ran, err := Run(ctx, rdb, name, ttl, func(context.Context) error { return nil })
			if err != nil {
				t.Error(err)
			}
			if ran {
				contenderRan.Store(true)
			}
			time.Sleep(60 * time.Millisecond)
		}
	}()

	ran, err := Run(ctx, rdb, name, ttl, func(ctx context.Context) error {
		close(started)
		select {
		case <-time.After(3 * ttl):
			return nil
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	})
	<-done
	if !ran || err != nil {
		t.Fatalf("Run = %v, %v; want ran with nil error", ran, err)
	}
	if contenderRan.Load() {
		t.Fatal("a contender ran the job while the lease was held")
	}
	if n := rdb.Exists(ctx, name).Val(); n != 0 {
		t.Fatal("Run did not release the lease")
	}
	// Released: the next run goes ahead at once.
	ran, err = Run(ctx, rdb, name, ttl, func(context.Context) error { return nil })
	if !ran || err != nil {
		t.Fatalf("Run after release = %v, %v", ran, err)
	}
}

func TestRunCancelsJobWhenLeaseLost(t *testing.T) {
	rdb, prefix := testRedis(t)
	ctx := context.Background()
	name := prefix + ":probe"
	const ttl = 150 * time.Millisecond

	ran, err := Run(ctx, rdb, name, ttl, func(ctx context.Context) error {
		// Another worker steals the lease (e.g. after a long GC pause here).
		if err := rdb.Set(ctx, name, "someone-else", time.Minute).Err(); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			if !errors.Is(context.Cause(ctx), ErrLost) {
				t.Errorf("cause = %v, want ErrLost", context.Cause(ctx))
			}
			return nil
		case <-time.After(5 * time.Second):
			t.Error("job context not cancelled after the lease was lost")
			return nil
		}
	})
	if !ran || !errors.Is(err, ErrLost) {
		t.Fatalf("Run = %v, %v; want ran with ErrLost", ran, err)
	}
	if v := rdb.Get(ctx, name).Val(); v != "someone-else" {
		t.Fatalf("Run deleted another owner's lease (value %q)", v)
	}
}

func TestRunSkipsWhenHeld(t *testing.T) {
	rdb, prefix := testRedis(t)
	ctx := context.Background()
	name := prefix + ":skip"
	if _, held, err := Acquire(ctx, rdb, name, 5*time.Second); !held || err != nil {
		t.Fatalf("Acquire = %v, %v", held, err)
	}
	called := false
	ran, err := Run(ctx, rdb, name, time.Second, func(context.Context) error { called = true; return nil })
	if ran || err != nil || called {
		t.Fatalf("Run = %v, %v (fn called %v); want skipped", ran, err, called)
	}
}
