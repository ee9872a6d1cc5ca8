// Package testsvc gives tests the real services they need: a Redis client
// under a fresh key prefix (deleted afterwards), a TCP proxy that can cut a
// service away from one client without stopping the shared server, and a
// listener that never answers (a service that times out). Tests never mock
// Redis: when it is unreachable they fail.
package storetest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// RedisAddr is the test Redis: REDIS_ADDR, else the host of
// SWITCHYARD_TEST_REDIS_URL (as `make test` sets it), else 127.0.0.1:6379.
func RedisAddr() string {
	if addr := os.Getenv("REDIS_ADDR"); addr != "" {
		return addr
	}
	if u := os.Getenv("SWITCHYARD_TEST_REDIS_URL"); u != "" {
		if opt, err := redis.ParseURL(u); err == nil {
			return opt.Addr
		}
	}
	return "127.0.0.1:6379"
}

// NewRedisClient connects to addr with short, context-bound timeouts and no
// retries, as production clients do.
func NewRedisClient(addr string) *redis.Client {
	return redis.NewClient(&redis.Options{
		Addr:                  addr,
		ContextTimeoutEnabled: true,
		MaxRetries:            -1,
		DialTimeout:           200 * time.Millisecond,
	})
}

// Redis connects to the test Redis and returns a fresh key prefix (starting
// with "test:"+name+":") whose keys are deleted when the test ends.
func Redis(t testing.TB, name string) (*redis.Client, string) {
	t.Helper()
	rdb := NewRedisClient(RedisAddr())
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := rdb.Ping(ctx).Err(); err != nil {
		t.Fatalf("redis at %s is required for this test (`make test` starts it): %v", RedisAddr(), err)
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	prefix := "test:" + name + ":" + hex.EncodeToString(b[:])
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		var cursor uint64
		for {
			keys, next, err := rdb.Scan(ctx, cursor, prefix+"*", 500).Result()
			if err != nil {
				break
			}
			if len(keys) > 0 {
				rdb.Del(ctx, keys...)
			}
			if cursor = next; cursor == 0 {
				break
			}
		}
		_ = rdb.Close()
	})
	return rdb, prefix
}

// Blackhole accepts connections and never answers: a service that times out.
func Blackhole(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		mu.Lock()
		for _, c := range conns {
			_ = c.Close()
		}
		mu.Unlock()
	})
	return ln.Addr().String()
}
