import { describe, expect, it } from 'vitest'
import { semaphoreKeysOf, tagOf, type SemaphoreKeys } from '../../../src/limiter/redis/keys.js'
import type { RedisLimiter } from '../../../src/limiter/redis/index.js'
import { useRedis } from '../../support/use-redis.js'
import { eventually, key, opts, redisLimiter, testSettings } from './helpers.js'
import { needs } from '../../support/tools.js'

const redis = useRedis({ each: true })

type Inspect = ReturnType<typeof redis.client>

/**
 * r2 holds the only permit, r1 queues a waiter: r1's liveness must be in the key's meta hash, and
 * r2's release must grant r1's waiter — not drop it as a dead replica's (it would then wait for
 * r1's next sync, a third of the lease: 20 s here).
 */
async function queuedWaiterIsGrantedElsewhere(
  r1: RedisLimiter,
  r2: RedisLimiter,
  inspect: Inspect,
  keys: SemaphoreKeys,
): Promise<void> {
  const held = await r2.acquire(key, opts(1))
  const waiting = r1.acquire(key, opts(1))
  waiting.catch(() => undefined) // (failed by close if the test fails first)
  await eventually(async () => (await inspect.zcard(keys.queue)) === 1, 5_000, 'r1 queued')
  const [waiter] = await inspect.zrange(keys.queue, 0, -1)
  expect(Object.keys(await inspect.hgetall(keys.meta)).some((f) => f.startsWith('@r1'))).toBe(true)
  expect(await inspect.pttl(keys.meta)).toBeGreaterThan(0)
  held.release()
  await eventually(async () => (await inspect.zcard(keys.queue)) === 0, 5_000, 'the queue emptied')
  expect(await inspect.zscore(keys.holders, waiter!)).not.toBeNull()
  ;(await waiting).release()
}

// A key used one request at a time keeps when this replica last announced itself to it, so that it
// announces once per third of a lease. Redis restarting empty (noticed: the connection closed) must
// forget that: the key's meta hash is gone with this replica's liveness, and a waiter queued there
// without it is dropped as a dead replica's by the next grant elsewhere (docs/redis-limiter.md).
describe('redis limiter: announcing a replica to a key again after Redis lost its data', () => {
  it(`a waiter queued right after the restart is alive in the key and is granted by the next release ${needs('redis-server')}`, async (ctx) => {
    if (!redis.managed) ctx.skip()
    // a long lease: the restart comes well within a third of it after the first announcement
    const settings = testSettings(redis.url, { leaseMs: 60_000 })
    const r1 = await redisLimiter(settings, { replicaId: 'r1' })
    const r2 = await redisLimiter(settings, { replicaId: 'r2' })
    const keys = semaphoreKeysOf(settings.keyPrefix, tagOf(key))
    try {
      ;(await r1.acquire(key, opts(1))).release() // announced, then forgotten: the key is idle
      await redis.stop() // a crash: nothing kept
      await eventually(() => r1.mode() !== 'redis' && r2.mode() !== 'redis', 5_000, 'both replicas notice')
      await redis.start()
      const back = (l: RedisLimiter): boolean => l.mode() === 'redis'
      await eventually(() => back(r1) && back(r2), 10_000, 'both replicas back on Redis')
      const inspect = redis.client()
      const r1Alive = async (): Promise<boolean> =>
        Object.keys(await inspect.hgetall(keys.meta)).some((f) => f.startsWith('@r1'))

      // the key's first use after the restart announces r1 again (even granted at once)
      ;(await r1.acquire(key, opts(1))).release()
      await eventually(async () => (await inspect.zcard(keys.holders)) === 0, 5_000, 'released')
      expect(await r1Alive()).toBe(true)

      await queuedWaiterIsGrantedElsewhere(r1, r2, inspect, keys)
    } finally {
      await Promise.all([r1.close(), r2.close()])
    }
  })

  // Data lost without the connection closing (a FLUSHALL, an eviction, a failover to a replica that
  // had not yet received the last writes): the replica cannot know. A waiter it queues is still not
  // left without its liveness: the acquire that queues it finds the field gone and writes it.
  it(`a waiter queued after the data went unnoticed is alive in the key too ${needs('redis-server')}`, async (ctx) => {
    if (!redis.managed) ctx.skip() // FLUSHALL: never on a shared server
    const settings = testSettings(redis.url, { leaseMs: 60_000 })
    const r1 = await redisLimiter(settings, { replicaId: 'r1' })
    const r2 = await redisLimiter(settings, { replicaId: 'r2' })
    const keys = semaphoreKeysOf(settings.keyPrefix, tagOf(key))
    const inspect = redis.client()
    try {
      ;(await r1.acquire(key, opts(1))).release()
      await eventually(async () => (await inspect.zcard(keys.holders)) === 0, 5_000, 'released')
      await inspect.flushall()
      expect(r1.mode()).toBe('redis')

      await queuedWaiterIsGrantedElsewhere(r1, r2, inspect, keys)
    } finally {
      await Promise.all([r1.close(), r2.close()])
    }
  })
})
