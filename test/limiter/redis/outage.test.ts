import { describe, expect, it } from 'vitest'
import type { LimiterMode } from '../../../src/limiter/types.js'
import { leftInRedis } from '../../support/redis.js'
import { useRedis } from '../../support/use-redis.js'
import { closeAll, eventually, key, opts, redisLimiter, sleep, testSettings, heardByAll } from './helpers.js'
import { needs } from '../../support/tools.js'

const redis = useRedis()

describe.skipIf(process.env.SLUICE_TEST_REDIS_URL)(
  `redis limiter: Redis stops under load, then starts again ${needs('redis-server')}`,
  () => {
    it('every acquire settles, the mode goes to the fallback and back, nothing is left held', async () => {
      const settings = testSettings(redis.url, { leaseMs: 600, fallback: 'local' })
      const modes: LimiterMode[][] = [[], []]
      const limiters = await Promise.all(
        [0, 1].map((i) => redisLimiter(settings, { observer: { modeChanged: (m) => modes[i]!.push(m) } })),
      )
      let running = true
      let granted = 0
      const failures: unknown[] = []
      const workers = limiters.flatMap((limiter) =>
        [1, 2, 3, 4].map(async () => {
          while (running) {
            try {
              const permit = await limiter.acquire(key, opts(2, { deadlineMs: 20_000 }))
              granted++
              await sleep(2 + Math.random() * 8)
              permit.release()
            } catch (err) {
              failures.push(err)
            }
          }
        }),
      )

      await sleep(300)
      await heardByAll(redis.client(), settings.keyPrefix, 2) // each takes its local slots only then
      await redis.stop()
      await eventually(() => limiters.every((l) => l.mode() === 'local'), 10_000, 'fallback mode')
      const grantedBefore = granted
      // still serving, from the fallback: within a lease (the other replica's Redis permits as last
      // counted here hold local slots for a lease at most: docs/redis-limiter.md, "Failure modes")
      await eventually(() => granted > grantedBefore, 5_000, 'served from the fallback')
      await redis.start()
      await eventually(() => limiters.every((l) => l.mode() === 'redis'), 10_000, 'back to redis')
      const grantedLocal = granted
      await sleep(300)
      expect(granted).toBeGreaterThan(grantedLocal)
      running = false
      await Promise.all(workers)

      expect(failures).toEqual([])
      for (const m of modes) expect(m).toEqual(['redis', 'local', 'redis'])
      const inspect = redis.client()
      await eventually(
        async () => {
          const left = await leftInRedis(inspect, settings.keyPrefix)
          return left.holders === 0 && left.queued === 0
        },
        5_000,
        'Redis to be empty',
      )
      await closeAll(limiters)
    })
  },
)
