import { describe, expect, it } from 'vitest'
import { useRedis } from '../../support/use-redis.js'
import { needs } from '../../support/tools.js'
import { eventually, key, opts, redisLimiter, sleep, testSettings } from './helpers.js'

const redis = useRedis()

// A permit kept for the replica's next request goes back on the first sign of a waiter
// (docs/redis-limiter.md, "The request path on Redis"). A waiter that queued without telling the
// holders (its replica runs with redis.keepPermits off, or the message was lost) is still named by
// the reply of a release this replica sends for another permit of the key: that is such a sign.
describe(`redis limiter: a kept permit and a waiter named by a release's reply ${needs('redis-server')}`, () => {
  it('the kept permit goes back at once, not at its window’s end or the next sync', async () => {
    // a long lease and window: no sync and no window's end within the test
    const settings = testSettings(redis.url, { keepPermits: true, leaseMs: 60_000 })
    const a = await redisLimiter(settings, { keepForMs: 60_000 })
    // b sends no stale-head message when its waiter queues alone (keepPermits off)
    const b = await redisLimiter({ ...settings, keepPermits: false })
    const inspect = redis.client()
    const holders = async (): Promise<number> => {
      const keys = await inspect.keys(`${settings.keyPrefix}:*:holders`)
      return keys.length === 0 ? 0 : await inspect.zcard(keys[0]!)
    }
    try {
      // a holds both permits of a limit-2 key, and keeps the first when its request ends
      const first = await a.acquire(key, opts(2))
      const second = await a.acquire(key, opts(2))
      first.release()
      await sleep(100)
      expect(await holders()).toBe(2)

      // two of b's requests queue
      const granted: number[] = []
      const waits = [0, 1].map((i) =>
        b.acquire(key, opts(2)).then((p) => {
          granted.push(i)
          return p
        }),
      )
      // (a failed test closes b with them still waiting: their refusal is no error of the test's)
      for (const w of waits) w.catch(() => undefined)
      await sleep(200)
      expect(granted).toEqual([])

      // a's second request ends: its release grants b's first waiter and names the second as the head
      second.release()
      await eventually(() => Promise.resolve(granted.length === 2), 5_000, 'both of b’s waiters granted')
      for (const p of await Promise.all(waits)) p.release()
    } finally {
      inspect.disconnect()
      await Promise.all([a.close(), b.close()])
    }
  })
})
