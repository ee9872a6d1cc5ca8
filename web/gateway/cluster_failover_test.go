package gateway_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"switchyard/routing/config"
	"switchyard/store/storetest"
	"switchyard/web/gateway/gatewaytest"
)

// failoverRecovery bounds how long after the last CLUSTER FAILOVER the
// instance may still decide per instance (the manual's "Redis topologies",
// static/manual/settings.md, names it): the limiter's probe interval plus the cluster client's reload
// of the slot map.
const failoverRecovery = 10 * time.Second

// TestClusterFailoverKeepsServing runs an instance on a local Redis Cluster
// (3 masters, 3 replicas) and, while requests with rate limits, load
// counters and idempotency keys flow, makes every replica take over its
// master (CLUSTER FAILOVER), so whichever master held the caller's keys
// moves. Every request must still be answered 200: MOVED replies are
// followed, and a Redis call that fails meanwhile falls back per instance.
// Afterwards the shared limits resume within failoverRecovery, and the
// limit still holds across the new masters.
func TestClusterFailoverKeepsServing(t *testing.T) {
	cl := storetest.NewCluster(t)
	rdb := cl.Client()
	t.Cleanup(func() { _ = rdb.Close() })
	e := gatewaytest.New(t, gatewaytest.Options{Redis: rdb})
	keys := limitedWorld(t, e, map[string]config.TierLimit{"app": {RPM: 100000}, "tight": {RPM: 5}}, 1000)

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	stop := make(chan struct{})
	var sent, bad atomic.Int64
	var mu sync.Mutex
	var firstBad []string
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				var hdr []string
				if i%3 == 0 {
					hdr = []string{"Idempotency-Key", fmt.Sprintf("w%d-%d", w, i)}
				}
				res, body := post(t, e, keys["app"], "/v1/chat/completions", fastHello, hdr...)
				sent.Add(1)
				if res.StatusCode != 200 {
					bad.Add(1)
					mu.Lock()
					if len(firstBad) < 5 {
						firstBad = append(firstBad, fmt.Sprintf("%d %s", res.StatusCode, body))
					}
					mu.Unlock()
				}
			}
		}()
	}
	time.Sleep(500 * time.Millisecond)
	replicas, err := cl.Replicas(ctx)
	if err != nil || len(replicas) != 3 {
		t.Fatalf("replicas %v: %v", replicas, err)
	}
	for _, r := range replicas {
		if err := cl.Failover(ctx, r); err != nil {
			t.Fatalf("%v\n%s", err, cl.Logs())
		}
		time.Sleep(300 * time.Millisecond) // requests flow on the new master
	}
	time.Sleep(500 * time.Millisecond)
	close(stop)
	wg.Wait()
	fb := e.GW.Limiter.FallbackDecisions()
	t.Logf("%d requests during three failovers, %d limit decisions made per instance", sent.Load(), fb)
	if int64(fb) >= sent.Load() {
		t.Fatalf("every limit decision fell back: the cluster was never used")
	}
	if bad.Load() > 0 {
		t.Errorf("%d of %d requests not answered 200 during the failovers, first: %v", bad.Load(), sent.Load(), firstBad)
	}
	if now, err := cl.Replicas(ctx); err != nil || len(now) != 3 || now[0] == replicas[0] {
		t.Fatalf("after failover the replicas are %v (were %v): %v", now, replicas, err)
	}

	// The shared state is back: no component decides per instance.
	deadline := time.Now().Add(failoverRecovery)
	for e.GW.Limiter.Degraded() || e.GW.Keys.Degraded() || e.GW.Load.Degraded() {
		if time.Now().After(deadline) {
			t.Fatalf("still degraded %s after the last failover: limiter %v keys %v load %v", failoverRecovery,
				e.GW.Limiter.Degraded(), e.GW.Keys.Degraded(), e.GW.Load.Degraded())
		}
		// Requests drive the probes back to Redis.
		post(t, e, keys["app"], "/v1/chat/completions", fastHello)
		time.Sleep(100 * time.Millisecond)
	}
	// A shared limit holds on the new masters: RPM 5 admits 5 of 8.
	var ok, limited int
	for range 8 {
		res, _ := post(t, e, keys["tight"], "/v1/chat/completions", fastHello)
		switch res.StatusCode {
		case 200:
			ok++
		case 429:
			limited++
		}
	}
	if ok != 5 || limited != 3 {
		t.Fatalf("RPM 5 after failover: %d admitted, %d limited, want 5 and 3", ok, limited)
	}
}
