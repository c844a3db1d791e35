import type { FairShare } from '../../../src/limiter/fairness/policy.js'
import { createRedisLimiter, type RedisLimiter, type RedisSettings } from '../../../src/limiter/redis/index.js'
import type { Limiter, LimiterObserver, PermitKey } from '../../../src/limiter/types.js'
import { uniquePrefix } from '../../support/redis.js'
import type { Redis } from 'ioredis'
import { globalKeysOf } from '../../../src/limiter/redis/keys.js'

/** Settings for a test limiter: short leases so dead holders come back quickly. */
export function testSettings(url: string, overrides: Partial<RedisSettings> = {}): RedisSettings {
  return {
    url,
    topology: 'standalone',
    sentinels: '',
    sentinelName: 'mymaster',
    sentinelUsername: '',
    sentinelPassword: '',
    tlsServername: '',
    clusterNodes: '',
    keyPrefix: uniquePrefix(),
    leaseMs: 600,
    fallback: 'local',
    // generous: a loaded 2-core machine can delay replies; a stopped server is noticed at once anyway
    commandTimeoutMs: 5_000,
    keepPermits: true,
    ...overrides,
  }
}

export interface LogLine {
  level: 'info' | 'warn' | 'error'
  obj: object
  msg: string
}

/** A pino-shaped logger that keeps what it is told, for assertions. */
export function memoryLog(): {
  lines: LogLine[]
  info(o: object, m: string): void
  warn(o: object, m: string): void
  error(o: object, m: string): void
} {
  const lines: LogLine[] = []
  return {
    lines,
    info: (obj, msg) => lines.push({ level: 'info', obj, msg }),
    warn: (obj, msg) => lines.push({ level: 'warn', obj, msg }),
    error: (obj, msg) => lines.push({ level: 'error', obj, msg }),
  }
}

export async function redisLimiter(
  settings: RedisSettings,
  deps: { observer?: LimiterObserver; replicaId?: string; fairness?: FairShare; keepForMs?: number } = {},
): Promise<RedisLimiter> {
  return await createRedisLimiter(settings, { log: memoryLog(), ...deps })
}

export const key: PermitKey = { instance: 'org1', endpoint: 'POST /accounts/search' }

export const opts = (
  limit: number,
  over: { maxQueue?: number; deadlineMs?: number; signal?: AbortSignal; arrivedAt?: number; app?: string } = {},
) => ({
  limit,
  maxQueue: over.maxQueue ?? 1000,
  deadline: Date.now() + (over.deadlineMs ?? 10_000),
  signal: over.signal,
  arrivedAt: over.arrivedAt,
  app: over.app,
})

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms))

/** Polls `check` until it returns true (or throws after `timeoutMs`): for states reached asynchronously. */
export async function eventually(
  check: () => Promise<boolean> | boolean,
  timeoutMs = 5_000,
  what = 'condition',
): Promise<void> {
  const until = Date.now() + timeoutMs
  for (;;) {
    if (await check()) return
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`)
    await sleep(20)
  }
}

/**
 * Waits until `n` replicas are in the heartbeat registry and each has beaten three times since: each
 * one's run has lasted two heartbeats and its last reading shows every other beating after its run
 * began, so each takes its slots in the `local` fallback (local-share.ts) — waited for on Redis.
 */
export async function heardByAll(redis: Redis, prefix: string, n: number, timeoutMs = 10_000): Promise<void> {
  const replicas = globalKeysOf(prefix).replicas
  const read = async (): Promise<Map<string, string>> => {
    const flat = await redis.zrange(replicas, 0, -1, 'WITHSCORES')
    return new Map(Array.from({ length: flat.length / 2 }, (_, i) => [flat[2 * i]!, flat[2 * i + 1]!]))
  }
  await eventually(async () => (await read()).size >= n, timeoutMs, `${n} replicas listed`)
  let last = await read()
  const beats = new Map<string, number>()
  await eventually(
    async () => {
      const now = await read()
      for (const [id, score] of now) if (last.get(id) !== score) beats.set(id, (beats.get(id) ?? 0) + 1)
      last = now
      return [...now.keys()].every((id) => (beats.get(id) ?? 0) >= 3)
    },
    timeoutMs,
    'every replica beating three times',
  )
}

export async function closeAll(limiters: readonly Limiter[]): Promise<void> {
  await Promise.all(limiters.map((l) => l.close()))
}

/** EVAL + EVALSHA calls a server has executed so far (INFO commandstats): only meaningful on a server of the test's own. */
export async function scriptCallsOf(client: { info(section: string): Promise<string> }): Promise<number> {
  const info = await client.info('commandstats')
  let total = 0
  for (const m of info.matchAll(/^cmdstat_(eval|evalsha):calls=(\d+)/gm)) total += Number(m[2])
  return total
}
