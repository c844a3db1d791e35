import { LUA_GCRA } from '../../rate/gcra.js'

/**
 * The rate gate of one key (docs/redis-limiter.md, "Rates"): KEYS[1] a hash — `t` the TAT, `li`/`lt`/`le` a
 * learned rate's interval, tolerance and expiry — on Redis's clock. ARGV[1] the verb:
 *   r interval tolerance maxwait   reserve a start → { delay, granted, tat − tolerance − now }
 *   h forms tolerance              nobody starts for forms ms
 *   l interval tolerance ttlms     a learned rate, applied by every replica's reserve until it expires
 * The key lives while its TAT or its learned rate does, then expires: an idle key costs nothing.
 */
export const RATE_LUA = `
if redis.replicate_commands then redis.replicate_commands() end
${LUA_GCRA}
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local key = KEYS[1]
local verb = ARGV[1]
local f = redis.call('HMGET', key, 't', 'li', 'lt', 'le')
local tat = tonumber(f[1]) or 0
local le = tonumber(f[4]) or 0
local function keep(newtat)
  local ttl = math.max(newtat - now, le - now, 1)
  redis.call('PEXPIRE', key, math.ceil(ttl))
end
if verb == 'r' then
  local interval = tonumber(ARGV[2])
  local tolerance = tonumber(ARGV[3])
  if le > now then
    interval = math.max(interval, tonumber(f[2]))
    tolerance = math.min(tolerance, tonumber(f[3]))
  end
  local delay, newtat, granted = gcra_reserve(tat, now, interval, tolerance, tonumber(ARGV[4]))
  if granted == 1 then
    redis.call('HSET', key, 't', newtat)
    keep(newtat)
  end
  return { delay, granted, math.max(0, newtat - tolerance - now) }
elseif verb == 'h' then
  local newtat = gcra_hold(tat, now + tonumber(ARGV[2]), tonumber(ARGV[3]))
  redis.call('HSET', key, 't', newtat)
  keep(newtat)
  return 1
elseif verb == 'l' then
  le = now + tonumber(ARGV[4])
  redis.call('HSET', key, 'li', ARGV[2], 'lt', ARGV[3], 'le', le)
  keep(tat)
  return 1
end
return redis.error_reply('ERR unknown rate verb')
`
