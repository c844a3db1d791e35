import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startRedisSentinel, type TestRedisSentinel } from '../../support/redis.js'
import { closeAll, eventually, key, opts, redisLimiter, testSettings } from './helpers.js'
import { needs } from '../../support/tools.js'

let sentinel: TestRedisSentinel
beforeAll(async () => {
  if (!process.env.SLUICE_TEST_REDIS_URL) sentinel = await startRedisSentinel()
})
afterAll(async () => {
  await sentinel?.close()
})

describe.skipIf(process.env.SLUICE_TEST_REDIS_URL)(
  `redis limiter through Redis Sentinel ${needs('redis-server')}`,
  () => {
    it('finds the master through the sentinel and shares permits there', async () => {
      // the url's host is ignored with Sentinel: only credentials and db come from it
      const settings = testSettings('redis://ignored.invalid:1', {
        topology: 'sentinel',
        sentinels: sentinel.sentinels,
        sentinelName: sentinel.name,
      })
      const a = await redisLimiter(settings)
      const b = await redisLimiter(settings)
      expect(a.mode()).toBe('redis')
      const held = await a.acquire(key, opts(1))
      const waiting = b.acquire(key, opts(1))
      await eventually(async () => (await a.status()).keys[0]?.queued === 1, 5_000, 'queued')
      const master = sentinel.master.client()
      const holders = await master.keys(`${settings.keyPrefix}:*:holders`)
      expect(holders).toHaveLength(1)
      expect(await master.zcard(holders[0]!)).toBe(1)
      held.release()
      ;(await waiting).release()
      await closeAll([a, b])
    })
  },
)
