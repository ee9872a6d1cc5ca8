package keypool

import (
	"testing"

	"github.com/redis/go-redis/v9"

	"switchyard/internal/testsvc"
)

func redisAddr() string { return testsvc.RedisAddr() }

func testRedis(t testing.TB) (*redis.Client, string) { return testsvc.Redis(t, "keypool") }

func newClient(addr string) *redis.Client { return testsvc.NewRedisClient(addr) }

func newProxy(t testing.TB) *testsvc.Proxy { return testsvc.NewProxy(t, redisAddr()) }
