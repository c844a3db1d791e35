/**
 * Whether the client has hung up, with an AbortSignal for what must wait on it (a queue, a back-off).
 * The signal is made on first use: most requests never wait, and an AbortController is one of the
 * dearer objects a request would otherwise build (see bench/ profiles).
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
