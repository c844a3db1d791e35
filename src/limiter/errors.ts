import { refusal } from '../errors/refusal.js'

/** The queue for one key is at its maximum length. */
export const QueueFullError = refusal<[string, number]>(
  'SLUICE_QUEUE_FULL',
  'The queue for %s is full (%d waiting); try again later',
  503,
  'queue_full',
)

/** The wait ran past its deadline. */
export const QueueTimeoutError = refusal<[number, string]>(
  'SLUICE_QUEUE_TIMEOUT',
  'Waited %d ms for a free slot on %s without getting one; try again later',
  503,
  'queue_timeout',
)

/** The limiter refuses new permits: shutting down, or Redis is down and the fallback is `closed`. */
export const LimiterClosedError = refusal<[string]>('SLUICE_UNAVAILABLE', '%s', 503, 'unavailable')

export type QueueFullError = InstanceType<typeof QueueFullError>
export type QueueTimeoutError = InstanceType<typeof QueueTimeoutError>
export type LimiterClosedError = InstanceType<typeof LimiterClosedError>

/** The wait ahead (a queue predicted to outlast the deadline, or a rate's next free start past it): refused at once. */
export const WaitTooLongError = refusal<[string, number, number]>(
  'SLUICE_WAIT_TOO_LONG',
  'The queue for %s is predicted to take %d ms, longer than this request may wait (%d ms); try again after Retry-After',
  503,
  'wait_too_long',
)
export type WaitTooLongError = InstanceType<typeof WaitTooLongError>
