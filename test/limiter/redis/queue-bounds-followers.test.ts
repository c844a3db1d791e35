import { afterEach, describe, expect, it } from 'vitest'
import { fakeShared, QUEUED, settle } from './fake-scripts.js'

// An app's followers of identical calls count toward its `maxQueued` with its waiters on this replica
// (docs/reuse.md, "How many may follow"; docs/redis-limiter.md, maxQueued), under a burst as well
// (LIMITER-CHECKLIST "Bounds under a burst"): the room they take is not offered to acquires on their way.

const REFUSED = [2, 0, 0]
const APP_FULL =
  'The queue for POST /accounts/search (instance org1) for app batch is full (2 waiting); try again later'

let current: ReturnType<typeof fakeShared> | undefined
afterEach(() => current?.close())

describe("an app's followers take part of its maxQueued (fake script runner)", () => {
  it('maxQueued 2 and one follower, three at once: one acquire may queue, the others carry `full` and are refused', async () => {
    current = fakeShared({ fairness: { apps: { batch: { maxQueued: 2 } } } })
    const { scripts, request } = current
    let followers = 1
    const burst = Array.from({ length: 3 }, () => request(1, { app: 'batch', followers: () => followers }))
    const calls = scripts.calls.splice(0)
    expect(calls.map((c) => c.args[7])).toEqual(['0', '1', '1'])
    calls[0]!.answer(QUEUED)
    for (const call of calls.slice(1)) call.answer(REFUSED)
    await settle()
    // one queued and one following: the app's maxQueued is full without another round trip
    expect(scripts.names()).toEqual([])
    expect(burst.slice(1).map((w) => w.error?.message)).toEqual([APP_FULL, APP_FULL])
    expect(burst[0]!.error).toBeUndefined()
    // the follower answered: the app's next request may queue again
    followers = 0
    request(1, { app: 'batch', followers: () => followers })
    expect(scripts.calls.splice(0).map((c) => c.args[7])).toEqual(['0'])
  })
})
