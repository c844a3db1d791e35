import { DECREASE, PROBE_RATE, WHOLE_SLACK } from '../learning/rule.js'
import { luaGrantMessage } from './grant-message.js'
import { LUA_FAIR } from './lua-fair.js'

/**
 * Lua shared by the semaphore scripts, pasted at the top of each one (a script cannot call another).
 * Keys, ids, the limit argument and key expiries: docs/redis-limiter.md, "Keys".
 */
export const LUA_COMMON = `
if redis.replicate_commands then redis.replicate_commands() end
${LUA_FAIR}

-- Redis's own clock in ms (leases, liveness); replica clocks never decide anything. Read once per
-- script and only when something needs it: a queued acquire that finds the semaphore full, or a
-- release that grants nobody, runs no TIME. Reading it late is safe: a script runs alone, so no
-- other write can fall between an early and a late reading.
local clock_ms = nil
local function clock()
  if clock_ms == nil then
    local t = redis.call('TIME')
    clock_ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  end
  return clock_ms
end


-- Live holders, after dropping expired leases if the semaphore looks full (only then can a dead
-- lease keep someone waiting): the permits of a replica that died or stalled come back.
local function live_holders(holders, limit)
  local held = redis.call('ZCARD', holders)
  if held < limit then return held end
  local first = redis.call('ZRANGE', holders, '0', '0', 'WITHSCORES')
  if #first == 0 or tonumber(first[2]) > clock() then return held end
  return held - redis.call('ZREMRANGEBYSCORE', holders, '-inf', clock())
end

-- Fills free slots from the head of the queue: each live head waiter becomes a holder at once (a
-- direct handoff, so nobody can overtake it) and its replica hears of it on its own channel. Waiters
-- whose replica stopped renewing its liveness are dropped, so a dead replica never blocks the queue.
-- A waiter whose app already holds its cap of permits (the cap is in its id) stays where it is and
-- the next waiters of other apps are served, in order, past it. V moves to the highest start tag
-- granted (see lua-fair).
-- At limit 1 each grant's message is "<id> <head>", naming the waiter left at the head of the queue
-- (just "<id>" when the queue is empty): the replica granted holds the only permit, so when it learns
-- that its own waiter is next it hands the permit over on release without a round trip (see
-- handOver in key-semaphore.ts). Returns the number of holders afterwards and, at limit 1 or when
-- want_head is set, that head (false when the queue is empty or not asked), and whether it emptied
-- the queue (acquire tells its replica, which may then keep a permit: kept-permits.ts). No head is named while
-- the semaphore counts more holders than its limit (permits granted during an outage and adopted):
-- a replica holding "all" of them must give its surplus back, not hand it on. Given a table
-- "granted", also lists the ids granted. "top": a start tag already served (a handover's), for V.
-- "self": the replica running the script (release passes it, with "granted"): its waiters are
-- granted without a liveness read (it is alive: it is running this script) and without a message
-- (the script's reply lists them in "granted", and that reply also carries the head a limit-1
-- message would: SharedPermits grants them from it; should the reply be lost, Redis counts as
-- unreachable there and the waiters' ids are given back, see detachWaiters in shared.ts).
local function grant(holders, queue, meta, lease, chan, limit, held, idle, granted, want_head, top, self)
  local given = {}
  local empty = false
  local counts = nil -- permits held per app, read once a capped waiter comes up
  -- V, the waiter's replica's liveness and its app's count of waiters and pending refund (left_queue
  -- reads them next): one HMGET (lua-fair meta_read)
  -- each id's replica and app are read once (string.match), here, and passed on: live, under_cap,
  -- take and the messages below all need them
  local rid_of, app_of_id = {}, {}
  local function live(id)
    local rid = replica_of(id)
    if not rid then return false end
    local app = app_of(id)
    rid_of[id], app_of_id[id] = rid, app
    if rid == self then
      meta_read(meta, { 'n:' .. app, 'w:' .. app })
      return true
    end
    meta_read(meta, { 'n:' .. app, 'w:' .. app, '@' .. rid })
    return tonumber(meta_cache['@' .. rid] or '0') > clock()
  end
  local function under_cap(id)
    local cap = cap_of(id)
    if cap == nil then return true end
    if counts == nil then counts = held_by_app(holders) end
    return (counts[app_of_id[id]] or 0) < cap
  end
  local function take(id, score)
    redis.call('ZADD', holders, fmt(clock() + lease), id)
    left_queue(meta, id, false, score, app_of_id[id])
    held = held + 1
    given[#given + 1] = id
    if granted then granted[#granted + 1] = id end
    if counts then counts[app_of_id[id]] = (counts[app_of_id[id]] or 0) + 1 end
    local s = tonumber(score)
    if top == nil or s > top then top = s end
  end
  local blocked = false
  while held < limit do
    local head = redis.call('ZPOPMIN', queue)
    if #head == 0 then
      empty = true
      break
    end
    if not live(head[1]) then
      left_queue(meta, head[1], true, head[2], app_of_id[head[1]])
    else
      if under_cap(head[1]) then
        take(head[1], head[2])
      else
        redis.call('ZADD', queue, head[2], head[1])
        -- it may have been the last waiter: ZPOPMIN deleted the key, ZADD made it anew
        redis.call('PEXPIRE', queue, idle)
        blocked = true
        break
      end
    end
  end
  -- The head's app holds its cap: look further down the queue, a page at a time, leaving its waiters in place.
  local from = 0
  while blocked and held < limit do
    local page = redis.call('ZRANGE', queue, from, from + 63, 'WITHSCORES')
    if #page == 0 then break end
    local removed = 0
    for i = 1, #page, 2 do
      if held >= limit then break end
      local id = page[i]
      if not live(id) then
        redis.call('ZREM', queue, id)
        left_queue(meta, id, true, page[i + 1], app_of_id[id])
        removed = removed + 1
      elseif under_cap(id) then
        redis.call('ZREM', queue, id)
        removed = removed + 1
        take(id, page[i + 1])
      end
    end
    from = from + #page / 2 - removed
  end
  advance(meta, top)
  meta_flush(meta, idle)
  -- a holder added renews the key: a release that emptied the set deleted it (the grant made it anew,
  -- without an expiry), and the holders already there may be a dead replica's, which renews nothing
  if #given > 0 then redis.call('PEXPIRE', holders, idle) end
  local next_head = false
  if not empty and held <= limit and (want_head or (limit == 1 and #given > 0)) then
    next_head = redis.call('ZRANGE', queue, '0', '0')[1] or false
  end
  for _, id in ipairs(given) do
    local rid = rid_of[id]
    if rid ~= self then
      redis.call('PUBLISH', chan .. rid, ${luaGrantMessage('id', 'next_head')})
    end
  end
  return held, next_head, empty
end

-- The limit argument: {fixed = n}, or the bounds of a learned limit.
local function limit_spec(arg)
  local start, ceiling, floor, ttl = string.match(arg, '^(%d+) (%d+) (%d+) (%d+)$')
  if not start then return { fixed = tonumber(arg) } end
  return { start = tonumber(start), ceiling = tonumber(ceiling), floor = tonumber(floor), ttl = tonumber(ttl) }
end

local function enforced(value, spec)
  return math.max(1, math.min(spec.ceiling, math.max(spec.floor, math.floor(value + ${WHOLE_SLACK}))))
end

-- The whole number of permits the semaphore allows now: min(ceiling, learned), or the fixed limit.
local function effective_limit(learned, spec)
  if spec.fixed then return spec.fixed end
  local stored = redis.call('HGET', learned, 'v')
  return enforced(tonumber(stored or spec.start), spec), stored ~= false
end

-- One answer for a learned limit: the rule of src/limiter/learning/rule.ts, its constants inserted
-- from there (DECREASE, PROBE_RATE, WHOLE_SLACK). outcome 's' (success) or 't' (429); held: permits held, the
-- answered one included; held_ms: how long ago its permit was granted (a duration, immune to clock
-- skew: a 429 for a permit granted before the last decrease cuts nothing more). Returns the whole
-- limit before and after, and the value after.
local function learn(learned, spec, outcome, held, saturated, held_ms)
  local s = redis.call('HMGET', learned, 'v', 'b', 'c')
  local value, bad, cut = tonumber(s[1]) or spec.start, tonumber(s[2]) or 0, tonumber(s[3]) or 0
  local value0, bad0, cut0 = value, bad, cut
  -- within the bounds before the rule reads it (withinBounds in rule.ts): the ceiling wins
  value = math.min(spec.ceiling, math.max(spec.floor, value))
  local before = enforced(value, spec)
  if outcome == 't' then
    local now = clock()
    local fresh = now - held_ms >= cut
    local level = math.max(held, math.floor(value + ${WHOLE_SLACK}))
    local v = math.min(value, level - 1)
    if fresh then
      v = math.min(v, value * ${DECREASE})
      cut = now
    end
    value = math.max(spec.floor, math.min(spec.ceiling, v))
    if bad == 0 then bad = level else bad = math.min(bad, level) end
  else
    if bad > 0 and held >= bad then bad = 0 end
    if saturated and value < spec.ceiling then
      local rate = 1
      if bad > 0 and math.floor(value + ${WHOLE_SLACK}) + 1 >= bad then rate = ${PROBE_RATE} end
      value = math.min(spec.ceiling, value + rate / value)
    end
  end
  -- nothing learned (a success of a key not saturated): no write, and no key made for it
  if value ~= value0 or bad ~= bad0 or cut ~= cut0 then
    redis.call('HSET', learned, 'v', string.format('%.17g', value), 'b', bad, 'c', cut)
    redis.call('PEXPIRE', learned, spec.ttl)
  elseif s[1] then
    redis.call('PEXPIRE', learned, spec.ttl)
  end
  return before, enforced(value, spec), value
end

-- Delay in ms until the nearest lease expires (a waiter's safety timer), -1 when nothing is held.
local function nearest_expiry(holders, now)
  local first = redis.call('ZRANGE', holders, 0, 0, 'WITHSCORES')
  if #first == 0 then return -1 end
  return math.max(0, tonumber(first[2]) - now)
end
`
