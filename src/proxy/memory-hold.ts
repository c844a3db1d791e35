import type { ServerResponse } from 'node:http'
import type { MemoryBudget } from '../budget/budget.js'
import { MemoryBudgetError, MemoryShareError } from '../budget/errors.js'
import type { Tracked } from './tracking.js'

/**
 * What one request counts in the memory budget besides its body: the resident cost of a queued request
 * (11.8–14.9 KB measured, docs/benchmarks.md "Memory"), rounded up.
 */
export const REQUEST_BYTES = 16 * 1024

/** The 503 of a full budget, or of `holder`'s full share, with the outcome the metrics count it under. */
export const budgetRefusal = (budget: MemoryBudget, holder?: string, bytes = 0): Error =>
  budget.overShare(holder, bytes) ? new MemoryShareError(budget.share) : new MemoryBudgetError(budget.limit)

/**
 * Holds the request in the memory budget from now until its answer closes (answered, refused, the
 * client gone, timed out: the tracker gives the reservations back at the response's `close`, which
 * comes once on every path), or throws the 503. `holder` (the app; the organisation with app identity
 * off) holds it within its share. A body kept whole is charged as its bytes arrive, by the function
 * returned, which throws the 503 when a chunk does not fit: a declared length holds nothing before its
 * bytes come, so heads without bodies cannot fill the budget (docs/deploy.md, "Memory: a budget"); one
 * that could not fit now is refused at once, unread.
 * Per request one reservation (two with a body) and no listener of its own
 * (docs/benchmarks.md, "The memory budget against resident memory").
 */
export function holdRequest(
  budget: MemoryBudget | undefined,
  tracked: Tracked,
  res: ServerResponse,
  hasBody: boolean,
  contentLength: number | undefined,
  maxBufferBytes: number,
  holder?: string,
): ((bytes: number) => void) | undefined {
  // a response already closed would never give its reservations back
  if (budget === undefined || res.closed) return undefined
  const request = budget.reserve('request', REQUEST_BYTES, holder)
  if (request === undefined) throw budgetRefusal(budget, holder, REQUEST_BYTES)
  tracked.held = request
  if (!hasBody) return undefined
  // a larger body streams once the permit is granted: the client's socket holds it, not sluice
  const kept = contentLength === undefined || contentLength <= maxBufferBytes
  // a declared body that could not fit now is refused before a byte of it is read; nothing is held for it yet
  if (kept && contentLength !== undefined && !budget.wouldFit('body', contentLength, holder))
    throw budgetRefusal(budget, holder, contentLength)
  const body = budget.reserve('body', 0, holder)!
  tracked.heldBody = body
  if (!kept) return undefined
  return (bytes) => {
    if (!body.grow(bytes)) throw budgetRefusal(budget, holder, bytes)
  }
}
