import { describe, expect, it } from 'vitest'
import { semaphoreKeysOf, tagOf } from '../../../src/limiter/redis/keys.js'
import { useRedis } from '../../support/use-redis.js'
import { key, opts, redisLimiter, sleep, testSettings } from './helpers.js'

const redis = useRedis()

// A replica announces itself to a semaphore (its liveness and the key's description in the meta
// hash) once per third of a lease, not once per request: a key used one request at a time is
// forgotten between requests, and used to announce on every one of them (docs/redis-limiter.md,
// "Scripts", costs).
describe('redis limiter: announcing a replica to a key', () => {
  it('happens once for a key used one request at a time, and again when its limit changes', async () => {
    // a long lease: a third of it (when a key announces again anyway) is far off
    const settings = testSettings(redis.url, { leaseMs: 60_000 })
    const limiter = await redisLimiter(settings, { replicaId: 'r1' })
    const meta = semaphoreKeysOf(settings.keyPrefix, tagOf(key)).meta
    const inspect = redis.client()
    // the replica's field in the meta hash: `@<replica id>` (a suffix is added to the id given)
    const liveness = async (): Promise<string | undefined> => {
      const fields = await inspect.hgetall(meta)
      return Object.entries(fields).find(([f]) => f.startsWith('@r1'))?.[1]
    }
    const use = async (limit: number): Promise<void> => (await limiter.acquire(key, opts(limit))).release()
    try {
      await use(5)
      await sleep(5) // Redis's clock moves on: a second announcement would write a later liveness
      const first = await liveness()
      expect(Number(first)).toBeGreaterThan(0)
      for (let i = 0; i < 4; i++) {
        await use(5)
        await sleep(5)
      }
      expect(await liveness()).toBe(first)

      await use(3)
      expect(await inspect.hget(meta, 'limit')).toBe('3')
      expect(Number(await liveness())).toBeGreaterThan(Number(first))
    } finally {
      await limiter.close()
      inspect.disconnect()
    }
  })
})
