import { describe, expect, it } from 'vitest'
import { FairShare } from '../../../src/limiter/fairness/policy.js'
import { fairnessSettingsSchema } from '../../../src/limiter/fairness/settings.js'
import { createMemoryLimiter } from '../../../src/limiter/memory/index.js'
import { KeyQueue, type Waiter } from '../../../src/limiter/memory/key-queue.js'
import type { AppPolicy } from '../../../src/limiter/fairness/policy.js'
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
    const opts = (app: string, signal?: AbortSignal) => ({
      limit: 1,
      deadline: Date.now() + 60_000,
      maxQueue: 10_000,
      app,
      signal,
    })
    const holder = await limiter.acquire(key, opts('b'))
    // app a queues 30 requests whose clients give up (timeouts under contention)
    const gone = new AbortController()
    const abandoned = Array.from({ length: 30 }, () =>
      limiter.acquire(key, opts('a', gone.signal)).catch(() => undefined),
    )
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

// The refund is exact (docs/redis-limiter.md, "What is charged"; the same rule as Redis, tested in
// test/limiter/redis/fair-abandoned-refund.test.ts): what an app was served stays charged, what it
// gave up comes back, once its last waiter is gone — whatever order its waiters gave up in.
describe('KeyQueue: the refund rule', () => {
  const policy = (app: string): AppPolicy => ({
    app,
    cost: 1,
    maxHeld: Number.POSITIVE_INFINITY,
    maxQueued: Number.POSITIVE_INFINITY,
  })
  const waiter = (app: string, granted: string[]): Waiter => ({
    arrivedAt: Date.now(),
    enqueuedAt: Date.now(),
    policy: policy(app),
    requeued: false,
    grant: () => granted.push(app),
    fail: () => {},
  })

  it("a served waiter's charge stays when the app's next waiter gives up: the app's next starts after it, not at V", () => {
    const granted: string[] = []
    const q = new KeyQueue('org1', 'POST /accounts/search', 1)
    q.take(policy('x')) // the only permit held
    const a1 = waiter('a', granted)
    q.enqueue(a1) // tag 0, F_a = 1
    q.give('x')
    q.dispatch() // a1 served: V = 0
    expect(granted).toEqual(['a'])
    const a2 = waiter('a', granted)
    q.enqueue(a2) // tag 1, F_a = 2
    expect(q.remove(a2)).toBe(true) // gave up: refunded to 1 (a1's finish), not to V = 0
    // a's next starts at 1 (what it was served stays charged), b's at V = 0: b goes first although
    // it queued after (refunded to V, a would have gone first: equal tags go by arrival)
    const b1 = waiter('b', granted)
    const a3 = waiter('a', granted)
    q.enqueue(a3) // tag 1
    q.enqueue(b1) // tag 0
    q.give('a')
    q.dispatch()
    expect(granted).toEqual(['a', 'b'])
  })

  it('waiters that gave up oldest first, with one served between, refund down to the first that gave up after it', () => {
    const granted: string[] = []
    const q = new KeyQueue('org1', 'POST /accounts/search', 1)
    q.take(policy('x'))
    const [a1, a2, a3, a4] = [waiter('a', granted), waiter('a', granted), waiter('a', granted), waiter('a', granted)]
    for (const w of [a1, a2, a3, a4]) q.enqueue(w) // tags 0 1 2 3, F_a = 4
    q.remove(a1) // gave up: nothing refunded yet (others of a wait)
    q.give('x')
    q.dispatch() // a2 served (tag 1), V = 1
    q.remove(a3) // tag 2
    q.remove(a4) // tag 3, the last: F_a back to 2 (a2's finish)
    // c arrives at V = 1 and a's next at 2: c first although it queued after
    const a5 = waiter('a', granted)
    const c = waiter('c', granted)
    q.enqueue(a5)
    q.enqueue(c)
    q.give('a')
    q.dispatch()
    expect(granted).toEqual(['a', 'c'])
  })
})
