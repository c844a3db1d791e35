/**
 * `npm run bench -- rates`: what a rate costs per request, and that a key without one costs nothing.
 * In one process, the in-process limiter's acquire + release of one free key, N times, interleaved runs:
 *   bare       the memory limiter alone (what sluice did before rates)
 *   unrated    the same through RatedLimiter, the key without a rate (every CRM endpoint today)
 *   unrated-then  the same, the backend without `acquireNow` (the Redis backend's path: a `.then` per request)
 *   rated      through RatedLimiter with a rate far above the load (a start taken per request, no wait)
 *   taught     the unrated key again, once an answer has taught another key a hold (one map lookup at the grant)
 * Then how close to the API's allowance a bursty job gets (allowance.ts).
 */
import { performance } from 'node:perf_hooks'
import { createMemoryLimiter } from '../../src/limiter/memory/index.js'
import { MemoryRateGate } from '../../src/limiter/rate/gate.js'
import { RatedLimiter } from '../../src/limiter/rate/limiter.js'
import type { AcquireOptions, Limiter } from '../../src/limiter/types.js'
import { runAllowanceBench } from './allowance.js'

const N = Number(process.env.SLUICE_BENCH_RATES_N ?? 200_000)
const ROUNDS = 5
const key = { instance: 'org1', endpoint: 'GET /accounts/{id}/contacts' }
const learning = { enabled: true, idleMs: 3_600_000, marginMs: 0 }

async function loop(limiter: Limiter, options: AcquireOptions): Promise<number> {
  const started = performance.now()
  for (let i = 0; i < N; i++) (await limiter.acquire(key, options)).release('success')
  return ((performance.now() - started) * 1e6) / N
}

export async function runRatesBench(): Promise<string> {
  const far = Date.now() + 3_600_000
  const plain: AcquireOptions = { limit: 5, deadline: far, maxQueue: 1000 }
  const withRate: AcquireOptions = {
    ...plain,
    rate: Object.freeze({ requests: 1_000_000_000, windowMs: 1000, burst: 1_000_000_000 }),
  }
  const bare = createMemoryLimiter({})
  const wrapped = new RatedLimiter(createMemoryLimiter({}), new MemoryRateGate(), learning, undefined)
  const plainBackend = createMemoryLimiter({})
  const withoutNow: Limiter = {
    backend: 'memory',
    mode: () => plainBackend.mode(),
    acquire: (k, o) => plainBackend.acquire(k, o),
    status: () => plainBackend.status(),
    ready: () => plainBackend.ready(),
    drain: () => plainBackend.drain(),
    close: () => plainBackend.close(),
  }
  const thenPath = new RatedLimiter(withoutNow, new MemoryRateGate(), learning, undefined)
  const taught = new RatedLimiter(createMemoryLimiter({}), new MemoryRateGate(), learning, undefined)
  taught.observeAnswer({ instance: 'org2', endpoint: key.endpoint }, 429, { 'retry-after': '3000' }, true)
  const rows: Record<string, number[]> = { bare: [], unrated: [], 'unrated-then': [], rated: [], taught: [] }
  for (let r = 0; r < ROUNDS; r++) {
    rows.bare!.push(await loop(bare, plain))
    rows.unrated!.push(await loop(wrapped, plain))
    rows['unrated-then']!.push(await loop(thenPath, plain))
    rows.rated!.push(await loop(wrapped, withRate))
    rows.taught!.push(await loop(taught, plain))
  }
  const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!
  const lines = [
    `acquire + release of a free key, ns per request (median of ${ROUNDS} rounds of ${N})`,
    '',
    '| path | ns/request |',
    '|---|---:|',
  ]
  for (const [name, xs] of Object.entries(rows)) lines.push(`| ${name} | ${Math.round(median(xs))} |`)
  await bare.close()
  await wrapped.close()
  await thenPath.close()
  await taught.close()
  if (process.env.SLUICE_BENCH_RATES_ALLOWANCE !== 'false') lines.push('', await runAllowanceBench())
  return lines.join('\n')
}

if (import.meta.url === `file://${process.argv[1]}`) console.log(await runRatesBench())
