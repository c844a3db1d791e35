import type { ServerResponse } from 'node:http'
import type { MemoryBudget } from '../budget/budget.js'
import { MemoryBudgetError } from '../budget/errors.js'
import { withOutcome } from './tracking.js'

/**
 * What one request counts in the memory budget besides its body: the resident cost of a queued request
 * (11.8–14.9 KB measured, docs/benchmarks.md "Memory"), rounded up.
 */
export const REQUEST_BYTES = 16 * 1024

/** The 503 of a full budget, with the outcome the metrics count it under. */
export const budgetRefusal = (budget: MemoryBudget): Error => withOutcome(new MemoryBudgetError(budget.limit), 'unavailable')

/**
 * Holds the request in the memory budget from now until its answer closes (answered, refused, the
 * client gone, timed out: the response's `close` comes once on every path), or throws the 503. A body
 * kept whole is held at its declared length now; one of undeclared length is held chunk by chunk by
 * the function returned, which throws the 503 when a chunk does not fit.
 * Per request: a reservation (two with a body) and one `close` listener: 0.3–0.6 µs
 * (docs/benchmarks.md, "The memory budget against resident memory").
 */
export function holdRequest(
  budget: MemoryBudget | undefined,
  res: ServerResponse,
  hasBody: boolean,
  contentLength: number | undefined,
  maxBufferBytes: number,
): ((bytes: number) => void) | undefined {
  if (budget === undefined) return undefined
  const request = budget.reserve('request', REQUEST_BYTES)
  if (request === undefined) throw budgetRefusal(budget)
  if (!hasBody) {
    res.once('close', () => request.release())
    return undefined
  }
  // a larger body streams once the permit is granted: the client's socket holds it, not sluice
  const body = budget.reserve('body', contentLength !== undefined && contentLength <= maxBufferBytes ? contentLength : 0)
  if (body === undefined) {
    request.release()
    throw budgetRefusal(budget)
  }
  res.once('close', () => {
    request.release()
    body.release()
  })
  if (contentLength !== undefined) return undefined
  return (bytes) => {
    if (!body.grow(bytes)) throw budgetRefusal(budget)
  }
}
