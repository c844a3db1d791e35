/**
 * The contention scenario: 60 closed-loop clients on 2 organisations × 4 endpoints (two of limit 1,
 * two of limit 5), an API that takes 50 ms a request, in front of one or several proxies (the
 * clients spread over them). What counts is the sim's own view: each key's utilisation (time-integral
 * of requests in progress / (limit × time)), the most in progress at once, its 429s, and the handoff
 * idle time — from a request leaving a full key to the next one arriving (src/sim/stats.ts).
 */
import { Pool } from 'undici'
import type { SimStats } from '../../src/sim/stats.js'
import type { LimitedRoute } from './haproxy.js'

export const API_MS = 50
export const LOOPS = 60
const basic = (org: string): string => `Basic ${Buffer.from(`${org}:bench-key`).toString('base64')}`

// `{n}`: each client reads its own record, so no two reads are identical (sluice would share one
// call between identical concurrent reads: README "Spending fewer permits").
const ENDPOINTS = [
  { method: 'POST', path: '/v2/accounts/search', endpoint: 'POST /accounts/search', limit: 1 },
  { method: 'POST', path: '/v2/donations/search', endpoint: 'POST /donations/search', limit: 1 },
  { method: 'GET', path: '/v2/accounts/{n}/contacts', endpoint: 'GET /accounts/{id}/contacts', limit: 5 },
  { method: 'GET', path: '/v2/donations/{n}', endpoint: 'GET /donations/{id}', limit: 5 },
] as const
const ORGS = ['org1', 'org2'] as const

/** The scenario's 8 keys, as routes (for HAProxy's backends). */
export const CONTENTION_ROUTES: readonly (LimitedRoute & { readonly org: string; readonly endpoint: string })[] =
  ORGS.flatMap((org) =>
    ENDPOINTS.map((e) => ({
      org,
      endpoint: e.endpoint,
      authorization: basic(org),
      method: e.method,
      path: e.path,
      limit: e.limit,
    })),
  )

export interface ContentionFigures {
  readonly requests: number
  /** the lowest utilisation of the 8 keys, and the key */
  readonly minUtilisation: number
  readonly minKey: string
  /** limit-1 keys and limit-5 keys: their lowest */
  readonly minUtilisationByLimit: Readonly<Record<1 | 5, number>>
  readonly handoffP50Ms: number | null
  readonly handoffP99Ms: number | null
  readonly handoffs: number
  /** whether any key ever had more in progress than its limit (never, for a limiter that works) */
  readonly overLimit: boolean
  readonly upstream429s: number
  readonly clientNon200: number
  /**
   * A limit-1 request's whole time as its client saw it (sent → answer read, the API's 50 ms included),
   * p50 and p99: FIFO keeps p99 ÷ p50 near 1; a limiter that lets some requests pass others far more
   */
  readonly limit1P50Ms: number
  readonly limit1P99Ms: number
}

const quantile = (sorted: readonly number[], q: number): number =>
  sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!

async function simJson(simUrl: string, path: string, method = 'GET'): Promise<unknown> {
  const res = await fetch(`${simUrl}${path}`, { method })
  return res.status === 204 ? undefined : res.json()
}

/**
 * Runs the scenario for `durationMs` after a warm-up against `proxies` (client i uses proxy i mod n),
 * with `between` called at the start and the end of the measured window (to read Redis's counters).
 */
export async function runContention(
  simUrl: string,
  proxies: readonly string[],
  durationMs: number,
  between?: (phase: 'start' | 'end') => Promise<void>,
): Promise<ContentionFigures> {
  const pools = proxies.map((url) => new Pool(url, { connections: LOOPS, keepAliveTimeout: 60_000 }))
  let stop = false
  let measuring = false
  let non200 = 0
  const limit1Ms: number[] = []
  const loops = Array.from({ length: LOOPS }, async (_, i) => {
    const route = CONTENTION_ROUTES[i % CONTENTION_ROUTES.length]!
    const pool = pools[i % pools.length]!
    const path = route.path.replace('{n}', String(1000 + i))
    const headers = {
      authorization: route.authorization,
      'neon-api-version': '2.12',
      ...(route.method === 'POST' ? { 'content-type': 'application/json' } : {}),
    }
    while (!stop) {
      try {
        const sent = performance.now()
        const res = await pool.request({
          path,
          method: route.method,
          headers,
          body: route.method === 'POST' ? '{}' : null,
        })
        await res.body.dump()
        if (measuring && route.limit === 1) limit1Ms.push(performance.now() - sent)
        if (measuring && res.statusCode !== 200) non200++
      } catch {
        if (measuring) non200++
        await new Promise((r) => setTimeout(r, 10))
      }
    }
  })
  try {
    await new Promise((r) => setTimeout(r, 2_000)) // warm-up: every queue filled
    await simJson(simUrl, '/__sim/reset', 'POST')
    await between?.('start')
    measuring = true
    await new Promise((r) => setTimeout(r, durationMs))
    const stats = (await simJson(simUrl, '/__sim/stats')) as SimStats
    await between?.('end')
    measuring = false
    const sorted = limit1Ms.sort((a, b) => a - b)
    let requests = 0
    let upstream429s = 0
    let overLimit = false
    let min = { utilisation: Infinity, key: '' }
    const byLimit: Record<1 | 5, number> = { 1: Infinity, 5: Infinity }
    for (const route of CONTENTION_ROUTES) {
      const id = `${route.org} ${route.endpoint}`
      const s = stats.keys[id]
      if (s === undefined) throw new Error(`the sim saw no request for ${id}`)
      const utilisation = s.requestMs / (route.limit * stats.elapsedMs)
      requests += s.requests - s.rejected429
      upstream429s += s.rejected429
      if (s.maxInProgress > route.limit) overLimit = true
      if (utilisation < min.utilisation) min = { utilisation, key: id }
      const limit = route.limit as 1 | 5
      byLimit[limit] = Math.min(byLimit[limit], utilisation)
    }
    return {
      requests,
      minUtilisation: min.utilisation,
      minKey: min.key,
      minUtilisationByLimit: byLimit,
      handoffP50Ms: stats.handoffs.p50Ms,
      handoffP99Ms: stats.handoffs.p99Ms,
      handoffs: stats.handoffs.count,
      overLimit,
      upstream429s,
      clientNon200: non200,
      limit1P50Ms: quantile(sorted, 0.5),
      limit1P99Ms: quantile(sorted, 0.99),
    }
  } finally {
    stop = true
    await Promise.all(loops)
    await Promise.all(pools.map((p) => p.close()))
  }
}
