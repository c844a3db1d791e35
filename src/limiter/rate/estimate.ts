import type { Rate } from './gcra.js'

/**
 * A rate nobody publishes, found from `429` + `Retry-After` alone (docs/learned-limits.md, "Rates"): the
 * starts the API accepted in the window before a throttle are what it allows per window. The window is
 * the longest Retry-After seen (at least a second). Cut once per window (a burst's 429s are one
 * signal), to the accepted count and below the rate that still drew a 429; raised while the rate binds
 * — by half after a quiet window while far below the rate that drew the last cut, by one after two
 * quiet windows near it, by half again once at it for two quiet windows — so a loosened API is found again.
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
  /** one above what the API accepted in the window of the last cut (0: none yet): probes near it go one at a time */
  #bad = 0
  /** since when the log counts every accepted start: the first estimate waits for a whole window counted */
  #since: number

  constructor(retryAfterMs: number, now: number) {
    this.#windowMs = Math.max(MIN_WINDOW_MS, retryAfterMs)
    this.#since = now
  }

  get rate(): Rate | undefined {
    return this.#requests === 0 ? undefined : { requests: this.#requests, windowMs: this.#windowMs, burst: 1 }
  }

  /** A throttle now would find a rate (one is found, or a whole window has been counted), if any start was accepted. */
  finds(now: number): boolean {
    return this.#requests > 0 || now - this.#since >= this.#windowMs
  }

  /** the window the accepted starts are counted over, ms */
  get windowMs(): number {
    return this.#windowMs
  }

  /**
   * A throttle with its Retry-After: the new rate, or undefined when unchanged. `shared`: the starts every
   * replica's answers accepted in the window, as Redis counted them (else this replica's own log).
   */
  throttled(retryAfterMs: number, now: number, shared?: number): Rate | undefined {
    const widened = retryAfterMs > this.#windowMs
    if (widened) {
      // the log holds only the old window's starts, not the wider one's: the rate in force is carried over
      // to the wider window (scaled) and cut by one, as any throttle; the next throttle counts it whole
      const scale = retryAfterMs / this.#windowMs
      this.#since = Math.max(this.#since, now - this.#windowMs)
      this.#windowMs = retryAfterMs
      if (this.#requests > 0) {
        this.#requests = Math.max(1, Math.floor(this.#requests * scale) - 1)
        if (this.#bad > 0) this.#bad = Math.floor(this.#bad * scale)
        this.#cutAt = this.#changedAt = now
        return this.rate
      }
    }
    if (now - this.#cutAt < this.#windowMs && !widened) return undefined
    const accepted = Math.max(this.#within(now), shared ?? 0)
    // the starts before counting began are not in the log: a first estimate needs a whole window counted
    if (accepted === 0 || (this.#requests === 0 && now - this.#since < this.#windowMs)) return undefined
    const next = this.#requests === 0 ? accepted : Math.max(1, Math.min(accepted, this.#requests - 1))
    // the API took `accepted` in its window and refused one more: one above is where probing goes slowly
    this.#bad = accepted + 1
    this.#cutAt = this.#changedAt = now
    if (next === this.#requests && !widened) return undefined
    this.#requests = next
    return this.rate
  }

  /** The API accepted a start; `binds`: requests wait for their start now. The raised rate, or undefined. */
  accepted(now: number, binds: boolean): Rate | undefined {
    if (this.#accepted.length < MAX_LOG) this.#accepted.push(now)
    this.#within(now)
    // far below the rate that drew the last cut (or none yet): half again after a quiet window; near
    // it, one more after two, so the API's rate is tried about every other window (learned-limits.md, "Rates")
    let near = this.#bad > 0 && this.#requests + 1 >= this.#bad
    const quiet = (near ? 2 : 1) * this.#windowMs
    if (this.#requests === 0 || !binds || now - this.#changedAt < quiet || now - this.#cutAt < quiet) return undefined
    // at or past the rate that drew the last cut, and no 429 for two windows: the API allows it (it loosened,
    // or the cut came low) — that rate no longer slows the probe, which grows by half again
    if (near && this.#requests >= this.#bad) {
      this.#bad = 0
      near = false
    }
    const step = near ? 1 : Math.max(1, Math.floor(this.#requests / 2))
    this.#requests = this.#bad > 0 && !near ? Math.min(this.#bad - 1, this.#requests + step) : this.#requests + step
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
