import type { Server, ServerResponse } from 'node:http'

/**
 * The proxy port's requests still open (queued, in flight, or an answer being written), so a shutdown
 * keeps serving its queue until they are done (docs/deploy.md, "Graceful shutdown"). Per request: one
 * Set entry and one `close` listener while it is open; nothing once it closed.
 */
export class OpenRequests {
  readonly #open = new Set<ServerResponse>()
  #closing = false
  #onEmpty: (() => void) | undefined

  constructor(server: Server) {
    server.on('request', (_req, res: ServerResponse) => {
      // Fastify adds `Connection: close` to a request that arrives while it closes; one already open is ours to mark.
      if (this.#closing) res.shouldKeepAlive = false
      this.#open.add(res)
      res.once('close', () => {
        this.#open.delete(res)
        if (this.#open.size === 0) this.#onEmpty?.()
      })
    })
  }

  get size(): number {
    return this.#open.size
  }

  /**
   * Shutting down: every answer not started yet closes its connection after it (`Connection: close`), so
   * keep-alive clients open their next connection to a replica that stays.
   */
  closing(): void {
    this.#closing = true
    for (const res of this.#open) if (!res.headersSent) res.shouldKeepAlive = false
  }

  /** Resolves true once no request is open, or false after `ms` (the timer unref'd and cleared). */
  done(ms: number): Promise<boolean> {
    if (this.#open.size === 0) return Promise.resolve(true)
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
