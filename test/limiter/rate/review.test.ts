/** Review of the rates change (issue 38): deterministic cases on fake clocks. See the review report. */
import { describe, expect, it } from 'vitest'
import { RateEstimate } from '../../../src/limiter/rate/estimate.js'
import { MemoryRateGate } from '../../../src/limiter/rate/gate.js'
import { gcraParams, HOLD_ONLY } from '../../../src/limiter/rate/gcra.js'

const key = { instance: 'org1', endpoint: 'GET /contacts' }

describe('review: the rate estimate', () => {
  it('a low first cut is not a ceiling: with no 429 for 20 binding windows the rate grows past it faster than +1 per 2 windows', () => {
    // the API allows 100/s; the first throttle came when only 2 had been accepted in the window
    // (another app's traffic on the same credentials, a burst after a hold, a second replica's starts)
    const e = new RateEstimate(1000, 0)
    e.accepted(500, true)
    e.accepted(600, true)
    expect(e.throttled(1000, 1000)).toEqual({ requests: 2, windowMs: 1000, burst: 1 })
    // 20 windows, the rate binding all along, every start accepted, no 429
    let t = 1000
    for (let w = 0; w < 20; w++)
      for (let i = 0; i < (e.rate?.requests ?? 1); i++) {
        t += 1000 / (e.rate?.requests ?? 1)
        e.accepted(t, true)
      }
    // on the branch #bad (3) never clears: +1 every two windows, 12 after 20 windows (and 100 only after ~200 s)
    expect(e.rate!.requests).toBeGreaterThanOrEqual(24)
  })
})

describe('review: holds', () => {
  it('a hold taught by an answer (HOLD_ONLY) on a key with a configured burst lets no burst out at its end', () => {
    let now = 0
    const gate = new MemoryRateGate(() => now)
    const params = gcraParams({ requests: 10, windowMs: 1000, burst: 5 })
    gate.hold(key, 5000, HOLD_ONLY) // what RatedLimiter.observeAnswer passes when nothing was learned
    now = 5000
    let together = 0
    while (gate.reserve(key, params, 0).granted) together++
    // gcraHold's comment: "no burst right after a hold"; gcra-rule / faults tests say the same of a hold with the rate's params
    expect(together).toBe(1)
  })
})

describe('review: a burst of the whole window', () => {
  it('N at once and N again a window later (issue 38, "What must be true"): burst = requests keeps the API\'s full allowance', () => {
    let now = 0
    const gate = new MemoryRateGate(() => now)
    const params = gcraParams({ requests: 20, windowMs: 2000, burst: 20 })
    let first = 0
    while (gate.reserve(key, params, 0).granted) first++
    expect(first).toBe(20)
    now = 2000
    let second = 0
    while (gate.reserve(key, params, 0).granted) second++
    // on the branch GCRA's interval is the whole window (spaced = 1): one start per window after the burst
    expect(second).toBe(20)
  })
})

describe('review: a longer Retry-After widens the window', () => {
  it("the starts counted for the wider window are the wider window's, not the last second's", () => {
    // the API takes 10/s; it answers 429 with Retry-After: 1, and once Retry-After: 60 (a minute's quota, a penalty)
    const e = new RateEstimate(1000, 0)
    let t = 0
    const second = (): void => {
      for (let i = 0; i < 10; i++) e.accepted((t += 100), false)
    }
    for (let i = 0; i < 3; i++) second()
    expect(e.throttled(1000, t)).toEqual({ requests: 10, windowMs: 1000, burst: 1 })
    for (let s = 0; s < 5; s++) second()
    const r = e.throttled(60_000, t)
    // on the branch the log was trimmed to the 1 s window: 9 per 60 s, a 66x cut (and +1 per 2 minutes back)
    expect((r!.requests / r!.windowMs) * 1000).toBeGreaterThanOrEqual(5)
  })
})
