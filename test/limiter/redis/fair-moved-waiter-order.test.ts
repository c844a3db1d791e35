import { afterEach, describe, expect, it } from 'vitest'
import { semaphoreKeysOf, tagOf } from '../../../src/limiter/redis/keys.js'
import type { Limiter, Permit } from '../../../src/limiter/types.js'
import { useRedis } from '../../support/use-redis.js'
import { cuttable, type Cuttable } from './cuttable.js'
import { closeAll, eventually, key, opts, redisLimiter, testSettings } from './helpers.js'

// Fair share between apps: a request that "waited before" gets S = V - age/(age+1 s), in
// (V-1, V] — ahead of EVERY waiter queued, however long they have waited, because queued waiters
// have tags >= V. A waiter moved back from the fallback after an outage must not be placed so: it
// may have arrived during the outage, after waiters of its own app that have been queued in Redis
// all along, and would pass them — FIFO within an app broken across replicas right after a
// recovery. A moved waiter is queued as new, behind its app's earlier waiters (docs/redis-limiter.md, "Re-queued").

const redis = useRedis()

let line: Cuttable | undefined
const limiters: Limiter[] = []
afterEach(async () => {
  await closeAll(limiters.splice(0))
  await line?.close()
  line = undefined
})

describe('redis limiter: a waiter moved back from the fallback', () => {
  it('is not served before a waiter of its own app that arrived earlier and waited in Redis all along', async () => {
    line = await cuttable(redis)
    const prefix = testSettings(redis.url).keyPrefix
    const r1 = await redisLimiter(testSettings(redis.url, { keyPrefix: prefix }), { replicaId: 'r1' })
    const r2 = await redisLimiter(testSettings(line.url, { keyPrefix: prefix }), { replicaId: 'r2' })
    limiters.push(r1, r2)
    const queue = semaphoreKeysOf(prefix, tagOf(key)).queue
    const inspect = redis.client()

    const holder = await r1.acquire(key, opts(1, { app: 'x' }))
    const order: string[] = []
    const served = (name: string) => (p: Permit) => {
      order.push(name)
      p.release()
    }
    // r1's request of app `a`, queued in Redis
    const early = r1.acquire(key, opts(1, { app: 'a' })).then(served('early'))
    await eventually(async () => (await inspect.zcard(queue)) === 1, 5_000, 'the early waiter in Redis')

    // r2 is cut off from Redis: its request of app `a` arrives now, queues in the local fallback
    // (behind a local permit), and moves to Redis when r2 recovers
    line.cut()
    await eventually(
      async () => {
        await r2.status().catch(() => undefined)
        return r2.mode() === 'local'
      },
      5_000,
      'local fallback',
    )
    // In fallback a limit-1 key's one slot belongs to one replica, chosen by a rendezvous hash of the
    // replica ids (which carry a random suffix; docs/redis-limiter.md, "Failure modes"): r2 holds it
    // or queues. Either way its app-`a` request waits in the fallback and moves to Redis.
    const asked = r2.acquire(key, opts(1, { app: 'y' }))
    const local = await Promise.race([asked, new Promise<undefined>((r) => setTimeout(() => r(undefined), 500))])
    const other = local === undefined ? asked.then(served('local')) : undefined
    const moved = r2.acquire(key, opts(1, { app: 'a' })).then(served('moved'))
    line.restore()
    await eventually(() => r2.mode() === 'redis', 10_000, 'back to redis')
    const queued = local === undefined ? 3 : 2
    await eventually(async () => (await inspect.zcard(queue)) === queued, 5_000, 'the moved waiter in Redis')

    holder.release()
    local?.release()
    await Promise.all([early, moved, other])
    expect(order.filter((name) => name !== 'local')).toEqual(['early', 'moved'])
  }, 30_000)
})
