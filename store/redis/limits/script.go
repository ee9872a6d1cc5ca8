package limits

import (
	"fmt"
	"time"
)

// The GCRA below follows go-redis/redis_rate (after rwz/redis-gcra): time is
// Redis TIME in seconds since 2017-01-01 (so a float keeps microseconds), a
// key holds its theoretical arrival time (TAT), and an admitted cost moves the
// TAT by cost × period/rate. localStore.gcra is the same arithmetic in Go.
//
// What the keys hold — a TAT as float seconds since 2017-01-01, a counter as
// an integer — is shared with the instances of the previous release during a
// rolling upgrade and must not change; what the script returns may.

// limitScript runs the limit operations of one caller queued in one
// pipeline (coalesce.go), in queue order, in one script run: Redis pays a
// script call and a TIME once for all of them. Each operation reads its
// own KEYS and ARGV, one after the other, and appends its own reply; its
// outcome is what it would have been as a script of its own at that
// instant (an operation sees the writes of those before it, as in a
// pipeline).
//
// Check ('c') and peek ('p', decide and spend nothing) run every check of
// one request, then spend only if all pass.
// KEYS: RPM TAT, TPM TAT, daily counter, monthly spend.
// ARGV: 'c' or 'p', RPM, RPM burst, TPM, TPM burst, token estimate,
// daily quota, monthly budget.
// The four keys are read with one MGET; a limit of 0 is unlimited: its
// key is never written. A TAT is kept at least a second: with a limit so
// high that a request moves it by less than the resolution of a float of
// Redis time, it does not move at all, and an expiry of 0 would make Redis
// refuse the whole script.
// Reply (checkReplyLen integers): failed bits (1 RPM, 2 TPM, 4 quota,
// 8 budget), RPM remaining, RPM retry-after, RPM reset-after, TPM remaining,
// TPM retry-after, TPM reset-after, daily tokens used, month spent;
// durations in nanoseconds (at most maxReplyDuration). When the request is
// admitted (or would be, on a peek) the windows are as after it; when
// rejected, as they are (nothing was spent).
//
// Lease ('l') is a check that also grants a slice ahead of need
// (lease.go): ARGV as a check's, then the request's own cost in requests
// (1 for a request, 0 for a refresh with no request of its own), and the
// requests and tokens wanted for the slice. When the check passes, as many
// of the wanted units as the RPM and TPM bursts and the daily quota leave
// are spent too; the reply is a check's with the granted requests and
// tokens appended (leaseReplyLen). A refused lease grants nothing.
//
// Settle ('s') adjusts a reservation by the actual usage.
// KEYS: TPM TAT, daily counter, monthly spend.
// ARGV: 's', TPM (0: nothing reserved there), token delta (actual −
// estimate), daily quota reserved ('1' or '0'), cost in micro-units,
// monthly counter TTL in seconds.
// A negative delta moves the TPM TAT back, never below now; a positive one
// spends the extra from max(TAT, now).
// Reply (settleReplyLen integers): daily used, month spent; -1 where
// untouched.
//
// A counter's expiry is set when a write creates it (INCRBY answers the
// increment itself) and when the settlement resets a negative daily counter
// to 0 (SET clears the expiry), not on every write: a daily counter lives
// dayTTL from its first write, a monthly one until two days after its
// month.
var limitScript = newScript(fmt.Sprintf(`
local period, day_ttl, max_s = %d, %d, %d
local t = redis.call('TIME')
local now = (t[1] - 1483228800) + t[2] / 1000000

-- ns is a duration in seconds as integer nanoseconds.
local function ns(s)
  if s > max_s then s = max_s end
  return math.floor(s * 1e9 + 0.5)
end

local out, n, k, a = {}, 0, 1, 1
while ARGV[a] do
  local op = ARGV[a]
  if op == 's' then
    local rate, delta = tonumber(ARGV[a+1]), tonumber(ARGV[a+2])
    if rate > 0 and delta ~= 0 then
      local interval = period / rate
      local tat = tonumber(redis.call('GET', KEYS[k]) or now)
      local new_tat
      if delta < 0 then
        new_tat = math.max(tat + delta * interval, now)
      else
        new_tat = math.max(tat, now) + delta * interval
      end
      if new_tat > now then
        redis.call('SET', KEYS[k], new_tat, 'EX', math.ceil(new_tat - now))
      else
        redis.call('DEL', KEYS[k])
      end
    end
    local used, spent = -1, -1
    if ARGV[a+3] == '1' and delta ~= 0 then
      used = redis.call('INCRBY', KEYS[k+1], ARGV[a+2])
      if used < 0 then
        redis.call('SET', KEYS[k+1], 0, 'EX', day_ttl)
        used = 0
      elseif used == delta then
        redis.call('EXPIRE', KEYS[k+1], day_ttl)
      end
    end
    local cost = tonumber(ARGV[a+4])
    if cost > 0 then
      spent = redis.call('INCRBY', KEYS[k+2], ARGV[a+4])
      if spent == cost then
        redis.call('EXPIRE', KEYS[k+2], ARGV[a+5])
      end
    end
    out[n+1], out[n+2] = used, spent
    n, k, a = n + 2, k + 3, a + 6
  else
    local rpm, rpm_burst = tonumber(ARGV[a+1]), tonumber(ARGV[a+2])
    local tpm, tpm_burst = tonumber(ARGV[a+3]), tonumber(ARGV[a+4])
    local est, quota, budget = tonumber(ARGV[a+5]), tonumber(ARGV[a+6]), tonumber(ARGV[a+7])
    local rcost, want_r, want_t, na = 1, 0, 0, 8
    if op == 'l' then
      rcost, want_r, want_t, na = tonumber(ARGV[a+8]), tonumber(ARGV[a+9]), tonumber(ARGV[a+10]), 11
    end
    local got = redis.call('MGET', KEYS[k], KEYS[k+1], KEYS[k+2], KEYS[k+3])
    -- Per rate: the emission interval, the TAT (never before now), the TAT
    -- after spending the cost, and how far the cost stays within the
    -- burst (negative: rejected, by that many seconds).
    local failed = 0
    local r_int, r_tat, r_new, r_diff, t_int, t_tat, t_new, t_diff
    if rpm > 0 then
      r_int = period / rpm
      r_tat = tonumber(got[1] or now)
      if r_tat < now then r_tat = now end
      r_new = r_tat + r_int * rcost
      r_diff = now - (r_new - r_int * rpm_burst)
      if r_diff < 0 then failed = 1 end
    end
    if tpm > 0 then
      t_int = period / tpm
      t_tat = tonumber(got[2] or now)
      if t_tat < now then t_tat = now end
      t_new = t_tat + t_int * est
      t_diff = now - (t_new - t_int * tpm_burst)
      if t_diff < 0 then failed = failed + 2 end
    end
    local used, spent = 0, 0
    if quota > 0 then
      used = tonumber(got[3] or '0')
      if used >= quota or used + est > quota then failed = failed + 4 end
    end
    if budget > 0 then
      spent = tonumber(got[4] or '0')
      if spent >= budget then failed = failed + 8 end
    end

    -- A lease's slice: what is left within each burst and the quota,
    -- at most what was wanted.
    local g_r, g_t = 0, 0
    if failed == 0 and op == 'l' then
      if rpm > 0 then
        g_r = math.max(math.min(want_r, math.floor(r_diff / r_int)), 0)
        r_new, r_diff = r_new + g_r * r_int, r_diff - g_r * r_int
      end
      if tpm > 0 or quota > 0 then
        g_t = want_t
        if tpm > 0 then g_t = math.min(g_t, math.floor(t_diff / t_int)) end
        if quota > 0 then g_t = math.min(g_t, quota - used - est) end
        g_t = math.max(g_t, 0)
        if tpm > 0 then t_new, t_diff = t_new + g_t * t_int, t_diff - g_t * t_int end
      end
    end

    if failed == 0 and op ~= 'p' then
      if rpm > 0 and rcost + g_r > 0 then
        redis.call('SET', KEYS[k], r_new, 'EX', math.max(math.ceil(r_new - now), 1))
      end
      if tpm > 0 and est + g_t > 0 then
        redis.call('SET', KEYS[k+1], t_new, 'EX', math.max(math.ceil(t_new - now), 1))
      end
      if quota > 0 and est + g_t > 0 then
        used = redis.call('INCRBY', KEYS[k+2], est + g_t)
        if used == est + g_t then
          redis.call('EXPIRE', KEYS[k+2], day_ttl)
        end
      end
    end

    -- The windows {remaining, retry-after, reset-after}: after spending
    -- when admitted; untouched (what AllowN(0) would say) when rejected.
    local r_rem, r_retry, r_reset, t_rem, t_retry, t_reset = 0, 0, 0, 0, 0, 0
    if failed == 0 then
      if rpm > 0 then
        r_rem, r_reset = math.floor(r_diff / r_int), ns(r_new - now)
      end
      if tpm > 0 then
        t_rem, t_reset = math.floor(t_diff / t_int), ns(t_new - now)
      end
    else
      if rpm > 0 then
        r_rem, r_reset = math.max(math.floor((now - (r_tat - r_int * rpm_burst)) / r_int), 0), ns(r_tat - now)
        if r_diff < 0 then r_retry = ns(-r_diff) end
      end
      if tpm > 0 then
        t_rem, t_reset = math.max(math.floor((now - (t_tat - t_int * tpm_burst)) / t_int), 0), ns(t_tat - now)
        if t_diff < 0 then t_retry = ns(-t_diff) end
      end
    end
    out[n+1], out[n+2], out[n+3], out[n+4], out[n+5] = failed, r_rem, r_retry, r_reset, t_rem
    out[n+6], out[n+7], out[n+8], out[n+9] = t_retry, t_reset, used, spent
    n, k, a = n + 9, k + 4, a + na
    if op == 'l' then
      out[n+1], out[n+2] = g_r, g_t
      n = n + 2
    end
  end
end
return out
`, int64(period/time.Second), int64(dayTTL/time.Second), int64(maxReplyDuration/time.Second)))

// Operations of limitScript and the length of their replies.
const (
	checkReplyLen  = 9
	leaseReplyLen  = checkReplyLen + 2
	settleReplyLen = 2
)

// maxReplyDuration caps a duration the script returns (a window pushed
// centuries ahead by an absurd usage), so its nanoseconds fit an int64.
const maxReplyDuration = 100 * 365 * 24 * time.Hour
