/**
 * A hold or a rate one replica's answer taught is published on `<prefix>:rates` (docs/redis-limiter.md,
 * "Rates"): a replica that never saw the answer, with no rate configured for the key, then takes the
 * key's starts through the gate. Real redis-server, two replicas.
 */
import { describe, expect, it, onTestFinished } from 'vitest'
import { RatedLimiter } from '../../../src/limiter/rate/limiter.js'
import { RedisRateGate } from '../../../src/limiter/redis/index.js'
import { decodeRateNews, encodeRateNews } from '../../../src/limiter/redis/rate/news.js'
import { useRedis } from '../../support/use-redis.js'
import { closeAll, key, memoryLog, redisLimiter, testSettings } from './helpers.js'

const redis = useRedis()
const learning = { enabled: true, idleMs: 60_000, marginMs: 0 }

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

describe('rate news between replicas', () => {
  it("a rate published in replica A's answer is in force on replica B, which never saw it", async () => {
    const [a, b] = await twoReplicas()
    a.observeAnswer(key, 200, { 'ratelimit-policy': '"default";q=5;w=1' }, false)
    let rates = (await b.status()).rates
    for (let i = 0; i < 100 && rates === undefined; i++) {
      await new Promise((r) => setTimeout(r, 20))
      rates = (await b.status()).rates
    }
    expect(rates).toEqual([
      expect.objectContaining({
        instance: key.instance,
        endpoint: key.endpoint,
        source: 'published',
        learned: expect.objectContaining({ requests: 5, windowMs: 1000 }) as unknown,
      }),
    ])
  })

  it('the last rate written applies on every replica: a looser one after a stricter replaces it', async () => {
    const [a, b] = await twoReplicas()
    const learnedOnB = async (requests: number): Promise<boolean> => {
      for (let i = 0; i < 100; i++) {
        if ((await b.status()).rates?.[0]?.learned?.requests === requests) return true
        await new Promise((r) => setTimeout(r, 20))
      }
      return false
    }
    a.observeAnswer(key, 200, { 'ratelimit-policy': '"default";q=5;w=1' }, false)
    expect(await learnedOnB(5)).toBe(true)
    a.observeAnswer(key, 200, { 'ratelimit-policy': '"default";q=20;w=1' }, false)
    expect(await learnedOnB(20)).toBe(true)
  })

  it('messages round-trip; a broken or unknown one is ignored', () => {
    const rate = { requests: 5, windowMs: 1000, burst: 1 }
    expect(decodeRateNews(encodeRateNews({ key, holdMs: 5000 }))).toEqual({ key, holdMs: 5000 })
    expect(decodeRateNews(encodeRateNews({ key, rate, ttlMs: 60_000, source: 'published' }))).toEqual({
      key,
      rate,
      ttlMs: 60_000,
      source: 'published',
    })
    for (const bad of ['', 'x', '{}', '{"i":"a","e":"b"}', '{"i":"a","e":"b","h":-1}', 'null'])
      expect(decodeRateNews(bad)).toBeUndefined()
  })
})
