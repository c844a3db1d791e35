import { withPrelude } from '../lua-prelude.js'

/**
 * reuse: a permit this replica kept for its next request (kept-permits.ts) serves it only if Redis confirms, in one
 * script, what a release and an acquire would have decided: the id is still a holder (Redis did not lose or purge
 * it), nobody waits, and the holders are within the limit in force and the app's cap. Then its lease is renewed (and
 * the key's expiry, like every script that writes it);
 * else it is released here (the head waiters granted) and the request waits at its place (docs/redis-limiter.md, "The
 * request path on Redis").
 * KEYS: holders queue meta learned
 * ARGV: id limit leaseMs idleMs channelPrefix
 * Reply: {1, L} reused · {0, L} released: wait at its place · {0, false} no holder (lost): the same, the id given back.
 */
export const REUSE_BODY = `
local holders, queue, meta, learned = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local id = ARGV[1]
local spec = limit_spec(ARGV[2])
local lease, idle, chan = tonumber(ARGV[3]), tonumber(ARGV[4]), ARGV[5]
if not redis.call('ZSCORE', holders, id) then return {0, false} end
local limit = effective_limit(learned, spec)
local held = redis.call('ZCARD', holders)
local cap = cap_of(id)
local over_cap = cap ~= nil and (held_by_app(holders)[app_of(id)] or 0) > cap
if held > limit or over_cap or redis.call('ZCARD', queue) > 0 then
  redis.call('ZREM', holders, id)
  grant(holders, queue, meta, lease, chan, limit, live_holders(holders, limit), idle)
  return {0, limit}
end
redis.call('ZADD', holders, 'XX', clock() + lease, id)
redis.call('PEXPIRE', holders, idle)
return {1, limit}
`

/** The script sent: the body with the shared Lua it uses (lua-prelude.ts). */
export const REUSE_LUA = withPrelude(REUSE_BODY)
