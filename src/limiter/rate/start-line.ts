import { randomBytes } from 'node:crypto'

/**
 * The requests of this replica waiting for a start on one key, in the order their permits were granted
 * (the fair queue's order): only the first asks the gate, so a start goes to the request whose turn it
 * is, and one request's wait never costs the gate more than one question per free start
 * (docs/redis-limiter.md, "Rates"). At most the key's concurrency limit wait here: each holds a permit.
 */
export interface Place {
  /** this process's id of the place, unique among every replica's (the Redis gate orders starts by it) */
  readonly id: string
  /** how many were ahead when it joined */
  readonly ahead: number
  /** resolves once it is first in line */
  readonly turn: Promise<void>
  /** out of the line (its start taken, or it gave up); the next one's turn comes. Idempotent. */
  leave(): void
}

interface Waiter {
  resolve: () => void
}

const NOW: Promise<void> = Promise.resolve()
/** unique per process: a place's id is this and a count */
const PROCESS = randomBytes(6).toString('hex')
let places = 0

export class StartLines {
  readonly #lines = new Map<string, Waiter[]>()

  join(id: string): Place {
    let line = this.#lines.get(id)
    if (line === undefined) this.#lines.set(id, (line = []))
    const ahead = line.length
    const waiter: Waiter = { resolve: () => undefined }
    const turn = ahead === 0 ? NOW : new Promise<void>((resolve) => (waiter.resolve = resolve))
    line.push(waiter)
    let left = false
    return {
      id: `${PROCESS}.${(++places).toString(36)}`,
      ahead,
      turn,
      leave: () => {
        if (left) return
        left = true
        this.#leave(id, waiter)
      },
    }
  }

  /** how many wait for a start on the key now (a key whose requests wait for starts is bound by its rate) */
  waiting(id: string): number {
    return this.#lines.get(id)?.length ?? 0
  }

  #leave(id: string, waiter: Waiter): void {
    const line = this.#lines.get(id)
    if (line === undefined) return
    const at = line.indexOf(waiter)
    if (at < 0) return
    line.splice(at, 1)
    if (line.length === 0) this.#lines.delete(id)
    else if (at === 0) line[0]!.resolve()
  }
}
