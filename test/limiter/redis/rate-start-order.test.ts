/**
 * Starts follow the order their requests began to wait, across replicas (docs/redis-limiter.md, "Rates"):
 * a replica nearer to Redis, asking first each time a start frees, does not take every start while a
 * request of another app waits on another replica. Deterministic: the asks are made one after another.
 */
import { describe, expect, it, onTestFinished } from 'vitest'
import { gcraParams } from '../../../src/limiter/rate/gcra.js'
import { RedisRateGate } from '../../../src/limiter/redis/index.js'
import { useRedis } from '../../support/use-redis.js'
import { closeAll, key, memoryLog, redisLimiter, testSettings } from './helpers.js'

const redis = useRedis()
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms))

async function twoGates() {
  const settings = testSettings(redis.url)
  const limiters = [await redisLimiter(settings, { replicaId: 'a' }), await redisLimiter(settings, { replicaId: 'b' })]
  onTestFinished(() => closeAll(limiters))
  return limiters.map(
    (limiter) =>
      new RedisRateGate(
        {
          scripts: limiter.scripts,
          keyPrefix: settings.keyPrefix,
          mode: () => limiter.mode(),
          replicas: () => 2,
          settleMs: 2_000,
        },
        memoryLog(),
      ),
  ) as [RedisRateGate, RedisRateGate]
}

describe('starts in waiting order across replicas', () => {
  it('the near replica asks first at every free start; the request waiting on the far one gets the next start', async () => {
    const [near, far] = await twoGates()
    const params = gcraParams({ requests: 2, windowMs: 1000, burst: 1 }) // one start per 500 ms
    expect((await near.reserve(key, params, 0, 'near-1')).granted).toBe(true)
    // the far replica's request (another app) waits from now
    const waiting = await far.reserve(key, params, 0, 'far-1')
    expect(waiting.granted).toBe(false)
    await sleep(waiting.delayMs + 30)
    // the start is free: the near replica's next request asks first
    const nearNext = await near.reserve(key, params, 0, 'near-2')
    const farNext = await far.reserve(key, params, 0, 'far-1')
    expect({ near: nearNext.granted, far: farNext.granted }).toEqual({ near: false, far: true })
    // and the near one is next after it
    await sleep(nearNext.delayMs + 30)
    expect((await near.reserve(key, params, 0, 'near-2')).granted).toBe(true)
  })
})
