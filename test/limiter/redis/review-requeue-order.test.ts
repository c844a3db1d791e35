import type { Redis } from 'ioredis'
import { beforeEach, describe, expect, it } from 'vitest'
import { acquire } from '../../../src/limiter/redis/acquire/index.js'
import { grantChannelPrefix, semaphoreKeysOf, type SemaphoreKeys } from '../../../src/limiter/redis/keys.js'
import { release } from '../../../src/limiter/redis/release/index.js'
import { Scripts } from '../../../src/limiter/redis/script.js'
import { waiterId } from '../../../src/limiter/redis/waiter-id.js'
import { uniquePrefix } from '../../support/redis.js'
import { useRedis } from '../../support/use-redis.js'

// Review (fair share between apps): a request that "waited before" gets S = V - age/(age+1 s), in
// (V-1, V] — ahead of EVERY waiter queued, however long they have waited, because queued waiters
// have tags >= V. That includes a waiter moved back from the fallback after an outage (a ticket
// routed twice counts as having waited, ticket.ts hasWaited), even one that arrived during the
// outage, after waiters of its own app that have been queued in Redis all along. Under FCFS its
// age placed it by its arrival; now it passes them: FIFO within an app breaks across replicas
// right after a recovery (DESIGN invariant 4; LIMITER-CHECKLIST "also right after a recovery").

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
  prefix = uniquePrefix('requeue')
  keys = semaphoreKeysOf(prefix, 'k1')
})

async function enter(app: string, replica: string, arrivedAt: number, ageMs: number): Promise<{ id: string; kind: string }> {
  const id = waiterId({ replicaId: replica, sequence: ++sequence, arrivedAt, maxHeld: Infinity, app })
  const reply = await acquire(scripts, keys, {
    id,
    replicaId: replica,
    limit: 1,
    leaseMs: LEASE_MS,
    liveMs: LEASE_MS,
    idleMs: 3 * LEASE_MS,
    ageMs,
    full: false,
    announce: true,
    instance: 'org1',
    endpoint: 'POST /accounts/search',
    channelPrefix: grantChannelPrefix(prefix),
    wantHead: false,
    cost: 1,
  })
  return { id, kind: reply.kind }
}

const leave = async (ids: string[]): Promise<string[]> =>
  [...(await release(scripts, keys, { ids, limit: 1, leaseMs: LEASE_MS, idleMs: 3 * LEASE_MS, channelPrefix: grantChannelPrefix(prefix), wantHead: false })).granted]

describe('review: a waiter moved back from the fallback', () => {
  it('is not served before a waiter of its own app that arrived earlier and waited in Redis all along', async () => {
    const t0 = Date.now()
    const holder = await enter('x', 'r1', t0, 0)
    expect(holder.kind).toBe('granted')
    // r1's request of app `a`, queued in Redis at t0
    const early = await enter('a', 'r1', t0, 0)
    await new Promise((r) => setTimeout(r, 200))
    // r2 was cut off from Redis: its request of app `a` arrived 150 ms after r1's, queued in the
    // local fallback, and moves to Redis 50 ms later when r2 recovers (its age: 50 ms)
    const moved = await enter('a', 'r2', t0 + 150, 50)
    const first = (await leave([holder.id]))[0]
    expect(first).toBe(early.id)
    expect(moved.kind).toBe('queued')
  })
})
