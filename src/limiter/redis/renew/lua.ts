/**
 * renew: confirms one permit before its request starts, its grant read too late to be sure the lease runs.
 * KEYS: holders
 * ARGV: leaseMs idleMs id
 * Reply: 1 when Redis still counts the permit (lease renewed), 0 when it does not
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
