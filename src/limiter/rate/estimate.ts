import type { Rate } from './gcra.js'

/**
 * A rate nobody publishes, found from `429` + `Retry-After` alone (docs/learned-limits.md, "Rates"): the
 * starts the API accepted in the window before a throttle are what it allows per window. The window is
 * the longest Retry-After seen (at least a second). Cut once per window (a burst's 429s are one
 * signal), to the accepted count and below the rate that still drew a 429; raised by a tenth (at least
 * one) after two windows without a 429 while the rate binds, so a loosened API is found again.
 */
export class RateEstimate {
  /** the window, ms: the longest Retry-After seen, at least a second */
  #windowMs: number
  /** when the API accepted a start of the key (monotonic ms), oldest first, within the window */
  readonly #accepted: number[] = []
  /** the rate in force, 0 until a throttle came with accepted starts to count */
  #requests = 0
  #cutAt = -Infinity
  #changedAt = -Infinity

  constructor(retryAfterMs: number) {
    this.#windowMs = Math.max(MIN_WINDOW_MS, retryAfterMs)
  }

  get rate(): Rate | undefined {
    return this.#requests === 0 ? undefined : { requests: this.#requests, windowMs: this.#windowMs, burst: 1 }
  }

  /** A throttle with its Retry-After: the new rate, or undefined when unchanged. */
  throttled(retryAfterMs: number, now: number): Rate | undefined {
    const widened = retryAfterMs > this.#windowMs
    if (widened) this.#windowMs = retryAfterMs
    if (now - this.#cutAt < this.#windowMs && !widened) return undefined
    const accepted = this.#within(now)
    if (accepted === 0) return undefined
    const next = this.#requests === 0 ? accepted : Math.max(1, Math.min(accepted, this.#requests - 1))
    this.#cutAt = this.#changedAt = now
    if (next === this.#requests && !widened) return undefined
    this.#requests = next
    return this.rate
  }

  /** The API accepted a start; `binds`: requests wait for their start now. The raised rate, or undefined. */
  accepted(now: number, binds: boolean): Rate | undefined {
    if (this.#accepted.length < MAX_LOG) this.#accepted.push(now)
    this.#within(now)
    const quiet = 2 * this.#windowMs
    if (this.#requests === 0 || !binds || now - this.#changedAt < quiet || now - this.#cutAt < quiet) return undefined
    this.#requests += Math.max(1, Math.floor(this.#requests / 10))
    this.#changedAt = now
    return this.rate
  }

  /** Drops what left the window; how many are left. */
  #within(now: number): number {
    let drop = 0
    while (drop < this.#accepted.length && this.#accepted[drop]! <= now - this.#windowMs) drop++
    if (drop > 0) this.#accepted.splice(0, drop)
    return this.#accepted.length
  }
}

/** No API worth learning counts in windows shorter than a second (Retry-After has whole seconds). */
const MIN_WINDOW_MS = 1_000
/** A bound on the log: an API allowing more than this per window is not slowed by learning it. */
const MAX_LOG = 10_000
