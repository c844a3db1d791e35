import { describe, expect, it } from 'vitest'
import type { TestRedis } from '../../support/redis.js'
import { useRedis } from '../../support/use-redis.js'
import { closeAll, key, opts, redisLimiter, sleep, testSettings } from './helpers.js'
import { needs } from '../../support/tools.js'

const redis = useRedis()

describe('redis limiter: contention', () => {
  it('never has more permits out than the limit, counted by the holders and by Redis', async () => {
    const limit = 3
    const settings = testSettings(redis.url, { leaseMs: 2_000 })
    const limiters = await Promise.all([1, 2, 3].map(() => redisLimiter(settings)))
    const inspect = redis.client()

    let holding = 0
    let maxHolding = 0
    let grants = 0
    let maxInRedis = 0
    let running = true
    // Redis's own count, sampled all along
    const sampler = (async () => {
      while (running) {
        const keys = await inspect.keys(`${settings.keyPrefix}:*:holders`)
        if (keys[0]) maxInRedis = Math.max(maxInRedis, await inspect.zcard(keys[0]))
        await sleep(2)
      }
    })()

    const perWorker = 15
    const workers = limiters.flatMap((limiter) =>
      [1, 2, 3, 4].map(async () => {
        for (let i = 0; i < perWorker; i++) {
          const permit = await limiter.acquire(key, opts(limit))
          holding++
          grants++
          maxHolding = Math.max(maxHolding, holding)
          await sleep(1 + Math.random() * 4)
          holding--
          permit.release()
        }
      }),
    )
    await Promise.all(workers)
    running = false
    await sampler

    expect(grants).toBe(3 * 4 * perWorker)
    expect(maxHolding).toBe(limit) // contended all along, so the limit was reached, and never passed
    expect(maxInRedis).toBeLessThanOrEqual(limit)
    expect(maxInRedis).toBeGreaterThan(0)
    const holders = await inspect.keys(`${settings.keyPrefix}:*:holders`)
    for (const k of holders) expect(await inspect.zcard(k)).toBe(0)
    await closeAll(limiters)
  })

  // counts every command the server ran: only meaningful on a server of the test's own
  it.skipIf(process.env.SLUICE_TEST_REDIS_URL)(
    `an uncontended permit costs one Redis round trip to acquire and one to release ${needs('redis-server')}`,
    async () => {
      // long lease: no renewal or heartbeat runs during the measurement; no permit kept for the next
      // request (kept-permits.test.ts: the next costs none)
      const settings = testSettings(redis.url, { leaseMs: 60_000 })
      const limiter = await redisLimiter(settings, { keepForMs: 0 })
      const inspect = redis.client()
      const warm = await limiter.acquire(key, opts(5)) // loads the script on the connection
      warm.release()
      await sleep(20)
      const before = await scriptCalls(inspect)
      const permit = await limiter.acquire(key, opts(5))
      const afterAcquire = await scriptCalls(inspect)
      permit.release()
      await sleep(20)
      const afterRelease = await scriptCalls(inspect)
      expect(afterAcquire - before).toBe(1)
      expect(afterRelease - afterAcquire).toBe(1)
      await limiter.close()
    },
  )
})

/** EVAL + EVALSHA calls the server has executed so far (INFO commandstats). */
async function scriptCalls(client: ReturnType<TestRedis['client']>): Promise<number> {
  const info = await client.info('commandstats')
  let total = 0
  for (const m of info.matchAll(/^cmdstat_(eval|evalsha):calls=(\d+)/gm)) total += Number(m[2])
  return total
}
