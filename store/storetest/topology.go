package storetest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// topology is the Redis the current run of a package's tests uses: ""
// (one node, the shared test Redis) or "cluster" (the shared LocalCluster).
var topology string

// RunTopologies runs a package's tests twice, against one Redis node and
// then against a local Redis Cluster, and stops the cluster afterwards. Use
// it as the package's TestMain body:
//
//	func TestMain(m *testing.M) { os.Exit(storetest.RunTopologies(m)) }
//
// TestRedis hands each test the client of the current run. Set
// SWITCHYARD_TEST_REDIS_TOPOLOGY=single (or cluster) to run one only.
func RunTopologies(m *testing.M) int {
	defer StopSharedCluster()
	want := os.Getenv("SWITCHYARD_TEST_REDIS_TOPOLOGY")
	code := 0
	if want == "" || want == "single" {
		topology = ""
		code = m.Run()
	}
	if code == 0 && (want == "" || want == "cluster") {
		topology = "cluster"
		fmt.Println("=== the same tests against a local Redis Cluster (3 masters, 3 replicas)")
		code = m.Run()
	}
	return code
}

// InCluster reports whether this run of the tests is against the cluster.
func InCluster() bool { return topology == "cluster" }

// TestRedis is Redis for the current topology (see RunTopologies) under a
// fresh key prefix "test:"+name+":<random>" deleted when the test ends.
// Every Lua script, multi-key command and MULTI/EXEC the test's code sends
// through it is checked to touch one hash slot (the test fails otherwise),
// on one node as on the cluster.
func TestRedis(t testing.TB, name string) (redis.UniversalClient, string) {
	t.Helper()
	if topology != "cluster" {
		rdb, prefix := Redis(t, name)
		GuardSlots(t, rdb)
		return rdb, prefix
	}
	t.Log("Redis topology: cluster")
	rdb := SharedCluster(t).Client()
	var b [6]byte
	_, _ = rand.Read(b[:])
	prefix := "test:" + name + ":" + hex.EncodeToString(b[:])
	GuardSlots(t, rdb)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = rdb.ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error {
			iter := n.Scan(ctx, 0, prefix+"*", 500).Iterator()
			for iter.Next(ctx) {
				n.Del(ctx, iter.Val())
			}
			return nil
		})
		_ = rdb.Close()
	})
	return rdb, prefix
}

// Slot is the Redis Cluster hash slot of key: CRC16 (XMODEM) of the key, or
// of its hash tag (the text between the first "{" and the next "}" when not
// empty), modulo 16384.
func Slot(key string) int {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			key = key[i+1 : i+1+j]
		}
	}
	var crc uint16
	for k := 0; k < len(key); k++ {
		crc ^= uint16(key[k]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return int(crc) & 16383
}

// CommandKeys names the keys of a command as sent: the declared KEYS of
// EVAL/EVALSHA/FCALL, every key of the multi-key commands, else the first
// argument of a keyed command (nil for commands without keys).
func CommandKeys(args []any) []string {
	if len(args) < 2 {
		return nil
	}
	str := func(v any) string { return fmt.Sprint(v) }
	switch strings.ToLower(str(args[0])) {
	case "eval", "evalsha", "eval_ro", "evalsha_ro", "fcall", "fcall_ro":
		n, err := strconv.Atoi(str(args[2]))
		if err != nil || 3+n > len(args) {
			return nil
		}
		keys := make([]string, n)
		for i := range n {
			keys[i] = str(args[3+i])
		}
		return keys
	case "mget", "del", "unlink", "exists", "touch", "watch", "sunion", "sinter", "sdiff", "pfcount":
		keys := make([]string, 0, len(args)-1)
		for _, a := range args[1:] {
			keys = append(keys, str(a))
		}
		return keys
	case "mset", "msetnx":
		var keys []string
		for i := 1; i < len(args); i += 2 {
			keys = append(keys, str(args[i]))
		}
		return keys
	case "ping", "script", "time", "info", "cluster", "multi", "exec", "discard", "hello", "client",
		"select", "auth", "command", "readonly", "asking", "scan", "keys", "flushdb", "flushall", "dbsize",
		"role", "function", "config", "echo":
		return nil
	}
	return []string{str(args[1])}
}

// OneSlot reports the slots when keys span more than one.
func OneSlot(keys []string) error {
	if len(keys) < 2 {
		return nil
	}
	first := Slot(keys[0])
	for _, k := range keys[1:] {
		if Slot(k) != first {
			var parts []string
			for _, k := range keys {
				parts = append(parts, fmt.Sprintf("%s(slot %d)", k, Slot(k)))
			}
			return fmt.Errorf("keys in more than one hash slot: %s", strings.Join(parts, ", "))
		}
	}
	return nil
}

// GuardSlots makes t fail if a script, a multi-key command or a MULTI/EXEC
// sent through rdb touches keys in more than one hash slot: on Redis
// Cluster such a script fails with CROSSSLOT and such a transaction is
// split (go-redis runs one MULTI per slot), losing its atomicity.
func GuardSlots(t testing.TB, rdb redis.UniversalClient) {
	g := &slotGuard{}
	rdb.AddHook(g)
	t.Cleanup(func() {
		g.mu.Lock()
		defer g.mu.Unlock()
		for _, v := range g.bad {
			t.Errorf("hash slots: %s", v)
		}
	})
}

type slotGuard struct {
	mu  sync.Mutex
	bad []string
}

func (g *slotGuard) note(what string, err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.bad) < 10 {
		g.bad = append(g.bad, what+": "+err.Error())
	}
}

func (g *slotGuard) DialHook(next redis.DialHook) redis.DialHook { return next }

func (g *slotGuard) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if err := OneSlot(CommandKeys(cmd.Args())); err != nil {
			g.note(cmd.Name(), err)
		}
		return next(ctx, cmd)
	}
}

func (g *slotGuard) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		tx := len(cmds) > 0 && cmds[0].Name() == "multi"
		var all []string
		var names []string
		for _, cmd := range cmds {
			keys := CommandKeys(cmd.Args())
			if err := OneSlot(keys); err != nil {
				g.note(cmd.Name()+" in a pipeline", err)
			}
			if tx {
				all = append(all, keys...)
				if len(keys) > 0 {
					names = append(names, cmd.Name())
				}
			}
		}
		if err := OneSlot(all); err != nil {
			g.note("MULTI/EXEC of "+strings.Join(names, ","), err)
		}
		return next(ctx, cmds)
	}
}

// SameRedis is another client to the current run's Redis (one node or the
// cluster), as a second gateway process would hold; closed when t ends.
func SameRedis(t testing.TB) redis.UniversalClient {
	t.Helper()
	var rdb redis.UniversalClient
	if topology == "cluster" {
		rdb = SharedCluster(t).Client()
	} else {
		rdb = NewRedisClient(RedisAddr())
	}
	t.Cleanup(func() { _ = rdb.Close() })
	return rdb
}

// Keys lists the keys matching pattern on every master (KEYS on a cluster
// client would ask one node only).
func Keys(t testing.TB, rdb redis.UniversalClient, pattern string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	cc, ok := rdb.(*redis.ClusterClient)
	if !ok {
		keys, err := rdb.Keys(ctx, pattern).Result()
		if err != nil {
			t.Fatal(err)
		}
		return keys
	}
	var mu sync.Mutex
	var keys []string
	err := cc.ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error {
		ks, err := n.Keys(ctx, pattern).Result()
		mu.Lock()
		keys = append(keys, ks...)
		mu.Unlock()
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return keys
}

// SingleNodeOnly skips a test in the cluster run: tests that cut Redis away
// through a TCP Proxy to one node (outage and recovery) have no meaning
// against six nodes; the gateway's failover test covers the cluster.
func SingleNodeOnly(t testing.TB) {
	t.Helper()
	if topology == "cluster" {
		t.Skip("cuts one Redis node through a proxy: runs in the single-node pass")
	}
}
