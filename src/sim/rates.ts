/*
 * The sim's stand-in for a rate-limited API (docs/development.md, "The simulated API"): per (instance,
 * endpoint) a sliding window of N starts per W ms, exact — a request with N admitted in the W ms before it
 * gets 429 with Retry-After and the IETF RateLimit fields. What it counts is what the tests check.
 */

/** One endpoint's rate and how its answers tell of it. */
export interface SimRate {
  readonly requests: number
  readonly windowMs: number
  /** `ietf` (default): RateLimit-Policy and RateLimit on every answer; `x`: X-RateLimit-*; `none`: only Retry-After on a 429 */
  readonly fields?: 'ietf' | 'x' | 'none'
}

export interface SimRateStats {
  /** requests refused for being over the rate */
  readonly overRate: number
  /** the most starts admitted within any window of `windowMs` */
  readonly maxInWindow: number
  readonly admitted: number
}

class Window {
  /** admitted start times (monotonic ms), oldest first, at most `requests` of them */
  readonly starts: number[] = []
  overRate = 0
  maxInWindow = 0
  admitted = 0
}

export class SimRates {
  readonly #windows = new Map<string, Window>()

  constructor(private readonly rates: Readonly<Record<string, SimRate>>) {}

  /** Counts a request at `now`: the headers to answer with, and whether it is over the rate. */
  check(
    instance: string,
    endpoint: string,
    now: number,
  ): { over: boolean; headers: Record<string, string> } | undefined {
    const rate = this.rates[endpoint]
    if (rate === undefined) return undefined
    const id = `${instance} ${endpoint}`
    let w = this.#windows.get(id)
    if (w === undefined) this.#windows.set(id, (w = new Window()))
    while (w.starts.length > 0 && w.starts[0]! <= now - rate.windowMs) w.starts.shift()
    const over = w.starts.length >= rate.requests
    if (over) w.overRate++
    else {
      w.starts.push(now)
      w.admitted++
      w.maxInWindow = Math.max(w.maxInWindow, w.starts.length)
    }
    const resetMs = w.starts.length === 0 ? 0 : w.starts[0]! + rate.windowMs - now
    const reset = Math.max(over ? 1 : 0, Math.ceil(resetMs / 1000))
    const remaining = rate.requests - w.starts.length
    const headers: Record<string, string> = over ? { 'retry-after': String(reset) } : {}
    const fields = rate.fields ?? 'ietf'
    if (fields === 'ietf') {
      headers['ratelimit-policy'] = `"sim";q=${rate.requests};w=${Math.max(1, Math.ceil(rate.windowMs / 1000))}`
      headers['ratelimit'] = `"sim";r=${remaining};t=${reset}`
    } else if (fields === 'x') {
      headers['x-ratelimit-limit'] = String(rate.requests)
      headers['x-ratelimit-remaining'] = String(remaining)
      headers['x-ratelimit-reset'] = String(reset)
    }
    return { over, headers }
  }

  /** by `${instance} ${endpoint}` */
  stats(): Record<string, SimRateStats> {
    const out: Record<string, SimRateStats> = {}
    for (const [id, w] of this.#windows)
      out[id] = { overRate: w.overRate, maxInWindow: w.maxInWindow, admitted: w.admitted }
    return out
  }

  reset(): void {
    this.#windows.clear()
  }
}
