/**
 * heartbeat: a replica says it is alive and which semaphores it is using.
 * KEYS: replicas active   (both in the `{global}` slot)
 * ARGV: replica ttlMs leave tag...
 * Reply: how many replicas are alive (this one included unless leaving)
 *
 * The replica count sizes the `local` fallback (max(1, floor(limit / replicas))) should Redis become
 * unreachable later; the active set lets `/status` on any replica list every semaphore in use.
 * Entries carry their own expiry on Redis's clock, so crashed replicas age out by themselves.
 */
export const HEARTBEAT_LUA = `
if redis.replicate_commands then redis.replicate_commands() end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local replicas, active = KEYS[1], KEYS[2]
local rid, ttl, leave = ARGV[1], tonumber(ARGV[2]), ARGV[3] == '1'
if leave then
  redis.call('ZREM', replicas, rid)
else
  redis.call('ZADD', replicas, now + ttl, rid)
end
for i = 4, #ARGV do
  redis.call('ZADD', active, now + ttl, ARGV[i])
end
redis.call('ZREMRANGEBYSCORE', replicas, '-inf', now)
redis.call('ZREMRANGEBYSCORE', active, '-inf', now)
redis.call('PEXPIRE', replicas, ttl * 4)
redis.call('PEXPIRE', active, ttl * 4)
return redis.call('ZCARD', replicas)
`
