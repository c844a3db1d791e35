import type { Sim } from '../../src/sim/index.js'
import type { Route } from './load.js'
import type { ReplicaStack } from './stack.js'
import { leftInRedis, type TestRedis } from './redis.js'

// No vitest in here: `npm run soak` injects the same faults outside the test runner.
// Replica faults are methods of ProxyProcess (freeze, thaw, stop) and ReplicaStack (restartReplica);
// Redis's are methods of TestRedis (stop, start, freeze) and TcpProxy (delay, hold, cut); the few
// that are commands to Redis are here.

/** `SCRIPT FLUSH`: Redis forgets every script (as after a restart or a failover). */
export async function scriptFlush(redis: TestRedis): Promise<void> {
  const client = redis.client()
  try {
    await client.script('FLUSH')
  } finally {
    client.disconnect()
  }
}

/** `CLIENT KILL TYPE pubsub`: every subscribed connection is cut; resolves with how many were. */
export async function killPubSub(redis: TestRedis): Promise<number> {
  const client = redis.client()
  try {
    return Number(await client.call('CLIENT', 'KILL', 'TYPE', 'pubsub'))
  } finally {
    client.disconnect()
  }
}

/** Now, on the sim's own clock (the `atMs` of its arrivals): to mark when a fault began or ended. */
export const simNow = (sim: Sim): number => sim.stats().elapsedMs

/** What the sim saw of one route: the figures a fault test judges. */
export interface RouteVerdict {
  readonly key: string
  readonly limit: number
  /** the most in progress at once the sim let in (it never lets more than its limit in) */
  readonly maxInProgress: number
  /** the most requests that tried to be in progress at once (above `limit` = over the limit) */
  readonly maxAttempted: number
  /** 429s for the limit, all of them */
  readonly rejected429: number
  /** 429s for the limit outside the windows where a fallback mode allows them by design */
  readonly rejected429Judged: number
  /** when the first of those came, on the sim's clock (ms), to hold against the faults' times */
  readonly judgedAtMs: readonly number[]
  /** who sent the first of those (`x-test-seq`), and who was let in within 100 ms before it */
  readonly judgedFrom: readonly string[]
  readonly requests: number
}

/**
 * A span of the sim's clock (ms) in which 429s are allowed, e.g. in `open` from Redis down to one
 * lease after it is back; for every key, or only for the keys in `keys` (`instance endpoint`).
 */
export interface Window {
  readonly fromMs: number
  readonly toMs: number
  readonly keys?: readonly string[]
}

/** The sim's figures for each route; 429s inside `allowed` windows are counted apart. */
export function verdict(sim: Sim, routes: readonly Route[], allowed: readonly Window[] = []): RouteVerdict[] {
  const stats = sim.stats()
  if (allowed.length > 0 && stats.arrivalsDropped > 0)
    throw new Error('the sim dropped arrivals: give it a larger arrivalLogSize')
  return routes.map((r) => {
    const key = `${r.instance} ${r.endpoint}`
    const s = stats.keys[key]
    if (s !== undefined && s.limit !== r.limit)
      throw new Error(
        `the sim's limit for ${key} is ${s.limit}, not ${r.limit}: a route with a published limit, please`,
      )
    const judged = stats.arrivals.filter(
      (a) =>
        a.outcome === 'limited' &&
        `${a.instance} ${a.endpoint}` === key &&
        !allowed.some((w) => a.atMs >= w.fromMs && a.atMs <= w.toMs && (w.keys === undefined || w.keys.includes(key))),
    )
    return {
      key,
      limit: r.limit,
      maxInProgress: s?.maxInProgress ?? 0,
      maxAttempted: s?.maxAttempted ?? 0,
      rejected429: s?.rejected429 ?? 0,
      rejected429Judged: allowed.length > 0 || stats.arrivalsDropped === 0 ? judged.length : (s?.rejected429 ?? 0),
      judgedAtMs: judged.slice(0, 8).map((a) => Math.round(a.atMs)),
      judgedFrom: judged.slice(0, 2).map((j) => {
        const before = stats.arrivals.filter(
          (a) =>
            a.outcome === 'admitted' &&
            `${a.instance} ${a.endpoint}` === key &&
            a.atMs <= j.atMs &&
            a.atMs > j.atMs - 100,
        )
        return `${j.seq ?? '?'} at ${Math.round(j.atMs)} after ${before.map((a) => `${a.seq ?? '?'} at ${Math.round(a.atMs)}`).join(', ')}`
      }),
      requests: s?.requests ?? 0,
    }
  })
}

/** What a run left behind: holders and waiters in Redis, keys without a TTL, replicas' own keys in `/status`. */
export interface Leftovers {
  readonly holders: number
  readonly queued: number
  /** keys under the prefix that would live for ever */
  readonly keysWithoutTtl: readonly string[]
}

export async function leftovers(stack: Pick<ReplicaStack, 'redis' | 'prefix'>): Promise<Leftovers> {
  const client = stack.redis.client()
  try {
    const { holders, queued } = await leftInRedis(client, stack.prefix)
    const keysWithoutTtl: string[] = []
    for (const k of await client.keys(`${stack.prefix}:*`)) if ((await client.pttl(k)) === -1) keysWithoutTtl.push(k)
    return { holders, queued, keysWithoutTtl }
  } finally {
    client.disconnect()
  }
}
