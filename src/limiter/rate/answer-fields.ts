import type { IncomingHttpHeaders } from 'node:http'
import type { Rate } from './gcra.js'

/**
 * What an upstream's answer says about its rate (docs/learned-limits.md, "Rates"): `Retry-After`, the IETF
 * httpapi fields `RateLimit-Policy: "name";q=100;w=10` and `RateLimit: "name";r=0;t=5`, and the older
 * `X-RateLimit-Remaining` / `X-RateLimit-Reset`.
 */
export interface RateEvidence {
  /** a rate the answer published (the strictest of its policies) */
  readonly rate?: Rate
  /** ms nobody should start for: the quota is spent (r=0, remaining 0) or a Retry-After on a throttled status */
  readonly holdMs?: number
  /** how many of the window's quota the API has counted already (quota − the least `r` remaining), when it says */
  readonly used?: number
  /** the answer says a quota per window is spent (`r=0`, `X-RateLimit-Remaining: 0`): its 429 is the rate's, not concurrency's */
  readonly quotaSpent?: true
  /**
   * `rate` came from `X-RateLimit-Limit`, its window from this answer's `-Reset`: the window is at least
   * that long (the longest reset seen is kept; docs/learned-limits.md, "Rates")
   */
  readonly windowFromReset?: true
}

const first = (v: string | string[] | undefined): string | undefined => (Array.isArray(v) ? v[0] : v)

/** True when the answer carries any field worth reading: most answers of most APIs carry none, and cost this. */
export function hasRateFields(headers: IncomingHttpHeaders, throttled: boolean): boolean {
  return (
    headers['ratelimit-policy'] !== undefined ||
    headers['ratelimit'] !== undefined ||
    headers['x-ratelimit-remaining'] !== undefined ||
    (throttled && headers['retry-after'] !== undefined)
  )
}

export function readRateEvidence(headers: IncomingHttpHeaders, throttled: boolean, now: number): RateEvidence {
  const holds: number[] = []
  if (throttled) {
    const after = retryAfterMs(first(headers['retry-after']), now)
    if (after !== undefined) holds.push(after)
  }
  const rate = strictestPolicy(first(headers['ratelimit-policy']))
  const spent = spentQuotaMs(first(headers['ratelimit']))
  if (spent !== undefined) holds.push(spent)
  const xSpent = xRateLimitSpentMs(first(headers['x-ratelimit-remaining']), first(headers['x-ratelimit-reset']), now)
  if (xSpent !== undefined) holds.push(xSpent)
  const holdMs = holds.length === 0 ? undefined : Math.max(...holds)
  const xRate = rate === undefined ? xRateLimit(headers, now) : undefined
  const remaining = xRate?.remaining ?? leastRemaining(first(headers['ratelimit']))
  const known = rate ?? xRate?.rate
  const used = known === undefined || remaining === undefined ? undefined : Math.max(0, known.requests - remaining)
  const quotaSpent = spent !== undefined || xSpent !== undefined
  return {
    ...(known === undefined ? {} : { rate: known }),
    ...(xRate === undefined ? {} : { windowFromReset: true as const }),
    ...(holdMs === undefined || holdMs <= 0 ? {} : { holdMs }),
    ...(used === undefined ? {} : { used }),
    ...(quotaSpent ? { quotaSpent: true as const } : {}),
  }
}

/** Retry-After as delta seconds or an HTTP date, in ms. */
export function retryAfterMs(text: string | undefined, now: number): number | undefined {
  if (text === undefined) return undefined
  const t = text.trim()
  if (/^\d{1,9}$/.test(t)) return Number(t) * 1000
  const date = Date.parse(t)
  return Number.isNaN(date) ? undefined : Math.max(0, date - now)
}

/** The items of a structured-field list, each with its parameters (RFC 9651; enough of it for these two fields). */
function listItems(text: string): Array<Map<string, string>> {
  const items: Array<Map<string, string>> = []
  // a comma inside a quoted name would split wrongly; names are tokens or short strings in practice
  for (const item of text.split(',')) {
    const params = new Map<string, string>()
    const parts = item.split(';')
    for (const part of parts.slice(1)) {
      const eq = part.indexOf('=')
      if (eq > 0) params.set(part.slice(0, eq).trim(), part.slice(eq + 1).trim())
    }
    items.push(params)
  }
  return items
}

/** The largest published quota followed as a sliding log (N start times per key: docs/learned-limits.md, "Rates"). */
export const PUBLISHED_LOG_MAX = 256

const wholeNumber = (v: string | undefined): number | undefined =>
  v !== undefined && /^\d{1,12}$/.test(v) ? Number(v) : undefined

/**
 * The policy with the longest spacing (w / q), in requests per window: with several, the strictest, so no
 * one of them is passed (a daily quota among them makes this slow; docs/learned-limits.md, "Rates").
 * Policies counting anything but requests (`qu` other than "requests") are left out.
 */
function strictestPolicy(text: string | undefined): Rate | undefined {
  if (text === undefined) return undefined
  let best: Rate | undefined
  for (const params of listItems(text)) {
    const q = wholeNumber(params.get('q'))
    const w = wholeNumber(params.get('w'))
    const unit = params.get('qu')
    if (q === undefined || w === undefined || q < 1 || w < 1 || (unit !== undefined && unit !== '"requests"')) continue
    // q at once and q again a window later (a sliding log) while its memory stays small; else evenly spaced
    const rate: Rate = { requests: q, windowMs: w * 1000, burst: q <= PUBLISHED_LOG_MAX ? q : 1 }
    if (best === undefined || rate.windowMs / rate.requests > best.windowMs / best.requests) best = rate
  }
  return best
}

/** `RateLimit: "name";r=0;t=5`: a spent quota, nobody starts for t seconds (the longest of those spent). */
function spentQuotaMs(text: string | undefined): number | undefined {
  if (text === undefined) return undefined
  let hold: number | undefined
  for (const params of listItems(text)) {
    const r = wholeNumber(params.get('r'))
    const t = wholeNumber(params.get('t'))
    if (r === 0 && t !== undefined) hold = Math.max(hold ?? 0, t * 1000)
  }
  return hold
}

/** The least `r` of `RateLimit`'s items. */
function leastRemaining(text: string | undefined): number | undefined {
  if (text === undefined) return undefined
  let least: number | undefined
  for (const params of listItems(text)) {
    const r = wholeNumber(params.get('r'))
    if (r !== undefined) least = Math.min(least ?? r, r)
  }
  return least
}

/**
 * `X-RateLimit-Limit` with `-Remaining` and `-Reset`: the quota, what is left of it, and a window at least
 * as long as the time to the reset (the window itself is not published).
 */
function xRateLimit(headers: IncomingHttpHeaders, now: number): { rate: Rate; remaining: number } | undefined {
  const limit = wholeNumber(first(headers['x-ratelimit-limit'])?.trim())
  const remaining = wholeNumber(first(headers['x-ratelimit-remaining'])?.trim())
  const reset = resetMs(first(headers['x-ratelimit-reset']), now)
  if (limit === undefined || limit < 1 || remaining === undefined || reset === undefined) return undefined
  const windowMs = Math.max(1000, reset)
  return { rate: { requests: limit, windowMs, burst: limit <= PUBLISHED_LOG_MAX ? limit : 1 }, remaining }
}

/** `X-RateLimit-Reset`: seconds from now, or (past 10^9) an epoch second; ms. */
function resetMs(text: string | undefined, now: number): number | undefined {
  const value = wholeNumber(text?.trim())
  if (value === undefined) return undefined
  return value > 1e9 ? Math.max(0, value * 1000 - now) : value * 1000
}

/** `X-RateLimit-Remaining: 0` with `X-RateLimit-Reset`: seconds from now, or (past 10^9) an epoch second. */
function xRateLimitSpentMs(remaining: string | undefined, reset: string | undefined, now: number): number | undefined {
  if (wholeNumber(remaining?.trim()) !== 0) return undefined
  return resetMs(reset, now)
}
