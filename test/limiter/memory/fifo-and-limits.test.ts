import { describe, expect, it } from 'vitest'
import { createMemoryLimiter } from '../../../src/limiter/memory/index.js'
import type { Permit } from '../../../src/limiter/types.js'

const key = { instance: 'org1', endpoint: 'POST /accounts/search' }
const opts = (
  limit: number,
  extra: Partial<{ deadline: number; arrivedAt: number; maxQueue: number; signal: AbortSignal }> = {},
) => ({
  limit,
  deadline: Date.now() + 10_000,
  maxQueue: 1000,
  ...extra,
})
const tick = () => new Promise((r) => setImmediate(r))

describe('memory limiter: FIFO and limits', () => {
  it('never holds more than the limit and grants waiters in arrival order', async () => {
    const limiter = createMemoryLimiter()
    const order: number[] = []
    let held = 0
    let maxHeld = 0
    const work = Array.from({ length: 20 }, (_, i) =>
      limiter.acquire(key, opts(2)).then(async (permit) => {
        order.push(i)
        held++
        maxHeld = Math.max(maxHeld, held)
        await tick()
        held--
        permit.release()
      }),
    )
    await Promise.all(work)
    expect(maxHeld).toBe(2)
    expect(order).toEqual(Array.from({ length: 20 }, (_, i) => i))
    expect((await limiter.status()).keys).toEqual([])
  })

  it('keys are independent per instance and per endpoint', async () => {
    const limiter = createMemoryLimiter()
    const a = await limiter.acquire(key, opts(1))
    const b = await limiter.acquire({ ...key, instance: 'org2' }, opts(1))
    const c = await limiter.acquire({ ...key, endpoint: 'POST /orders/search' }, opts(1))
    const status = await limiter.status()
    expect(status.keys.map((k) => [k.instance, k.endpoint, k.inFlight, k.queued])).toEqual([
      ['org1', 'POST /accounts/search', 1, 0],
      ['org2', 'POST /accounts/search', 1, 0],
      ['org1', 'POST /orders/search', 1, 0],
    ])
    for (const p of [a, b, c]) p.release()
  })

  it('a re-entry with an earlier arrival time goes ahead of later arrivals', async () => {
    const limiter = createMemoryLimiter()
    const first = await limiter.acquire(key, opts(1))
    const order: string[] = []
    const later = limiter.acquire(key, opts(1, { arrivedAt: Date.now() + 5 })).then((p) => (order.push('later'), p))
    const retried = limiter
      .acquire(key, opts(1, { arrivedAt: Date.now() - 1000 }))
      .then((p) => (order.push('retried'), p))
    first.release()
    const p1 = await retried
    p1.release()
    const p2 = await later
    p2.release()
    expect(order).toEqual(['retried', 'later'])
  })

  it('release is idempotent: a double release frees one slot only', async () => {
    const limiter = createMemoryLimiter()
    const a = await limiter.acquire(key, opts(1))
    const waiting: Permit[] = []
    void limiter.acquire(key, opts(1)).then((p) => waiting.push(p))
    void limiter.acquire(key, opts(1)).then((p) => waiting.push(p))
    a.release()
    a.release()
    await tick()
    expect(waiting).toHaveLength(1)
    expect((await limiter.status()).keys[0]).toMatchObject({ inFlight: 1, queued: 1 })
    waiting[0]!.release()
    await tick()
    waiting[1]!.release()
    expect((await limiter.status()).keys).toEqual([])
  })
})
