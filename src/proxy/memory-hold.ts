import type { ServerResponse } from 'node:http'
import type { MemoryBudget } from '../budget/budget.js'
import { MemoryBudgetError } from '../budget/errors.js'
import { withOutcome, type Tracked } from './tracking.js'

/**
 * What one request counts in the memory budget besides its body: the resident cost of a queued request
 * (11.8–14.9 KB measured, docs/benchmarks.md "Memory"), rounded up.
 */
export const REQUEST_BYTES = 16 * 1024

/** The 503 of a full budget, with the outcome the metrics count it under. */
export const budgetRefusal = (budget: MemoryBudget): Error =>
  withOutcome(new MemoryBudgetError(budget.limit), 'memory_budget')

/**
 * Holds the request in the memory budget from now until its answer closes (answered, refused, the
 * client gone, timed out: the tracker gives the reservations back at the response's `close`, which
 * comes once on every path), or throws the 503. A body kept whole is held at its declared length now;
 * one of undeclared length is held chunk by chunk by the function returned, which throws the 503 when
 * a chunk does not fit. Per request one reservation (two with a body) and no listener of its own
 * (docs/benchmarks.md, "The memory budget against resident memory").
 */
export function holdRequest(
  budget: MemoryBudget | undefined,
  tracked: Tracked,
  res: ServerResponse,
  hasBody: boolean,
  contentLength: number | undefined,
  maxBufferBytes: number,
): ((bytes: number) => void) | undefined {
  // a response already closed would never give its reservations back
  if (budget === undefined || res.closed) return undefined
  const request = budget.reserve('request', REQUEST_BYTES)
  if (request === undefined) throw budgetRefusal(budget)
  tracked.held = request
  if (!hasBody) return undefined
  // a larger body streams once the permit is granted: the client's socket holds it, not sluice
  const body = budget.reserve(
    'body',
    contentLength !== undefined && contentLength <= maxBufferBytes ? contentLength : 0,
  )
  if (body === undefined) throw budgetRefusal(budget)
  tracked.heldBody = body
  if (contentLength !== undefined) return undefined
  return (bytes) => {
    if (!body.grow(bytes)) throw budgetRefusal(budget)
  }
}
