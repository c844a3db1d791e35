import { describe, expect, it } from 'vitest'
import { MemoryRateGate } from '../../../src/limiter/rate/gate.js'
import { gcraParams, HOLD_ONLY, shareOf, type Rate } from '../../../src/limiter/rate/gcra.js'
import { localShare } from '../../../src/limiter/redis/local-share.js'

const key = { instance: 'org1', endpoint: 'GET /contacts' }

/** The most starts within any half-open window of `windowMs`. */
function mostInWindow(starts: readonly number[], windowMs: number): number {
  const sorted = [...starts].sort((a, b) => a - b)
  let most = 0
  for (let i = 0, j = 0; i < sorted.length; i++) {
    while (sorted[i]! - sorted[j]! >= windowMs) j++
    most = Math.max(most, i - j + 1)
  }
  return most
}

/** A seeded generator, so a failure repeats. */
function random(seed: number): () => number {
  let s = seed
  return () => (s = (s * 1103515245 + 12345) % 2 ** 31) / 2 ** 31
}

/** Arrivals at random times on a fake clock, each reserving a start; returns the starts. */
function run(rate: Rate, arrivals: number, spreadMs: number, seed: number): number[] {
  let now = 0
  const gate = new MemoryRateGate(() => now)
  const params = gcraParams(rate)
  const rnd = random(seed)
  const times = Array.from({ length: arrivals }, () => Math.floor(rnd() * spreadMs)).sort((a, b) => a - b)
  const starts: number[] = []
  for (const t of times) {
    now = t
    const r = gate.reserve(key, params, Infinity)
    expect(r.granted).toBe(true)
    starts.push(t + r.delayMs)
  }
  return starts
}

describe('the GCRA rule (fake clock)', () => {
  it('never lets more than N starts into any window, for any burst', () => {
    for (const [requests, windowMs, burst] of [
      [5, 1000, 1],
      [5, 1000, 5],
      [100, 10_000, 50],
      [7, 333, 3],
      [1, 10_000, 1],
    ] as const) {
      for (let seed = 1; seed <= 5; seed++) {
        const starts = run({ requests, windowMs, burst }, requests * 6, windowMs * 3, seed)
        expect(
          mostInWindow(starts, windowMs),
          `${requests}/${windowMs} burst ${burst} seed ${seed}`,
        ).toBeLessThanOrEqual(requests)
      }
    }
  })

  it('lets the burst start at once after a quiet spell, then spaces the rest', () => {
    let now = 10_000
    const gate = new MemoryRateGate(() => now)
    const params = gcraParams({ requests: 10, windowMs: 1000, burst: 4 })
    const delays = Array.from({ length: 6 }, () => gate.reserve(key, params, Infinity).delayMs)
    // interval 1000 / (10 − 4 + 1) = 143 ms (rounded up)
    expect(delays).toEqual([0, 0, 0, 0, 143, 286])
    now += 5_000
    expect(gate.reserve(key, params, Infinity).delayMs).toBe(0)
  })

  it('refuses a start past the longest wait without reserving it', () => {
    const now = 0
    const gate = new MemoryRateGate(() => now)
    const params = gcraParams({ requests: 2, windowMs: 1000, burst: 1 })
    expect(gate.reserve(key, params, 100)).toMatchObject({ delayMs: 0, granted: true })
    expect(gate.reserve(key, params, 100)).toEqual({ delayMs: 500, granted: false })
    // nothing was reserved by the refusal: the next one still gets 500
    expect(gate.reserve(key, params, 1000)).toMatchObject({ delayMs: 500, granted: true })
  })

  it('a hold keeps every start back until it ends, with or without a rate', () => {
    let now = 0
    const gate = new MemoryRateGate(() => now)
    gate.hold(key, 3000, HOLD_ONLY)
    expect(gate.reserve(key, HOLD_ONLY, Infinity).delayMs).toBe(3000)
    expect(gate.reserve(key, HOLD_ONLY, Infinity).delayMs).toBe(3000)
    now = 3000
    expect(gate.reserve(key, HOLD_ONLY, Infinity).delayMs).toBe(0)
    const params = gcraParams({ requests: 6, windowMs: 1000, burst: 2 })
    gate.hold(key, 2000, params)
    // no burst right after a hold: one at its end, then one per interval (1000 / (6 − 2 + 1) = 200 ms)
    expect([0, 1, 2].map(() => gate.reserve(key, params, Infinity).delayMs)).toEqual([2000, 2200, 2400])
  })

  it("the replicas' shares in the local fallback add up to no more than the rate", () => {
    for (const replicas of [2, 3, 4]) {
      const rate = { requests: 12, windowMs: 1000, burst: 4 }
      const params = gcraParams(rate)
      const ids = Array.from({ length: replicas }, (_, i) => `r${i}`)
      const starts: number[] = []
      for (let r = 0; r < replicas; r++) {
        // the concurrency fallback's rule picks each replica's share (src/limiter/redis/local-share.ts)
        const share = shareOf(params, localShare(params.spaced, key, ids[r]!, { live: ids, claims: true }))
        let now = 0
        const gate = new MemoryRateGate(() => now)
        const rnd = random(r + 1)
        for (const t of Array.from({ length: 40 }, () => Math.floor(rnd() * 3000)).sort((a, b) => a - b)) {
          now = t
          starts.push(t + gate.reserve(key, share, Infinity).delayMs)
        }
      }
      expect(mostInWindow(starts, rate.windowMs), `${replicas} replicas`).toBeLessThanOrEqual(rate.requests)
    }
  })

  it('an idle key costs nothing once its TAT has passed', () => {
    let now = 0
    const gate = new MemoryRateGate(() => now)
    const params = gcraParams({ requests: 5, windowMs: 1000, burst: 1 })
    for (let i = 0; i < 2000; i++) gate.reserve({ instance: `org${i}`, endpoint: 'GET /x' }, params, Infinity)
    expect(gate.size).toBeGreaterThan(1000)
    now = 10_000
    for (let i = 0; i < 1024; i++) gate.reserve(key, params, Infinity)
    expect(gate.size).toBeLessThanOrEqual(1)
  })
})
