/**
 * heartbeat: a replica says it is alive and which semaphores it uses (docs/redis-limiter.md, "Scripts").
 * KEYS: replicas active   (both in the `{global}` slot)
 * ARGV: replica ttlMs mode tag...   (mode: '0' beat, '1' leave, '2' read only: a replica back from the fallback
 * beats only once its fallback permits are counted in, so others know it is back (docs/redis-limiter.md, "Failure
 * modes"))
 * Reply: Redis time (ms), this replica's expiry as found ('' if none: a rollback check), then each live
 * replica (this one included unless leaving) and its registry expiry (ms): the `local` fallback's
 * shares are read from when each replica last beat (local-share.ts)
 */
export const HEARTBEAT_LUA = `
if redis.replicate_commands then redis.replicate_commands() end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local replicas, active = KEYS[1], KEYS[2]
local rid, ttl, mode = ARGV[1], tonumber(ARGV[2]), ARGV[3]
local before = redis.call('ZSCORE', replicas, rid) or ''
if mode == '1' then
  redis.call('ZREM', replicas, rid)
elseif mode == '0' then
  redis.call('ZADD', replicas, now + ttl, rid)
end
for i = 4, #ARGV do
  redis.call('ZADD', active, now + ttl, ARGV[i])
end
redis.call('ZREMRANGEBYSCORE', replicas, '-inf', now)
redis.call('ZREMRANGEBYSCORE', active, '-inf', now)
redis.call('PEXPIRE', replicas, ttl * 4)
redis.call('PEXPIRE', active, ttl * 4)
local out = { tostring(now), before }
local listed = redis.call('ZRANGE', replicas, 0, -1, 'WITHSCORES')
for i = 1, #listed do out[#out + 1] = listed[i] end
return out
`
