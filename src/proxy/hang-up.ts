/**
 * Whether the client has hung up, with an AbortSignal for what waits on it. The signal is made on
 * first use: most requests never wait (docs/benchmarks.md, "Where a queued request's heap goes (live bytes)").
 */
export class HangUp {
  gone = false
  #controller: AbortController | undefined

  get signal(): AbortSignal {
    if (this.#controller === undefined) {
      this.#controller = new AbortController()
      if (this.gone) this.#controller.abort(hungUp())
    }
    return this.#controller.signal
  }

  /** The client has gone: whatever waits on the signal stops waiting. */
  hangUp(): void {
    if (this.gone) return
    this.gone = true
    this.#controller?.abort(hungUp())
  }
}

const hungUp = (): DOMException => new DOMException('the client hung up', 'AbortError')
