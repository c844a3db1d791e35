/**
 * `npm run bench -- permits`: permits saved by coalescing and the lookup-list cache on a realistic
 * mix. Two organisations; in each, several apps behind one sluice — three replicas of an app with
 * one API key and three of another with a second key — read lookup lists, read a hot set of
 * accounts and search accounts, each replica at a steady rate. Every configuration gets the same
 * requests at the same moments (seeded, open loop) against a fresh sluice in front of one sim; the
 * sim counts the upstream calls, so the permits saved are the client requests less those calls.
 */
import { Pool } from 'undici'
import { startSimChild, startSluiceChild, type ServerChild } from '../children.js'

const RUN_MS = Number(process.env.SLUICE_BENCH_PERMITS_MS ?? 5_000)
const ORGS = ['org1', 'org2']
/** app replicas per API key, and API keys per organisation */
const REPLICAS = 3
const KEYS = ['app-a-key', 'app-b-key']
/** requests each replica sends a second */
const RATE = 10
const LISTS = ['countries', 'states', 'genders', 'sources', 'funds', 'prefixes']
const LIST_IDS = LISTS.map((l) => `GET /properties/${l}`)
const HOT_ACCOUNTS = 20
const ALL_ACCOUNTS = 500

export interface PermitsRow {
  readonly config: string
  readonly requests: number
  readonly upstreamCalls: number
  readonly errors: number
  readonly p50Ms: number
  readonly p99Ms: number
}

const CONFIGS: readonly { name: string; env: Record<string, string> }[] = [
  { name: 'coalescing off, no cache', env: { SLUICE_COALESCE_ENABLED: 'false' } },
  { name: 'coalescing on (default)', env: {} },
  {
    name: 'coalescing on + cache of the 6 lookup lists (ttl 5 min)',
    env: { SLUICE_CACHE_ENDPOINTS: JSON.stringify(LIST_IDS) },
  },
]

/** One request of the mix: 40% a lookup list, 55% an account (70% of them from a hot set), 5% a search. */
function nextRequest(random: () => number): { method: string; path: string; body?: string } {
  const r = random()
  if (r < 0.4) return { method: 'GET', path: `/v2/properties/${LISTS[Math.floor(random() * LISTS.length)]!}` }
  if (r < 0.95) {
    const id =
      random() < 0.7
        ? Math.floor(random() * HOT_ACCOUNTS)
        : HOT_ACCOUNTS + Math.floor(random() * (ALL_ACCOUNTS - HOT_ACCOUNTS))
    return { method: 'GET', path: `/v2/accounts/${id}/contacts` }
  }
  return { method: 'POST', path: '/v2/accounts/search', body: '{"searchFields":[],"outputFields":["Account ID"]}' }
}

const basic = (org: string, key: string): string => `Basic ${Buffer.from(`${org}:${key}`).toString('base64')}`

/** A small seeded random source, so every configuration gets the same sequence per client. */
function seeded(seed: number): () => number {
  let s = seed >>> 0
  return () => {
    s = (s + 0x6d2b79f5) >>> 0
    let t = s
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

async function runConfig(sim: ServerChild, env: Record<string, string>): Promise<Omit<PermitsRow, 'config'>> {
  const sluice = await startSluiceChild(`${sim.url}/v2`, { SLUICE_REQUEST_LOG: 'false', ...env })
  const pool = new Pool(sluice.url, { connections: 256 })
  try {
    await fetch(`${sim.url}/__sim/reset`, { method: 'POST' })
    const latencies: number[] = []
    let errors = 0
    const sent: Promise<void>[] = []
    const send = async (authorization: string, req: { method: string; path: string; body?: string }): Promise<void> => {
      const started = performance.now()
      const res = await pool.request({
        method: req.method,
        path: req.path,
        headers: { authorization, ...(req.body ? { 'content-type': 'application/json' } : {}) },
        body: req.body,
      })
      await res.body.dump()
      latencies.push(performance.now() - started)
      if (res.statusCode !== 200) errors++
    }
    const replicas: Promise<void>[] = []
    let seed = 1
    const start = performance.now()
    for (const org of ORGS)
      for (const key of KEYS)
        for (let replica = 0; replica < REPLICAS; replica++) {
          const random = seeded(seed++)
          const authorization = basic(org, key)
          const offset = random() * (1000 / RATE)
          replicas.push(
            (async () => {
              // open loop: the n-th request leaves at its moment whether or not the earlier ones are answered
              for (let n = 0; n < (RUN_MS / 1000) * RATE; n++) {
                const at = start + offset + (n * 1000) / RATE
                const wait = at - performance.now()
                if (wait > 0) await new Promise((r) => setTimeout(r, wait))
                sent.push(send(authorization, nextRequest(random)))
              }
            })(),
          )
        }
    await Promise.all(replicas)
    await Promise.all(sent)
    const stats = (await (await fetch(`${sim.url}/__sim/stats`)).json()) as {
      keys: Record<string, { requests: number }>
    }
    const upstreamCalls = Object.values(stats.keys).reduce((n, k) => n + k.requests, 0)
    if (process.env.SLUICE_BENCH_VERBOSE) process.stderr.write(JSON.stringify(stats.keys, null, 1) + '\n')
    latencies.sort((a, b) => a - b)
    const at = (q: number): number => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? 0
    return { requests: latencies.length, upstreamCalls, errors, p50Ms: at(0.5), p99Ms: at(0.99) }
  } finally {
    await pool.close()
    await sluice.stop()
  }
}

export async function runPermitsBench(): Promise<string> {
  // 50 ms ± 25 ms a request upstream: a quick API on a good day.
  const sim = await startSimChild({ SIM_LATENCY_MS: '50', SIM_JITTER_MS: '25' })
  const rows: PermitsRow[] = []
  try {
    for (const config of CONFIGS) rows.push({ config: config.name, ...(await runConfig(sim, config.env)) })
  } finally {
    await sim.stop()
  }
  return permitsTable(rows)
}

export function permitsTable(rows: readonly PermitsRow[]): string {
  const lines = [
    '| configuration | client requests | upstream calls (permits spent) | permits saved | saved | client p50 ms | client p99 ms | answers ≠ 200 |',
    '|---|---:|---:|---:|---:|---:|---:|---:|',
  ]
  for (const r of rows) {
    const saved = r.requests - r.upstreamCalls
    lines.push(
      `| ${r.config} | ${r.requests} | ${r.upstreamCalls} | ${saved} | ${((saved / Math.max(1, r.requests)) * 100).toFixed(0)}% | ${r.p50Ms.toFixed(1)} | ${r.p99Ms.toFixed(1)} | ${r.errors} |`,
    )
  }
  const mix = `${ORGS.length} organisations × ${KEYS.length} API keys × ${REPLICAS} app replicas, each sending ${RATE} requests a second (open loop, the same seeded requests in every configuration): 40% lookup lists (${LISTS.length}), 55% GET /accounts/{id}/contacts (70% from ${HOT_ACCOUNTS} hot accounts of ${ALL_ACCOUNTS}), 5% POST /accounts/search; sim at 50 ± 25 ms; ${RUN_MS / 1000} s per configuration`
  return `${mix}\n\n${lines.join('\n')}`
}
