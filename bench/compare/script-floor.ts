/**
 * The floor under the Redis CPU a contended request costs, in the same run as sluice's own figure:
 * a driver plays one request's two scripts — a `release` that grants the head of a limit-1 queue,
 * then a queued `acquire` — against a private redis-server, at the contention scenario's cadence
 * (the scripts spread evenly over the time one request takes there: an idle Redis woken for each
 * script pays for cold caches each time, as it does under the scenario). Four pairs, interleaved:
 *
 * - two scripts that only `return`: what any two scripts cost (EVALSHA, the socket, waking up);
 * - the same two, each after the whole shared Lua (lua-common.ts), as every script carried it once;
 * - the same two, each after only the shared Lua it uses (lua-prelude.ts), as sent now;
 * - the real `release` and `acquire`.
 *
 * Redis CPU per cycle (one release + one acquire) from INFO cpu over each pair's cycles, and the part
 * of it inside EVALSHA (INFO commandstats), which leaves out waking up and the socket.
 */
import { Redis } from 'ioredis'
import { startRedis } from '../../test/support/redis.js'
import { ACQUIRE_BODY, ACQUIRE_LUA } from '../../src/limiter/redis/acquire/lua.js'
import { semaphoreKeysOf, keyList, grantChannelPrefix } from '../../src/limiter/redis/keys.js'
import { LUA_COMMON } from '../../src/limiter/redis/lua-common.js'
import { preludeFor } from '../../src/limiter/redis/lua-prelude.js'
import { RELEASE_BODY, RELEASE_LUA } from '../../src/limiter/redis/release/lua.js'
import { Scripts, stringsOf, type ScriptDef } from '../../src/limiter/redis/script.js'
import { waiterId } from '../../src/limiter/redis/waiter-id.js'

export interface ScriptFloorRow {
  readonly pair: string
  /** Redis CPU µs per cycle (one release and one acquire), one figure per run */
  readonly usPerCycle: readonly number[]
  /** of which inside EVALSHA (INFO commandstats: the scripts' own run, without waking up and the socket), µs per cycle */
  readonly evalUsPerCycle: readonly number[]
}

export interface ScriptFloor {
  readonly cadenceMs: number
  readonly cycles: number
  readonly rows: readonly ScriptFloorRow[]
}

interface Pair {
  readonly name: string
  readonly release: ScriptDef
  readonly acquire: ScriptDef
}

const pair = (name: string, release: string, acquire: string): Pair => ({
  name,
  release: { name: 'release', numberOfKeys: 4, lua: release, urgent: true },
  acquire: { name: 'acquire', numberOfKeys: 4, lua: acquire },
})

export const FLOOR_PAIRS: readonly Pair[] = [
  pair('two scripts that only return', '\nreturn 0\n', '\nreturn 0\n'),
  pair('the same, after the whole shared Lua (as before)', `${LUA_COMMON}\nreturn 0\n`, `${LUA_COMMON}\nreturn 0\n`),
  pair(
    'the same, after only the shared Lua each uses (as sent)',
    `\n${preludeFor(RELEASE_BODY)}\nreturn 0\n`,
    `\n${preludeFor(ACQUIRE_BODY)}\nreturn 0\n`,
  ),
  pair('the real release and acquire', RELEASE_LUA, ACQUIRE_LUA),
]

const REPLICAS = ['r1', 'r2', 'r3']
const WAITERS = 8
/** the contention scenario's limit-1 keys: a published limit, learned (`learning.lowerPublished`) */
const LIMIT = '1 1 1 600000'
const LEASE_MS = 600_000
const LIVE_MS = 600_000
const IDLE_MS = 600_000
const CHANNELS = grantChannelPrefix('floor')

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms))

/** Redis's CPU and its time inside EVALSHA so far, µs */
async function usOf(client: Redis): Promise<{ cpu: number; eval: number }> {
  const cpu = await client.info('cpu')
  const field = (name: string): number => Number(new RegExp(`^${name}:([\\d.]+)`, 'm').exec(cpu)?.[1] ?? 0)
  const evalsha = /^cmdstat_evalsha:calls=\d+,usec=(\d+)/m.exec(await client.info('commandstats'))
  return { cpu: (field('used_cpu_user') + field('used_cpu_sys')) * 1e6, eval: Number(evalsha?.[1] ?? 0) }
}

/** One pair, `cycles` times on a fresh key: Redis CPU, and its time inside EVALSHA, µs per cycle. */
async function runPair(
  client: Redis,
  p: Pair,
  tag: string,
  cycles: number,
  cadenceMs: number,
): Promise<{ cpu: number; eval: number }> {
  const scripts = new Scripts(client, undefined, 10_000)
  const keys = keyList(semaphoreKeysOf('floor', tag))
  let sequence = 0
  const nextId = (): string => {
    sequence++
    const replica = REPLICAS[sequence % REPLICAS.length]!
    return waiterId({ replicaId: replica, sequence, arrivedAt: Date.now(), maxHeld: Infinity, app: 'default' })
  }
  const acquireArgs = (id: string, announce: boolean): (string | number)[] => [
    id,
    id.slice(0, id.indexOf('/')),
    LIMIT,
    LEASE_MS,
    LIVE_MS,
    IDLE_MS,
    0,
    '0',
    announce ? '1' : '0',
    'floor',
    '/e',
    CHANNELS,
    '0',
    (1).toPrecision(17),
  ]
  // the real scripts set the scene (one holder, WAITERS queued, every replica announced), whatever the pair
  const real = pair('', RELEASE_LUA, ACQUIRE_LUA)
  let holder = nextId()
  await scripts.run(real.acquire, keys, acquireArgs(holder, true))
  for (let i = 0; i < WAITERS; i++) {
    const id = nextId()
    await scripts.run(real.acquire, keys, acquireArgs(id, i < REPLICAS.length))
  }
  const half = cadenceMs / 2
  const started = performance.now()
  const before = await usOf(client)
  for (let c = 0; c < cycles; c++) {
    const rid = holder.slice(0, holder.indexOf('/'))
    const reply = (await scripts.run(p.release, keys, [
      LIMIT,
      LEASE_MS,
      IDLE_MS,
      CHANNELS,
      '0',
      's 50',
      rid,
      holder,
    ])) as unknown[] | number
    // the empty pairs grant nobody: the same id is "released" each time, as cheap as a real one
    if (Array.isArray(reply)) holder = stringsOf(reply[1])[0] ?? holder
    await sleep(Math.max(0, started + c * cadenceMs + half - performance.now()))
    await scripts.run(p.acquire, keys, acquireArgs(nextId(), false))
    await sleep(Math.max(0, started + (c + 1) * cadenceMs - performance.now()))
  }
  const after = await usOf(client)
  return { cpu: (after.cpu - before.cpu) / cycles, eval: (after.eval - before.eval) / cycles }
}

/**
 * Every pair `runs` times, interleaved, on one private redis-server (a fresh key each time): `cadenceMs`
 * is the time one request takes in the contention scenario (its duration ÷ its requests).
 */
export async function measureScriptFloor(cadenceMs: number, cycles = 1_500, runs = 3): Promise<ScriptFloor> {
  const figures = FLOOR_PAIRS.map(() => [] as { cpu: number; eval: number }[])
  const redis = await startRedis()
  const client = new Redis(redis.url)
  try {
    for (let run = 0; run < runs; run++) {
      for (const [i, p] of FLOOR_PAIRS.entries())
        figures[i]!.push(await runPair(client, p, `floor-${run}-${i}`, cycles, cadenceMs))
    }
  } finally {
    client.disconnect()
    await redis.close()
  }
  return {
    cadenceMs,
    cycles,
    rows: FLOOR_PAIRS.map((p, i) => ({
      pair: p.name,
      usPerCycle: figures[i]!.map((f) => f.cpu),
      evalUsPerCycle: figures[i]!.map((f) => f.eval),
    })),
  }
}
