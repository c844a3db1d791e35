/**
 * `npm run bench -- scale`: what many keys touched once cost afterwards (docs/benchmarks.md, "Many keys").
 * For each size N and each backend (in process; Redis, a redis-server of its own on a free port), one
 * sluice child in front of a sim child at 20 ms: N distinct (organisation, endpoint) keys — N/3
 * organisations × 3 limit-5 endpoints — get one request each, 64 at a time; then a `/metrics` scrape
 * and a `/status` read while a probe request goes every 10 ms, and the resident set is watched for
 * `SLUICE_BENCH_SCALE_WATCH_MS` (40 s) with a second scrape half-way, as Prometheus would.
 * Sizes: `npm run bench -- scale 1000,100000` or SLUICE_BENCH_SCALE_KEYS (default 1,000, 10,000, 30,000).
 * The sluice child runs as `npm start` runs it: with its default NODE_OPTIONS (a heap bound) unless NODE_OPTIONS is set and not empty.
 * SLUICE_BENCH_SCALE_NODE_ARGS are node's options for the sluice child (e.g. `--cpu-prof --cpu-prof-dir=/tmp/p`);
 * the bench prints the scrape's window on the monotonic clock, which a CPU profile's timestamps share.
 */
import { performance } from 'node:perf_hooks'
import type { Redis } from 'ioredis'
import { Client, Pool } from 'undici'
import {
  cpuMs,
  freePort,
  nodeOptionsAsNpmStart,
  startNode,
  startSimChild,
  waitForHttp,
  type Child,
} from '../children.js'
import { rssOf } from '../../test/support/process.js'
import { startRedis, type TestRedis } from '../../test/support/redis.js'

const ENDPOINTS = ['contacts', 'donations', 'pledges']
const CONCURRENCY = 64
const PROBE_EVERY_MS = 10
const API_MS = 20
const WATCH_MS = Number(process.env.SLUICE_BENCH_SCALE_WATCH_MS ?? 40_000)
const SETTLE_MS = Number(process.env.SLUICE_BENCH_SCALE_SETTLE_MS ?? 0)
/** SLUICE_BENCH_SCALE_BACKENDS=redis (or memory) runs one backend only */
const BACKENDS = (['in-process', 'Redis'] as const).filter((b) => {
  const only = process.env.SLUICE_BENCH_SCALE_BACKENDS
  return only === undefined || (only === 'redis') === (b === 'Redis')
})
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms))
const basic = (org: string): string => `Basic ${Buffer.from(`${org}:bench-key`).toString('base64')}`

export interface ScaleRow {
  readonly backend: 'in-process' | 'Redis'
  readonly keys: number
  /** requests a second while the keys were touched */
  readonly rps: number
  readonly non200: number
  readonly idleMb: number
  /** highest resident set while the keys were touched */
  readonly duringMb: number
  /** highest resident set from the first scrape through the watch */
  readonly afterMaxMb: number
  /** resident set at the end of the watch */
  readonly afterEndMb: number
  /** Redis's used_memory right after the keys were touched (MB); undefined in process */
  readonly redisMb: number | undefined
  readonly scrapeMs: number
  readonly statusMs: number
  /** the slowest probe request that overlapped the scrape, and the /status read */
  readonly probeScrapeMs: number
  readonly probeStatusMs: number
  /** the second scrape, half-way through the watch */
  readonly scrape2Ms: number
  /** scripts Redis ran during the first scrape (EVALSHA and EVAL, INFO commandstats); undefined in process */
  readonly scrapeScripts: number | undefined
  /**
   * CPU time over the first scrape, ms: sluice's (/proc, 10 ms ticks; the probe's requests included)
   * and Redis's (INFO cpu): steadier than the times on a shared machine
   */
  readonly scrapeCpuMs: number
  readonly scrapeRedisCpuMs: number | undefined
  /** V8's heap at the end of the watch (used, committed), MB: how much of the resident set is the heap */
  readonly heapEndMb: readonly [number, number]
}

/** V8's heap now (nodejs_heap_size_used_bytes, _total_bytes), MB, from a scrape. */
async function heapMb(adminUrl: string): Promise<[number, number]> {
  const text = await (await fetch(`${adminUrl}/metrics`)).text()
  const read = (name: string): number => Number(new RegExp(`^${name} (\\S+)`, 'm').exec(text)?.[1] ?? NaN) / 2 ** 20
  return [read('nodejs_heap_size_used_bytes'), read('nodejs_heap_size_total_bytes')]
}

/** Redis's CPU time so far (used_cpu_user + used_cpu_sys), ms. */
async function redisCpuMs(client: Redis | undefined): Promise<number | undefined> {
  if (client === undefined) return undefined
  const cpu = await client.info('cpu')
  const field = (name: string): number => Number(new RegExp(`^${name}:([\\d.]+)`, 'm').exec(cpu)?.[1] ?? 0)
  return (field('used_cpu_user') + field('used_cpu_sys')) * 1000
}

/** EVALSHA and EVAL calls Redis has run so far. */
async function scriptCalls(client: Redis | undefined): Promise<number | undefined> {
  if (client === undefined) return undefined
  let n = 0
  for (const m of (await client.info('commandstats')).matchAll(/^cmdstat_(evalsha|eval):calls=(\d+)/gm))
    n += Number(m[2])
  return n
}

export function scaleSizes(arg: string | undefined): number[] {
  const text = arg ?? process.env.SLUICE_BENCH_SCALE_KEYS ?? '1000,10000,30000'
  const sizes = text.split(',').map((s) => Number(s.trim()))
  if (sizes.some((n) => !Number.isInteger(n) || n < 3))
    throw new Error(`scale: sizes must be whole numbers ≥ 3, got "${text}"`)
  return sizes
}

/** Resident set in MB, sampled every 100 ms while `watching` until stopped; the highest seen. */
function rssWatch(pid: number): { stop(): number } {
  let max = rssOf(pid) ?? 0
  const timer = setInterval(() => (max = Math.max(max, rssOf(pid) ?? 0)), 100)
  return {
    stop() {
      clearInterval(timer)
      return Math.max(max, rssOf(pid) ?? 0) / 2 ** 20
    },
  }
}

/** A request every 10 ms on one key of its own, on one connection; `during(from, to)` the slowest that overlapped the window. */
function probe(url: string): { during(from: number, to: number): number; stop(): Promise<void> } {
  const client = new Client(url, { pipelining: 1 })
  const spans: [number, number][] = []
  let stopped = false
  const loop = (async () => {
    while (!stopped) {
      const next = performance.now() + PROBE_EVERY_MS
      const start = performance.now()
      try {
        const res = await client.request({
          method: 'GET',
          path: '/v2/accounts/1/contacts',
          headers: { authorization: basic('probe') },
        })
        await res.body.dump()
      } catch {
        // counted as slow as it was
      }
      spans.push([start, performance.now()])
      await sleep(Math.max(0, next - performance.now()))
    }
  })()
  return {
    during: (from, to) => Math.max(0, ...spans.filter(([s, e]) => e >= from && s <= to).map(([s, e]) => e - s)),
    async stop() {
      stopped = true
      await loop
      await client.close()
    },
  }
}

/** One timed GET on the admin port, with the probe's worst overlap. */
async function timedGet(
  adminUrl: string,
  path: string,
  probes: ReturnType<typeof probe>,
): Promise<{ ms: number; probeMs: number; window: [bigint, bigint] }> {
  await sleep(50)
  const t0 = process.hrtime.bigint()
  const from = performance.now()
  const res = await fetch(`${adminUrl}${path}`)
  await res.text()
  const to = performance.now()
  const t1 = process.hrtime.bigint()
  await sleep(50)
  return { ms: to - from, probeMs: probes.during(from, to), window: [t0, t1] }
}

async function touch(url: string, keys: number): Promise<{ rps: number; non200: number }> {
  const pool = new Pool(url, { connections: CONCURRENCY, pipelining: 1 })
  let next = 0
  let non200 = 0
  const orgs = Math.ceil(keys / ENDPOINTS.length)
  const start = performance.now()
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      for (let i = next++; i < keys; i = next++) {
        const org = `org${100_000 + (i % orgs)}`
        const endpoint = ENDPOINTS[Math.floor(i / orgs)]!
        const res = await pool.request({
          method: 'GET',
          path: `/v2/accounts/${i}/${endpoint}`,
          headers: { authorization: basic(org) },
        })
        await res.body.dump()
        if (res.statusCode !== 200) non200++
      }
    }),
  )
  const rps = keys / ((performance.now() - start) / 1000)
  await pool.close()
  return { rps, non200 }
}

async function runOne(backend: ScaleRow['backend'], keys: number, log: (line: string) => void): Promise<ScaleRow> {
  const sim = await startSimChild({ SIM_LATENCY_MS: String(API_MS) })
  let redis: TestRedis | undefined
  let client: Redis | undefined
  let sluice: (Child & { url: string; adminUrl: string; pid: number }) | undefined
  try {
    const env: Record<string, string> = { SLUICE_REQUEST_LOG: 'false' }
    if (backend === 'Redis') {
      redis = await startRedis()
      client = redis.client()
      env.SLUICE_REDIS_URL = redis.url
    }
    sluice = await startSluice(`${sim.url}/v2`, env)
    const adminUrl = sluice.adminUrl
    await touch(sluice.url, 200)
    await sleep(3_000)
    const idle = (rssOf(sluice.pid) ?? 0) / 2 ** 20
    const during = rssWatch(sluice.pid)
    const load = await touch(sluice.url, keys)
    const duringMb = during.stop()
    // SLUICE_BENCH_SCALE_SETTLE_MS (0): a pause before the scrape, e.g. past kept permits' window (500 ms)
    await sleep(SETTLE_MS)
    const redisMb =
      client === undefined
        ? undefined
        : Number(/^used_memory:(\d+)/m.exec(await client.info('memory'))?.[1] ?? 0) / 2 ** 20
    const after = rssWatch(sluice.pid)
    const watchStart = performance.now()
    const probes = probe(sluice.url)
    const scriptsBefore = await scriptCalls(client)
    const redisCpuBefore = await redisCpuMs(client)
    const cpuBefore = cpuMs(sluice.pid)
    const scrape = await timedGet(adminUrl, '/metrics', probes)
    const cpuAfter = cpuMs(sluice.pid)
    const redisCpuAfter = await redisCpuMs(client)
    const scriptsAfter = await scriptCalls(client)
    const status = await timedGet(adminUrl, '/status', probes)
    log(
      `scale: ${backend} ${keys}: scrape on the monotonic clock ${scrape.window[0]}–${scrape.window[1]} ns, /status ${status.window[0]}–${status.window[1]} ns`,
    )
    await probes.stop()
    await sleep(Math.max(0, WATCH_MS / 2 - (performance.now() - watchStart)))
    const quiet = probe(sluice.url)
    const scrape2 = await timedGet(adminUrl, '/metrics', quiet)
    await quiet.stop()
    await sleep(Math.max(0, WATCH_MS - (performance.now() - watchStart)))
    const afterMaxMb = after.stop()
    const afterEndMb = (rssOf(sluice.pid) ?? 0) / 2 ** 20
    const heapEndMb = await heapMb(adminUrl)
    return {
      backend,
      keys,
      rps: load.rps,
      non200: load.non200,
      idleMb: idle,
      duringMb,
      afterMaxMb,
      afterEndMb,
      redisMb,
      scrapeMs: scrape.ms,
      statusMs: status.ms,
      probeScrapeMs: scrape.probeMs,
      probeStatusMs: status.probeMs,
      scrape2Ms: scrape2.ms,
      // (the 50 ms pauses around the scrape may hold a sync or a heartbeat too)
      scrapeScripts: scriptsAfter === undefined ? undefined : scriptsAfter - scriptsBefore!,
      heapEndMb,
      scrapeCpuMs: cpuAfter - cpuBefore,
      scrapeRedisCpuMs: redisCpuAfter === undefined ? undefined : redisCpuAfter - redisCpuBefore!,
    }
  } finally {
    await sluice?.stop()
    client?.disconnect()
    await redis?.close()
    await sim.stop()
  }
}

/** sluice (`dist/main.js`) on free ports, once its admin port answers. */
async function startSluice(
  upstream: string,
  env: Record<string, string>,
): Promise<Child & { url: string; adminUrl: string; pid: number }> {
  const [port, adminPort] = [await freePort(), await freePort()]
  const nodeArgs = (process.env.SLUICE_BENCH_SCALE_NODE_ARGS ?? '').split(' ').filter((a) => a !== '')
  const child = startNode([...nodeArgs, 'dist/main.js'], {
    NODE_OPTIONS: nodeOptionsAsNpmStart(),
    SLUICE_UPSTREAM: upstream,
    SLUICE_PORT: String(port),
    SLUICE_ADMIN_PORT: String(adminPort),
    SLUICE_HOST: '127.0.0.1',
    SLUICE_ADMIN_HOST: '127.0.0.1',
    ...env,
  })
  const adminUrl = `http://127.0.0.1:${adminPort}`
  await waitForHttp(`${adminUrl}/healthz`)
  return { ...child, url: `http://127.0.0.1:${port}`, adminUrl, pid: child.process.pid! }
}

export async function runScaleBench(sizes: readonly number[], log: (line: string) => void): Promise<ScaleRow[]> {
  const rows: ScaleRow[] = []
  for (const keys of sizes) {
    for (const backend of BACKENDS) {
      log(`scale: ${backend}, ${keys} keys, NODE_OPTIONS=${nodeOptionsAsNpmStart()}…`)
      rows.push(await runOne(backend, keys, log))
    }
  }
  return rows
}

const mb = (n: number | undefined): string => (n === undefined ? '–' : n.toFixed(0))
const ms = (n: number): string => (n < 10 ? n.toFixed(1) : n.toFixed(0))

export function scaleTable(rows: readonly ScaleRow[]): string {
  const lines = [
    '| keys touched | backend | req/s | RSS idle → during → after (max, end of 40 s), MB | V8 heap at the end: used, committed MB | Redis MB | scrape ms | its CPU ms: sluice, Redis | Redis scripts in the scrape | probe during scrape ms | /status ms | probe during /status ms | 2nd scrape ms |',
    '|---|---|---|---|---|---|---|---|---|---|---|---|---|',
  ]
  for (const r of rows) {
    lines.push(
      `| ${r.keys.toLocaleString('en-US')} | ${r.backend} | ${r.rps.toFixed(0)}${r.non200 > 0 ? ` (${r.non200} non-200)` : ''} | ${mb(r.idleMb)} → ${mb(r.duringMb)} → ${mb(r.afterMaxMb)}, ${mb(r.afterEndMb)} | ${mb(r.heapEndMb[0])}, ${mb(r.heapEndMb[1])} | ${mb(r.redisMb)} | ${ms(r.scrapeMs)} | ${r.scrapeCpuMs.toFixed(0)}, ${r.scrapeRedisCpuMs === undefined ? '–' : r.scrapeRedisCpuMs.toFixed(0)} | ${r.scrapeScripts ?? '–'} | ${ms(r.probeScrapeMs)} | ${ms(r.statusMs)} | ${ms(r.probeStatusMs)} | ${ms(r.scrape2Ms)} |`,
    )
  }
  return lines.join('\n')
}
