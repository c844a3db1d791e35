import { describe, expect, it } from 'vitest'
import type { LearnOptions, Permit } from '../../../src/limiter/types.js'
import { useRedis } from '../../support/use-redis.js'
import { needs } from '../../support/tools.js'
import { eventually, key, opts, redisLimiter, sleep, testSettings } from './helpers.js'

const redis = useRedis()

// The cold review's interleavings (LIMITER-CHECKLIST): a kept permit starts no request Redis would not grant
// through a release and an acquire (reuse/lua.ts confirms it in one script).
describe.skipIf(process.env.SLUICE_TEST_REDIS_URL)(
  `redis limiter: a kept permit after Redis changed ${needs('redis-server')}`,
  () => {
    it('Redis lost its data: the kept permit is not used while another replica holds the slot Redis granted after the loss', async () => {
      const settings = testSettings(redis.url, { keepPermits: true, leaseMs: 60_000 }) // no sync during the test
      const [a, b] = await Promise.all([1, 2].map(() => redisLimiter(settings)))
      const inspect = redis.client()
      ;(await a!.acquire(key, opts(1))).release() // announces A
      ;(await b!.acquire(key, opts(1))).release() // announces B
      await eventually(async () => (await inspect.keys(`${settings.keyPrefix}:*:holders`)).length === 0, 5_000, 'idle')
      ;(await a!.acquire(key, opts(1))).release() // A keeps this one
      await inspect.flushall()
      const pb = await b!.acquire(key, opts(1)) // the slot looks free: granted
      const pa = await Promise.race([a!.acquire(key, opts(1)), sleep(300).then(() => undefined)])
      const inFlight = [pb, pa].filter((p) => p !== undefined && p.canStart()).length
      pb.release()
      if (pa === undefined) await sleep(100)
      inspect.disconnect()
      await Promise.all([a!.close(), b!.close()])
      expect(inFlight).toBe(1)
    })

    it('a 429 lowered a learned limit (20 → 18): the kept permit starts no request while 18 are in flight', async () => {
      const learn: LearnOptions = { ceiling: 20, floor: 1, idleMs: 3_600_000 }
      const settings = testSettings(redis.url, { keepPermits: true, leaseMs: 60_000 })
      const limiter = await redisLimiter(settings)
      const o = () => ({ limit: 20, learn, maxQueue: 1_000, deadline: Date.now() + 10_000 })
      const held: Permit[] = []
      for (let i = 0; i < 20; i++) held.push(await limiter.acquire(key, o()))
      held.pop()!.release('success') // kept (a success at the ceiling teaches nothing)
      held.pop()!.release('throttled') // learned 20 → 18
      await sleep(200)
      let started = false
      const next = limiter.acquire(key, o()).then((p) => ((started = true), p))
      await sleep(200)
      const inFlight = held.length + (started ? 1 : 0)
      for (const p of held) p.release('success')
      ;(await next).release('success')
      await limiter.close()
      expect(inFlight).toBeLessThanOrEqual(18)
    })
  },
)
