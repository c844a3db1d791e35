import type { Redis } from 'ioredis'
import { describe, expect, it } from 'vitest'
import type { Permit } from '../../../src/limiter/types.js'
import { leftInRedis } from '../../support/redis.js'
import { useRedis } from '../../support/use-redis.js'
import { closeAll, eventually, key, opts, redisLimiter, testSettings } from './helpers.js'

const redis = useRedis()

/** Keys under the prefix that would live for ever (PTTL -1). */
async function keysWithoutTtl(inspect: Redis, prefix: string): Promise<string[]> {
  const keys = await inspect.keys(`${prefix}:*`)
  const ttls = await Promise.all(keys.map((k) => inspect.pttl(k)))
  return keys.filter((_, i) => ttls[i] === -1)
}

// Every key the scripts write carries an expiry, so whatever a dead replica leaves behind goes away
// by itself (docs/redis-limiter.md, "Keys").
describe('redis limiter: no key without an expiry', () => {
  it('a holders key re-created by a grant, after a release emptied it, gets its expiry', async () => {
    // renewals every second: the check below runs long before the waiter's replica renews anything
    const settings = testSettings(redis.url, { leaseMs: 3_000 })
    const a = await redisLimiter(settings)
    const b = await redisLimiter(settings)
    const inspect = redis.client()
    const held = await a.acquire(key, opts(1))
    expect(await keysWithoutTtl(inspect, settings.keyPrefix)).toEqual([])
    const waiting = b.acquire(key, opts(1))
    await eventually(async () => (await leftInRedis(inspect, settings.keyPrefix)).queued === 1, 5_000, 'queued')
    expect(await keysWithoutTtl(inspect, settings.keyPrefix)).toEqual([])
    held.release() // the release script empties `holders`, then grants b's waiter: the key is made anew
    const next = await waiting
    expect(await keysWithoutTtl(inspect, settings.keyPrefix)).toEqual([])
    next.release()
    await eventually(async () => (await leftInRedis(inspect, settings.keyPrefix)).holders === 0, 5_000, 'released')
    expect(await keysWithoutTtl(inspect, settings.keyPrefix)).toEqual([])
    await closeAll([a, b])
  })

  it('after every kind of script of a busy semaphore (acquire, queue, release with grants, handover, sync, status, heartbeat)', async () => {
    const settings = testSettings(redis.url, { leaseMs: 600 })
    const a = await redisLimiter(settings)
    const b = await redisLimiter(settings)
    const inspect = redis.client()
    const seen: string[][] = []
    const check = async (): Promise<void> => void seen.push(await keysWithoutTtl(inspect, settings.keyPrefix))
    const permits: Promise<Permit>[] = []
    for (let i = 0; i < 12; i++) {
      permits.push((i % 2 ? a : b).acquire(key, opts(2)))
      await check()
    }
    await a.status()
    await check()
    for (let i = 0; i < permits.length; i++) {
      ;(await permits[i]!).release()
      await check()
    }
    // a sync or two of each replica, with and without anything held
    const again = await a.acquire(key, opts(2))
    await new Promise((r) => setTimeout(r, 450))
    await check()
    again.release()
    await new Promise((r) => setTimeout(r, 450))
    await check()
    expect(seen.flat()).toEqual([])
    await closeAll([a, b])
  })

  it('after a kept permit is reused (the reuse script sets the expiry itself, not only the sync after it)', async () => {
    // a long lease: no sync runs during the test (a sync would set the expiry anyway)
    const settings = testSettings(redis.url, { leaseMs: 60_000, keepPermits: true })
    const limiter = await redisLimiter(settings, { keepForMs: 10_000 })
    const inspect = redis.client()
    ;(await limiter.acquire(key, opts(1))).release() // kept
    const [holders] = await inspect.keys(`${settings.keyPrefix}:*:holders`)
    expect(await inspect.zcard(holders!)).toBe(1)
    await inspect.persist(holders!) // as if the expiry had been lost: only the reuse can set it again
    const next = await limiter.acquire(key, opts(1)) // the reuse script
    expect(await inspect.pttl(holders!)).toBeGreaterThan(0)
    expect(await keysWithoutTtl(inspect, settings.keyPrefix)).toEqual([])
    next.release()
    inspect.disconnect()
    await limiter.close()
  })
})
