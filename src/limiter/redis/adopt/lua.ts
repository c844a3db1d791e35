import { LUA_COMMON } from '../lua-common.js'

/**
 * adopt: count in Redis the permits a replica granted on its own while Redis was unreachable
 * (fallback `local` or `open`) and that are still in flight when Redis answers again.
 * KEYS: holders queue meta learned (learned unused: adopt grants nothing)
 * ARGV: replica limit leaseMs liveMs idleMs instance endpoint id...
 * Reply: the number of holders afterwards
 *
 * Safe because these requests ARE in progress upstream: counting them (even above the limit) makes
 * every replica wait for them to finish, instead of granting their slots a second time. Nothing is
 * granted here; the slots come back through release.
 */
export const ADOPT_LUA = `${LUA_COMMON}
local holders, queue, meta = KEYS[1], KEYS[2], KEYS[3]
local rid = ARGV[1]
local lease, live, idle = tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
local now = clock()
redis.call('HSET', meta, 'limit', ARGV[2], 'instance', ARGV[6], 'endpoint', ARGV[7], '@' .. rid, now + live)
redis.call('PEXPIRE', meta, idle)
redis.call('ZREMRANGEBYSCORE', holders, '-inf', now)
for i = 8, #ARGV do
  redis.call('ZADD', holders, now + lease, ARGV[i])
end
redis.call('PEXPIRE', holders, idle)
return redis.call('ZCARD', holders)
`
