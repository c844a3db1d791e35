import { withPrelude } from '../lua-prelude.js'

/**
 * sync: one replica's periodic bookkeeping for one semaphore, in one round trip (docs/redis-limiter.md,
 * "Scripts" and "Failure modes": renewals, sweeps, dropped ids, lost leases, grants whose message was lost).
 * KEYS: holders queue meta learned
 * ARGV: replica limit leaseMs liveMs idleMs channelPrefix instance endpoint sweep recount
 * nHeld held-id... nWaiting waiting-id... nDrop drop-id... expectEpoch epoch reconcile nKeep keep-id... below nSure
 *       (the first nSure held ids have a lease that cannot have run out: one missing is a rollback)
 * Reply: {nearestExpiryMs, {lost-id...}, {granted-id...}, {missing-id...}, head waiter or nil, {recounted-id...}, limit
 * in force,
 *         forgot: 1 when Redis had lost the replica (liveness gone, the `!<replica>` mark, or the epoch this
 *         replica's last sync wrote is not there: the state went back in time), whatever `recount` said,
 *         ghosts: how many of this replica's entries serving no live request the reconciliation removed,
 *         held: the permits counted after it (every replica's: the local fallback keeps the others' counted)}
 * Reconciliation (docs/redis-limiter.md, "Failure modes": rollback): with `reconcile`, or whenever it finds Redis
 * forgot this replica, every holder of this replica not held or waiting here, and every queued entry not a
 * waiter here (`waiting`, or `keep`: acquires on their way or grants being confirmed), is removed.
 */
export const SYNC_BODY = `
local holders, queue, meta, learned = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local rid = ARGV[1]
local limit = effective_limit(learned, limit_spec(ARGV[2]))
local lease, live, idle = tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
local chan = ARGV[6]
local now = clock()
local i = 11
local n_held = tonumber(ARGV[i]); i = i + 1
local held_ids = {}
for j = 1, n_held do held_ids[j] = ARGV[i]; i = i + 1 end
local n_wait = tonumber(ARGV[i]); i = i + 1
local wait_ids = {}
for j = 1, n_wait do wait_ids[j] = ARGV[i]; i = i + 1 end
local n_drop = tonumber(ARGV[i]); i = i + 1
local drop_at = i
i = i + n_drop
local expect, epoch, asked = ARGV[i] or '', ARGV[i + 1] or '', ARGV[i + 2] == '1'
local n_keep = tonumber(ARGV[i + 3] or '0')
i = i + 4
local n_sure = tonumber(ARGV[i + n_keep + 1] or '0')

-- The first n_sure held ids are permits whose lease cannot have run out yet: one missing means its
-- grant or renewal is gone, so Redis's state went back in time (the same ZSCOREs as the renewals below).
local present, gone = {}, false
for j = 1, n_held do
  present[j] = redis.call('ZSCORE', holders, held_ids[j])
  if j <= n_sure and not present[j] then gone = true end
end
local seen = redis.call('HMGET', meta, '@' .. rid, '!' .. rid, 'e:' .. rid)
if seen[2] then redis.call('HDEL', meta, '!' .. rid) end
-- the epoch this replica's previous sync wrote, gone or another: Redis's state is not the one it wrote to
local rolled_back = (expect ~= '' and seen[3] ~= expect) or gone
local forgotten = seen[1] == false or (seen[2] and tonumber(seen[2]) + lease > now) or rolled_back
local known = ARGV[10] ~= '1' and not forgotten
local reconcile = asked or forgotten
redis.call('HSET', meta, 'limit', ARGV[2], 'instance', ARGV[7], 'endpoint', ARGV[8], '@' .. rid, now + live, 'e:' .. rid, epoch)
redis.call('PEXPIRE', meta, idle)
if ARGV[9] == '1' then
  local fields = redis.call('HGETALL', meta)
  local v = nil
  local counts, alive = {}, {}
  for f = 1, #fields, 2 do
    if fields[f] == 'v' then v = tonumber(fields[f + 1]) end
    if string.sub(fields[f], 1, 2) == 'n:' then counts[fields[f]] = fields[f + 1] end
    if string.sub(fields[f], 1, 1) == '@' and tonumber(fields[f + 1]) + idle > now then alive[string.sub(fields[f], 2)] = true end
  end
  for f = 1, #fields, 2 do
    local name = fields[f]
    if string.sub(name, 1, 1) == '@' and tonumber(fields[f + 1]) + idle <= now then redis.call('HDEL', meta, name) end
    if string.sub(name, 1, 1) == '!' and (tonumber(fields[f + 1]) or 0) + idle <= now then redis.call('HDEL', meta, name) end
    -- a replica's epoch outlives its liveness by no more than a sweep
    if string.sub(name, 1, 2) == 'e:' and not alive[string.sub(name, 3)] then redis.call('HDEL', meta, name) end
    -- an app's finish tag at or behind V places its next waiter no differently than none (lua-fair)
    if v and string.sub(name, 1, 2) == 'f:' and tonumber(fields[f + 1]) <= v then redis.call('HDEL', meta, name) end
    -- a count of queued waiters at 0 is the same as none (left_queue writes 0 rather than delete it),
    -- and an app with none queued has no refund pending (w:, left behind only by a release that
    -- does not keep it: the previous one)
    if string.sub(name, 1, 2) == 'n:' and (tonumber(fields[f + 1]) or 0) <= 0 then redis.call('HDEL', meta, name) end
    if string.sub(name, 1, 2) == 'w:' and (tonumber(counts['n:' .. string.sub(name, 3)]) or 0) <= 0 then redis.call('HDEL', meta, name) end
  end
end

for j = drop_at, drop_at + n_drop - 1 do
  if redis.call('ZREM', holders, ARGV[j]) == 0 then
    local score = redis.call('ZSCORE', queue, ARGV[j])
    if score then
      redis.call('ZREM', queue, ARGV[j])
      left_queue(meta, ARGV[j], true, score)
    end
  end
end
local mine = {}
for _, id in ipairs(held_ids) do mine[id] = 'held' end
for _, id in ipairs(wait_ids) do mine[id] = 'waiting' end
for j = 1, n_keep do mine[ARGV[i]] = 'waiting'; i = i + 1 end
-- ids this replica made after the sync was sent (their sequence from 'below' on) are never ghosts
local below = ARGV[i] or ''
local function made_before(id)
  local seq = string.match(id, '~(%w+):[^/]*$')
  return below == '' or seq == nil or seq < below
end

-- Reconciliation: this replica's entries that serve no live request here are ghosts (a waiter served
-- or given up on a newer state, a holder released there); a held permit found in the queue leaves it
-- and is counted again below. Removed now, not left to expire: this replica's liveness keeps them
-- alive, and a grant to one would hold the slot for a lease.
local ghosts = 0
if reconcile then
  for _, id in ipairs(redis.call('ZRANGE', holders, 0, -1)) do
    if replica_of(id) == rid and mine[id] == nil and made_before(id) then
      redis.call('ZREM', holders, id)
      ghosts = ghosts + 1
    end
  end
  local q = redis.call('ZRANGE', queue, 0, -1, 'WITHSCORES')
  for k = 1, #q, 2 do
    if replica_of(q[k]) == rid and mine[q[k]] ~= 'waiting' and made_before(q[k]) then
      redis.call('ZREM', queue, q[k])
      left_queue(meta, q[k], true, q[k + 1])
      ghosts = ghosts + 1
    end
  end
end

local lost, recounted = {}, {}
for j, id in ipairs(held_ids) do
  if present[j] then
    redis.call('ZADD', holders, 'XX', now + lease, id)
  else
    if known then
      lost[#lost + 1] = id
    else
      redis.call('ZADD', holders, now + lease, id)
      recounted[#recounted + 1] = id
    end
  end
end
redis.call('ZREMRANGEBYSCORE', holders, '-inf', now)
local held_now, head = grant(holders, queue, meta, lease, chan, limit, redis.call('ZCARD', holders), idle, nil, true)

local granted, missing = {}, {}
for _, id in ipairs(wait_ids) do
  if redis.call('ZSCORE', holders, id) then
    granted[#granted + 1] = id
  elseif not redis.call('ZSCORE', queue, id) then
    missing[#missing + 1] = id
  end
end
redis.call('PEXPIRE', holders, idle)
redis.call('PEXPIRE', queue, idle)
return {nearest_expiry(holders, now), lost, granted, missing, head, recounted, limit, forgotten and 1 or 0, ghosts, held_now}
`

/** The script sent: the body with the shared Lua it uses (lua-prelude.ts). */
export const SYNC_LUA = withPrelude(SYNC_BODY)
