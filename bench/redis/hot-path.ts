/**
 * What one uncontended acquire and release cost this replica (docs/benchmarks.md, "The Redis limiter"):
 *
 *   node --import tsx bench/redis/hot-path.ts      (SLUICE_BENCH_HOT_N: pairs per round, default 200000)
 *
 * - `in process`: the Redis backend's own side (SharedPermits) on a script runner that answers at
 *   once with what Redis answers an uncontended key (granted; released, nobody granted): the CPU the
 *   replica spends per request, without the network. Medians of 7 rounds, after a warm-up.
 * - `real redis-server`: the limiter as the proxy uses it, against a private redis-server, one
 *   acquire and its release after the other (two round trips a pair).
 * Compare rows of one run, or runs on the same quiet machine: figures on a shared VM are noisy.
 */
import { startRedis } from '../../test/support/redis.js'
import { createRedisLimiter, redisSettingsSchema } from '../../src/limiter/redis/index.js'
import type { ScriptDef, ScriptRunner } from '../../src/limiter/redis/script.js'
import { SharedPermits } from '../../src/limiter/redis/shared.js'
import { SluicePermit, Ticket } from '../../src/limiter/redis/ticket.js'
import { Deadlines } from '../../src/limiter/deadlines.js'
import type { Permit, PermitKey } from '../../src/limiter/types.js'

const N = Number(process.env.SLUICE_BENCH_HOT_N ?? 200_000)
const ROUNDS = 7
const KEY: PermitKey = { instance: 'org1', endpoint: 'GET /accounts/{id}' }
const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!

/** Redis's answers to an uncontended key: every acquire granted at once, every release grants nobody. */
class InstantScripts implements ScriptRunner {
  run(def: ScriptDef): Promise<unknown> {
    if (def.name === 'acquire') return Promise.resolve([1, 0, 0, 5])
    if (def.name === 'release') return Promise.resolve([1, [], null, 5])
    return Promise.resolve([-1, [], [], [], null, [], 5])
  }
}

async function inProcess(): Promise<number> {
  const deadlines = new Deadlines()
  const shared: SharedPermits = new SharedPermits(
    new InstantScripts(),
    {
      prefix: 'b',
      replicaId: 'r1',
      channelPrefix: 'b:grant:',
      leaseMs: 30_000,
      syncMs: 10_000,
      liveMs: 30_000,
      idleMs: 90_000,
    },
    {
      makePermit: (k, limits, grant, waitedMs, app) =>
        new SluicePermit(
          k,
          limits,
          grant,
          waitedMs,
          (p, o) => shared.releasePermit(p, o),
          (p) => shared.leaseHolds(p),
          app,
        ),
      failed: (err) => {
        throw err
      },
      keyBroken: (_k, err) => {
        throw err
      },
      reroute: () => {},
      lost: () => {},
    },
  )
  const one = (): Promise<Permit> =>
    new Promise((resolve, reject) => {
      const ticket = new Ticket(
        KEY,
        { limit: 5, maxQueue: 100, deadline: Date.now() + 60_000 },
        resolve,
        reject,
        () => {},
        deadlines,
      )
      shared.enqueue(ticket)
    })
  const round = async (n: number): Promise<number> => {
    const start = process.hrtime.bigint()
    for (let i = 0; i < n; i++) (await one()).release('success')
    return Number(process.hrtime.bigint() - start) / n
  }
  await round(N / 4)
  const rounds: number[] = []
  for (let r = 0; r < ROUNDS; r++) rounds.push(await round(N))
  shared.stop()
  return median(rounds)
}

async function realRedis(): Promise<number> {
  const redis = await startRedis()
  const log = { info: () => {}, warn: () => {}, error: () => {} }
  const limiter = await createRedisLimiter(
    redisSettingsSchema.parse({
      url: redis.url,
      keyPrefix: 'bench',
      leaseMs: 30_000,
      fallback: 'closed',
      commandTimeoutMs: 5_000,
    }),
    { log },
  )
  try {
    const n = Math.max(1_000, Math.floor(N / 20))
    const round = async (): Promise<number> => {
      const start = process.hrtime.bigint()
      for (let i = 0; i < n; i++)
        (await limiter.acquire(KEY, { limit: 5, maxQueue: 100, deadline: Date.now() + 60_000 })).release('success')
      return Number(process.hrtime.bigint() - start) / n
    }
    await round()
    const rounds: number[] = []
    for (let r = 0; r < ROUNDS; r++) rounds.push(await round())
    return median(rounds)
  } finally {
    await limiter.close()
    await redis.close()
  }
}

const fmt = (ns: number): string => `${Math.round(ns).toLocaleString('en')} ns`
const inside = await inProcess()
const real = await realRedis()
process.stdout.write(
  [
    `| uncontended acquire + release (node ${process.version}) | per pair |`,
    '|---|---:|',
    `| in process (answers at once: the replica's own CPU) | ${fmt(inside)} |`,
    `| real redis-server (two round trips) | ${fmt(real)} |`,
    '',
  ].join('\n'),
)
process.exit(0)
