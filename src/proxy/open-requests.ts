import type { ServerResponse } from 'node:http'

/**
 * The proxy port's requests still open (queued, in flight, or an answer being written), so a shutdown
 * keeps serving its queue until they are done (docs/deploy.md, "Graceful shutdown"). The RequestTracker
 * reports each request (`added` when it is first tracked, `removed` at its response's `close`, the
 * listener it has anyway). A linked list, not a Set: a Set hashes each new response, 0.55–0.99 µs a
 * request, where linking costs 0.01–0.02 µs (docs/benchmarks.md, "The memory budget against resident memory").
 */
export class OpenRequests {
  #head: OpenEntry | undefined
  #size = 0
  #closing = false
  #onEmpty: (() => void) | undefined

  added(res: ServerResponse): OpenEntry {
    // Fastify adds `Connection: close` to a request that arrives while it closes; one already open is ours to mark.
    if (this.#closing) res.shouldKeepAlive = false
    const entry: OpenEntry = { res, prev: undefined, next: this.#head, linked: true }
    if (this.#head !== undefined) this.#head.prev = entry
    this.#head = entry
    this.#size++
    return entry
  }

  removed(entry: OpenEntry): void {
    if (!entry.linked) return
    entry.linked = false
    if (entry.prev !== undefined) entry.prev.next = entry.next
    else this.#head = entry.next
    if (entry.next !== undefined) entry.next.prev = entry.prev
    entry.prev = entry.next = undefined
    if (--this.#size === 0) this.#onEmpty?.()
  }

  get size(): number {
    return this.#size
  }

  /**
   * Shutting down: every answer not started yet closes its connection after it (`Connection: close`), so
   * keep-alive clients open their next connection to a replica that stays.
   */
  closing(): void {
    this.#closing = true
    for (let e = this.#head; e !== undefined; e = e.next) if (!e.res.headersSent) e.res.shouldKeepAlive = false
  }

  /** Resolves true once no request is open, or false after `ms` (the timer unref'd and cleared). */
  done(ms: number): Promise<boolean> {
    if (this.#size === 0) return Promise.resolve(true)
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.#onEmpty = undefined
        resolve(false)
      }, ms)
      timer.unref()
      this.#onEmpty = () => {
        this.#onEmpty = undefined
        clearTimeout(timer)
        resolve(true)
      }
    })
  }
}

/** One open request in the list. */
export interface OpenEntry {
  readonly res: ServerResponse
  prev: OpenEntry | undefined
  next: OpenEntry | undefined
  linked: boolean
}
