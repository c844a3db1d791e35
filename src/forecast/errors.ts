import createError from '@fastify/error'

/** The queue ahead is predicted to outlast the request's deadline: refused at once instead of at the deadline. */
export const WaitTooLongError = createError<[string, number, number]>(
  'SLUICE_WAIT_TOO_LONG',
  'The queue for %s is predicted to take %d ms, longer than this request may wait (%d ms); try again after Retry-After',
  503,
)
export type WaitTooLongError = InstanceType<typeof WaitTooLongError>
