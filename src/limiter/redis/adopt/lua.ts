import { withPrelude } from '../lua-prelude.js'

/**
 * adopt: count in Redis the permits granted while Redis was unreachable that are still in flight
 * (docs/redis-limiter.md, "Scripts"). Nothing is granted here.
 * KEYS: holders queue meta learned (learned unused)
 * ARGV: replica limit leaseMs liveMs idleMs instance endpoint id...
 * Reply: the number of holders afterwards
 */
export const ADOPT_BODY = `
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

/** The script sent: the body with the shared Lua it uses (lua-prelude.ts). */
export const ADOPT_LUA = withPrelude(ADOPT_BODY)
