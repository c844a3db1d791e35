import fc from 'fast-check'
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { Deadlines, MAX_TIMER_MS, type Expiring } from '../../../src/limiter/deadlines.js'
import { createMemoryLimiter } from '../../../src/limiter/memory/index.js'

const key = { instance: 'org1', endpoint: 'POST /accounts/search' }

describe('many deadlines on one timer (src/limiter/deadlines.ts)', () => {
  beforeEach(() => void vi.useFakeTimers({ now: 1_000_000 }))
  afterEach(() => void vi.useRealTimers())

  it('each wait expires once, at or after its deadline and before the next tick past it; a removed one never', () => {
    fc.assert(
      // deadlines 1 ms ahead or more: each step removes, then advances the clock, so a removal at
      // t = in comes after the expiry, and one before it (removeAt < in) wins
      fc.property(
        fc.array(
          fc.record({ in: fc.integer({ min: 1, max: 200 }), removeAt: fc.option(fc.integer({ min: 0, max: 200 })) }),
          { maxLength: 100 },
        ),
        (plan) => {
          const start = Date.now()
          const deadlines = new Deadlines()
          const expiredAt: (number | undefined)[] = plan.map(() => undefined)
          const items: Expiring[] = plan.map((p, i) => ({
            deadline: start + p.in,
            slot: -1,
            expire: () => void (expiredAt[i] = expiredAt[i] === undefined ? Date.now() : -1),
          }))
          for (const item of items) deadlines.add(item)
          for (let t = 0; t <= 201; t++) {
            plan.forEach((p, i) => {
              if (p.removeAt === t) deadlines.remove(items[i]!)
            })
            vi.advanceTimersByTime(1)
          }
          plan.forEach((p, i) => {
            const removedFirst = p.removeAt !== null && p.removeAt < p.in
            if (removedFirst) expect(expiredAt[i]).toBeUndefined()
            else {
              expect(expiredAt[i]).toBeGreaterThanOrEqual(start + p.in)
              expect(expiredAt[i]).toBeLessThanOrEqual(start + p.in + 1)
            }
          })
          expect(deadlines.size).toBe(0)
          expect(vi.getTimerCount()).toBe(0)
        },
      ),
      { numRuns: 300 },
    )
  })

  it('a wait moved up the heap by a removal still expires on time', () => {
    // heap [1, 10, 2, 11, 12, 3]: removing 11 puts 3 under 10, where only a move up keeps it on time
    const deadlines = new Deadlines()
    const start = Date.now()
    const expired: number[] = []
    const items = [1, 10, 2, 11, 12, 3].map((ms) => ({
      deadline: start + ms,
      slot: -1,
      expire: () => void expired.push(Date.now() - start),
    }))
    for (const item of items) deadlines.add(item)
    deadlines.remove(items[3]!)
    vi.advanceTimersByTime(20)
    expect(expired).toEqual([1, 2, 3, 10, 12])
  })

  it('a deadline beyond what setTimeout takes is reached in steps, not at once', () => {
    const deadlines = new Deadlines()
    let expired = false
    deadlines.add({ deadline: Date.now() + MAX_TIMER_MS * 2 + 5, slot: -1, expire: () => void (expired = true) })
    vi.advanceTimersByTime(MAX_TIMER_MS * 2)
    expect(expired).toBe(false)
    vi.advanceTimersByTime(5)
    expect(expired).toBe(true)
  })
})

describe('memory limiter: waits with different deadlines on one key', () => {
  it('each ends at its own deadline; the others keep their place and are granted in order', async () => {
    const limiter = createMemoryLimiter()
    const base = { limit: 1, maxQueue: 10 }
    const held = await limiter.acquire(key, { ...base, deadline: Date.now() + 60_000 })
    const outcome: string[] = []
    const wait = (name: string, ms: number): Promise<void> =>
      limiter.acquire(key, { ...base, deadline: Date.now() + ms }).then(
        (p) => {
          outcome.push(`${name} granted`)
          p.release()
        },
        (err: { code?: string }) => void outcome.push(`${name} ${err.code}`),
      )
    const waits = [wait('a', 60_000), wait('b', 20), wait('c', 60_000), wait('d', 40)]
    await new Promise((r) => setTimeout(r, 300))
    expect(outcome).toEqual(['b SLUICE_QUEUE_TIMEOUT', 'd SLUICE_QUEUE_TIMEOUT'])
    expect((await limiter.status()).keys[0]).toMatchObject({ inFlight: 1, queued: 2 })
    held.release()
    await Promise.all(waits)
    expect(outcome.slice(2)).toEqual(['a granted', 'c granted'])
    expect((await limiter.status()).keys).toEqual([])
  })
})
