import { luaStaleHeadMessage } from '../grant-message.js'
import { withPrelude } from '../lua-prelude.js'

/**
 * acquire: take a permit now, or join the queue (docs/redis-limiter.md, "Scripts": what it does and why it is safe).
 * KEYS: holders queue meta learned
 * ARGV: id replica limit leaseMs liveMs idleMs ageMs full announce instance endpoint channelPrefix wantHead cost
 * tellAlone ('1': queued alone at the head, it tells the holders' replicas too: one may keep a permit, kept-permits.ts)
 * Reply: {1, e, f, L} granted (e 1: its grant found the queue empty, so its replica may keep the permit for
 * its next request: kept-permits.ts) · {0, 0, f, L} queued · {0, 1, f, L} queued at the head (asked with wantHead)
 *        · {2, 0, f, L} refused, full. f: Redis no longer knew this replica (it lost its data; a `!<replica>`
 *        mark is left for sync). L: the limit in force; left out when the holders fill the ceiling of a
 *        learned limit, so no limit it could be lets anyone in (the learned value is not read).
 *        A queued reply also carries H, the holders counted (\`{0, h, f, L, H}\`, L false when left out):
 *        the local fallback keeps other replicas' permits counted (docs/redis-limiter.md, "Failure modes").
 * announce: '0' no, '1' yes (first time on this key), '2' yes, and it announced here before.
 */
export const ACQUIRE_BODY = `
local holders, queue, meta, learned = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local id, rid = ARGV[1], ARGV[2]
local spec = limit_spec(ARGV[3])
-- idle stays the string it came as: it only goes back to Redis (PEXPIRE), and a Lua number sent as
-- an argument is formatted anew on each call
local lease, live, idle = tonumber(ARGV[4]), tonumber(ARGV[5]), ARGV[6]
local age, full = tonumber(ARGV[7]), ARGV[8] == '1'
local announce, announced_before = ARGV[9] ~= '0', ARGV[9] == '2'
local chan, want_head, cost = ARGV[12], ARGV[13] == '1', tonumber(ARGV[14] or '1')
local tell_alone = ARGV[15] == '1'
local app = app_of(id)
local forgot = 0
if announce then
  if redis.call('HEXISTS', meta, '@' .. rid) == 0 then forgot = 1 end
  if forgot == 1 and announced_before then
    redis.call('HSET', meta, 'limit', ARGV[3], 'instance', ARGV[10], 'endpoint', ARGV[11], '@' .. rid, clock() + live, '!' .. rid, clock())
  else
    redis.call('HSET', meta, 'limit', ARGV[3], 'instance', ARGV[10], 'endpoint', ARGV[11], '@' .. rid, clock() + live)
  end
  redis.call('PEXPIRE', meta, idle)
end
-- No purge of expired leases here (sync does it, at the nearest expiry): a full semaphore means queue.
local held = redis.call('ZCARD', holders)
-- Holders at a learned limit's ceiling fill whatever limit was learned (never above the ceiling): the
-- waiter queues and grant has nothing to do, so the learned value is not read (docs/redis-limiter.md,
-- "Scripts", costs) — unless the head is asked for, which needs the limit (no head is named above it).
local limit = nil
local emptied = false
if spec.fixed or held < spec.ceiling or want_head then
  limit = effective_limit(learned, spec)
  -- a full semaphore has nothing to grant: grant only with a slot free (it would run no command else)
  if held < limit then
    local _
    held, _, emptied = grant(holders, queue, meta, lease, chan, limit, held, idle)
  end
  -- more holders than the limit (adopted after an outage): no head is named, the surplus goes back
  if held > limit then want_head = false end
end
if limit and held < limit then
  -- The queue is empty, or holds only waiters of apps at their cap (grant stops only then or when
  -- full), and a slot is left: take it, unless this app is at its cap too.
  local cap = cap_of(id)
  if cap == nil or (held_by_app(holders)[app] or 0) < cap then
    redis.call('ZADD', holders, fmt(clock() + lease), id)
    -- always: holders of a dead or cut-off replica renew nothing, so the key's expiry may be near
    -- even with holders in it (docs/redis-limiter.md, "Keys")
    redis.call('PEXPIRE', holders, idle)
    return {1, emptied and 1 or 0, forgot, limit}
  end
end
if full then return {2, 0, forgot, limit} end
if not announce then
  -- Announced less than a third of a lease ago, so its liveness should be here: unless Redis lost
  -- it unnoticed (a FLUSHALL, an eviction, a failover that dropped the last writes), and the waiter
  -- queued now would be dropped as a dead replica's by the next grant. Read with the start tag's
  -- fields (no command of its own); if gone, written back with them, and the replica told (forgot).
  meta_read(meta, { 'f:' .. app, 'n:' .. app, '@' .. rid })
  if not meta_cache['@' .. rid] then
    forgot = 1
    meta_set('@' .. rid, clock() + live)
    meta_set('!' .. rid, clock())
    meta_set('limit', ARGV[3])
    meta_set('instance', ARGV[10])
    meta_set('endpoint', ARGV[11])
  end
end
redis.call('ZADD', queue, fmt(start_tag(meta, id, cost, age, app)), id)
meta_flush(meta, idle)
-- always, as for holders: the waiters already queued may be a dead or cut-off replica's, which renews
-- nothing, so the key's expiry may be near (docs/redis-limiter.md, "Keys")
redis.call('PEXPIRE', queue, idle)
local first = redis.call('ZRANGE', queue, '0', '1')
local at_head = first[1] == id
if at_head and (first[2] or tell_alone) then
  -- Placed ahead of the waiter that was the head: a replica holding permits may have been told that
  -- waiter is next (to hand it a permit on release); or alone (asked with tellAlone: redis.keepPermits), the queue was empty: a replica may be
  -- keeping a permit for its own next request (kept-permits.ts). Either way every holder's replica
  -- hears that what it knows of the head is stale: " <tag>" on its channel — alone, every one but
  -- this waiter's own, which learns it from this reply (and would lose the head the reply names).
  local tag = string.match(holders, '{(.-)}')
  local told = {}
  for _, holder in ipairs(redis.call('ZRANGE', holders, '0', '-1')) do
    local r = replica_of(holder)
    if r and not told[r] and (first[2] or r ~= rid) then
      told[r] = true
      redis.call('PUBLISH', chan .. r, ${luaStaleHeadMessage('tag')})
    end
  end
end
if want_head and at_head then return {0, 1, forgot, limit or false, held} end
return {0, 0, forgot, limit or false, held}
`

/** The script sent: the body with the shared Lua it uses (lua-prelude.ts). */
export const ACQUIRE_LUA = withPrelude(ACQUIRE_BODY)
