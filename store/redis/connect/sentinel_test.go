package connect_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"switchyard/store/redis/connect"
	"switchyard/store/storetest"
)

var incrScript = redis.NewScript(`return redis.call('INCR', KEYS[1])`)

// A Sentinel URL reaches the master, runs scripts on it, and after SENTINEL
// FAILOVER the same client writes to the promoted replica, the data intact
// (a coordinated failover loses nothing).
func TestSentinelURLFollowsFailover(t *testing.T) {
	s := storetest.NewSentinel(t)
	rdb, err := connect.New(s.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer rdb.Close()
	if _, ok := rdb.(*redis.Client); !ok {
		t.Fatalf("client %T, want the failover *redis.Client", rdb)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for range 3 {
		if err := incrScript.Run(ctx, rdb, []string{"sy:{c1}:n"}).Err(); err != nil {
			t.Fatal(err)
		}
	}
	// WAIT: the replica has the writes before we promote it.
	// (within the client's 500 ms read timeout, so in short steps).
	for i := 0; ; i++ {
		n, err := rdb.Do(ctx, "WAIT", 1, 300).Int64()
		if err == nil && n == 1 {
			break
		}
		if i == 20 {
			t.Fatalf("WAIT 1: %d, %v", n, err)
		}
	}
	if err := s.Failover(ctx); err != nil {
		t.Fatal(err)
	}
	// The client learns the new master from the Sentinel; calls that land
	// on the demoted one meanwhile fail (no blind retry), then succeed.
	var v int64
	deadline := time.Now().Add(15 * time.Second)
	for {
		v, err = incrScript.Run(ctx, rdb, []string{"sy:{c1}:n"}).Int64()
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no write succeeded 15s after the failover: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if v < 4 {
		t.Fatalf("counter %d after failover, want the 3 earlier writes kept", v)
	}
	direct := redis.NewClient(&redis.Options{Addr: s.Replica})
	defer direct.Close()
	role, err := direct.Do(ctx, "ROLE").Slice()
	if err != nil || role[0] != "master" {
		t.Fatalf("the old replica's role: %v, %v", role, err)
	}
}
