import { describe, expect, it, onTestFinished, vi } from 'vitest'
import { performance } from 'node:perf_hooks'
import { createMemoryLimiter } from '../../../src/limiter/memory/index.js'
import { MemoryRateGate } from '../../../src/limiter/rate/gate.js'
import { gcraParams, HOLD_ONLY } from '../../../src/limiter/rate/gcra.js'
import { RatedLimiter } from '../../../src/limiter/rate/limiter.js'
import type { AcquireOptions } from '../../../src/limiter/types.js'

const key = { instance: 'org1', endpoint: 'GET /contacts' }
const learning = { enabled: true, idleMs: 60_000, marginMs: 0 }

/** The most of `times` within any half-open span of `spanMs`. */
function mostWithin(times: readonly number[], spanMs: number): number {
  const sorted = [...times].sort((a, b) => a - b)
  let most = 0
  for (let i = 0, j = 0; i < sorted.length; i++) {
    while (sorted[i]! - sorted[j]! >= spanMs) j++
    most = Math.max(most, i - j + 1)
  }
  return most
}

const options = (o: Partial<AcquireOptions> = {}): AcquireOptions => ({
  limit: 50,
  deadline: Date.now() + 60_000,
  maxQueue: 1000,
  rate: { requests: 4, windowMs: 1000, burst: 1 },
  ...o,
})

describe('the rate gate under faults (in process)', () => {
  it('a hold swept at its end is not forgotten: the first starts after it are spaced, no burst', () => {
    let now = 0
    const gate = new MemoryRateGate(() => now)
    const params = gcraParams({ requests: 10, windowMs: 1000, burst: 5 })
    gate.hold(key, 5000, HOLD_ONLY)
    now = 5000
    // other keys' starts run the sweep (every 1,024) right at the hold's end
    for (let i = 0; i < 1100; i++) gate.reserve({ ...key, endpoint: `GET /other/${i}` }, params, 0)
    let together = 0
    while (gate.reserve(key, params, 0).granted) together++
    expect(together).toBe(1)
  })

  it('a Retry-After hold stops every start until it ends, at any burst', () => {
    let now = 0
    const gate = new MemoryRateGate(() => now)
    // 10/s burst 5: a 5 s hold written with no rate (a Retry-After), reservations under the rate
    const params = gcraParams({ requests: 10, windowMs: 1000, burst: 5 })
    gate.hold(key, 5000, HOLD_ONLY)
    const delays = Array.from({ length: 5 }, () => gate.reserve(key, params, Infinity).delayMs)
    for (const d of delays) expect(d).toBeGreaterThanOrEqual(5000)
    now = 4300
    expect(gate.reserve(key, params, Infinity).delayMs).toBeGreaterThanOrEqual(700)
  })

  it('a wall-clock step changes nothing: the in-process gate keeps monotonic time', () => {
    let wall = Date.now()
    const clock = vi.spyOn(Date, 'now').mockImplementation(() => wall)
    onTestFinished(() => clock.mockRestore())
    const gate = new MemoryRateGate()
    const params = gcraParams({ requests: 4, windowMs: 1000, burst: 1 })
    for (let i = 0; i < 4; i++) gate.reserve(key, params, Infinity)
    wall += 2_000
    // four reserved in a second at 4/s: the next start is still about a second away
    expect(gate.reserve(key, params, Infinity).delayMs).toBeGreaterThan(500)
  })

  it('starts whose timers fire late (an event-loop stall) are checked again, never bunched', async () => {
    const limiter = new RatedLimiter(createMemoryLimiter({}), new MemoryRateGate(), learning, undefined)
    onTestFinished(() => limiter.close())
    const starts: number[] = []
    const all = Array.from({ length: 8 }, () =>
      limiter.acquire(key, options()).then((permit) => {
        starts.push(performance.now())
        permit.markSent()
        permit.release('success')
      }),
    )
    await vi.waitUntil(() => starts.length >= 1)
    // a stall of 1.2 s: the timers of the next starts all fire late
    const until = performance.now() + 1_200
    while (performance.now() < until);
    await Promise.all(all)
    // 4 per second, spaced 250 ms: no 900 ms span holds more than 4 (bunched, 4 went out together)
    expect(mostWithin(starts, 900)).toBeLessThanOrEqual(4)
  })

  it('waiting for a start is not concurrency saturation: a learned limit does not climb while the rate binds', async () => {
    const limiter = new RatedLimiter(createMemoryLimiter({}), new MemoryRateGate(), learning, undefined)
    onTestFinished(() => limiter.close())
    const learn = { ceiling: 50, floor: 1, idleMs: 60_000 }
    const o = options({ limit: 2, learn, rate: { requests: 20, windowMs: 1000, burst: 1 } })
    // 12 requests at 20/s: both permits are held all along, mostly by requests waiting for their start
    await Promise.all(
      Array.from({ length: 12 }, () =>
        limiter.acquire(key, o).then((permit) => {
          permit.markSent()
          permit.release('success')
        }),
      ),
    )
    expect(limiter.limitOf(key, o)).toBe(2)
  })
})
