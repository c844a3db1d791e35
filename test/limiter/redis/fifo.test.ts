import { describe, expect, it } from 'vitest'
import type { Permit } from '../../../src/limiter/types.js'
import { useRedis } from '../../support/use-redis.js'
import { closeAll, eventually, key, opts, redisLimiter, testSettings } from './helpers.js'

const redis = useRedis()

// A replica that cannot renew its liveness for about two thirds of a lease is presumed dead and its
// waiters lose their turn; long leases keep a loaded test machine's stalls from looking like that.
const LEASE_MS = 3_000

describe('redis limiter: first come, first served across replicas', () => {
  it('grants in arrival order, alternating between two limiter instances', async () => {
    const settings = testSettings(redis.url, { leaseMs: LEASE_MS })
    const a = await redisLimiter(settings)
    const b = await redisLimiter(settings)
    const inspect = redis.client()
    const queueKey = async (): Promise<number> => {
      const keys = await inspect.keys(`${settings.keyPrefix}:*:queue`)
      return keys.length ? inspect.zcard(keys[0]!) : 0
    }
    const first = await a.acquire(key, opts(1))
    const order: number[] = []
    const waits: Promise<Permit>[] = []
    for (let i = 0; i < 10; i++) {
      const limiter = i % 2 === 0 ? b : a
      waits.push(
        limiter.acquire(key, opts(1)).then((permit) => {
          order.push(i)
          return permit
        }),
      )
      // the next arrival comes strictly after this one is in the Redis queue
      await eventually(async () => (await queueKey()) === i + 1, 5_000, `waiter ${i} queued`)
    }
    first.release()
    for (const wait of waits) (await wait).release()
    expect(order).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9])
    await closeAll([a, b])
  })

  it('a request re-queued with its original arrival time goes ahead of later arrivals', async () => {
    const settings = testSettings(redis.url, { leaseMs: LEASE_MS })
    const a = await redisLimiter(settings)
    const b = await redisLimiter(settings)
    const held = await a.acquire(key, opts(1))
    const order: string[] = []
    // one after the other: sent together, the two could reach Redis in either order
    const later1 = b.acquire(key, opts(1)).then((p) => (order.push('later1'), p))
    await eventually(async () => (await a.status()).keys[0]?.queued === 1, 5_000, 'later1 queued')
    const later2 = a.acquire(key, opts(1)).then((p) => (order.push('later2'), p))
    await eventually(async () => (await a.status()).keys[0]?.queued === 2, 5_000, 'two queued')
    // as after an upstream 429: it arrived 5 s ago, before both of the others
    const retried = b.acquire(key, opts(1, { arrivedAt: Date.now() - 5_000 })).then((p) => (order.push('retried'), p))
    await eventually(async () => (await a.status()).keys[0]?.queued === 3, 5_000, 'three queued')
    held.release()
    for (const wait of [retried, later1, later2]) (await wait).release()
    expect(order).toEqual(['retried', 'later1', 'later2'])
    await closeAll([a, b])
  })
})
