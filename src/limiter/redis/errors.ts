import createError from '@fastify/error'

/**
 * A held permit's lease ran out in Redis (an event-loop stall), or Redis lost its data before the
 * permit's request was sent (docs/redis-limiter.md, "Failure modes"): `Permit.lost` aborts with it.
 */
export const LeaseLostError = createError<[string]>(
  'SLUICE_LEASE_LOST',
  'The Redis lease of a permit for %s was lost: it ran out while its request was in progress, or Redis lost its data before the request was sent',
  500,
)
export type LeaseLostError = InstanceType<typeof LeaseLostError>

/** A limiter script got no answer within `commandTimeoutMs`: Redis counts as unreachable. */
export const RedisTimeoutError = createError<[string, number]>(
  'SLUICE_REDIS_TIMEOUT',
  'Redis did not answer the %s script within %d ms',
  503,
)
