import { describe, expect, it } from 'vitest'
import { learnOptionsOf } from '../../../src/limiter/learning/policy.js'
import { enforced, initialState, learn, type LearnBounds } from '../../../src/limiter/learning/rule.js'
import { learningSettingsSchema } from '../../../src/limiter/learning/settings.js'

/**
 * The start of a learned limit (`limits.default` for "–" endpoints and unknown paths) may lie outside
 * [learning.floor, learning.ceiling]: the rule brings it within the bounds before it reads it, so a
 * 429 never raises the limit and always lowers one at the ceiling (docs/learned-limits.md).
 */

describe('learned-limit bounds around the start', () => {
  it('learning.floor above limits.default: the floor is the start, and a 429 does not raise it', () => {
    const settings = learningSettingsSchema.parse({ floor: 10 })
    const options = learnOptionsOf({ limit: 5, limitSource: 'unlisted' }, settings)!
    expect(options).toBeDefined()
    const bounds: LearnBounds = { start: 5, ceiling: options.ceiling, floor: options.floor }
    const s0 = initialState(bounds)
    expect(enforced(s0.value, bounds)).toBe(10)
    // the API answers 429 with all 10 out: the floor holds, nothing is raised
    const s1 = learn(s0, bounds, { outcome: 'throttled', held: 10, saturated: true, grantedAt: 990, now: 1_000 })
    expect(s1.value).toBe(10)
    expect(enforced(s1.value, bounds)).toBe(10)
  })

  it('learning.ceiling below limits.default: the first 429 at the ceiling lowers the limit (start 5, ceiling 3)', () => {
    const settings = learningSettingsSchema.parse({ ceiling: 3 })
    const options = learnOptionsOf({ limit: 5, limitSource: 'unlisted' }, settings)!
    const bounds: LearnBounds = { start: 5, ceiling: options.ceiling, floor: options.floor }
    const s0 = initialState(bounds)
    expect(enforced(s0.value, bounds)).toBe(3)
    // 3 out (the whole limit in force) and the API says 429: the API allows fewer than 3
    const s1 = learn(s0, bounds, { outcome: 'throttled', held: 3, saturated: true, grantedAt: 990, now: 1_000 })
    expect(enforced(s1.value, bounds)).toBeLessThan(3)
  })
})
