-- The check script of the release before limitScript, as it was: instances
-- of both releases share the keys during a rolling upgrade (TestRollingUpgradeSharesKeys).
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
