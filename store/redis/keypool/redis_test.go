package keypool

import (
	"testing"

	"github.com/redis/go-redis/v9"

	"switchyard/store/storetest"
)

func redisAddr() string { return storetest.RedisAddr() }

func testRedis(t testing.TB) (redis.UniversalClient, string) {
	return storetest.TestRedis(t, "keypool")
}

func newClient(addr string) *redis.Client { return storetest.NewRedisClient(addr) }

func newProxy(t testing.TB) *storetest.Proxy { return storetest.NewProxy(t, redisAddr()) }
