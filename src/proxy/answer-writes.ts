import type { ServerResponse } from 'node:http'
import type { Socket } from 'node:net'

/**
 * Writes to clients, held back until the requests to the API that this turn of the event loop
 * started have been written. undici writes a request on a reused keep-alive connection from a
 * setImmediate (it reads the idle socket once more first), so the request that a freed permit
 * let start goes out in the loop's check phase, after everything else of the turn; the clients'
 * answers that freed those permits, written at once, would go before it, and wake their clients
 * ahead of the API on CPUs they share. Corked until the check phase instead, they go right after
 * it (docs/benchmarks.md, "Where an in-process handoff's time goes").
 */
export interface HeldAnswer {
  readonly res: ServerResponse
  /** the socket corked for this turn, until the flush */
  held: Socket | undefined
  /** what to do at the flush, before the socket is uncorked (the answer's end), if anything */
  after: (() => void) | undefined
}

const held: HeldAnswer[] = []

/**
 * Corks `answer`'s socket until the end of this turn (once per turn), so what it writes now waits
 * for the flush; false when it has no socket to cork (what it writes goes at once). The socket, not
 * the response: a corked response keeps its chunks apart, and its end would overtake them.
 */
export function holdWrites(answer: HeldAnswer): boolean {
  if (answer.held !== undefined) return true
  const socket = answer.res.socket
  if (socket === null || socket.destroyed) return false
  answer.held = socket
  socket.cork()
  // The microtask, then the tick: they run once every microtask queued now has run — a waiter that
  // a release granted resumes and dispatches its request in them — so this immediate is queued
  // behind undici's for that request.
  if (held.push(answer) === 1) queueMicrotask(() => process.nextTick(() => setImmediate(flushHeld)))
  return true
}

function flushHeld(): void {
  for (const answer of held.splice(0)) {
    const socket = answer.held!
    answer.held = undefined
    const after = answer.after
    answer.after = undefined
    try {
      // the end first, still corked: the head, the body and the end leave in one write (end() uncorks fully)
      after?.()
    } catch {
      // an answer that cannot be ended is cut off, as a failed one is; the others are still written
      answer.res.destroy()
    } finally {
      socket.uncork()
    }
  }
}
