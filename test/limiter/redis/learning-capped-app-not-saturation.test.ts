import { describe, expect, it } from 'vitest'
import { FairShare } from '../../../src/limiter/fairness/policy.js'
import { fairnessSettingsSchema } from '../../../src/limiter/fairness/settings.js'
import type { LearnOptions, Permit } from '../../../src/limiter/types.js'
import { useRedis } from '../../support/use-redis.js'
import { closeAll, key, redisLimiter, testSettings } from './helpers.js'

/**
 * The Redis side of test/limiter/learning/capped-app-not-saturation.test.ts: "saturated" is every
 * permit of the limit held, so a queue holding only waiters of an app at its maxHeld does not count
 * and the learned limit does not climb while 1 of 5 permits is in use (docs/learned-limits.md).
 */
const redis = useRedis()
const learn: LearnOptions = { ceiling: 50, floor: 1, idleMs: 3_600_000 }
const memberships = { instance: key.instance, endpoint: 'GET /accounts/{id}/memberships' }

describe('learning under an app cap, on Redis', () => {
  it('successes of an app held back by its maxHeld do not raise the learned limit', async () => {
    const fairness = new FairShare(fairnessSettingsSchema.parse({ apps: { capped: { maxHeld: 1, maxQueued: 100 } } }))
    const limiter = await redisLimiter(testSettings(redis.url, { leaseMs: 3_000 }), { fairness })
    try {
      const o = { limit: 5, learn, maxQueue: 1_000, deadline: Date.now() + 60_000, app: 'capped' }
      const acq = (): Promise<Permit> => {
        const p = limiter.acquire(memberships, o)
        p.catch(() => {}) // the waiters left are failed by close
        return p
      }
      let current: Promise<Permit> = acq()
      const queued = [acq(), acq()]
      for (let i = 0; i < 100; i++) {
        const permit = await current
        queued.push(acq())
        permit.release('success')
        current = queued.shift()!
      }
      const status = await limiter.status()
      const learned = status.learned?.find((l) => l.endpoint === memberships.endpoint)
      // never more than 1 in progress: 2..50 never tried
      expect(learned?.limit ?? 5).toBe(5)
      ;(await current).release()
    } finally {
      await closeAll([limiter])
    }
  })
})
