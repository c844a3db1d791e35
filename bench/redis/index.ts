/**
 * The Redis limiter benchmark: three processes contend for one key with a 20 ms simulated upstream
 * (a sleep), for a limit-1 and a limit-5 key, with sluice's Redis limiter, redis-semaphore
 * (Semaphore, default options) and bottleneck (clustering on Redis through ioredis, maxConcurrent).
 * Each run gets a private redis-server, so INFO commandstats counts only that run's commands.
 *
 *   node --import tsx bench/redis/main.ts        (SLUICE_BENCH_DURATION_MS: measuring time per run)
 */
import { fork } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import type { Redis } from 'ioredis'
import { startRedis } from '../../test/support/redis.js'
import { analyse, quantile, type RunFigures } from './analyse.js'
import { measureFloor, type Floor } from './floor.js'
import type { ContenderConfig, ContenderReport, Library } from './contender.js'

const CONTENDER = fileURLToPath(new URL('./contender.ts', import.meta.url))
const LIBRARIES: readonly Library[] = ['sluice', 'redis-semaphore', 'bottleneck']
const PROCESSES = 3
const HOLD_MS = 20

export interface RedisBenchRow extends RunFigures {
  readonly library: Library
  readonly limit: number
  readonly workers: number
  /** commands the clients sent (round trips, pipelined or not) per request */
  readonly roundTripsPerRequest: number
  /** commands Redis executed per request, those run inside scripts included (INFO commandstats) */
  readonly commandsPerRequest: number
  /** from asking for a permit to getting it: a fair queue keeps the slowest close to the typical */
  readonly waitP50: number
  readonly waitP99: number
  readonly longestWait: number
  readonly errors: number
}

export interface RedisBenchOptions {
  readonly durationMs?: number
  readonly scenarios?: readonly { limit: number; workersPerProcess: number }[]
  readonly libraries?: readonly Library[]
}

/** Calls executed by the server so far, by command name (INFO commandstats). */
async function commandStats(client: Redis): Promise<Map<string, number>> {
  const stats = new Map<string, number>()
  for (const m of (await client.info('commandstats')).matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm))
    stats.set(m[1]!, Number(m[2]))
  return stats
}

function runContender(config: ContenderConfig & { durationMs: number }): {
  ready: Promise<void>
  go(at: number): void
  report: Promise<ContenderReport>
} {
  const child = fork(CONTENDER, [], {
    execArgv: ['--import', 'tsx'],
    env: { ...process.env, SLUICE_BENCH_CONTENDER: JSON.stringify(config) },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  })
  let markReady: () => void = () => {}
  const ready = new Promise<void>((resolve) => (markReady = resolve))
  const report = new Promise<ContenderReport>((resolve, reject) => {
    child.on('message', (m: { ready?: boolean; report?: ContenderReport }) => {
      if (m.ready) markReady()
      if (m.report) resolve(m.report)
    })
    child.once('exit', (code) => reject(new Error(`${config.library} contender exited with ${code}`)))
  })
  return { ready, go: (at) => child.send({ go: at }), report }
}

async function runOne(library: Library, limit: number, workers: number, durationMs: number): Promise<RedisBenchRow> {
  const redis = await startRedis()
  const inspect = redis.client()
  try {
    const key = `bench-${library}-${limit}-${Date.now()}`
    const contenders = Array.from({ length: PROCESSES }, () =>
      runContender({ library, url: redis.url, key, limit, workers, holdMs: HOLD_MS, durationMs }),
    )
    await Promise.all(contenders.map((c) => c.ready))
    const before = await commandStats(inspect)
    const start = Number(process.hrtime.bigint()) / 1e6 + 100
    for (const c of contenders) c.go(start)
    const reports = await Promise.all(contenders.map((c) => c.report))
    const after = await commandStats(inspect)
    let executed = 0
    for (const [name, calls] of after) if (name !== 'info') executed += calls - (before.get(name) ?? 0)
    if (process.env.SLUICE_BENCH_VERBOSE) {
      const delta = [...after].map(([n, c]) => `${n}=${c - (before.get(n) ?? 0)}`).join(' ')
      process.stderr.write(`${library} limit ${limit}: ${delta}\n`)
    }
    const figures = analyse(
      reports.map((r) => r.holds),
      limit,
    )
    const requests = Math.max(1, figures.requests)
    const waits = reports.flatMap((r) => r.waits).sort((a, b) => a - b)
    return {
      library,
      limit,
      workers: workers * PROCESSES,
      ...figures,
      roundTripsPerRequest: reports.reduce((n, r) => n + r.commandsSent, 0) / requests,
      commandsPerRequest: executed / requests,
      waitP50: quantile(waits, 0.5),
      waitP99: quantile(waits, 0.99),
      longestWait: waits.at(-1) ?? Number.NaN,
      errors: reports.reduce((n, r) => n + r.errors, 0),
    }
  } finally {
    inspect.disconnect()
    await redis.close()
  }
}

/** The bare PUBLISH → SUBSCRIBE latency between two processes on a private redis-server, now. */
export async function runFloor(): Promise<Floor> {
  const redis = await startRedis()
  try {
    return await measureFloor(redis.url)
  } finally {
    await redis.close()
  }
}

export async function runRedisBenchRows(options: RedisBenchOptions = {}): Promise<RedisBenchRow[]> {
  const durationMs = options.durationMs ?? Number(process.env.SLUICE_BENCH_DURATION_MS ?? 5_000)
  const scenarios = options.scenarios ?? [
    { limit: 1, workersPerProcess: 2 },
    { limit: 5, workersPerProcess: 4 },
  ]
  const rows: RedisBenchRow[] = []
  for (const { limit, workersPerProcess } of scenarios) {
    for (const library of options.libraries ?? LIBRARIES)
      rows.push(await runOne(library, limit, workersPerProcess, durationMs))
  }
  return rows
}

const ms = (v: number): string => (Number.isFinite(v) ? v.toFixed(2) : '–')

export function redisBenchTable(rows: readonly RedisBenchRow[], floor?: Floor): string {
  const lines = [
    '| key limit | limiter | contenders | requests | upstream utilisation | handoff p50 (ms) | handoff p99 (ms) | grants back to the releasing process | wait p50 / p99 (ms) | wait p99 ÷ p50 (fairness) | longest wait (ms) | round trips / request | Redis commands / request | errors |',
    '|---|---|---|---|---|---|---|---|---|---|---|---|---|---|',
  ]
  for (const r of rows) {
    lines.push(
      `| ${r.limit} | ${r.library} | ${r.workers} in ${PROCESSES} processes | ${r.requests} | ${r.utilisation.toFixed(3)} | ${ms(r.handoffP50)} | ${ms(r.handoffP99)} | ${(r.regrantShare * 100).toFixed(0)}% | ${r.waitP50.toFixed(0)} / ${r.waitP99.toFixed(0)} | ${(r.waitP99 / r.waitP50).toFixed(2)} | ${r.longestWait.toFixed(0)} | ${r.roundTripsPerRequest.toFixed(2)} | ${r.commandsPerRequest.toFixed(1)} | ${r.errors} |`,
    )
  }
  if (floor) {
    lines.push(
      '',
      `Floor on this machine during the run: a bare PUBLISH from one process reaches a SUBSCRIBE in another after p50 ${ms(floor.p50)} ms, p99 ${ms(floor.p99)} ms (same 20 ms idle gaps).`,
    )
  }
  return lines.join('\n')
}

/** The whole benchmark as a markdown table (for `npm run bench`). */
export async function runRedisBench(options: RedisBenchOptions = {}): Promise<string> {
  const floor = await runFloor()
  return redisBenchTable(await runRedisBenchRows(options), floor)
}
