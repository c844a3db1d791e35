import { describe, expect, it } from 'vitest'
import { cuttable } from './cuttable.js'
import { useRedis } from '../../support/use-redis.js'
import { needs } from '../../support/tools.js'
import { eventually, heardByAll, key, opts, redisLimiter, scriptCallsOf, sleep, testSettings } from './helpers.js'

const redis = useRedis()

type Inspect = ReturnType<typeof redis.client>

/** Every holder Redis counts for the test's one key. */
async function holdersOf(inspect: Inspect, prefix: string): Promise<string[]> {
  const keys = await inspect.keys(`${prefix}:*:holders`)
  return keys.length === 0 ? [] : await inspect.zrange(keys[0]!, 0, -1)
}

/** Blocks the event loop (a stall: a long GC, a CPU-starved pod) for `ms`: no timer fires, no socket is read. */
function stall(ms: number): void {
  const until = performance.now() + ms
  while (performance.now() < until) {
    // busy
  }
}

// counts every script the server ran: only meaningful on a server of the test's own
describe.skipIf(process.env.SLUICE_TEST_REDIS_URL)(
  `redis limiter: a permit kept for the replica's next request ${needs('redis-server')}`,
  () => {
    it('used again within its window, it costs one script a request (the reuse, no release); Redis counts it held meanwhile; it goes back at the window’s end', async () => {
      // a long lease: no sync runs during the test (a sync would give the kept permit back)
      const settings = testSettings(redis.url, { keepPermits: true, leaseMs: 60_000 })
      const limiter = await redisLimiter(settings, { keepForMs: 400 })
      const inspect = redis.client()
      // announces the replica, loads the scripts (acquire, then reuse)
      for (let i = 0; i < 2; i++) (await limiter.acquire(key, opts(1))).release()
      await eventually(async () => (await holdersOf(inspect, settings.keyPrefix)).length === 0, 5_000, 'first back')

      const before = await scriptCallsOf(inspect)
      for (let i = 0; i < 6; i++) (await limiter.acquire(key, opts(1))).release()
      // one acquire, then five reuses confirmed by Redis (reuse/lua.ts); no release (12 scripts without keeping)
      expect(await scriptCallsOf(inspect)).toBe(before + 6)
      expect(await holdersOf(inspect, settings.keyPrefix)).toHaveLength(1)
      await eventually(async () => (await holdersOf(inspect, settings.keyPrefix)).length === 0, 5_000, 'kept back')
      expect(await scriptCallsOf(inspect)).toBe(before + 7) // its release, once
      inspect.disconnect()
      await limiter.close()
    })

    it('a waiter of another replica gets it at once: the acquire that queues alone tells the holder, long before the window or a sync would', async () => {
      const settings = testSettings(redis.url, { keepPermits: true, leaseMs: 60_000 })
      const [a, b] = await Promise.all([1, 2].map(() => redisLimiter(settings, { keepForMs: 60_000 })))
      const inspect = redis.client()
      ;(await a!.acquire(key, opts(1))).release()
      await eventually(async () => (await holdersOf(inspect, settings.keyPrefix)).length === 1, 5_000, 'kept')
      const kept = (await holdersOf(inspect, settings.keyPrefix))[0]!

      const granted = await Promise.race([b!.acquire(key, opts(1)), sleep(10_000).then(() => undefined)])
      expect(granted).toBeDefined()
      const holders = await holdersOf(inspect, settings.keyPrefix)
      expect(holders).toHaveLength(1)
      expect(holders[0]).not.toBe(kept)
      // and A's next request waits behind B's, never beside it
      let aGranted = false
      const next = a!.acquire(key, opts(1)).then((p) => {
        aGranted = true
        return p
      })
      await sleep(100)
      expect(aGranted).toBe(false)
      granted!.release()
      ;(await next).release()
      inspect.disconnect()
      await Promise.all([a!.close(), b!.close()])
    })

    it('after a stall longer than its window it is not used: given back, and the request acquires again', async () => {
      const settings = testSettings(redis.url, { keepPermits: true, leaseMs: 60_000 })
      const limiter = await redisLimiter(settings, { keepForMs: 100 })
      const inspect = redis.client()
      ;(await limiter.acquire(key, opts(1))).release()
      await eventually(async () => (await holdersOf(inspect, settings.keyPrefix)).length === 0, 5_000, 'first back')
      ;(await limiter.acquire(key, opts(1))).release() // kept
      const before = await scriptCallsOf(inspect)
      stall(150)
      const permit = await limiter.acquire(key, opts(1))
      // the kept permit's release, then this request's acquire
      expect(await scriptCallsOf(inspect)).toBe(before + 2)
      expect(await holdersOf(inspect, settings.keyPrefix)).toHaveLength(1)
      permit.release()
      inspect.disconnect()
      await limiter.close()
    })

    it('Redis unreachable: the kept permit is never used in the fallback, and is given back once Redis answers', async () => {
      const relay = await cuttable({ host: '127.0.0.1', port: redis.port })
      const settings = testSettings(relay.url, { keepPermits: true, leaseMs: 3_000, fallback: 'local' })
      const limiter = await redisLimiter(settings, { keepForMs: 60_000 })
      const inspect = redis.client()
      await heardByAll(inspect, settings.keyPrefix, 1) // the fallback's share is taken only then
      ;(await limiter.acquire(key, opts(1))).release() // kept
      relay.cut()
      await eventually(() => limiter.mode() === 'local', 10_000, 'fallback mode')
      ;(await limiter.acquire(key, opts(1))).release() // served by the fallback
      relay.restore()
      await eventually(() => limiter.mode() === 'redis', 10_000, 'back to redis')
      await eventually(async () => (await holdersOf(inspect, settings.keyPrefix)).length === 0, 5_000, 'given back')
      const before = await scriptCallsOf(inspect)
      ;(await limiter.acquire(key, opts(1))).release()
      expect(await scriptCallsOf(inspect)).toBeGreaterThan(before) // acquired through Redis again
      inspect.disconnect()
      await limiter.close()
      await relay.close()
    })
  },
)

describe(`redis limiter: a kept permit alone does not make its key busy ${needs('redis-server')}`, () => {
  it('the heartbeat does not announce a key whose only permit is kept (a scrape would read every key used within the window)', async () => {
    // a tick (heartbeat, then sync) every 500 ms; the window far longer, so the permit is kept at the heartbeat
    const settings = testSettings(redis.url, { keepPermits: true, leaseMs: 1_500 })
    const limiter = await redisLimiter(settings, { keepForMs: 60_000 })
    const inspect = redis.client()
    ;(await limiter.acquire(key, opts(1))).release()
    await sleep(1_200) // two ticks at least: the first announces what is busy, then its sync gives the kept permit back
    expect(await inspect.zrange(`${settings.keyPrefix}:{global}:active`, 0, -1)).toEqual([])
    inspect.disconnect()
    await limiter.close()
  })
})

// counts every script the server ran: only meaningful on a server of the test's own
describe.skipIf(process.env.SLUICE_TEST_REDIS_URL)(
  `redis limiter: redis.keepPermits off ${needs('redis-server')}`,
  () => {
    it('off, nothing is kept: each request costs its acquire and its release, and the permit is back at once', async () => {
      const settings = testSettings(redis.url, { leaseMs: 60_000, keepPermits: false })
      const limiter = await redisLimiter(settings, { keepForMs: 60_000 }) // a window would be open, were keeping on
      const inspect = redis.client()
      for (let i = 0; i < 2; i++) (await limiter.acquire(key, opts(1))).release() // announced, scripts loaded
      await eventually(async () => (await holdersOf(inspect, settings.keyPrefix)).length === 0, 5_000, 'first back')
      const before = await scriptCallsOf(inspect)
      for (let i = 0; i < 3; i++) {
        ;(await limiter.acquire(key, opts(1))).release()
        await eventually(async () => (await holdersOf(inspect, settings.keyPrefix)).length === 0, 5_000, 'released')
      }
      expect(await scriptCallsOf(inspect)).toBe(before + 6) // acquire + release each: no reuse, no kept permit
      inspect.disconnect()
      await limiter.close()
    })
  },
)
