import { describe, expect, it } from 'vitest'
import type { Permit } from '../../../src/limiter/types.js'
import { leftInRedis } from '../../support/redis.js'
import { useRedis } from '../../support/use-redis.js'
import { closeAll, eventually, key, opts, redisLimiter, sleep, testSettings } from './helpers.js'

const redis = useRedis()

describe('redis limiter: aborts', () => {
  it('1000 aborts while queued and while held leave no holder and no waiter in Redis', async () => {
    const settings = testSettings(redis.url, { leaseMs: 5_000 })
    const limiters = [await redisLimiter(settings), await redisLimiter(settings)]
    const inspect = redis.client()
    const limit = 5
    const blockers = await Promise.all([0, 1, 2, 3, 4].map((i) => limiters[i % 2]!.acquire(key, opts(limit))))

    const controllers = Array.from({ length: 1000 }, () => new AbortController())
    let abortedWaiting = 0
    let abortedHeld = 0
    const clients = controllers.map(async (controller, i) => {
      let permit: Permit
      try {
        permit = await limiters[i % 2]!.acquire(
          key,
          opts(limit, { signal: controller.signal, maxQueue: 10_000, deadlineMs: 30_000 }),
        )
      } catch (err) {
        expect(err).toMatchObject({ name: 'AbortError' })
        abortedWaiting++
        return
      }
      // the client hangs up while its request is upstream; the permit goes back when the upstream is done
      controller.abort()
      abortedHeld++
      await sleep(Math.random() * 2)
      permit.release()
      permit.release() // a second release is harmless
    })
    await eventually(async () => (await limiters[0]!.status()).keys[0]?.queued === 1000, 20_000, 'all 1000 queued')
    // half of the clients hang up while queued, in random order
    const quitters = controllers.filter((_, i) => i % 4 < 2).sort(() => Math.random() - 0.5)
    for (const controller of quitters) controller.abort()
    for (const blocker of blockers) blocker.release()
    await Promise.all(clients)

    expect(abortedWaiting).toBe(500)
    expect(abortedHeld).toBe(500)
    await eventually(
      async () => {
        const left = await leftInRedis(inspect, settings.keyPrefix)
        return left.holders === 0 && left.queued === 0
      },
      5_000,
      'Redis to be empty',
    )
    expect((await limiters[0]!.status()).keys).toEqual([])
    await closeAll(limiters)
  })

  it('a grant that races an abort is given back, not leaked', async () => {
    const settings = testSettings(redis.url, { leaseMs: 5_000 })
    const a = await redisLimiter(settings)
    const b = await redisLimiter(settings)
    const inspect = redis.client()
    for (let round = 0; round < 30; round++) {
      const held = await a.acquire(key, opts(1))
      const controller = new AbortController()
      const waiting = b.acquire(key, opts(1, { signal: controller.signal }))
      await eventually(async () => (await leftInRedis(inspect, settings.keyPrefix)).queued === 1, 5_000, 'queued')
      // release (which grants to the waiter inside Redis) and abort in the same tick
      held.release()
      controller.abort()
      const outcome = await waiting.then(
        (p) => (p.release(), 'granted'),
        () => 'aborted',
      )
      expect(['granted', 'aborted']).toContain(outcome)
      await eventually(
        async () => {
          const left = await leftInRedis(inspect, settings.keyPrefix)
          return left.holders === 0 && left.queued === 0
        },
        5_000,
        'Redis to be empty',
      )
    }
    await closeAll([a, b])
  })

  it('a deadline while queued rejects with SLUICE_QUEUE_TIMEOUT and leaves the queue', async () => {
    const settings = testSettings(redis.url)
    const a = await redisLimiter(settings)
    const inspect = redis.client()
    const held = await a.acquire(key, opts(1))
    await expect(a.acquire(key, opts(1, { deadlineMs: 50 }))).rejects.toMatchObject({
      code: 'SLUICE_QUEUE_TIMEOUT',
      statusCode: 503,
    })
    await eventually(async () => (await leftInRedis(inspect, settings.keyPrefix)).queued === 0, 5_000, 'queue empty')
    held.release()
    await a.close()
  })

  it("past the replica's queue length it rejects with SLUICE_QUEUE_FULL", async () => {
    const settings = testSettings(redis.url)
    const a = await redisLimiter(settings)
    const held = await a.acquire(key, opts(1))
    const queued = a.acquire(key, opts(1, { maxQueue: 1 }))
    await eventually(async () => (await a.status()).keys[0]?.queued === 1, 5_000, 'one queued')
    await expect(a.acquire(key, opts(1, { maxQueue: 1 }))).rejects.toMatchObject({
      code: 'SLUICE_QUEUE_FULL',
      statusCode: 503,
    })
    held.release()
    ;(await queued).release()
    await a.close()
  })

  it('drain answers every waiter with SLUICE_UNAVAILABLE; held permits still release', async () => {
    const settings = testSettings(redis.url)
    const a = await redisLimiter(settings)
    const inspect = redis.client()
    const held = await a.acquire(key, opts(1))
    const waiters = [1, 2, 3].map(() => a.acquire(key, opts(1)))
    await eventually(async () => (await a.status()).keys[0]?.queued === 3, 5_000, 'three queued')
    a.drain()
    for (const w of waiters) await expect(w).rejects.toMatchObject({ code: 'SLUICE_UNAVAILABLE', statusCode: 503 })
    await expect(a.acquire(key, opts(1))).rejects.toMatchObject({ code: 'SLUICE_UNAVAILABLE' })
    expect(a.ready()).toBe(false)
    held.release()
    await eventually(
      async () => {
        const left = await leftInRedis(inspect, settings.keyPrefix)
        return left.holders === 0 && left.queued === 0
      },
      5_000,
      'Redis to be empty',
    )
    await a.close()
  })
})

describe('redis limiter: a wait deadline beyond what setTimeout takes (2^31-1 ms)', () => {
  it('does not end the wait at once', async () => {
    const settings = testSettings(redis.url)
    const a = await redisLimiter(settings)
    const held = await a.acquire(key, opts(1))
    let outcome = 'waiting'
    const waiting = a.acquire(key, { ...opts(1), deadline: Date.now() + 31 * 86_400_000 }).then(
      (p) => ((outcome = 'granted'), p),
      (err: Error) => ((outcome = err.message), undefined),
    )
    await a.status()
    await new Promise((r) => setTimeout(r, 30))
    expect(outcome).toBe('waiting')
    held.release()
    ;(await waiting)?.release()
    expect(outcome).toBe('granted')
    await a.close()
  })
})
