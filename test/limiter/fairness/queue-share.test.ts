import { describe, expect, it } from 'vitest'
import { FairShare, queueShareOf } from '../../../src/limiter/fairness/policy.js'
import { fairnessSettingsSchema } from '../../../src/limiter/fairness/settings.js'
import { problemsOf } from '../../support/config-problems.js'

// An app's share of a key's queue (docs/apps.md, "Shares of the queue"): `queue.maxShare` of
// `queue.maxLength` with app identity on, none with it off or at 1; an app's own maxQueued wins.

describe("an app's share of a key's queue", () => {
  it('is maxShare of maxLength with app identity on (at least 1), none with it off or at maxShare 1', () => {
    expect(queueShareOf({ maxLength: 1000, maxShare: 0.5 }, true)).toBe(500)
    expect(queueShareOf({ maxLength: 5, maxShare: 0.5 }, true)).toBe(2)
    expect(queueShareOf({ maxLength: 1, maxShare: 0.1 }, true)).toBe(1)
    expect(queueShareOf({ maxLength: 1000, maxShare: 0.5 }, false)).toBe(Infinity)
    expect(queueShareOf({ maxLength: 1000, maxShare: 1 }, true)).toBe(Infinity)
  })

  it("bounds every app without a maxQueued of its own; an app's maxQueued wins and is named as such", () => {
    const fair = new FairShare(
      fairnessSettingsSchema.parse({ apps: { nightly: { maxQueued: 800 }, web: { weight: 3 } } }),
      500,
    )
    expect(fair.of('web')).toMatchObject({ maxQueued: 500, queuedByShare: true })
    expect(fair.of('someone')).toMatchObject({ maxQueued: 500, queuedByShare: true })
    expect(fair.of('nightly')).toMatchObject({ maxQueued: 800, queuedByShare: false })
    expect(new FairShare(fairnessSettingsSchema.parse({}), Infinity).of('web')).toMatchObject({
      maxQueued: Infinity,
      queuedByShare: false,
    })
  })

  it('a bad queue.maxShare stops the start, naming the key', () => {
    expect(problemsOf({ SLUICE_QUEUE_MAX_SHARE: '0' })).toEqual([
      'queue.maxShare (env SLUICE_QUEUE_MAX_SHARE): Too small: expected number to be >0; got 0',
    ])
    expect(problemsOf({ SLUICE_QUEUE_MAX_SHARE: '1.5' })).toEqual([
      'queue.maxShare (env SLUICE_QUEUE_MAX_SHARE): Too big: expected number to be <=1; got 1.5',
    ])
  })
})
