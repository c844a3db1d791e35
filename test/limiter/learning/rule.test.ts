import { describe, expect, it } from 'vitest'
import {
  DECREASE,
  PROBE_RATE,
  enforced,
  initialState,
  learn,
  type Feedback,
  type LearnBounds,
  type LearnedState,
} from '../../../src/limiter/learning/rule.js'

/** The AIMD rule of docs/learned-limits.md, step by step, with no clock but the numbers given. */

const BOUNDS: LearnBounds = { start: 5, ceiling: 50, floor: 1 }
const ok = (held: number, now: number, saturated = true): Feedback => ({
  outcome: 'success',
  held,
  saturated,
  grantedAt: now - 40,
  now,
})
const busy = (held: number, now: number, grantedAt = now): Feedback => ({
  outcome: 'throttled',
  held,
  saturated: true,
  grantedAt,
  now,
})

describe('the learned-limit rule', () => {
  it('starts at its start and enforces the whole part, within floor and ceiling', () => {
    expect(initialState(BOUNDS)).toEqual({ value: 5, bad: 0, cutAt: 0 })
    expect(enforced(5.99, BOUNDS)).toBe(5)
    expect(enforced(0.5, BOUNDS)).toBe(1)
    expect(enforced(70, BOUNDS)).toBe(50)
    // 3 × (1/3) is 0.9999…: a value meant to be whole counts as whole
    expect(enforced(2 + 1 / 3 + 1 / 3 + 1 / 3, BOUNDS)).toBe(3)
  })

  it('a 429 with `held` permits out lowers the value to at most held − 1 and by the decrease, and remembers held', () => {
    const after = learn({ value: 5, bad: 0, cutAt: 0 }, BOUNDS, busy(5, 1_000))
    expect(after).toEqual({ value: 4, bad: 5, cutAt: 1_000 })
    const small = learn({ value: 12.5, bad: 0, cutAt: 0 }, BOUNDS, busy(13, 1_000))
    expect(small.value).toBeCloseTo(12.5 * DECREASE) // the decrease is below the evidence
  })

  it('a burst of 429s for permits granted before the decrease cuts once by the factor, then only by the evidence', () => {
    let s: LearnedState = { value: 5, bad: 0, cutAt: 0 }
    s = learn(s, BOUNDS, busy(5, 1_000, 990))
    expect(s.value).toBe(4)
    // granted at 990, before the cut at 1 000: no second multiplicative cut, only held − 1
    s = learn(s, BOUNDS, busy(4, 1_001, 990))
    expect(s).toEqual({ value: 3, bad: 4, cutAt: 1_000 })
    s = learn(s, BOUNDS, busy(4, 1_002, 991))
    expect(s.value).toBe(3) // held − 1 = 3: nothing new
    // a permit granted after the cut: a fresh decrease
    s = learn(s, BOUNDS, busy(4, 2_000, 1_500))
    expect(s.value).toBeCloseTo(3 * DECREASE)
    expect(s.cutAt).toBe(2_000)
  })

  it('permits that came back between a 429 and its release do not take the value further down than one below the limit', () => {
    // probing 3 against an API allowing 2: the 429'd request is released after another came back
    const after = learn({ value: 3.01, bad: 0, cutAt: 0 }, BOUNDS, busy(2, 1_000))
    expect(after).toEqual({ value: 2, bad: 3, cutAt: 1_000 })
  })

  it('never goes below the floor nor above the ceiling', () => {
    expect(learn({ value: 1, bad: 0, cutAt: 0 }, BOUNDS, busy(1, 10)).value).toBe(1)
    expect(learn({ value: 2, bad: 0, cutAt: 0 }, { ...BOUNDS, floor: 2 }, busy(1, 10)).value).toBe(2)
    let s = initialState({ start: 5, ceiling: 6, floor: 1 })
    for (let i = 0; i < 100; i++) s = learn(s, { start: 5, ceiling: 6, floor: 1 }, ok(6, i))
    expect(s.value).toBe(6)
  })

  it('successes while saturated add 1/value each: about one permit a round trip of the limit', () => {
    let s: LearnedState = { value: 5, bad: 0, cutAt: 0 }
    for (let i = 0; i < 5; i++) s = learn(s, BOUNDS, ok(5, i))
    expect(s.value).toBeGreaterThan(5.9)
    expect(s.value).toBeLessThan(6)
    s = learn(s, BOUNDS, ok(5, 10))
    expect(enforced(s.value, BOUNDS)).toBe(6)
  })

  it('successes of a key that is not saturated teach nothing', () => {
    const s = learn({ value: 5, bad: 0, cutAt: 0 }, BOUNDS, ok(2, 10, false))
    expect(s).toEqual({ value: 5, bad: 0, cutAt: 0 })
  })

  it('near the concurrency that drew a 429 the limit climbs PROBE_RATE as fast: that level is probed again rarely', () => {
    let s: LearnedState = { value: 2, bad: 3, cutAt: 100 }
    let successes = 0
    while (enforced(s.value, BOUNDS) < 3) {
      s = learn(s, BOUNDS, ok(2, 1_000 + successes))
      successes++
    }
    // +PROBE_RATE/value a success on the way from 2 to 3: between 2 / PROBE_RATE and 3 / PROBE_RATE
    // successes (2 to 3 permits × 1/PROBE_RATE round trips)
    expect(successes).toBeGreaterThanOrEqual(Math.floor(2 / PROBE_RATE))
    expect(successes).toBeLessThanOrEqual(Math.ceil(3 / PROBE_RATE))
    // far below it, the pace is 1/value again
    const far = learn({ value: 2, bad: 9, cutAt: 0 }, BOUNDS, ok(2, 10))
    expect(far.value).toBe(2.5)
  })

  it('a success at the concurrency that drew a 429 forgets it: the API allows more now', () => {
    const s = learn({ value: 3.1, bad: 3, cutAt: 0 }, BOUNDS, ok(3, 10))
    expect(s.bad).toBe(0)
    expect(s.value).toBeCloseTo(3.1 + 1 / 3.1)
  })

  it('converges on a hidden limit: a simulated key of limit 2 and one of 12, driven by the rule alone', () => {
    for (const hidden of [2, 12]) {
      // a closed loop: every round trip, `limit` requests go out; those beyond `hidden` get a 429
      let s = initialState(BOUNDS)
      let now = 0
      let throttled = 0
      let answered = 0
      let usedSum = 0
      for (let round = 0; round < 2_000; round++) {
        now += 40
        const limit = enforced(s.value, BOUNDS)
        const grantedAt = now - 1
        for (let i = 1; i <= limit; i++) {
          if (i > hidden) {
            s = learn(s, BOUNDS, busy(i, now, grantedAt))
            if (round >= 500) throttled++
          } else {
            s = learn(s, BOUNDS, ok(Math.min(limit, hidden), now))
            if (round >= 500) answered++
          }
        }
        if (round >= 500) usedSum += Math.min(limit, hidden) / hidden
      }
      const share429 = throttled / (throttled + answered)
      expect(share429, `hidden ${hidden}`).toBeLessThan(0.02)
      expect(usedSum / 1_500, `hidden ${hidden}`).toBeGreaterThan(0.9)
    }
  })
})
