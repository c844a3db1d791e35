import { LUA_COMMON } from '../lua-common.js'

/**
 * release: give back permits, or withdraw waiters — whichever each id is now.
 * KEYS: holders queue meta learned
 * ARGV: limit leaseMs idleMs channelPrefix wantHead answer replica id...   (wantHead `2`: as `1`, and
 *       the ids are waiters a handover here served: their start tags move V, as a grant by Redis
 *       would; replica: the releasing replica's id, whose waiters granted here get no message)
 * Reply: { how many ids were found (0 for a second release: harmless), the ids granted, the
 *          waiter now at the head of the queue when wantHead is 1 (the releasing replica holds every
 *          permit of the key) or at limit 1 after a grant (nil otherwise, or when the queue is empty),
 *          the limit in force after, the limit before the answer was learned from, the learned value
 *          (nil for a fixed limit or no answer), the permits held when it was learned }
 *
 * `answer` is what the API said about the request of the permit given back: "s <heldMs>" (success),
 * "t <heldMs>" (a 429) or "-" (nothing to learn). For a learned limit it is learned from here, before
 * the ids leave, so a decrease costs nothing beyond the release a 429 costs anyway, and an increase
 * nothing beyond the release of a success (docs/learned-limits.md). The permit may have been handed
 * over already (a handover's background release names the waiter's id): it is still a holder then.
 *
 * One script serves release and cancel because a waiter may have been granted between the replica's
 * decision to give up and this script: the id is then a holder and is released here, never leaked.
 * The freed slots go straight to the queue's head (see grant in lua-common). The granted ids are
 * returned too: a waiter of the releasing replica is granted from this reply, and gets no pub/sub
 * message (nor a liveness read: its replica is the one running this script). The reply says all the
 * message would have (the id, and at limit 1 the next head); were the reply lost, the replica takes
 * Redis for unreachable and gives the waiter's id back (SharedPermits.#release, detachWaiters).
 */
export const RELEASE_LUA = `${LUA_COMMON}
local holders, queue, meta, learned = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local spec = limit_spec(ARGV[1])
local lease, idle, chan = tonumber(ARGV[2]), tonumber(ARGV[3]), ARGV[4]
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
return { found, granted, head, limit, before, value, in_use }
`
