/**
 * sluice beside the references, side by side from one run (`npm run bench -- compare`):
 *
 * - contention (2 organisations × 4 endpoints, limits 1 and 5, 60 client loops, API 50 ms): HAProxy
 *   (one node, `maxconn` per key), the floor (a bare Node pass-through with a trivial in-process FIFO
 *   semaphore per key), sluice in-process (one replica), sluice on Redis and a pass-through on
 *   redis-semaphore (3 and 8 replicas or processes) — the lowest utilisation of a key and the handoff
 *   idle time, both as the sim saw them, a limit-1 request's time p99 ÷ p50 as its client saw it,
 *   Redis's commands and CPU per proxied request; every setup SLUICE_BENCH_RUNS times (3), the setups
 *   interleaved, and the ranges printed;
 * - breakdown: two seconds of sluice on Redis (3 replicas) under MONITOR and SLOWLOG: commands sent
 *   and run inside each script per request, each script's time per call; then the floor under its
 *   Redis CPU a request, at that run's cadence (./script-floor.ts): two empty scripts, the same with
 *   the shared Lua, the real pair;
 * - uncontended throughput (32 connections, one organisation each, a limit-5 endpoint, API at 0 ms):
 *   each proxy ÷ a bare Node pass-through, in turns (bench/turns.ts);
 * - a flood of 5,000 requests queued on one key: the proxy's resident memory and heap, beside a bare
 *   node:http server and a bare Fastify one holding the same 5,000 requests (the floor).
 *
 * SLUICE_BENCH_CONTENTION_MS (10 s), SLUICE_BENCH_RUNS (3), SLUICE_BENCH_REPLICAS (`3,8`),
 * SLUICE_BENCH_BASELINE_MAIN (another build's dist/main.js: also run on Redis, as "baseline build"),
 * SLUICE_BENCH_CPU_PROF=1 (the breakdown profiles one replica: self time by area and package),
 * SLUICE_BENCH_ROUNDS / SLUICE_BENCH_DURATION_MS (turns);
 * SLUICE_BENCH_PARTS=contention,throughput,flood,breakdown picks parts.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { startRedis, type TestRedis } from '../../test/support/redis.js'
import { spawnProxy, type ProxyProcess } from '../../test/support/process.js'
import { cpuMs, freePort, startNode, startSimChild, waitForHttp, type ServerChild } from '../children.js'
import { measureInTurns, type TurnFigures, type TurnTarget } from '../turns.js'
import { CONTENTION_ROUTES, runContention, type ContentionFigures } from './contention.js'
import { summarise } from './cpu-profile.js'
import { holdServerTarget, runFlood, sluiceTarget, type FloodFigures } from './flood.js'
import { findHaproxy, startHaproxy } from './haproxy.js'
import { measureScriptFloor, type ScriptFloor } from './script-floor.js'
import {
  callsBetween,
  monitor,
  readCounters,
  readScriptTimes,
  startScriptTimes,
  type MonitorCounts,
  type RedisCounters,
  type ScriptTimes,
  redisCpuReader,
} from './redis-counts.js'

const CONTENTION_MS = Number(process.env.SLUICE_BENCH_CONTENTION_MS ?? 10_000)
const ROUNDS = Number(process.env.SLUICE_BENCH_ROUNDS ?? 20)
const ROUND_MS = Number(process.env.SLUICE_BENCH_DURATION_MS ?? 500)
/** each contention setup runs this many times, the setups interleaved (ranges, not one run's figure) */
const RUNS = Number(process.env.SLUICE_BENCH_RUNS ?? 3)
/** the replica (and redis-semaphore process) counts of the Redis setups */
const REPLICAS = (process.env.SLUICE_BENCH_REPLICAS ?? '3,8').split(',').map(Number)
/** another build's dist/main.js, run beside this one on Redis (before and after a change, in one run) */
const BASELINE_MAIN = process.env.SLUICE_BENCH_BASELINE_MAIN
/** SLUICE_BENCH_CPU_PROF=1: the breakdown also profiles one replica (`node --cpu-prof`) */
const PROFILE = process.env.SLUICE_BENCH_CPU_PROF === '1'
/** the breakdown's loaded window, ms */
const BREAKDOWN_MS = 2_000
const PARTS = new Set((process.env.SLUICE_BENCH_PARTS ?? 'contention,throughput,flood,breakdown').split(','))

/** The contention scenario's floor: the same path with none of sluice in it. */
export const FLOOR_SETUP = 'floor: bare Node pass-through + in-process FIFO semaphore, 1 process'

export interface ContentionRow extends ContentionFigures {
  readonly setup: string
  /** Redis commands per proxied request (INFO commandstats), scripts' own commands included */
  readonly redisCommandsPerRequest?: number
  readonly redisCalls?: ReadonlyMap<string, number>
  /** Redis's CPU time per proxied request, µs */
  readonly redisCpuUsPerRequest?: number
  /** the proxies' CPU time per proxied request, µs (all replicas together) */
  readonly proxyCpuUsPerRequest: number
  /** which run of the setup (1…SLUICE_BENCH_RUNS) */
  readonly run?: number
}

export interface CompareResults {
  readonly haproxySkipped?: string
  readonly contention: ContentionRow[]
  readonly throughput?: {
    readonly names: readonly string[]
    readonly figures: readonly TurnFigures[]
    readonly redisVsMemory: number
    /** the same targets one connection at a time (added latency: p50 less the bare pass-through's) */
    readonly oneAtATime: readonly TurnFigures[]
  }
  readonly flood: { readonly setup: string; readonly figures: FloodFigures }[]
  readonly breakdown?: Breakdown
}

export type Breakdown = MonitorCounts & {
  readonly scriptTimes: ScriptTimes
  readonly requests: number
  /** one replica's self time by place, ms (SLUICE_BENCH_CPU_PROF=1) */
  readonly profile?: readonly { readonly place: string; readonly ms: number }[]
  /** Redis CPU per request of two empty scripts, the shared Lua, the real pair, at the same cadence */
  readonly floor?: ScriptFloor
}

/**
 * A bare pass-through in front of `upstream` (bench/compare/passthrough.ts): with no semaphore, on
 * redis-semaphore (`{ redisUrl }`), on a trivial in-process FIFO semaphore (`'memory'`), or with
 * just the Redis path's floors (`{ redisUrl, only }`: two round trips of a script doing nothing, or
 * sluice's own scripts).
 */
export async function startPassthrough(
  upstream: string,
  semaphore?: { redisUrl: string; only?: 'round trips' | 'scripts' | 'reuse script' } | 'memory',
): Promise<ServerChild> {
  const port = await freePort()
  const gate: Record<string, string> =
    semaphore === undefined
      ? {}
      : semaphore === 'memory'
        ? { SEMAPHORE: 'memory' }
        : {
            REDIS_URL: semaphore.redisUrl,
            ...(semaphore.only === 'round trips' ? { REDIS_ROUND_TRIPS: '1' } : {}),
            ...(semaphore.only === 'scripts' ? { REDIS_SCRIPTS: '1' } : {}),
            ...(semaphore.only === 'reuse script' ? { REDIS_SCRIPTS: 'reuse' } : {}),
          }
  const child = startNode(['--import', 'tsx', 'bench/compare/passthrough.ts'], {
    UPSTREAM: upstream,
    PORT: String(port),
    ...gate,
  })
  const url = `http://127.0.0.1:${port}`
  await waitForHttp(url)
  return { ...child, url, pid: child.process.pid! }
}

async function contentionWithCounts(
  setup: string,
  sim: ServerChild,
  targets: readonly { url: string; pid: number }[],
  redis?: TestRedis,
): Promise<ContentionRow> {
  const inspect = redis?.client()
  let before: RedisCounters | undefined
  let after: RedisCounters | undefined
  let cpuBefore = 0
  let cpuAfter = 0
  const cpu = (): number => targets.reduce((n, t) => n + cpuMs(t.pid), 0)
  try {
    const figures = await runContention(
      sim.url,
      targets.map((t) => t.url),
      CONTENTION_MS,
      async (phase) => {
        if (phase === 'start') {
          cpuBefore = cpu()
          if (inspect) before = await readCounters(inspect)
        } else {
          cpuAfter = cpu()
          if (inspect) after = await readCounters(inspect)
        }
      },
    )
    const requests = Math.max(1, figures.requests)
    const row: ContentionRow = { setup, ...figures, proxyCpuUsPerRequest: ((cpuAfter - cpuBefore) * 1000) / requests }
    if (before === undefined || after === undefined) return row
    const calls = callsBetween(before, after)
    const total = [...calls.values()].reduce((a, b) => a + b, 0)
    return {
      ...row,
      redisCalls: calls,
      redisCommandsPerRequest: total / requests,
      redisCpuUsPerRequest: ((after.cpuMs - before.cpuMs) * 1000) / requests,
    }
  } finally {
    inspect?.disconnect()
  }
}

interface ContentionSetup {
  readonly name: string
  run(): Promise<ContentionRow>
}

/** The contention part's setups, each starting its own processes (and Redis) for one run and stopping them after. */
function contentionSetups(
  sim: ServerChild,
  base: Record<string, string>,
  haproxy: ReturnType<typeof findHaproxy>,
): ContentionSetup[] {
  const setups: ContentionSetup[] = []
  if ('path' in haproxy) {
    setups.push({
      name: 'HAProxy, 1 node',
      run: async () => {
        const h = await startHaproxy(haproxy.path, sim.url, CONTENTION_ROUTES)
        try {
          return await contentionWithCounts('HAProxy, 1 node', sim, [h])
        } finally {
          await h.stop()
        }
      },
    })
  }
  setups.push({
    name: FLOOR_SETUP,
    run: async () => {
      const floor = await startPassthrough(sim.url, 'memory')
      try {
        return await contentionWithCounts(FLOOR_SETUP, sim, [floor])
      } finally {
        await floor.stop()
      }
    },
  })
  setups.push({
    name: 'sluice, 1 replica, in-process',
    run: async () => {
      const one = await spawnProxy(base)
      try {
        return await contentionWithCounts('sluice, 1 replica, in-process', sim, [one])
      } finally {
        await one.stop()
      }
    },
  })
  const onRedis = (name: string, n: number, main?: string): ContentionSetup => ({
    name,
    run: async () => {
      const redis = await startRedis()
      const replicas: ProxyProcess[] = []
      try {
        for (let i = 0; i < n; i++)
          replicas.push(await spawnProxy({ ...base, SLUICE_REDIS_URL: redis.url }, undefined, main))
        return await contentionWithCounts(name, sim, replicas, redis)
      } finally {
        await Promise.all(replicas.map((r) => r.stop()))
        await redis.close()
      }
    },
  })
  for (const n of REPLICAS) {
    setups.push(onRedis(`sluice, ${n} replicas, Redis`, n))
    if (BASELINE_MAIN !== undefined) setups.push(onRedis(`baseline build, ${n} replicas, Redis`, n, BASELINE_MAIN))
    const semaphore = `redis-semaphore pass-through, ${n} processes`
    setups.push({
      name: semaphore,
      run: async () => {
        const redis = await startRedis()
        const procs: ServerChild[] = []
        try {
          for (let i = 0; i < n; i++) procs.push(await startPassthrough(sim.url, { redisUrl: redis.url }))
          return await contentionWithCounts(semaphore, sim, procs, redis)
        } finally {
          await Promise.all(procs.map((p) => p.stop()))
          await redis.close()
        }
      },
    })
  }
  return setups
}

export async function runCompare(log: (line: string) => void = () => {}): Promise<CompareResults> {
  const results: { -readonly [K in keyof CompareResults]: CompareResults[K] } = { contention: [], flood: [] }
  const haproxy = findHaproxy()
  if ('skipped' in haproxy) results.haproxySkipped = haproxy.skipped

  if (PARTS.has('contention') || PARTS.has('breakdown')) {
    const sim = await startSimChild({ SIM_LATENCY_MS: '50' })
    const base = { SLUICE_UPSTREAM: `${sim.url}/v2`, SLUICE_REQUEST_LOG: 'false' }
    try {
      // every setup once per run, the runs one after another: a setup's range spans the machine's
      // moods over the whole part, not one moment of it
      const setups = PARTS.has('contention') ? contentionSetups(sim, base, haproxy) : []
      for (let run = 1; run <= RUNS; run++) {
        for (const setup of setups) {
          log(`contention, run ${run} of ${RUNS}: ${setup.name}`)
          results.contention.push({ ...(await setup.run()), run })
        }
      }
      if (PARTS.has('breakdown')) {
        log('breakdown: MONITOR and SLOWLOG, sluice on Redis, 3 replicas')
        const redis = await startRedis()
        const replicas: ProxyProcess[] = []
        // the first replica's CPU profile, its whole life (start and warm-up included), when asked
        const profileDir = PROFILE ? mkdtempSync(join(tmpdir(), 'sluice-cpu-prof-')) : undefined
        try {
          for (let i = 0; i < 3; i++) {
            const profile: Record<string, string> =
              i === 0 && profileDir !== undefined ? { NODE_OPTIONS: `--cpu-prof --cpu-prof-dir=${profileDir}` } : {}
            replicas.push(await spawnProxy({ ...base, SLUICE_REDIS_URL: redis.url, ...profile }))
          }
          results.breakdown = await breakdown(sim, replicas, redis)
        } finally {
          await Promise.all(replicas.map((r) => r.stop()))
          await redis.close()
        }
        if (profileDir !== undefined && results.breakdown !== undefined) {
          results.breakdown = { ...results.breakdown, profile: summarise(profileDir) }
          rmSync(profileDir, { recursive: true, force: true })
        }
        if (results.breakdown !== undefined) {
          // one request's two scripts spread over the time a request took in the breakdown's run
          const cadenceMs = BREAKDOWN_MS / Math.max(1, results.breakdown.requests)
          log(`breakdown: the floor under Redis CPU a request, a cycle every ${cadenceMs.toFixed(2)} ms`)
          results.breakdown = { ...results.breakdown, floor: await measureScriptFloor(cadenceMs) }
        }
      }
    } finally {
      await sim.stop()
    }
  }

  if (PARTS.has('throughput')) {
    log('throughput: in turns')
    const sim = await startSimChild()
    const redisA = await startRedis()
    const redisB = await startRedis()
    const redisC = await startRedis()
    const redisD = await startRedis()
    const redisF = await startRedis()
    const redisE = BASELINE_MAIN === undefined ? undefined : await startRedis()
    const children: ServerChild[] = []
    const proxies: ProxyProcess[] = []
    try {
      children.push(
        await startPassthrough(sim.url),
        await startPassthrough(sim.url, { redisUrl: redisB.url }),
        await startPassthrough(sim.url, { redisUrl: redisC.url, only: 'round trips' }),
        await startPassthrough(sim.url, { redisUrl: redisD.url, only: 'scripts' }),
        await startPassthrough(sim.url, { redisUrl: redisF.url, only: 'reuse script' }),
      )
      const base = { SLUICE_UPSTREAM: `${sim.url}/v2`, SLUICE_REQUEST_LOG: 'false' }
      proxies.push(await spawnProxy(base), await spawnProxy({ ...base, SLUICE_REDIS_URL: redisA.url }))
      // each Redis-backed target has a Redis of its own: its CPU per request is that target's alone
      const target = (name: string, at: { url: string; pid: number }, redis?: TestRedis): TurnTarget => ({
        name,
        url: at.url,
        pid: at.pid,
        ...(redis === undefined ? {} : { redisCpuMs: redisCpuReader(redis.client()) }),
      })
      const targets: TurnTarget[] = [
        target('bare Node pass-through', children[0]!),
        target('sluice, in-process', proxies[0]!),
        target('sluice, Redis', proxies[1]!, redisA),
        target('redis-semaphore pass-through', children[1]!, redisB),
        // floors of the Redis path: its two round trips alone, and with sluice's own scripts (no sluice code around them)
        target('bare Node + two Redis round trips (a script doing nothing)', children[2]!, redisC),
        target("bare Node + sluice's acquire and release scripts", children[3]!, redisD),
        target("bare Node + sluice's reuse script (a kept permit's path)", children[4]!, redisF),
      ]
      // another build beside this one, on a Redis of its own (before and after a change, in the same turns)
      if (redisE !== undefined) {
        const baseline = await spawnProxy({ ...base, SLUICE_REDIS_URL: redisE.url }, undefined, BASELINE_MAIN)
        proxies.push(baseline)
        targets.push(target('baseline build, Redis', baseline, redisE))
      }
      if ('path' in haproxy) {
        // HAProxy with no limit in the way (its default backend): what a C proxy adds on this machine
        const h = await startHaproxy(haproxy.path, sim.url, [])
        children.push(h)
        targets.push({ name: 'HAProxy, 1 node', url: h.url, pid: h.pid })
      }
      const figures = await measureInTurns(targets, { connections: 32, rounds: ROUNDS, roundMs: ROUND_MS, baseline: 0 })
      log('throughput: one connection at a time')
      const oneAtATime = await measureInTurns(targets, {
        connections: 1,
        rounds: Math.max(4, Math.ceil(ROUNDS / 2)),
        roundMs: ROUND_MS,
        baseline: 0,
      })
      results.throughput = {
        names: targets.map((t) => t.name),
        figures,
        redisVsMemory: figures[2]!.vsBaseline.rps / figures[1]!.vsBaseline.rps,
        oneAtATime,
      }
    } finally {
      await Promise.all(children.map((c) => c.stop()))
      await Promise.all(proxies.map((p) => p.stop()))
      await redisA.close()
      await redisB.close()
      await redisC.close()
      await redisD.close()
      await redisF.close()
      await redisE?.close()
      await sim.stop()
    }
  }

  if (PARTS.has('flood')) {
    const sim = await startSimChild()
    const redis = await startRedis()
    try {
      log('flood: bare node:http')
      results.flood.push({ setup: 'bare node:http, holding', figures: await runFlood(() => holdServerTarget('node')) })
      log('flood: bare Fastify')
      results.flood.push({ setup: 'bare Fastify, holding', figures: await runFlood(() => holdServerTarget('fastify')) })
      log('flood: in-process')
      results.flood.push({
        setup: 'sluice, in-process',
        figures: await runFlood(() => sluiceTarget(`${sim.url}/v2`, {})),
      })
      log('flood: Redis')
      results.flood.push({
        setup: 'sluice, Redis',
        figures: await runFlood(() => sluiceTarget(`${sim.url}/v2`, { SLUICE_REDIS_URL: redis.url })),
      })
    } finally {
      await redis.close()
      await sim.stop()
    }
  }
  return results
}

/**
 * Two seconds of the contention scenario under MONITOR and SLOWLOG: what each proxied request sent
 * to Redis, what each script ran inside it, and each script's time per call. Both cost Redis time
 * of their own: the times are for comparing the scripts with each other, not for the CPU per request.
 */
async function breakdown(sim: ServerChild, replicas: readonly ProxyProcess[], redis: TestRedis): Promise<Breakdown> {
  let counts: Promise<MonitorCounts> | undefined
  let scriptTimes: ScriptTimes = new Map()
  const inspect = redis.client()
  try {
    const figures = await runContention(
      sim.url,
      replicas.map((r) => r.url),
      BREAKDOWN_MS,
      async (phase) => {
        if (phase === 'start') {
          await startScriptTimes(inspect)
          counts = monitor(redis.url, BREAKDOWN_MS)
        } else {
          scriptTimes = await readScriptTimes(inspect)
        }
      },
    )
    return { ...(await counts!), scriptTimes, requests: figures.requests }
  } finally {
    inspect.disconnect()
  }
}
