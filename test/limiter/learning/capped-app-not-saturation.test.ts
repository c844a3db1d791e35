import { describe, expect, it } from 'vitest'
import { FairShare } from '../../../src/limiter/fairness/policy.js'
import { fairnessSettingsSchema } from '../../../src/limiter/fairness/settings.js'
import { createMemoryLimiter } from '../../../src/limiter/memory/index.js'
import type { LearnOptions, Permit } from '../../../src/limiter/types.js'

/**
 * "Saturated" is every permit of the limit held (docs/learned-limits.md). Waiters held back by their
 * app's cap (`fairness.apps.<app>.maxHeld`), not by the limit, do not count: otherwise an app capped
 * at 1 with a backlog would raise the learned limit with every success while 1 of 5 permits is in
 * use, to the ceiling, and the next uncapped burst would be let through at 50.
 */
const key = { instance: 'org', endpoint: 'GET /accounts/{id}/memberships' }
const learn: LearnOptions = { ceiling: 50, floor: 1, idleMs: 3_600_000 }

describe('learning under an app cap', () => {
  it('successes of an app held back by its maxHeld (1 of 5 permits in use) do not raise the learned limit', async () => {
    let now = 1_000
    const fairness = new FairShare(fairnessSettingsSchema.parse({ apps: { capped: { maxHeld: 1, maxQueued: 100 } } }))
    const limiter = createMemoryLimiter({ fairness, now: () => now })
    const opts = { limit: 5, learn, maxQueue: 1_000, deadline: Date.now() + 60_000, app: 'capped' }
    // one in flight, three queued behind the app's cap: the key has 4 free permits
    let current: Promise<Permit> = limiter.acquire(key, opts)
    const queued = [limiter.acquire(key, opts), limiter.acquire(key, opts), limiter.acquire(key, opts)]
    for (let i = 0; i < 200; i++) {
      const permit = await current
      now += 40
      // the app keeps its backlog: a new waiter for each one served
      queued.push(limiter.acquire(key, opts))
      permit.release('success')
      current = queued.shift()!
    }
    const status = await limiter.status()
    expect(status.keys.find((k) => k.endpoint === key.endpoint)?.inFlight).toBe(1)
    // what it leads to: another app's burst is let through far above anything ever tried
    const burst = Array.from({ length: 30 }, () => limiter.acquire(key, { ...opts, app: 'web' }))
    for (const p of burst) p.catch(() => {})
    await Promise.resolve()
    const web = (await limiter.status()).keys
      .find((k) => k.endpoint === key.endpoint)
      ?.apps?.find((a) => a.app === 'web')
    // only ever 1 in progress: nothing was learned about 2..50
    expect({ limit: limiter.limitOf?.(key, opts), webAtOnce: web?.held }).toEqual({ limit: 5, webAtOnce: 4 })
    ;(await current).release()
    // the app's backlog is still queued: closing fails those waits
    for (const waiting of queued) waiting.catch(() => {})
    await limiter.close()
  })
})
