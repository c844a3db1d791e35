/**
 * Redis's clock (`TIME`) is the rate gate's clock in Redis (docs/learned-limits.md, "Rates"): a step back of
 * the Redis host's clock changes nothing, as the key's time never goes backwards. Real redis-server: the
 * step is made by moving the key's stored times ahead by the step, which is what the key holds when the
 * clock that wrote them was that far ahead of the clock that reads them.
 */
import { describe, expect, it } from 'vitest'
import { gcraParams } from '../../../src/limiter/rate/gcra.js'
import { RedisRateGate } from '../../../src/limiter/redis/index.js'
import { useRedis } from '../../support/use-redis.js'
import { closeAll, key, memoryLog, redisLimiter, testSettings } from './helpers.js'

const redis = useRedis()
const STEP_MS = 5_000

describe('the Redis rate gate and a step of the Redis host clock', () => {
  it('a step back of 5 s after a window’s starts: the next start is a window after them, not 5 s more', async () => {
    const settings = testSettings(redis.url)
    const limiter = await redisLimiter(settings, { replicaId: 'a' })
    const gate = new RedisRateGate(
      {
        scripts: limiter.scripts,
        keyPrefix: settings.keyPrefix,
        mode: () => limiter.mode(),
        replicas: () => 1,
        settleMs: 2_000,
      },
      memoryLog(),
    )
    try {
      const params = gcraParams({ requests: 4, windowMs: 1000, burst: 4 })
      for (let i = 0; i < 4; i++) expect((await gate.reserve(key, params, 0)).granted).toBe(true)
      const inspect = redis.client()
      const [rateKey] = await inspect.keys(`${settings.keyPrefix}:*:rate`)
      // the clock steps back by STEP_MS: every time the key holds is now STEP_MS ahead of TIME
      const held = await inspect.hgetall(rateKey!)
      const ahead = (v: string): string => String(Number(v) + STEP_MS)
      const moved: Record<string, string> = { t: ahead(held.t!), lg: held.lg!.split(',').map(ahead).join(',') }
      if (held.n !== undefined) moved.n = ahead(held.n)
      await inspect.hset(rateKey!, moved)
      const r = await gate.reserve(key, params, 60_000)
      // the four starts were at most a few ms ago on the key's time: the fifth a window after them
      expect(r.delayMs).toBeLessThan(1_500)
    } finally {
      gate.close()
      await closeAll([limiter])
    }
  })
})
