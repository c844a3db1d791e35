import { afterEach, describe, expect, it } from 'vitest'
import { appOfId } from '../../../src/limiter/redis/waiter-id.js'
import type { LearnOptions } from '../../../src/limiter/types.js'
import { fakeShared, GRANTED, idOf, permitId, QUEUED, QUEUED_AT_HEAD, settle, tagOf, turn } from './fake-scripts.js'

// Fair share on the replica's side of the Redis limiter, deterministically (a fake script runner
// and clock, as in races.test.ts): what an acquire tells Redis about its app, and when a release may
// hand its permit over without Redis now that a newcomer of another app can land at the head.

let current: ReturnType<typeof fakeShared> | undefined
afterEach(() => current?.close())
/** fair share on (its settings); `request` takes the app first */
const fresh = (fairness: unknown = {}) => {
  current = fakeShared({ fairness })
  const { request } = current
  return {
    ...current,
    request: (app: string, limit = 1, learn?: LearnOptions) =>
      request(limit, { app, ...(learn === undefined ? {} : { learn }) }),
  }
}

describe('shared permits: fair share between apps, deterministically (fake script runner and clock)', () => {
  it("an acquire carries its app's cost (1 / weight), and its app and cap in the id", async () => {
    const { scripts, request } = fresh({
      interactiveBoost: 4,
      apps: { nightly: { class: 'batch', weight: 2, maxHeld: 3, maxQueued: 1000 } },
    })
    request('nightly')
    const acquire = scripts.take('acquire')
    expect(acquire.args[13]).toBe((1 / 2).toPrecision(17))
    expect(idOf(acquire)).toMatch(/^r1\/[0-9a-z]{9}~00000001:3:nightly$/)
    expect(appOfId(idOf(acquire))).toBe('nightly')
    acquire.answer(GRANTED)
    await settle()
    request('web', 2)
    const web = scripts.take('acquire')
    expect(web.args[13]).toBe((1 / 4).toPrecision(17)) // default weight 1 × interactive boost 4
    expect(idOf(web)).toMatch(/^r1\/[0-9a-z]{9}~00000002::web$/) // no cap
  })

  it("an app's waiters past its maxQueued on this replica are refused by the script (full); another app's still queue", async () => {
    const { scripts, request } = fresh({ apps: { batch: { maxQueued: 1 } } })
    request('batch')
    scripts.take('acquire').answer(GRANTED)
    await settle()
    request('batch')
    await turn()
    const first = scripts.take('acquire')
    expect(first.args[7]).toBe('0')
    first.answer(QUEUED)
    await settle()
    const refused = request('batch')
    await turn()
    const second = scripts.take('acquire')
    expect(second.args[7]).toBe('1') // full: queue only if a slot is free at once
    second.answer([2, 0, 0])
    await settle()
    expect(refused.error?.name).toBe('FastifyError')
    expect((refused.error as { code?: string }).code).toBe('SLUICE_QUEUE_FULL')
    request('web')
    await turn()
    expect(scripts.take('acquire').args[7]).toBe('0')
  })

  it('a handover stays within an app: a permit of one app is not handed to the head of another (Redis decides, one round trip)', async () => {
    const { scripts, request } = fresh()
    const batch = request('batch')
    scripts.take('acquire').answer(GRANTED)
    await settle()
    const web = request('web')
    await turn()
    scripts.take('acquire').answer(QUEUED_AT_HEAD) // Redis names our web waiter as the head
    await settle()
    batch.permit!.release()
    await settle()
    expect(web.permit).toBeUndefined()
    expect(scripts.take('release').args.slice(7)).toEqual([permitId(batch.permit)])
  })

  it("a handover within an app, and its waiter's queue entry leaves as served (V moves); a waiter of another app sent meanwhile makes the named head stale", async () => {
    const { scripts, request } = fresh()
    const first = request('batch')
    scripts.take('acquire').answer(GRANTED)
    await settle()
    const next = request('batch')
    await turn()
    const acquire = scripts.take('acquire')
    acquire.answer(QUEUED_AT_HEAD)
    await settle()
    first.permit!.release() // handed over here and now
    expect(permitId(next.permit)).toBe(permitId(first.permit))
    await turn()
    const served = scripts.take('release')
    expect(served.args[4]).toBe('2') // wantHead, and served by a handover
    expect(served.args.slice(7)).toEqual([idOf(acquire)])

    const third = request('batch')
    await turn()
    scripts.take('acquire').answer(QUEUED_AT_HEAD)
    await settle()
    // a web request of this replica may land ahead of that head (its start tag can be lower)
    request('web')
    await turn()
    scripts.take('acquire')
    next.permit!.release()
    await settle()
    expect(third.permit).toBeUndefined()
    expect(scripts.take('release').args.slice(4)).toEqual(['1', '-', 'r1', permitId(next.permit)])
  })

  it('a learned limit: a 429 is not handed over (Redis learns the decrease first, then grants under it); a success is, with its answer', async () => {
    const learn: LearnOptions = { ceiling: 50, floor: 1, idleMs: 3_600_000 }
    const { scripts, request } = fresh()
    const first = request('batch', 1, learn)
    const acq = scripts.take('acquire')
    expect(acq.args[2]).toBe('1 50 1 3600000') // the limit argument of a learned limit
    acq.answer([1, 0, 0, 1])
    await settle()
    const next = request('batch', 1, learn)
    await turn()
    const queued = scripts.take('acquire')
    queued.answer([0, 1, 0, 1]) // Redis names our waiter as the head
    await settle()
    first.permit!.release('throttled')
    await settle()
    expect(next.permit).toBeUndefined()
    const back = scripts.take('release')
    expect(back.args[4]).toBe('1') // not served: Redis grants (or not) after learning
    expect(back.args[5]).toMatch(/^t \d+$/)
    expect(back.args.slice(7)).toEqual([permitId(first.permit)])
    // Redis learned (still 1: the floor) and granted the waiter in the same script
    back.answer([1, [idOf(queued)], null, 1, 1, '1', 1])
    await settle()
    expect(next.permit).toBeDefined()

    // the same with a success: handed over here and now, and the answer rides on the served release
    const { scripts: s2, request: r2 } = fresh()
    const a = r2('batch', 1, learn)
    s2.take('acquire').answer([1, 0, 0, 1])
    await settle()
    const b = r2('batch', 1, learn)
    await turn()
    s2.take('acquire').answer([0, 1, 0, 1])
    await settle()
    a.permit!.release('success')
    expect(permitId(b.permit)).toBe(permitId(a.permit))
    await turn()
    const served = s2.take('release')
    expect(served.args[4]).toBe('2')
    expect(served.args[5]).toMatch(/^s \d+$/)
  })
})

describe('shared permits: a head named by a reply older than a stale-head message (fake script runner and clock)', () => {
  // The reply comes on the command connection, the stale-head message (" <tag>") on the subscriber,
  // unordered. With fair share every new app's first waiter lands at the head, so the crossing
  // docs/redis-limiter.md accepts happens on every new app: the replica must not hand its permit to
  // its own next waiter of the same app past another app's waiter Redis has at the head.
  it('is not used for a handover (another app landed at the head in between)', async () => {
    const { scripts, shared, request } = fresh()
    const first = request('batch')
    scripts.take('acquire').answer(GRANTED)
    await settle()
    const w1 = request('batch')
    await turn()
    scripts.take('acquire').answer(QUEUED_AT_HEAD)
    await settle()
    const w2 = request('batch')
    await turn()
    const acquire2 = scripts.take('acquire')
    acquire2.answer(QUEUED)
    await settle()

    first.permit!.release() // handed over to w1 here and now
    expect(permitId(w1.permit)).toBe(permitId(first.permit))
    await turn()
    const served = scripts.take('release') // w1's queue entry leaves; Redis runs it and names w2 as head
    // then another replica's `web` waiter lands at the head (start tag V < w2's): Redis publishes
    // " <tag>" — and the subscriber connection delivers it before the command connection's reply
    shared.onHeadStale(tagOf(w1.permit))
    served.answer([1, [], idOf(acquire2)])
    await settle()

    w1.permit!.release()
    await settle()
    // Redis has `web` at the head: the permit must go through the release script
    expect(w2.permit).toBeUndefined()
  })
})
