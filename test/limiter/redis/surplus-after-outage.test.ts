import { describe, expect, it } from 'vitest'
import type { Permit } from '../../../src/limiter/types.js'
import { leftInRedis } from '../../support/redis.js'
import { useRedis } from '../../support/use-redis.js'
import { eventually, key, opts, redisLimiter, testSettings } from './helpers.js'
import { needs } from '../../support/tools.js'

const redis = useRedis({ each: true })

// After an outage in fallback `open` (or `local` with more replicas than the limit), Redis counts the
// permits granted meanwhile, above the limit. Holding more than the limit is not "holding all": each
// release must give its surplus slot back, not hand it to this replica's next waiter.
describe.skipIf(process.env.SLUICE_TEST_REDIS_URL)(
  `redis limiter: a surplus counted after an outage ${needs('redis-server')}`,
  () => {
    it('ends as its permits are released: no release hands a surplus slot to the next waiter', async () => {
      const settings = testSettings(redis.url, { fallback: 'open' })
      const limiter = await redisLimiter(settings)
      const inspect = redis.client()
      await redis.stop()
      await eventually(
        async () => {
          await limiter.status() // a script notices the stop at once
          return limiter.mode() === 'open'
        },
        5_000,
        'fallback open',
      )
      // three requests upstream at limit 1 while Redis is away: allowed by `open`
      const surplus = [
        await limiter.acquire(key, opts(1)),
        await limiter.acquire(key, opts(1)),
        await limiter.acquire(key, opts(1)),
      ]
      await redis.start()
      await eventually(() => limiter.mode() === 'redis', 10_000, 'back to redis')
      expect((await leftInRedis(inspect, settings.keyPrefix)).holders).toBe(3)

      let next: Permit | undefined
      const waiting = limiter.acquire(key, opts(1)).then((p) => (next = p))
      await eventually(
        async () => (await leftInRedis(inspect, settings.keyPrefix)).queued === 1,
        5_000,
        'the next request queued',
      )
      await limiter.status() // (a round trip on the same connection: the acquire's reply has been read)

      surplus[0]!.release()
      await eventually(
        async () => (await leftInRedis(inspect, settings.keyPrefix)).holders === 2 || next !== undefined,
        5_000,
        'the release in Redis',
      )
      expect(next).toBeUndefined() // two are still upstream at limit 1
      surplus[1]!.release()
      await eventually(
        async () => (await leftInRedis(inspect, settings.keyPrefix)).holders === 1 || next !== undefined,
        5_000,
        'the second release',
      )
      expect(next).toBeUndefined()
      surplus[2]!.release()
      await waiting
      expect((await leftInRedis(inspect, settings.keyPrefix)).holders).toBe(1)
      next!.release()
      await eventually(
        async () => (await leftInRedis(inspect, settings.keyPrefix)).holders === 0,
        5_000,
        'no holders left',
      )
      await limiter.close()
    })
  },
)
