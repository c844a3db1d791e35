/**
 * A rate nobody publishes, learned from 429 + Retry-After on several replicas (docs/learned-limits.md,
 * "Rates"): the starts the API accepted are counted in Redis, every replica's, so the rate found is the
 * key's, not one replica's part of it. Real redis-server, two replicas.
 */
import { describe, expect, it, onTestFinished } from 'vitest'
import { RatedLimiter } from '../../../src/limiter/rate/limiter.js'
import { RedisRateGate } from '../../../src/limiter/redis/index.js'
import { useRedis } from '../../support/use-redis.js'
import { closeAll, key, memoryLog, redisLimiter, testSettings } from './helpers.js'

const redis = useRedis()
const learning = { enabled: true, idleMs: 60_000, marginMs: 0 }
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms))

async function twoReplicas() {
  const settings = testSettings(redis.url)
  const limiters = [await redisLimiter(settings, { replicaId: 'a' }), await redisLimiter(settings, { replicaId: 'b' })]
  onTestFinished(() => closeAll(limiters))
  return limiters.map((limiter) => {
    const host = {
      scripts: limiter.scripts,
      keyPrefix: settings.keyPrefix,
      mode: () => limiter.mode(),
      replicas: () => 2,
      settleMs: 2_000,
    }
    return new RatedLimiter(limiter, new RedisRateGate(host, memoryLog()), learning, undefined)
  }) as [RatedLimiter, RatedLimiter]
}

describe('a rate learned from 429s on two replicas through Redis', () => {
  it('the accepted starts of both replicas count: 3 + 3 accepted in the window before the throttle teach 6 per second', async () => {
    const [a, b] = await twoReplicas()
    a.observeAnswer(key, 429, { 'retry-after': '1' }, true)
    // B hears of the hold (and so that the key's rate is being learned)
    for (let i = 0; i < 100 && (await b.status()).rates === undefined; i++) await sleep(20)
    await sleep(600)
    for (let i = 0; i < 3; i++) {
      a.observeAnswer(key, 200, {}, false)
      b.observeAnswer(key, 200, {}, false)
    }
    await sleep(500)
    a.observeAnswer(key, 429, { 'retry-after': '1' }, true)
    let learned: number | undefined
    for (let i = 0; i < 50; i++) {
      learned = (await a.status()).rates?.[0]?.learned?.requests
      if (learned === 6) break
      await sleep(20)
    }
    expect(learned).toBe(6)
  })
})
