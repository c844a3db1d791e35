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

/** The wait ahead (a queue predicted to outlast the deadline, or a rate's next free start past it): refused at once. */
export const WaitTooLongError = createError<[string, number, number]>(
  'SLUICE_WAIT_TOO_LONG',
  'The queue for %s is predicted to take %d ms, longer than this request may wait (%d ms); try again after Retry-After',
  503,
)
export type WaitTooLongError = InstanceType<typeof WaitTooLongError>
