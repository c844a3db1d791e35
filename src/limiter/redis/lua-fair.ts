import { REQUEUE_AGE_SCALE_MS } from '../fairness/tags.js'
import { LUA_WAITER_ID } from './waiter-id.js'

/**
 * Lua of fair share between apps (docs/redis-limiter.md, "Fair share between apps"), pasted into
 * every semaphore script before grant (lua-common.ts). Start-time fair queueing: the queue's scores
 * ARE the start tags, so its head (lowest score) is next as before. The meta hash keeps the virtual
 * time `v` (the highest start tag granted so far) and each app's finish tag `f:<app>`; both expire
 * with it when the key is idle.
 *
 * Numbers go to Redis through fmt (17 significant digits): Lua's own number-to-text keeps 14, which
 * would round tags apart by less than that together.
 */
export const LUA_FAIR = `${LUA_WAITER_ID}
local function fmt(x)
  return string.format('%.17g', x)
end

-- The start tag of a waiter arriving now. New (age 0): S = max(V, F_app), and F_app becomes S + cost,
-- so each backlogged app gets turns in proportion to 1 / cost (its weight). Waited before (re-queued
-- after an upstream 429, or after losing its place in Redis): in (V - 1, V], lower the older it is: ahead of
-- every new waiter, in arrival order among themselves, and not charged again.
local function start_tag(meta, app, cost, age, idle)
  if age > 0 then
    local v = tonumber(redis.call('HGET', meta, 'v') or '0')
    return v - age / (age + ${REQUEUE_AGE_SCALE_MS})
  end
  local got = redis.call('HMGET', meta, 'v', 'f:' .. app)
  local s = math.max(tonumber(got[1] or '0'), tonumber(got[2] or '0'))
  redis.call('HSET', meta, 'f:' .. app, fmt(s + cost))
  -- no v yet: the hash may be new (Redis lost its data since this replica announced itself)
  if not got[1] then redis.call('PEXPIRE', meta, idle) end
  return s
end

-- V moves up to the highest start tag granted (never down: a re-queued waiter granted below it
-- must not let later arrivals in ahead of the waiters already queued). "known": V as already read
-- in this script (false: absent), nil when not read yet.
local function advance(meta, top, idle, known)
  if top == nil then return end
  local v = known
  if v == nil then v = redis.call('HGET', meta, 'v') end
  if v and tonumber(v) >= top then return end
  redis.call('HSET', meta, 'v', fmt(top))
  if not v then redis.call('PEXPIRE', meta, idle) end
end

-- Waiters queued per app (\`n:<app>\` in meta), so that a withdrawal knows whether its app has any
-- left. Ids of the previous release's form are not counted (its scripts would not count them down).
local function queued_one(meta, id, idle)
  if is_old_form(id) then return end
  if redis.call('HINCRBY', meta, 'n:' .. app_of(id), 1) == 1 then redis.call('PEXPIRE', meta, idle) end
end

-- A waiter left the queue: served, or (\`refund\`) withdrawn — deadline, abort — or dropped with its
-- dead replica. When a withdrawn waiter was its app's last, the app's finish tag goes (its next
-- waiter starts at V): an app is charged for what it was served, not for what it gave up. While
-- others of the app stay queued the charge stays: refunding it would let the app's next waiter in
-- ahead of them (FIFO within an app).
local function left_queue(meta, id, refund)
  if is_old_form(id) then return end
  local app = app_of(id)
  if redis.call('HINCRBY', meta, 'n:' .. app, -1) > 0 then return end
  if refund then
    redis.call('HDEL', meta, 'n:' .. app, 'f:' .. app)
  else
    redis.call('HDEL', meta, 'n:' .. app)
  end
end

-- Permits held per app (for the caps), read from the holders' ids.
local function held_by_app(holders)
  local counts = {}
  for _, id in ipairs(redis.call('ZRANGE', holders, 0, -1)) do
    local app = app_of(id)
    counts[app] = (counts[app] or 0) + 1
  end
  return counts
end
`
