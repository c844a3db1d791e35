import { withPrelude } from '../lua-prelude.js'

/**
 * release: give back permits, or withdraw waiters — whichever each id is now; learns the API's answer first
 * (docs/redis-limiter.md, "Scripts"; docs/learned-limits.md).
 * KEYS: holders queue meta learned
 * ARGV: limit leaseMs idleMs channelPrefix wantHead answer replica id...   (wantHead `2`: as `1`, and the ids
 *       are waiters a handover here served)
 * Reply: { ids found, ids granted, the head (wantHead 1, or limit 1 after a grant), limit after, limit before
 *          the answer was learned from, learned value, permits held when it was learned } (the last three only
 *          when an answer was learned from)
 * answer: "s <heldMs>" (success), "t <heldMs>" (a 429) or "-" (nothing to learn).
 */
export const RELEASE_BODY = `
local holders, queue, meta, learned = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local spec = limit_spec(ARGV[1])
local lease, idle, chan = tonumber(ARGV[2]), ARGV[3], ARGV[4] -- idle: a string, only sent back (as in acquire)
local want_head, served = ARGV[5] ~= '0', ARGV[5] == '2'
local self = ARGV[7]
local limit, stored = effective_limit(learned, spec)
local before, value, in_use = limit, false, false
local outcome, held_ms = string.match(ARGV[6], '^([st]) (%d+)$')
-- A success can teach nothing to a key with nothing learned yet that starts at its ceiling (a
-- published limit, learning.lowerPublished): the rule only adds, and nothing drew a 429.
if outcome == 's' and not stored and spec.start and spec.start >= spec.ceiling then outcome = nil end
if outcome and not spec.fixed then
  in_use = redis.call('ZCARD', holders)
  -- saturated: every permit of the limit in use. Waiters queued with a slot free are held back by
  -- their app's cap, not by the limit, so they do not count (docs/learned-limits.md)
  local saturated = in_use >= limit
  local v
  before, limit, v = learn(learned, spec, outcome, in_use, saturated, tonumber(held_ms))
  value = string.format('%.17g', v)
end
local found = 0
local top = nil
for i = 8, #ARGV do
  local id = ARGV[i]
  if redis.call('ZREM', holders, id) == 1 then
    found = found + 1
  else
    local s = redis.call('ZSCORE', queue, id)
    if s then
      redis.call('ZREM', queue, id)
      found = found + 1
      -- served by a handover (its start tag moves V), or withdrawn (refunded when its app's last)
      if served and (top == nil or tonumber(s) > top) then top = tonumber(s) end
      left_queue(meta, id, not served, s)
    end
  end
end
local held = live_holders(holders, limit)
local granted = {}
local _, head = grant(holders, queue, meta, lease, chan, limit, held, idle, granted, want_head, top, self)
-- nothing learned (a fixed limit, or an answer that taught nothing): the reply ends at the limit
if not value then return { found, granted, head, limit } end
return { found, granted, head, limit, before, value, in_use }
`

/** The script sent: the body with the shared Lua it uses (lua-prelude.ts). */
export const RELEASE_LUA = withPrelude(RELEASE_BODY)
