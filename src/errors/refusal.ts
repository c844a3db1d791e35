import createError from '@fastify/error'
import type { Outcome } from '../record/record.js'

/**
 * A request sluice answers itself: a `SLUICE_` code, an HTTP status and the outcome that logs and
 * metrics count it under, all in one entry of its area's errors.ts (docs/development.md, "A new
 * refusal"). The outcome sits on the error class's prototype, so every instance carries it and no
 * table elsewhere has to learn the code.
 */
export function refusal<Args extends unknown[] = [unknown?, unknown?, unknown?]>(
  code: string,
  message: string,
  status: number,
  outcome: Outcome,
  Base?: ErrorConstructor,
  captureStackTrace?: boolean,
): createError.FastifyErrorConstructor<{ code: string; statusCode: number }, Args> {
  const made = createError<string, number, Args>(code, message, status, Base, captureStackTrace)
  ;(made.prototype as Rejection).outcome = outcome
  return made
}

/** An error with the outcome it stands for in logs and metrics (a refusal's, or one set by withOutcome). */
export type Rejection = Error & { statusCode?: number; outcome?: Outcome; code?: string }

/** For an error not made by `refusal` (another library's) whose outcome the place that catches it knows. */
export const withOutcome = (err: unknown, outcome: Outcome): Rejection => Object.assign(err as Rejection, { outcome })

/** The outcome of a request sluice answered with `err`: its own; else, for an error not ours (Fastify's), by the status. */
export function outcomeOf(err: Rejection, status: number): Outcome {
  if (err.outcome !== undefined) return err.outcome
  if (status === 408) return 'client_timeout'
  return status >= 500 ? 'internal_error' : 'bad_request'
}
