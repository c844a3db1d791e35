import type { ServerResponse } from 'node:http'
import type { Socket } from 'node:net'

/**
 * An answer whose writes wait until the requests to the API this turn started have been written, so
 * the request a freed permit let start is not overtaken by the answer that freed it (docs/benchmarks.md,
 * "Where an in-process handoff's time goes").
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
 * Corks `answer`'s socket until this turn's flush; false when it has none (its writes go at once).
 * The socket, not the response: a corked response's end would overtake its chunks.
 */
export function holdWrites(answer: HeldAnswer): boolean {
  if (answer.held !== undefined) return true
  const socket = answer.res.socket
  if (socket === null || socket.destroyed) return false
  answer.held = socket
  socket.cork()
  // After every microtask queued now (where a granted waiter dispatches its request), so this
  // immediate comes after undici's for that request.
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
