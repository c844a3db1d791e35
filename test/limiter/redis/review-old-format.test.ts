import type { Redis } from 'ioredis'
import { beforeEach, describe, expect, it } from 'vitest'
import { acquire } from '../../../src/limiter/redis/acquire/index.js'
import { grantChannelPrefix, semaphoreKeysOf, type SemaphoreKeys } from '../../../src/limiter/redis/keys.js'
import { release } from '../../../src/limiter/redis/release/index.js'
import { Scripts } from '../../../src/limiter/redis/script.js'
import { waiterId } from '../../../src/limiter/redis/waiter-id.js'
import { uniquePrefix } from '../../support/redis.js'
import { FCFS_RELEASE_LUA } from './fixtures/fcfs-release-765cda3.js'
import { useRedis } from '../../support/use-redis.js'

// Review (fair share between apps): a rolling upgrade from the FCFS scripts (docs/deploy.md §6
// says RollingUpdate with Redis; nothing says this change needs Recreate) leaves waiters of the
// older form `<replica>/<sequence>` queued with their arrival in µs (~1.7e15) as score. The new
// grant moves V to the highest start tag granted, so one such grant puts V near 1.7e15 for as
// long as the key stays busy — where a double resolves only 0.25. Costs below 0.125 (weight > 2,
// interactive) then vanish: F_app never moves, every waiter of that app is tagged V, and V never
// moves past it: an app of lower weight gets nothing while it is backlogged.

const redis = useRedis()
const LEASE_MS = 60_000

let client: Redis
let scripts: Scripts
let keys: SemaphoreKeys
let prefix: string
let sequence = 0

beforeEach(() => {
  client = redis.client()
  scripts = new Scripts(client, undefined, 5_000)
  prefix = uniquePrefix('oldfmt')
  keys = semaphoreKeysOf(prefix, 'k1')
})

async function enter(app: string, cost: number, replica = 'r1'): Promise<{ id: string; kind: string }> {
  const id = waiterId({ replicaId: replica, sequence: ++sequence, arrivedAt: Date.now(), maxHeld: Infinity, app })
  const reply = await acquire(scripts, keys, {
    id,
    replicaId: replica,
    limit: '1',
    leaseMs: LEASE_MS,
    liveMs: LEASE_MS,
    idleMs: 3 * LEASE_MS,
    ageMs: 0,
    full: false,
    announce: true,
    instance: 'org1',
    endpoint: 'POST /accounts/search',
    channelPrefix: grantChannelPrefix(prefix),
    wantHead: false,
    cost,
  })
  return { id, kind: reply.kind }
}

const leave = async (ids: string[]): Promise<string[]> =>
  [...(await release(scripts, keys, { ids, limit: '1', leaseMs: LEASE_MS, idleMs: 3 * LEASE_MS, channelPrefix: grantChannelPrefix(prefix), wantHead: false })).granted]

const appOf = (id: string): string => id.slice(id.lastIndexOf(':') + 1)

describe('review: a waiter of the older id form (FCFS score) during a rolling upgrade', () => {
  it('does not poison V: weights 3:1 still give the lighter app its share afterwards', async () => {
    const holder = await enter('x', 0.25)
    expect(holder.kind).toBe('granted')
    // what the pre-fair-share acquire script wrote for an old replica's waiter: liveness, and the
    // arrival in µs as its score
    const [s, us] = await client.time()
    await client.hset(keys.meta, '@old-replica.1a2b', String(Number(s) * 1000 + Math.floor(Number(us) / 1000) + LEASE_MS))
    await client.zadd(keys.queue, String(Number(s) * 1_000_000 + Number(us)), 'old-replica.1a2b/1')
    let current = (await leave([holder.id]))[0]!
    expect(current).toBe('old-replica.1a2b/1')

    // after the rollout: weight 3 and weight 1, both interactive (boost 4): costs 1/12 and 1/4
    for (let i = 0; i < 20; i++) {
      await enter('heavy', 1 / 12, 'r1')
      await enter('light', 1 / 4, 'r2')
    }
    const order: string[] = []
    for (let i = 0; i < 16; i++) {
      current = (await leave([current]))[0]!
      order.push(appOf(current))
    }
    // 3:1 → about 4 of 16 for light
    expect(order.filter((a) => a === 'light').length).toBeGreaterThanOrEqual(3)
  })

  it("an old replica's release during the rollout grants a live new replica's waiter (it is not dropped as dead)", async () => {
    // the old replica holds the permit (an id of the older form); a new replica r1 waits
    const [s, us] = await client.time()
    const nowMs = Number(s) * 1000 + Math.floor(Number(us) / 1000)
    await client.hset(keys.meta, '@old-replica.1a2b', String(nowMs + LEASE_MS))
    await client.zadd(keys.holders, String(nowMs + LEASE_MS), 'old-replica.1a2b/7')
    const waiter = await enter('web', 0.25, 'r1')
    expect(waiter.kind).toBe('queued')
    // the old replica releases with the script it has
    const reply = (await client.eval(FCFS_RELEASE_LUA, 3, keys.holders, keys.queue, keys.meta, 1, LEASE_MS, 3 * LEASE_MS, grantChannelPrefix(prefix), '0', 'old-replica.1a2b/7')) as [number, string[]]
    expect(reply[1]).toEqual([waiter.id])
  })
})
