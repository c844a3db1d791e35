import { describe, expect, it } from 'vitest'
import { useRedis } from '../../support/use-redis.js'
import { eventually, key, opts, redisLimiter, testSettings } from './helpers.js'
import { startWorker } from './worker-process.js'

const redis = useRedis()

describe('redis limiter: a replica dies holding permits', () => {
  it('after SIGKILL, its permits come back to the others and its queued waiter does not block them', async () => {
    const settings = testSettings(redis.url, { leaseMs: 600 })
    const inspect = redis.client()
    const worker = await startWorker(settings, 'doomed')
    const limit = 2
    worker.acquire(key, limit, limit)
    await worker.next((e) => e.event === 'granted' && e.held === limit)
    // one more waiter of the doomed replica, at the head of the queue
    worker.acquire(key, 1, limit)
    const survivor = await redisLimiter(settings)
    await eventually(
      async () => (await survivor.status()).keys[0]?.queued === 1,
      5_000,
      "the doomed replica's waiter queued",
    )
    const waits = [survivor.acquire(key, opts(limit)), survivor.acquire(key, opts(limit))]
    await eventually(async () => (await survivor.status()).keys[0]?.queued === 3, 5_000, 'survivor waiters queued')

    await worker.kill('SIGKILL')
    const started = Date.now()
    const permits = await Promise.all(waits)
    // not a timing assertion: only that it happened at all, long before the 10 s deadline
    expect(Date.now() - started).toBeLessThan(10_000)
    const status = await survivor.status()
    expect(status.keys).toEqual([expect.objectContaining({ inFlight: 2, queued: 0 })])
    for (const p of permits) p.release()
    await eventually(
      async () => {
        const holders = await inspect.keys(`${settings.keyPrefix}:*:holders`)
        const counts = await Promise.all(holders.map((k) => inspect.zcard(k)))
        return counts.every((c) => c === 0)
      },
      5_000,
      'no holders left',
    )
    await survivor.close()
  })
})
