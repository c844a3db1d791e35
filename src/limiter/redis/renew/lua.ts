/**
 * renew: confirms one permit before its request starts, when the grant was read too late to be sure
 * its lease still runs (an event-loop stall longer than the lease).
 * KEYS: holders
 * ARGV: leaseMs idleMs id
 * Reply: 1 when Redis still counts the permit (its lease is renewed: it was never given away, even
 *        if past its expiry), 0 when it does not (purged and possibly given to someone else)
 */
export const RENEW_LUA = `
if redis.replicate_commands then redis.replicate_commands() end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local holders = KEYS[1]
if not redis.call('ZSCORE', holders, ARGV[3]) then return 0 end
redis.call('ZADD', holders, 'XX', now + tonumber(ARGV[1]), ARGV[3])
redis.call('PEXPIRE', holders, tonumber(ARGV[2]))
return 1
`
