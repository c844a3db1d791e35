/**
 * A key's safety timer: a sync a little after the nearest lease ends on Redis's clock, so the holder
 * is expired when the sync looks (docs/redis-limiter.md, "Leases"). Part of KeySemaphore.
 */
export class SafetyTimer {
  #timer: NodeJS.Timeout | undefined
  #at = 0

  /** Armed for `delayMs` (plus 5 ms) from `now`, unless one armed already fires sooner. */
  arm(delayMs: number, now: number, fire: () => void): void {
    const at = now + delayMs + 5
    if (this.#timer && this.#at <= at) return
    this.stop()
    this.#at = at
    this.#timer = setTimeout(() => {
      this.#timer = undefined
      fire()
    }, delayMs + 5)
    this.#timer.unref()
  }

  stop(): void {
    if (this.#timer) clearTimeout(this.#timer)
    this.#timer = undefined
  }
}
