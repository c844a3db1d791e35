import { describe, expect, it } from 'vitest'
import { FairShare } from '../../../src/limiter/fairness/policy.js'
import { fairnessSettingsSchema } from '../../../src/limiter/fairness/settings.js'
import { createMemoryLimiter } from '../../../src/limiter/memory/index.js'
import type { LearnOptions, Permit } from '../../../src/limiter/types.js'

// Fair share between apps and a learned limit together, in process (README "Fair share between
// apps", "Learned limits"): the per-app queues are served under the limit in force, so a 429 that
// lowers it grants nobody, and the slots that come back later go out in fair order. Grants are
// decided synchronously on release: no timing here.

const key = { instance: 'org1', endpoint: 'GET /accounts/{id}/memberships' }
const learn: LearnOptions = { ceiling: 50, floor: 1, idleMs: 3_600_000 }
const tick = (): Promise<void> => new Promise((r) => setImmediate(r))

describe('in-process limiter: fair share under a learned limit', () => {
  it('a 429 that lowers the learned limit from 3 to 2 grants nobody; then apps are served in fair order', async () => {
    const limiter = createMemoryLimiter({ fairness: new FairShare(fairnessSettingsSchema.parse({})) })
    const acquire = (app: string): Promise<Permit> =>
      limiter.acquire(key, { limit: 3, learn, deadline: Date.now() + 60_000, maxQueue: 100, app })
    const held = await Promise.all([acquire('a'), acquire('a'), acquire('a')])
    const granted: string[] = []
    const waiters = new Map<string, Promise<Permit>>()
    for (const label of ['a1', 'a2', 'b1']) {
      waiters.set(
        label,
        acquire(label[0]!).then((p) => (granted.push(label), p)),
      )
    }
    await tick()
    expect(granted).toEqual([])

    held[0].release('throttled')
    await tick()
    expect(limiter.limitOf(key, { limit: 3, learn })).toBe(2)
    expect(granted).toEqual([]) // 2 still held: the lowered limit
    held[1].release()
    await tick()
    expect(granted).toEqual(['a1'])
    held[2].release()
    await tick()
    // b's first waiter comes before a's second (start tags 0 and 1), though a2 arrived first
    expect(granted).toEqual(['a1', 'b1'])
    const status = await limiter.status()
    expect(status.keys[0]?.apps).toEqual([
      { app: 'a', held: 1, queued: 1 },
      { app: 'b', held: 1, queued: 0 },
    ])
    expect(status.keys[0]?.limit).toBe(2)
    for (const label of ['a1', 'b1']) (await waiters.get(label)!).release()
    ;(await waiters.get('a2')!).release()
    await limiter.close()
  })
})
