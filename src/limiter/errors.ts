import createError from '@fastify/error'

/** The queue for one key is at its maximum length. */
export const QueueFullError = createError<[string, number]>(
  'SLUICE_QUEUE_FULL',
  'The queue for %s is full (%d waiting); try again later',
  503,
)

/** The wait ran past its deadline. */
export const QueueTimeoutError = createError<[number, string]>(
  'SLUICE_QUEUE_TIMEOUT',
  'Waited %d ms for a free slot on %s without getting one; try again later',
  503,
)

/** The limiter refuses new permits: shutting down, or Redis is down and the fallback is `closed`. */
export const LimiterClosedError = createError<[string]>('SLUICE_UNAVAILABLE', '%s', 503)

export type QueueFullError = InstanceType<typeof QueueFullError>
export type QueueTimeoutError = InstanceType<typeof QueueTimeoutError>
export type LimiterClosedError = InstanceType<typeof LimiterClosedError>
