import type { Redis } from 'ioredis'
import { beforeEach, describe, expect, it } from 'vitest'
import { acquire } from '../../../src/limiter/redis/acquire/index.js'
import { grantChannelPrefix, semaphoreKeysOf, type SemaphoreKeys } from '../../../src/limiter/redis/keys.js'
import { release } from '../../../src/limiter/redis/release/index.js'
import { Scripts } from '../../../src/limiter/redis/script.js'
import { appOfId, waiterId } from '../../../src/limiter/redis/waiter-id.js'
import { uniquePrefix } from '../../support/redis.js'
import { useRedis } from '../../support/use-redis.js'

// Review (fair share between apps), the Redis half of test/limiter/memory/review-abandoned-charge:
// waiters that give up (deadline, abort: withdrawn by the release script) must not leave their app
// charged, or an impatient app falls behind every app that kept its waiters.

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
  prefix = uniquePrefix('refund')
  keys = semaphoreKeysOf(prefix, 'k1')
})

async function enter(app: string): Promise<{ id: string; kind: string }> {
  const id = waiterId({ replicaId: 'r1', sequence: ++sequence, arrivedAt: Date.now(), maxHeld: Infinity, app })
  const reply = await acquire(scripts, keys, {
    id,
    replicaId: 'r1',
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
    cost: 1,
  })
  return { id, kind: reply.kind }
}

const leave = async (ids: string[]): Promise<string[]> =>
  [...(await release(scripts, keys, { ids, limit: '1', leaseMs: LEASE_MS, idleMs: 3 * LEASE_MS, channelPrefix: grantChannelPrefix(prefix), wantHead: false })).granted]

describe('review: abandoned waiters keep their charge (Redis)', () => {
  it('an app whose waiters all gave up gets its turn among the first once it is backlogged again', async () => {
    const holder = await enter('b')
    expect(holder.kind).toBe('granted')
    const abandoned = []
    for (let i = 0; i < 20; i++) abandoned.push((await enter('a')).id)
    for (const id of abandoned) await leave([id]) // each withdrawn on its own, oldest first (timeouts)
    for (let i = 0; i < 20; i++) await enter('b')
    await enter('a')
    const order: string[] = []
    let current = holder.id
    for (let i = 0; i < 4; i++) {
      current = (await leave([current]))[0]!
      order.push(appOfId(current)!)
    }
    expect(order).toContain('a')
  })
})
