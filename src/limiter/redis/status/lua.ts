import { withPrelude } from '../lua-prelude.js'

/**
 * status: the shared picture of one semaphore for `/status`, live entries only (docs/redis-limiter.md, "Scripts").
 * KEYS: holders queue meta learned
 * ARGV: idleMs
 * Reply: {inFlight, queued, oldestWaitMs, limit, instance, endpoint, {app, held, queued, ...}, learned or nil, ceiling
 * or nil,
 *         {replica, app, ageMs, ...} of each holder (age of its request, from the arrival in its id; -1 unknown),
 *         progress: the holders' ids and the head waiter's, which change with every grant}
 */
export const STATUS_BODY = `
local holders, queue, meta, learned = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local now = clock()
redis.call('ZREMRANGEBYSCORE', holders, '-inf', now)
local alive = {}
local fields = redis.call('HGETALL', meta)
local info = {}
for i = 1, #fields, 2 do
  local f, v = fields[i], fields[i + 1]
  if string.sub(f, 1, 1) == '@' then
    if tonumber(v) > now then
      alive[string.sub(f, 2)] = true
    elseif tonumber(v) + tonumber(ARGV[1]) <= now then
      -- gone for longer than the idle time (kept until then: sync tells a lost lease from lost data by it)
      redis.call('HDEL', meta, f)
    end
  else
    info[f] = v
  end
end
local shares, order = {}, {}
local function share(app)
  local s = shares[app]
  if s == nil then
    s = {0, 0}
    shares[app] = s
    order[#order + 1] = app
  end
  return s
end
local in_flight = 0
local held_list, held_ids = {}, {}
for _, id in ipairs(redis.call('ZRANGE', holders, 0, -1)) do
  in_flight = in_flight + 1
  local s = share(app_of(id))
  s[1] = s[1] + 1
  local t = arrived_of(id)
  held_list[#held_list + 1] = replica_of(id) or ''
  held_list[#held_list + 1] = app_of(id)
  held_list[#held_list + 1] = t and math.max(0, now - t) or -1
  held_ids[#held_ids + 1] = id
end
local queued, oldest = 0, nil
local entries = redis.call('ZRANGE', queue, 0, -1, 'WITHSCORES')
for e = 1, #entries, 2 do
  local id = entries[e]
  local rid = replica_of(id)
  if rid and alive[rid] then
    if queued == 0 then held_ids[#held_ids + 1] = '|' .. id end
    queued = queued + 1
    local s = share(app_of(id))
    s[2] = s[2] + 1
    local t = arrived_of(id)
    if t and (oldest == nil or t < oldest) then oldest = t end
  else
    redis.call('ZREM', queue, id)
    left_queue(meta, id, true, entries[e + 1])
  end
end
-- the dropped waiters' counts (and refunds), one HSET
meta_flush(meta, tonumber(ARGV[1]))
local oldest_ms = 0
if oldest ~= nil then oldest_ms = math.max(0, now - oldest) end
table.sort(order)
local apps = {}
for _, app in ipairs(order) do
  apps[#apps + 1] = app
  apps[#apps + 1] = shares[app][1]
  apps[#apps + 1] = shares[app][2]
end
local spec = limit_spec(info['limit'] or '0')
local value, ceiling = false, false
if not spec.fixed then
  value = redis.call('HGET', learned, 'v') or tostring(spec.start)
  ceiling = spec.ceiling
end
return {in_flight, queued, oldest_ms, effective_limit(learned, spec) or 0, info['instance'] or '', info['endpoint'] or '', apps, value, ceiling, held_list, table.concat(held_ids, ' ')}
`

/**
 * active: the semaphores some live replica reported in its heartbeat.
 * KEYS: active
 * Reply: tags
 */
export const ACTIVE_LUA = `
if redis.replicate_commands then redis.replicate_commands() end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
return redis.call('ZRANGE', KEYS[1], 0, -1)
`

/** The script sent: the body with the shared Lua it uses (lua-prelude.ts). */
export const STATUS_LUA = withPrelude(STATUS_BODY)
