-- The settle script of the release before limitScript, as it was: instances
-- of both releases share the keys during a rolling upgrade (TestRollingUpgradeSharesKeys).
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
