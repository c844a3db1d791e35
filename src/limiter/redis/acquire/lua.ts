import { LUA_COMMON } from '../lua-common.js'

/**
 * acquire: take a permit now, or join the queue.
 * KEYS: holders queue meta
 * ARGV: id replica limit leaseMs liveMs idleMs ageMs full instance endpoint channelPrefix
 * Reply: {1, 0} granted · {0, nearestExpiryMs} queued · {2, 0} refused, the replica's queue is full
 *
 * Safe because: expired leases are dropped and free slots are handed to the queue's head BEFORE the
 * caller is considered, so a newcomer never overtakes a waiter; the caller takes a slot only when the
 * queue is then empty. The queue ticket is Redis's clock minus the request's age (a duration measured
 * by the replica, so clock skew between replicas cannot reorder the queue); a request re-queued after
 * an upstream 429 passes its original age and lands ahead of later arrivals.
 */
export const ACQUIRE_LUA = `${LUA_COMMON}
local holders, queue, meta = KEYS[1], KEYS[2], KEYS[3]
local id, rid = ARGV[1], ARGV[2]
local limit, lease, live, idle = tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6])
local age, full = tonumber(ARGV[7]), ARGV[8] == '1'
local now, now_us = clock()

redis.call('HSET', meta, 'limit', limit, 'instance', ARGV[9], 'endpoint', ARGV[10], '@' .. rid, now + live)
expire(holders, now)
local held = grant(holders, queue, meta, now, lease, ARGV[11])
local reply
if held < limit then
  -- the loop emptied the queue and a slot is left: take it
  redis.call('ZADD', holders, now + lease, id)
  reply = {1, 0}
elseif full then
  reply = {2, 0}
else
  redis.call('ZADD', queue, now_us - age * 1000, id)
  reply = {0, nearest_expiry(holders, now)}
end
touch(holders, queue, meta, idle)
return reply
`
