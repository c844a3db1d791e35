import type { Rate } from '../../rate/gcra.js'
import type { RateNews } from '../../types.js'

/** The channel every replica subscribes to for rate news (docs/redis-limiter.md, "Rates"); the rate script publishes on it. */
export const rateNewsChannel = (prefix: string): string => `${prefix}:rates`

/** The message of one piece of news: JSON, as the script publishes it unchanged. */
export function encodeRateNews(news: RateNews): string {
  return JSON.stringify({
    i: news.key.instance,
    e: news.key.endpoint,
    h: news.holdMs,
    r: news.rate === undefined ? undefined : [news.rate.requests, news.rate.windowMs, news.rate.burst],
    s: news.source,
    t: news.ttlMs,
  })
}

const positive = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v) && v > 0

/** The news a message carries, or undefined for one this release does not read (a newer one's, a broken one). */
export function decodeRateNews(message: string): RateNews | undefined {
  let m: Record<string, unknown>
  try {
    m = JSON.parse(message) as Record<string, unknown>
  } catch {
    return undefined
  }
  if (typeof m !== 'object' || m === null || typeof m.i !== 'string' || typeof m.e !== 'string') return undefined
  const key = { instance: m.i, endpoint: m.e }
  const holdMs = positive(m.h) ? m.h : undefined
  const r = m.r
  const rate: Rate | undefined =
    Array.isArray(r) && r.length === 3 && r.every(positive)
      ? { requests: r[0] as number, windowMs: r[1] as number, burst: r[2] as number }
      : undefined
  const ttlMs = positive(m.t) ? m.t : undefined
  if (rate !== undefined && ttlMs !== undefined)
    return {
      key,
      rate,
      ttlMs,
      source: m.s === 'published' ? 'published' : 'learned',
      ...(holdMs === undefined ? {} : { holdMs }),
    }
  return holdMs === undefined ? undefined : { key, holdMs }
}

/** The rate news channel's end on one replica: decodes each message for the rate limiter around it. */
export class RateNewsHub {
  readonly #listeners = new Set<(news: RateNews) => void>()

  constructor(readonly channel: string) {}

  listen(listener: (news: RateNews) => void): void {
    this.#listeners.add(listener)
  }

  heard(message: string): void {
    const news = decodeRateNews(message)
    if (news !== undefined) for (const listener of this.#listeners) listener(news)
  }
}
