/**
 * The upstream kept busy through sluice: 60 closed-loop clients against the sim (20 ms per request),
 * half on a limit-1 key (POST /accounts/search) and half on a limit-5 key (GET /donations/{id}),
 * through one sluice with the in-process limiter, and spread over three sluice replicas sharing one
 * Redis. Utilisation is the sim's own figure: time-integral of requests in progress / (limit × time).
 * Needs `npm run build` (dist/main.js). SLUICE_BENCH_DURATION_MS sets the measuring time.
 */
import { startRedis } from '../../test/support/redis.js'
import { spawnProxy, withProxies, type ProxyProcess } from '../../test/support/process.js'
import { send } from '../../test/support/http.js'
import { startSim } from '../../src/sim/index.js'

const basic = (org: string): string => `Basic ${Buffer.from(`${org}:bench-key`).toString('base64')}`
const KEYS = [
  { instance: 'org1', endpoint: 'POST /accounts/search', method: 'POST', path: '/v2/accounts/search', limit: 1 },
  { instance: 'org2', endpoint: 'GET /donations/{id}', method: 'GET', path: '/v2/donations/7', limit: 5 },
] as const

export interface ReplicasRow {
  readonly setup: string
  readonly key: string
  readonly limit: number
  readonly requestsPerSecond: number
  readonly utilisation: number
  readonly maxInProgress: number
  readonly upstream429s: number
  readonly clientNon200: number
}

async function drive(
  proxies: readonly ProxyProcess[],
  durationMs: number,
  sim: Awaited<ReturnType<typeof startSim>>,
  setup: string,
): Promise<ReplicasRow[]> {
  let stop = false
  let measuring = false
  const non200 = new Map<string, number>()
  const clients = Array.from({ length: 60 }, async (_, i) => {
    const key = KEYS[i % 2]!
    const proxy = proxies[i % proxies.length]!
    while (!stop) {
      const answer = await send(proxy.url, key.path, {
        method: key.method,
        headers: { authorization: basic(key.instance) },
        body: key.method === 'POST' ? '{}' : undefined,
      })
      if (measuring && answer.status !== 200) non200.set(key.endpoint, (non200.get(key.endpoint) ?? 0) + 1)
    }
  })
  await new Promise((r) => setTimeout(r, 1_000)) // warm up: queues full
  sim.reset()
  measuring = true
  await new Promise((r) => setTimeout(r, durationMs))
  const stats = sim.stats()
  measuring = false
  stop = true
  await Promise.all(clients)
  return KEYS.map((k) => {
    const s = stats.keys[`${k.instance} ${k.endpoint}`]
    return {
      setup,
      key: k.endpoint,
      limit: k.limit,
      requestsPerSecond: s ? (s.requests - s.rejected429) / (stats.elapsedMs / 1000) : 0,
      utilisation: s ? s.requestMs / (k.limit * stats.elapsedMs) : 0,
      maxInProgress: s?.maxInProgress ?? 0,
      upstream429s: s?.rejected429 ?? 0,
      clientNon200: non200.get(k.endpoint) ?? 0,
    }
  })
}

export async function runReplicasBenchRows(
  durationMs = Number(process.env.SLUICE_BENCH_DURATION_MS ?? 5_000),
): Promise<ReplicasRow[]> {
  const sim = await startSim({ latencyMs: 20 })
  const redis = await startRedis()
  const base = { SLUICE_UPSTREAM: sim.apiUrl, SLUICE_REQUEST_LOG: 'false' }
  const rows: ReplicasRow[] = []
  try {
    const single = await spawnProxy(base)
    try {
      rows.push(...(await drive([single], durationMs, sim, '1 sluice, in-process limiter')))
    } finally {
      await single.stop()
    }
    rows.push(
      ...(await withProxies(3, { ...base, SLUICE_REDIS_URL: redis.url }, (replicas) =>
        drive(replicas, durationMs, sim, '3 sluice replicas, Redis limiter'),
      )),
    )
  } finally {
    await redis.close()
    await sim.close()
  }
  return rows
}

export function replicasTable(rows: readonly ReplicasRow[]): string {
  const lines = [
    '| setup | key (limit) | upstream requests/s | upstream utilisation | max in progress at the API | API 429s | client answers ≠ 200 |',
    '|---|---|---|---|---|---|---|',
  ]
  for (const r of rows) {
    lines.push(
      `| ${r.setup} | ${r.key} (${r.limit}) | ${r.requestsPerSecond.toFixed(1)} | ${r.utilisation.toFixed(3)} | ${r.maxInProgress} | ${r.upstream429s} | ${r.clientNon200} |`,
    )
  }
  return lines.join('\n')
}

/** The table for `npm run bench`. */
export async function runReplicasBench(): Promise<string> {
  return replicasTable(await runReplicasBenchRows())
}
