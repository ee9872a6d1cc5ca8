package breakerboard

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"switchyard/routing/breaker"
	"switchyard/store/storetest"
)

// testRedis is the real Redis under a fresh prefix (see store/storetest).
func testRedis(t testing.TB) (redis.UniversalClient, string) {
	return storetest.TestRedis(t, "breaker")
}

func TestReporterRoundTrip(t *testing.T) {
	rdb, prefix := testRedis(t)
	ctx := context.Background()

	clock := newFakeClock()
	a := newTestSet(clock)
	b := newTestSet(clock)
	trip(t, a, 11, breaker.Settings{})
	calls(t, a, 12, breaker.Settings{}, breaker.Success, 5)
	calls(t, b, 11, breaker.Settings{}, breaker.Success, 3)

	ra := NewReporter(a, rdb, ReporterOptions{Prefix: prefix, InstanceID: "api-a", Logger: quietLogger()})
	rb := NewReporter(b, rdb, ReporterOptions{Prefix: prefix, InstanceID: "api-b", Logger: quietLogger()})
	for _, r := range []*Reporter{ra, rb} {
		if err := r.Publish(ctx); err != nil {
			t.Fatal(err)
		}
	}
	all, err := ReadAll(ctx, rdb, prefix)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 2 {
		t.Fatalf("instances = %v, want api-a and api-b", all)
	}
	got := all["api-a"][11]
	if got.State != breaker.Open || got.Calls != 20 || got.Failures != 20 || got.FailureRate != 100 || !got.OpenedAt.Equal(clock.Now()) {
		t.Fatalf("api-a deployment 11 = %+v", got)
	}
	if got.Settings != breaker.Defaults {
		t.Fatalf("settings did not round-trip: %+v", got.Settings)
	}
	if got := all["api-a"][12]; got.State != breaker.Closed || got.Calls != 5 {
		t.Fatalf("api-a deployment 12 = %+v", got)
	}
	if got := all["api-b"][11]; got.State != breaker.Closed || got.Calls != 3 {
		t.Fatalf("api-b deployment 11 = %+v", got)
	}
	if ttl := rdb.PTTL(ctx, prefix+":breakers").Val(); ttl <= 0 {
		t.Fatalf("breakers hash has no expiry (pttl %s)", ttl)
	}
}

func TestReadAllDropsStaleInstances(t *testing.T) {
	rdb, prefix := testRedis(t)
	ctx := context.Background()

	live := NewReporter(newTestSet(newFakeClock()), rdb, ReporterOptions{Prefix: prefix, InstanceID: "live", Logger: quietLogger()})
	dead := NewReporter(newTestSet(newFakeClock()), rdb, ReporterOptions{Prefix: prefix, InstanceID: "crashed", TTL: 50 * time.Millisecond, Logger: quietLogger()})
	if err := dead.Publish(ctx); err != nil {
		t.Fatal(err)
	}
	time.Sleep(60 * time.Millisecond)
	if err := live.Publish(ctx); err != nil {
		t.Fatal(err)
	}
	all, err := ReadAll(ctx, rdb, prefix)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := all["crashed"]; ok || len(all) != 1 {
		t.Fatalf("instances = %v, want only live", all)
	}
	if rdb.HExists(ctx, prefix+":breakers", "crashed").Val() {
		t.Fatal("stale report not deleted")
	}
}

func TestReporterRunPublishesOnChange(t *testing.T) {
	rdb, prefix := testRedis(t)
	clock := newFakeClock()
	s := newTestSet(clock)
	calls(t, s, 5, breaker.Settings{}, breaker.Success, 1)

	// A long interval: only the state change can explain a prompt update.
	r := NewReporter(s, rdb, ReporterOptions{Prefix: prefix, InstanceID: "api-run", Interval: time.Hour, Logger: quietLogger()})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()

	waitFor := func(what string, cond func(map[string]map[int64]breaker.Status) bool) {
		t.Helper()
		deadline := time.Now().Add(3 * time.Second)
		for {
			all, err := ReadAll(context.Background(), rdb, prefix)
			if err == nil && cond(all) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s (last %v, %v)", what, all, err)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	waitFor("first report", func(all map[string]map[int64]breaker.Status) bool {
		return all["api-run"][5].State == breaker.Closed && all["api-run"][5].Calls == 1
	})
	trip(t, s, 6, breaker.Settings{})
	waitFor("open state", func(all map[string]map[int64]breaker.Status) bool {
		return all["api-run"][6].State == breaker.Open
	})
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run = %v", err)
	}
	waitFor("report removed on shutdown", func(all map[string]map[int64]breaker.Status) bool {
		_, ok := all["api-run"]
		return !ok
	})
}
