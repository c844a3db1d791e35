import { describe, expect, it } from 'vitest'
import { FairShare } from '../../../src/limiter/fairness/policy.js'
import { fairnessSettingsSchema } from '../../../src/limiter/fairness/settings.js'
import { createMemoryLimiter } from '../../../src/limiter/memory/index.js'
import type { Permit } from '../../../src/limiter/types.js'

// Fair share between apps: a waiter that gives up (deadline, client abort) must not keep its app's
// finish tag advanced, or the app's NEXT waiter lands behind every waiter another app queued
// meanwhile. docs/redis-limiter.md claims SFQ's bound |n_a/w_a - n_b/w_b| <= 1/w_a + 1/w_b over any
// interval in which both apps stay backlogged; here both are, and without the refund one app got 0
// of 30.

const key = { instance: 'org1', endpoint: 'POST /accounts/search' }
const tick = (): Promise<void> => new Promise((r) => setImmediate(r))

describe('memory limiter: waiters that gave up do not keep their app charged', () => {
  it('an app whose earlier waiters timed out is not starved once it is backlogged again (SFQ bound)', async () => {
    const limiter = createMemoryLimiter({ fairness: new FairShare(fairnessSettingsSchema.parse({})) })
    const opts = (app: string, signal?: AbortSignal) => ({ limit: 1, deadline: Date.now() + 60_000, maxQueue: 10_000, app, signal })
    const holder = await limiter.acquire(key, opts('b'))
    // app a queues 30 requests whose clients give up (timeouts under contention)
    const gone = new AbortController()
    const abandoned = Array.from({ length: 30 }, () => limiter.acquire(key, opts('a', gone.signal)).catch(() => undefined))
    gone.abort()
    await Promise.all(abandoned)
    // now both apps are backlogged: b with 30 waiters, a with one
    const order: string[] = []
    const permits: Permit[] = []
    const wait = (app: string): void =>
      void limiter.acquire(key, opts(app)).then(
        (p) => {
          order.push(app)
          permits.push(p)
        },
        () => {},
      )
    for (let i = 0; i < 30; i++) wait('b')
    wait('a')
    holder.release()
    for (let i = 0; i < 4; i++) {
      await tick()
      permits[permits.length - 1]!.release()
    }
    await tick()
    // equal weights: within the first few grants app a gets its turn (SFQ: at most ~2 apart)
    expect(order.slice(0, 4)).toContain('a')
    await limiter.close()
  })
})
