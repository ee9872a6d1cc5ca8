// Package answercache is the degradation ladder's exact-match answer cache
// in Redis (routing.AnswerCache): per route group, a hash of answers by
// request key and a sorted set of when each was stored, both under the
// group's hash tag so every script touches one slot.
//
//	<prefix>:ac:{g<group>}:answers  hash: key (hex) → chat.completion JSON
//	<prefix>:ac:{g<group>}:at       sorted set: key → stored at (Redis ms)
//
// Put stores one answer, drops the entries older than the TTL and, when
// the group holds more than its bound, the oldest ones; both keys expire a
// TTL after the last write. Get answers only entries younger than the TTL,
// with their age, timed by Redis TIME.
package answercache

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"switchyard/routing"
)

// Cache implements routing.AnswerCache.
type Cache struct {
	rdb    redis.UniversalClient
	prefix string
}

var _ routing.AnswerCache = (*Cache)(nil)

// New returns a Cache; prefix must not contain '{' or '}'.
func New(rdb redis.UniversalClient, prefix string) *Cache {
	if strings.ContainsAny(prefix, "{}") {
		panic("answercache: prefix must not contain '{' or '}'")
	}
	return &Cache{rdb: rdb, prefix: prefix}
}

func (c *Cache) keys(group int64) []string {
	base := c.prefix + ":ac:{g" + strconv.FormatInt(group, 10) + "}:"
	return []string{base + "answers", base + "at"}
}

// putScript: KEYS answers, at; ARGV key, answer, TTL ms, max entries.
var putScript = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ttl = tonumber(ARGV[3])
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
redis.call('ZADD', KEYS[2], now, ARGV[1])
local old = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', now - ttl)
for _, k in ipairs(old) do redis.call('HDEL', KEYS[1], k) end
if #old > 0 then redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now - ttl) end
local over = redis.call('ZCARD', KEYS[2]) - tonumber(ARGV[4])
if over > 0 then
  local gone = redis.call('ZPOPMIN', KEYS[2], over)
  for i = 1, #gone, 2 do redis.call('HDEL', KEYS[1], gone[i]) end
end
redis.call('PEXPIRE', KEYS[1], ttl)
redis.call('PEXPIRE', KEYS[2], ttl)
return over`)

// getScript: KEYS answers, at; ARGV key, TTL ms. Returns {answer, age ms}
// or nil.
var getScript = redis.NewScript(`
local at = redis.call('ZSCORE', KEYS[2], ARGV[1])
if not at then return false end
local t = redis.call('TIME')
local age = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) - tonumber(at)
if age > tonumber(ARGV[2]) then return false end
local v = redis.call('HGET', KEYS[1], ARGV[1])
if not v then return false end
return {v, age}`)

// Put stores body as the answer to key for ttl, keeping at most maxEntries
// answers in the group.
func (c *Cache) Put(ctx context.Context, group int64, key [32]byte, body []byte, ttl time.Duration, maxEntries int) error {
	if ttl <= 0 || maxEntries <= 0 {
		return nil
	}
	err := putScript.Run(ctx, c.rdb, c.keys(group), hex.EncodeToString(key[:]), body, ttl.Milliseconds(), maxEntries).Err()
	if err != nil {
		return fmt.Errorf("answercache: put: %w", err)
	}
	return nil
}

// Get returns the answer to key if one younger than ttl is kept, with its age.
func (c *Cache) Get(ctx context.Context, group int64, key [32]byte, ttl time.Duration) ([]byte, time.Duration, bool, error) {
	vals, err := getScript.Run(ctx, c.rdb, c.keys(group), hex.EncodeToString(key[:]), ttl.Milliseconds()).Slice()
	if errors.Is(err, redis.Nil) {
		return nil, 0, false, nil
	}
	if err != nil {
		return nil, 0, false, fmt.Errorf("answercache: get: %w", err)
	}
	if len(vals) != 2 {
		return nil, 0, false, errors.New("answercache: unexpected reply")
	}
	body, _ := vals[0].(string)
	age, _ := vals[1].(int64)
	return []byte(body), time.Duration(age) * time.Millisecond, true, nil
}

// Size is the number of answers kept for a group (for the console).
func (c *Cache) Size(ctx context.Context, group int64) (int64, error) {
	return c.rdb.ZCard(ctx, c.keys(group)[1]).Result()
}
