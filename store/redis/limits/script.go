package limits

// The GCRA below follows go-redis/redis_rate (after rwz/redis-gcra): time is
// Redis TIME in seconds since 2017-01-01 (so a float keeps microseconds), a
// key holds its theoretical arrival time (TAT), and an admitted cost moves the
// TAT by cost × period/rate. localStore.gcra is the same arithmetic in Go.

// checkScript runs every check of one request, then spends only if all pass.
//
// KEYS: 1 RPM TAT, 2 TPM TAT, 3 daily counter, 4 monthly spend.
// ARGV: 1 dry run ("1": decide, spend nothing), 2 period in seconds,
// 3 RPM, 4 RPM burst, 5 TPM, 6 TPM burst, 7 token estimate,
// 8 daily quota, 9 daily counter TTL in seconds, 10 monthly budget.
// A limit of 0 is unlimited: its key is not touched. A TAT is kept at
// least a second: with a limit so high that a request moves it by less than
// the resolution of a float of Redis time, it does not move at all, and an
// expiry of 0 would make Redis refuse the whole script.
//
// Returns {failed bits (1 RPM, 2 TPM, 4 quota, 8 budget),
// RPM remaining, RPM retry-after, RPM reset-after,
// TPM remaining, TPM retry-after, TPM reset-after,
// daily tokens used, month spent}; durations are seconds as strings. When
// the request is admitted (or would be, on a dry run) the windows are as
// after it; when rejected, as they are (nothing was spent).
var checkScript = newScript(`
local t = redis.call('TIME')
local now = (t[1] - 1483228800) + t[2] / 1000000
local period = tonumber(ARGV[2])
local est = tonumber(ARGV[7])

-- gcra returns admitted, the TAT to store if admitted, and two views
-- {remaining, retry-after, reset-after}: after spending cost, and untouched
-- (what AllowN(0) would say). A rejected check reports the untouched state.
local function gcra(key, rate, burst, cost)
  local interval = period / rate
  local tat = tonumber(redis.call('GET', key) or now)
  if tat < now then tat = now end
  local new_tat = tat + interval * cost
  local diff = now - (new_tat - interval * burst)
  local peek_rem = math.floor((now - (tat - interval * burst)) / interval)
  if peek_rem < 0 then peek_rem = 0 end
  local peek = {peek_rem, 0, tat - now}
  if diff < 0 then
    peek[2] = -diff
    return false, tat, peek, peek
  end
  return true, new_tat, {math.floor(diff / interval), 0, new_tat - now}, peek
end

local failed = 0
local rpm, tpm = tonumber(ARGV[3]), tonumber(ARGV[5])
local none = {0, 0, 0}
local rpm_ok, rpm_tat, rpm_after, rpm_peek = true, 0, none, none
local tpm_ok, tpm_tat, tpm_after, tpm_peek = true, 0, none, none
if rpm > 0 then
  rpm_ok, rpm_tat, rpm_after, rpm_peek = gcra(KEYS[1], rpm, tonumber(ARGV[4]), 1)
  if not rpm_ok then failed = failed + 1 end
end
if tpm > 0 then
  tpm_ok, tpm_tat, tpm_after, tpm_peek = gcra(KEYS[2], tpm, tonumber(ARGV[6]), est)
  if not tpm_ok then failed = failed + 2 end
end
local quota, used = tonumber(ARGV[8]), 0
if quota > 0 then
  used = tonumber(redis.call('GET', KEYS[3]) or '0')
  if used >= quota or used + est > quota then failed = failed + 4 end
end
local budget, spent = tonumber(ARGV[10]), 0
if budget > 0 then
  spent = tonumber(redis.call('GET', KEYS[4]) or '0')
  if spent >= budget then failed = failed + 8 end
end

if failed == 0 and ARGV[1] ~= '1' then
  if rpm > 0 then
    redis.call('SET', KEYS[1], rpm_tat, 'EX', math.max(math.ceil(rpm_after[3]), 1))
  end
  if tpm > 0 and est > 0 then
    redis.call('SET', KEYS[2], tpm_tat, 'EX', math.max(math.ceil(tpm_after[3]), 1))
  end
  if quota > 0 and est > 0 then
    used = redis.call('INCRBY', KEYS[3], ARGV[7])
    redis.call('EXPIRE', KEYS[3], ARGV[9])
  end
end
local r, k = rpm_after, tpm_after
if failed ~= 0 then r, k = rpm_peek, tpm_peek end
return {failed, r[1], tostring(r[2]), tostring(r[3]),
        k[1], tostring(k[2]), tostring(k[3]), used, spent}
`)

// settleScript adjusts a reservation by the actual usage.
//
// KEYS: 1 TPM TAT, 2 daily counter, 3 monthly spend.
// ARGV: 1 period in seconds, 2 TPM (0: nothing reserved there),
// 3 token delta (actual − estimate), 4 daily quota reserved ("1"),
// 5 daily counter TTL, 6 cost in micro-units, 7 monthly counter TTL.
//
// A negative delta moves the TPM TAT back, never below now; a positive one
// spends the extra from max(TAT, now). Returns {daily used, month spent},
// -1 where untouched.
var settleScript = newScript(`
local delta = tonumber(ARGV[3])
local rate = tonumber(ARGV[2])
if rate > 0 and delta ~= 0 then
  local t = redis.call('TIME')
  local now = (t[1] - 1483228800) + t[2] / 1000000
  local interval = tonumber(ARGV[1]) / rate
  local tat = tonumber(redis.call('GET', KEYS[1]) or now)
  local new_tat
  if delta < 0 then
    new_tat = math.max(tat + delta * interval, now)
  else
    new_tat = math.max(tat, now) + delta * interval
  end
  if new_tat > now then
    redis.call('SET', KEYS[1], new_tat, 'EX', math.ceil(new_tat - now))
  else
    redis.call('DEL', KEYS[1])
  end
end
local used, spent = -1, -1
if ARGV[4] == '1' and delta ~= 0 then
  used = redis.call('INCRBY', KEYS[2], ARGV[3])
  if used < 0 then
    redis.call('SET', KEYS[2], 0)
    used = 0
  end
  redis.call('EXPIRE', KEYS[2], ARGV[5])
end
if tonumber(ARGV[6]) > 0 then
  spent = redis.call('INCRBY', KEYS[3], ARGV[6])
  redis.call('EXPIRE', KEYS[3], ARGV[7])
end
return {used, spent}
`)
