import { LUA_COMMON } from '../lua-common.js'

/**
 * release: give back permits, or withdraw waiters — whichever each id is now.
 * KEYS: holders queue meta
 * ARGV: limit leaseMs idleMs channelPrefix wantHead id...   (wantHead `2`: as `1`, and the ids are waiters
 *       a handover here served: their start tags move V, as a grant by Redis would)
 * Reply: { how many ids were found (0 for a second release: harmless), the ids granted, and the
 *          waiter now at the head of the queue when wantHead is 1 (the releasing replica holds every
 *          permit of the key) or at limit 1 after a grant (nil otherwise, or when the queue is empty) }
 *
 * One script serves release and cancel because a waiter may have been granted between the replica's
 * decision to give up and this script: the id is then a holder and is released here, never leaked.
 * The freed slots go straight to the queue's head (see grant in lua-common). The granted ids are
 * returned too: a waiter of the releasing replica is then granted from this reply, without waiting
 * for its pub/sub message (which still comes, and is then ignored).
 */
export const RELEASE_LUA = `${LUA_COMMON}
local holders, queue, meta = KEYS[1], KEYS[2], KEYS[3]
local limit, lease, idle, chan = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), ARGV[4]
local want_head, served = ARGV[5] ~= '0', ARGV[5] == '2'
local now = clock()
local found = 0
local top = nil
for i = 6, #ARGV do
  if served then
    local s = redis.call('ZSCORE', queue, ARGV[i])
    if s and (top == nil or tonumber(s) > top) then top = tonumber(s) end
  end
  if redis.call('ZREM', holders, ARGV[i]) == 1 then
    found = found + 1
  elseif redis.call('ZREM', queue, ARGV[i]) == 1 then
    found = found + 1
    -- withdrawn (refunded when its app's last), or served by a handover
    left_queue(meta, ARGV[i], not served)
  end
end
local held = live_holders(holders, now, limit)
local granted = {}
local _, head = grant(holders, queue, meta, now, lease, chan, limit, held, idle, granted, want_head, top)
return { found, granted, head }
`
