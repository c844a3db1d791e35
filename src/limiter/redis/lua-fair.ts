import { REQUEUE_AGE_SCALE_MS } from '../fairness/tags.js'
import { LUA_WAITER_ID } from './waiter-id.js'

/**
 * Lua of fair share between apps, pasted into every semaphore script before grant (docs/redis-limiter.md,
 * "Fair share between apps"; the meta cache: "Scripts"). Numbers go out through fmt: Lua's own keeps 14 digits.
 */
export const LUA_FAIR = `${LUA_WAITER_ID}
-- A whole number in %d: the same text as %.17g below 1e15, for half the work (tags with cost 1, counts,
-- lease expiries are whole); a Lua number passed to redis.call as it is would be formatted %.17g too.
local function fmt(x)
  if x % 1 == 0 and x > -1e15 and x < 1e15 then return string.format('%d', x) end
  return string.format('%.17g', x)
end

-- meta fields read in this script (false: absent) and the writes not yet sent; meta_had_v: whether
-- the hash held \`v\` when first read (meta_cache.v may have been set by this script since)
local meta_cache, meta_writes, meta_deletes = {}, {}, {}
local meta_had_v = nil

-- Reads the fields not read yet, in one HMGET; 'v' is always among the first read, so that
-- meta_flush knows whether the hash existed.
local function meta_read(meta, fields)
  local missing = {}
  if meta_cache['v'] == nil then missing[1] = 'v' end
  for _, f in ipairs(fields) do
    if meta_cache[f] == nil and f ~= 'v' then missing[#missing + 1] = f end
  end
  if #missing == 0 then return end
  local got = redis.call('HMGET', meta, unpack(missing))
  for i, f in ipairs(missing) do meta_cache[f] = got[i] or false end
  if meta_had_v == nil then meta_had_v = meta_cache['v'] ~= false end
end

local function meta_set(field, value)
  meta_cache[field] = value
  meta_writes[field] = value
  meta_deletes[field] = nil
end

local function meta_del(field)
  meta_cache[field] = false
  meta_writes[field] = nil
  meta_deletes[field] = true
end

-- Sends the writes: one HSET, one HDEL (a pending refund cleared). Had the hash no \`v\` when read, it
-- may be new (Redis lost its data since this replica announced itself): it gets its expiry. Every
-- write follows a meta_read (start_tag, advance, left_queue read first), so meta_had_v is known.
local function meta_flush(meta, idle)
  local args = {}
  for f, value in pairs(meta_writes) do
    args[#args + 1] = f
    args[#args + 1] = value
  end
  local dels = {}
  for f in pairs(meta_deletes) do dels[#dels + 1] = f end
  meta_writes, meta_deletes = {}, {}
  if #args > 0 then
    redis.call('HSET', meta, unpack(args))
    if not meta_had_v then redis.call('PEXPIRE', meta, idle) end
  end
  if #dels > 0 then redis.call('HDEL', meta, unpack(dels)) end
end

-- The start tag of a waiter arriving now. New (age 0): S = max(V, F_app), and F_app becomes S + cost,
-- so each backlogged app gets turns in proportion to 1 / cost (its weight). Waited before (re-queued
-- after an upstream 429, or after losing its place in Redis): in (V - 1, V], lower the older it is: ahead of
-- every new waiter, in arrival order among themselves, and not charged again. Either way the app's
-- count of queued waiters goes up. Written by meta_flush. \`app\`: the id's app, when the caller has read it already.
local function start_tag(meta, id, cost, age, app)
  app = app or app_of(id)
  local f_f, n_f = 'f:' .. app, 'n:' .. app
  -- read already with acquire's own fields, most often: no table made for nothing
  if meta_cache[f_f] == nil or meta_cache[n_f] == nil or meta_cache['v'] == nil then meta_read(meta, { f_f, n_f }) end
  local n = meta_cache[n_f]
  meta_set(n_f, fmt(n and (tonumber(n) or 0) + 1 or 1))
  local v = meta_cache['v']
  v = v and tonumber(v) or 0
  if age > 0 then
    return v - age / (age + ${REQUEUE_AGE_SCALE_MS})
  end
  local f = meta_cache[f_f]
  local s = math.max(v, f and tonumber(f) or 0)
  meta_set(f_f, fmt(s + cost))
  return s
end

-- V moves up to the highest start tag granted (never down: a re-queued waiter granted below it
-- must not let later arrivals in ahead of the waiters already queued). Written by meta_flush.
local function advance(meta, top)
  if top == nil then return end
  meta_read(meta, {})
  local v = meta_cache['v']
  if v and tonumber(v) >= top then return end
  meta_set('v', fmt(top))
end

-- A waiter left the queue: served, or (\`refund\`) withdrawn — deadline, abort — or dropped with its
-- dead replica; \`score\` is its start tag. The refund rule: when an app's last queued waiter
-- leaves unserved, its finish tag goes back to the start tag of the earliest of its waiters that
-- left unserved since the app was last served (\`w:<app>\`, the lowest such tag) — exactly the charges
-- of the waiters it gave up, in whatever order they gave up (deadlines fire oldest first); the
-- charges of waiters served stay. While others of the app stay queued nothing is refunded (only
-- \`w:<app>\` is lowered): their tags are set, and a lower finish tag would let the app's next waiter
-- in ahead of them (FIFO within an app). A served waiter clears \`w:<app>\`: the app's waiters that
-- gave up before it were behind nobody it was charged for. A count at 0 is written as 0, not deleted
-- (no HDEL on the common path; sync's sweep removes it): scripts read a missing count as 0 too.
-- \`app\`: the id's app, when the caller has read it already (grant's live read its fields too).
local function left_queue(meta, id, refund, score, app)
  app = app or app_of(id)
  local n_f, w_f, f_f = 'n:' .. app, 'w:' .. app, 'f:' .. app
  if meta_cache[n_f] == nil or meta_cache[w_f] == nil or meta_cache['v'] == nil
    or (refund and meta_cache[f_f] == nil) then
    meta_read(meta, refund and { n_f, w_f, f_f } or { n_f, w_f })
  end
  local n = meta_cache[n_f]
  n = (n and tonumber(n) or 0) - 1
  meta_set(n_f, fmt(math.max(n, 0)))
  local w = meta_cache[w_f]
  w = w and tonumber(w) or nil
  if not refund then
    if w then meta_del(w_f) end
    return
  end
  local s = tonumber(score)
  if s and (w == nil or s < w) then w = s end
  if n > 0 then
    if w then meta_set(w_f, fmt(w)) end
    return
  end
  -- the app's last waiter: refund down to w (a finish tag at or below V places no differently than none)
  local f = tonumber(meta_cache[f_f] or '')
  if f and w and w < f then meta_set(f_f, fmt(w)) end
  if meta_cache[w_f] then meta_del(w_f) end
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
