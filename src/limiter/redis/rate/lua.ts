import { LUA_GCRA } from '../../rate/gcra.js'
import { LUA_LOG } from '../../rate/sliding-log.js'

/**
 * The rate gate of one key (docs/redis-limiter.md, "Rates"): KEYS[1] a hash — `t` the TAT, `hu` the end
 * of a hold, `w` the window, `li`/`lt`/`le` a learned rate's interval, tolerance and expiry — on Redis's
 * clock. ARGV[1] the verb:
 *   r interval tolerance maxwait window lost n verify reserve a start → { delay, granted, next free − now, TAT }
 *       `verify` 1 (the caller never started on the key): a missing key reserves nothing, { 0, 0, 0, 0, 1 }
 *       `waiter` (optional): the asker's id; a start free now goes to the earliest waiter (field `sq`)
 *   q waiter                                   a waiter leaves without a start (out of `sq`)
 *   c window bucket                            an accepted start of a key whose rate its 429s teach, field `ac`
 *   k window                                   how many `c` counted within the window
 *   e id kind                                  the rate epoch (KEYS[1] in `{global}`): id, kind, made at, now
 *       `n` > 0: the rule is a sliding log of the last n starts, field `lg` (its token is the start)
 *       `lost` > 0: the caller took a start on this key less than a window ago, so a missing key means
 *       Redis lost its data: nobody starts for `lost` ms (a window), as the starts before the loss
 *       may fill it
 * g interval tat n                           a start taken and not sent, back while the TAT is its own (n > 0: its log
 * entry)
 *   h forms tolerance [channel message]        nobody starts for forms ms, at any burst
 *   l interval tolerance ttlms channel message n window  a learned rate, applied by every replica's reserve until it
 *       expires; `n` > 0: a sliding log of n per window (`ln`, `lw`), kept a log by a caller's log
 *       `channel message` (or ''): published once written, so replicas that never used the key hear of it
 *   u interval window n used added             starts the API counted that the gate did not: `added` more (sent
 *       before the rate was known), and at least `used` (a spent quota); a log's entries at now, else the TAT
 * `n` the key's time at its last write and `o` its offset from TIME (a step back of Redis's clock changes
 * nothing). The key lives a window past its TAT, its hold and its learned rate, then expires: an idle key costs
 * nothing, and a replica that started within the window finds it unless Redis lost it.
 */
export const RATE_LUA = `
if redis.replicate_commands then redis.replicate_commands() end
${LUA_GCRA}
${LUA_LOG}
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local key = KEYS[1]
local verb = ARGV[1]
local f = redis.call('HMGET', key, 't', 'li', 'lt', 'le', 'hu', 'w', 'lg', 'ln', 'lw', 'n', 'o', 'ac', 'sq')
-- the key's time never goes back: TIME behind the last time written (the host's clock stepped back, a
-- failover to a host whose clock is behind) adds the difference to the key's offset, kept with it
local offset = tonumber(f[11]) or 0
local seen = tonumber(f[10]) or 0
if now + offset < seen then offset = seen - now end
now = now + offset
local function hset(...)
  local args = { ... }
  args[#args + 1] = 'n'
  args[#args + 1] = now
  args[#args + 1] = 'o'
  args[#args + 1] = offset
  return redis.call('HSET', key, unpack(args))
end
local tat = tonumber(f[1]) or 0
local le = tonumber(f[4]) or 0
local hu = tonumber(f[5]) or 0
local win = tonumber(f[6]) or 0
local function keep(newtat)
  local ttl = math.max(newtat - now, le - now, hu - now, 0) + win
  redis.call('PEXPIRE', key, math.max(1, math.ceil(ttl)))
end
if verb == 'r' then
  local interval = tonumber(ARGV[2])
  local tolerance = tonumber(ARGV[3])
  local window = tonumber(ARGV[5]) or 0
  local lost = tonumber(ARGV[6]) or 0
  local missing = f[1] == false and f[5] == false and f[4] == false
  -- the caller has no start of its own on the key: a missing key may be new, or lost with Redis's data;
  -- it asks whether Redis lost its data (verb e) before it starts anything
  if missing and lost == 0 and ARGV[8] == '1' then return { 0, 0, 0, 0, 1 } end
  if lost > 0 and missing then
    hu = now + lost
    win = window
    hset('t', 0, 'hu', hu, 'w', win)
    keep(0)
  end
  -- starts in the order their askers began to wait, on any replica (field sq: order:expiry:waiter, one
  -- per replica's first waiter); one that does not come back by its expiry loses its place
  local waiter = ARGV[9] or ''
  local queue, ahead, mine, parsed = {}, 0, nil, 0
  if waiter ~= '' and f[13] then
    for o, e, w in string.gmatch(f[13], '(%d+):(%d+):([^,]+)') do
      parsed = parsed + 1
      if tonumber(e) > now then queue[#queue + 1] = { tonumber(o), tonumber(e), w } end
    end
    for i = 1, #queue do if queue[i][3] == waiter then mine = queue[i][1] end end
    for i = 1, #queue do
      if queue[i][3] ~= waiter and (mine == nil or queue[i][1] < mine) then ahead = ahead + 1 end
    end
  end
  local function line(granted, delay, tatafter)
    if waiter == '' then return end
    local out = {}
    for i = 1, #queue do
      if queue[i][3] ~= waiter then out[#out + 1] = queue[i][1] .. ':' .. queue[i][2] .. ':' .. queue[i][3] end
    end
    if granted == 0 then out[#out + 1] = (mine or now) .. ':' .. (now + delay + 250) .. ':' .. waiter end
    if granted == 0 or mine ~= nil or parsed > #queue then
      hset('sq', table.concat(out, ','))
      keep(math.max(tatafter, now + delay + 250))
    end
  end
  local n = tonumber(ARGV[7]) or 0
  if le > now then
    local ln = tonumber(f[8]) or 0
    if n > 0 and ln > 0 then
      -- two logs: the fewer starts over the longer window, stricter than both, still N at once
      n = math.min(n, ln)
      window = math.max(window, tonumber(f[9]) or 0)
    else
      interval = math.max(interval, tonumber(f[2]))
      tolerance = math.min(tolerance, tonumber(f[3]))
      n = 0
    end
  end
  if n > 0 then
    local live = log_parse(f[7], now, window)
    local before = {}
    for i = 1, #live do before[i] = live[i] end
    local delay, kept, granted, start = log_reserve(live, now, window, n, tonumber(ARGV[4]), hu)
    if granted == 1 and ahead > 0 then
      -- free now, but earlier waiters come first: this one's start is after theirs
      local sim, d2 = before, 0
      for _ = 1, ahead + 1 do
        local d, k = log_reserve(sim, now, window, n, 1e15, hu)
        d2, sim = d, k
      end
      if d2 > 0 then granted, delay, kept = 0, d2, before end
    end
    line(granted, delay, 0)
    if granted == 1 then
      if window > win then win = window end
      hset('lg', table.concat(kept, ','), 't', kept[#kept], 'w', win)
      keep(kept[#kept])
    end
    local nextfree = 0
    if #kept >= n then nextfree = kept[#kept - n + 1] + window - now end
    return { delay, granted, math.max(0, nextfree, hu - now), start }
  end
  local delay, newtat, granted = gcra_reserve(tat, now, interval, tolerance, tonumber(ARGV[4]), hu)
  if granted == 1 and ahead > 0 then
    local sim, d2 = tat, 0
    for _ = 1, ahead + 1 do
      local d, t2 = gcra_reserve(sim, now, interval, tolerance, 1e15, hu)
      d2, sim = d, t2
    end
    if d2 > 0 then granted, delay, newtat = 0, d2, tat end
  end
  line(granted, delay, tat)
  if granted == 1 then
    if window > win then win = window end
    hset('t', newtat, 'w', win)
    keep(newtat)
  end
  return { delay, granted, math.max(0, newtat - tolerance - now, hu - now), newtat }
elseif verb == 'g' then
  if (tonumber(ARGV[4]) or 0) > 0 then
    if f[7] then
      local live = log_give_back(log_parse(f[7], now, win), tonumber(ARGV[3]))
      hset('lg', table.concat(live, ','))
    end
  elseif f[1] ~= false then
    local newtat = gcra_give_back(tat, tonumber(ARGV[3]), tonumber(ARGV[2]))
    if newtat ~= tat then hset('t', newtat) end
  end
  return 1
elseif verb == 'h' then
  local untilms = now + tonumber(ARGV[2])
  local newtat = gcra_hold(tat, untilms, tonumber(ARGV[3]))
  hu = math.max(hu, untilms)
  hset('t', newtat, 'hu', hu)
  -- kept as long again past the hold's end (a window if longer): the first start after it still finds
  -- the hold, so no burst follows it (a fresh key's window is 0: it expired at the hold's end)
  local ttl = math.max(newtat - now, le - now, hu - now, 0) + math.max(win, hu - now)
  redis.call('PEXPIRE', key, math.max(1, math.ceil(ttl)))
  if ARGV[5] then redis.call('PUBLISH', ARGV[4], ARGV[5]) end
  return 1
elseif verb == 'l' then
  le = now + tonumber(ARGV[4])
  hset('li', ARGV[2], 'lt', ARGV[3], 'le', le, 'ln', tonumber(ARGV[7]) or 0, 'lw', tonumber(ARGV[8]) or 0)
  keep(tat)
  if ARGV[5] and ARGV[5] ~= '' then redis.call('PUBLISH', ARGV[5], ARGV[6]) end
  return 1
elseif verb == 'q' then
  if not f[13] then return 0 end
  local out = {}
  for o, e, w in string.gmatch(f[13], '(%d+):(%d+):([^,]+)') do
    if w ~= ARGV[2] and tonumber(e) > now then out[#out + 1] = o .. ':' .. e .. ':' .. w end
  end
  hset('sq', table.concat(out, ','))
  return 1
elseif verb == 'c' or verb == 'k' then
  -- accepted starts of a key whose rate is being learned: 'bucket start:count' pairs within the window
  local window = tonumber(ARGV[2])
  local bucket = tonumber(ARGV[3])
  -- kept over the longest window any replica counts with, counted over the asker's
  local keepfor = math.max(window, win)
  local pairs_, count = {}, 0
  if f[12] then
    for b, c in string.gmatch(f[12], '(%d+):(%d+)') do
      if tonumber(b) > now - keepfor then pairs_[#pairs_ + 1] = { tonumber(b), tonumber(c) } end
      if tonumber(b) > now - window then count = count + tonumber(c) end
    end
  end
  if verb == 'k' then return count end
  local at = now - now % bucket
  if #pairs_ > 0 and pairs_[#pairs_][1] == at then
    pairs_[#pairs_][2] = pairs_[#pairs_][2] + 1
  else
    pairs_[#pairs_ + 1] = { at, 1 }
  end
  local out = {}
  for i = 1, #pairs_ do out[i] = pairs_[i][1] .. ':' .. pairs_[i][2] end
  if window > win then win = window end
  hset('ac', table.concat(out, ','), 'w', win)
  keep(tat)
  return 1
elseif verb == 'e' then
  -- KEYS[1] the prefix's rate epoch (its {global} slot): { id, kind, made at, now }, made when missing
  -- with ARGV[2] and kind ARGV[3] ('lost' when the asker found a key missing: Redis lost its data);
  -- kept a day past the last ask
  local e = redis.call('HMGET', key, 'id', 'kind', 'at')
  if not e[1] then
    e = { ARGV[2], ARGV[3], tostring(now) }
    redis.call('HSET', key, 'id', e[1], 'kind', e[2], 'at', e[3])
  end
  redis.call('PEXPIRE', key, 86400000)
  return { e[1], e[2], e[3], tostring(now) }
elseif verb == 'u' then
  local interval = tonumber(ARGV[2])
  local window = tonumber(ARGV[3])
  local n = tonumber(ARGV[4])
  local used = tonumber(ARGV[5])
  local added = tonumber(ARGV[6]) or 0
  if window > win then win = window end
  if n > 0 then
    local live = log_parse(f[7], now, window)
    local kept = log_sync(live, now, n, used, added)
    if added == 0 and #kept == #live then return 0 end
    hset('lg', table.concat(kept, ','), 't', math.max(tat, kept[#kept]), 'w', win)
    keep(math.max(tat, kept[#kept]))
    return 1
  end
  local newtat = gcra_sync(tat, now, interval, window, used, added)
  if newtat == tat then return 0 end
  hset('t', newtat, 'w', win)
  keep(newtat)
  return 1
end
return redis.error_reply('ERR unknown rate verb')
`
