/**
 * `npm run bench -- rates`, the second part: how close to the API's allowance a bursty job gets, and how
 * many 429s the API answers on the way. The sim allows 20 starts per 2 s (an exact sliding window) on
 * `GET /accounts/{id}/contacts` and tells of it as each style does: (a) not at all, the rate configured in
 * sluice; (b) `RateLimit-Policy` + `RateLimit`; (c) `X-RateLimit-*`; (d) only `429` + `Retry-After`, nothing
 * configured. The job: 60 requests at once, then 60 more once those are answered, spread over the
 * replicas. Judged by the sim: API 429s per 100 requests; starts achieved ÷ allowed, where allowed is
 * what a sliding window lets through from the first start to the last, N · (1 + T / W). Once in process,
 * once with two replicas on one Redis. Needs `npm run build` (dist/main.js).
 */
import { startRedis } from '../../test/support/redis.js'
import { withProxies, type ProxyProcess } from '../../test/support/process.js'
import { send } from '../../test/support/http.js'
import { startSim } from '../../src/sim/index.js'
import type { SimRate } from '../../src/sim/rates.js'

const ENDPOINT = 'GET /accounts/{id}/contacts'
const RATE = { requests: 20, windowMs: 2000 }
const BURST = 60
const basic = (org: string): string => `Basic ${Buffer.from(`${org}:bench-key`).toString('base64')}`

interface Style {
  readonly name: string
  readonly fields: NonNullable<SimRate['fields']>
  readonly configured: boolean
}

const STYLES: readonly Style[] = [
  { name: '(a) configured rate', fields: 'none', configured: true },
  { name: '(b) RateLimit headers', fields: 'ietf', configured: false },
  { name: '(c) X-RateLimit-*', fields: 'x', configured: false },
  { name: '(d) 429 + Retry-After only', fields: 'none', configured: false },
]

export interface AllowanceRow {
  readonly style: string
  readonly setup: string
  readonly requests: number
  readonly api429sPer100: number
  readonly achievedOfAllowed: number
  readonly clientNon200: number
  /** EVALSHAs of the `rate` script per request, every replica's (Redis only) */
  readonly rateScriptsPerRequest?: number
}

/** Runs of the `rate` script a replica counted (its `sluice_redis_command_duration_seconds_count{operation="rate"}`). */
async function rateScripts(proxy: ProxyProcess): Promise<number> {
  const text = await (await fetch(`${proxy.adminUrl}/metrics`)).text()
  const line = text
    .split('\n')
    .find((l) => l.startsWith('sluice_redis_command_duration_seconds_count{operation="rate"'))
  return line === undefined ? 0 : Number(line.split(' ').pop())
}

async function job(proxies: readonly ProxyProcess[]): Promise<number> {
  let non200 = 0
  let seq = 0
  for (let burst = 0; burst < 2; burst++)
    await Promise.all(
      Array.from({ length: BURST }, async () => {
        const i = ++seq
        const answer = await send(proxies[i % proxies.length]!.url, `/v2/accounts/${i}/contacts`, {
          headers: { authorization: basic('org1') },
        }).catch(() => ({ status: 0 }))
        if (answer.status !== 200) non200++
      }),
    )
  return non200
}

async function one(style: Style, replicas: number, redisUrl: string | undefined): Promise<AllowanceRow> {
  const sim = await startSim({ rates: { [ENDPOINT]: { ...RATE, fields: style.fields } }, latencyMs: 20 })
  try {
    const env: Record<string, string> = { SLUICE_UPSTREAM: sim.apiUrl, SLUICE_REQUEST_LOG: 'false' }
    // configured as the API counts: N at once, N again a window later (burst = requests, a sliding log)
    if (style.configured) env.SLUICE_LIMITS_RATES = JSON.stringify({ [ENDPOINT]: { ...RATE, burst: RATE.requests } })
    if (redisUrl !== undefined) {
      env.SLUICE_REDIS_URL = redisUrl
      env.SLUICE_REDIS_KEY_PREFIX = `bench-rates-${Date.now()}-${Math.random().toString(36).slice(2)}`
    }
    let scripts = 0
    const non200 = await withProxies(replicas, env, async (proxies) => {
      const n = await job(proxies)
      for (const p of proxies) scripts += await rateScripts(p)
      return n
    })
    const starts = sim
      .stats()
      .arrivals.filter((a) => a.endpoint === ENDPOINT && a.outcome === 'admitted')
      .map((a) => a.atMs)
    const spanMs = Math.max(...starts) - Math.min(...starts)
    const allowed = RATE.requests * (1 + spanMs / RATE.windowMs)
    const stats = sim.rateStats()[`org1 ${ENDPOINT}`]!
    return {
      style: style.name,
      setup: redisUrl === undefined ? 'in process' : `Redis, ${replicas} replicas`,
      requests: 2 * BURST,
      api429sPer100: (100 * stats.overRate) / (2 * BURST),
      achievedOfAllowed: starts.length / allowed,
      clientNon200: non200,
      ...(redisUrl === undefined ? {} : { rateScriptsPerRequest: scripts / (2 * BURST) }),
    }
  } finally {
    await sim.close()
  }
}

/** `SLUICE_BENCH_RATES_ONLY=b,c` runs those styles only; `SLUICE_BENCH_RATES_SETUP=redis` only on Redis (while working on one). */
const only = (process.env.SLUICE_BENCH_RATES_ONLY ?? 'a,b,c,d').split(',')
const chosen = STYLES.filter((s) => only.includes(s.name.charAt(1)))
const setups = process.env.SLUICE_BENCH_RATES_SETUP ?? 'both'

export async function runAllowanceBench(): Promise<string> {
  const rows: AllowanceRow[] = []
  if (setups !== 'redis') for (const style of chosen) rows.push(await one(style, 1, undefined))
  const redis = await startRedis()
  try {
    if (setups !== 'memory') for (const style of chosen) rows.push(await one(style, 2, redis.url))
  } finally {
    await redis.close()
  }
  const lines = [
    `A bursty job (${BURST} at once, twice) against ${RATE.requests} per ${RATE.windowMs / 1000} s, sim at 20 ms a request`,
    '',
    '| how the rate is known | setup | API 429s per 100 requests | starts achieved ÷ allowed | clients not 200 | `rate` scripts per request |',
    '|---|---|---:|---:|---:|---:|',
  ]
  for (const r of rows)
    lines.push(
      `| ${r.style} | ${r.setup} | ${r.api429sPer100.toFixed(1)} | ${r.achievedOfAllowed.toFixed(2)} | ${r.clientNon200} | ${r.rateScriptsPerRequest?.toFixed(2) ?? '–'} |`,
    )
  return lines.join('\n')
}

if (import.meta.url === `file://${process.argv[1]}`) console.log(await runAllowanceBench())
