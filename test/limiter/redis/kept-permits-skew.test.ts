import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import type { createRedisLimiter } from '../../../src/limiter/redis/index.js'
import { useRedis } from '../../support/use-redis.js'
import { needs } from '../../support/tools.js'
import { buildRelease, previous, previousInHistory } from '../../support/previous-release.js'
import { eventually, key, memoryLog, opts, redisLimiter, sleep, testSettings } from './helpers.js'

const redis = useRedis()

// FIFO across replicas with the previous release beside (its acquire does not tell holders when it queues alone):
// the reuse script sees the waiter and gives the kept permit to it (reuse/lua.ts).
describe.skipIf(process.env.SLUICE_TEST_REDIS_URL || !previousInHistory)(
  `redis limiter: a kept permit and a waiter of the previous release ${needs('redis-server')}`,
  () => {
    it('limit 1: a request that arrives here after the previous release’s waiter queued is served after it', async () => {
      const settings = testSettings(redis.url, { keepPermits: true, leaseMs: 60_000 })
      // the previous release's build (docs/deploy.md "Version skew"), shared with test/deploy/version-skew.test.ts
      const oldModule = join(buildRelease(previous!.commit), 'dist', 'limiter', 'redis', 'index.js')
      const { createRedisLimiter: createOld } = (await import(oldModule)) as {
        createRedisLimiter: typeof createRedisLimiter
      }
      const old = await createOld(settings, { log: memoryLog() })
      const n = await redisLimiter(settings)
      const inspect = redis.client()
      ;(await old.acquire(key, opts(1))).release() // announces N−1
      await eventually(
        async () => (await inspect.keys(`${settings.keyPrefix}*`)).every((k) => !k.endsWith(':holders')),
        5_000,
        'N−1 released',
      )
      ;(await n.acquire(key, opts(1))).release() // N keeps this permit
      const order: string[] = []
      const hold = (who: string) => (p: { release(): void }) => {
        order.push(who)
        setTimeout(() => p.release(), 50)
      }
      const waiter = old.acquire(key, opts(1)).then(hold('old')) // N−1's request arrives first
      await sleep(100) // queued alone behind N's kept permit: its script told nobody
      const later = n.acquire(key, opts(1)).then(hold('new'))
      await Promise.all([waiter, later])
      inspect.disconnect()
      await Promise.all([old.close(), n.close()])
      expect(order).toEqual(['old', 'new'])
    }, 180_000) // the first build of the previous release takes a while
  },
)
