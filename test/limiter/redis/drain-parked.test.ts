import { afterEach, describe, expect, it } from 'vitest'
import { fakeShared, idOf, settle } from './fake-scripts.js'

// Shutdown (RedisLimiter.drain) fails every waiting request, oldest first. A waiter parked at its
// place under the queue bounds (its acquire answered `full` while an earlier one may still be queued)
// has nothing in Redis; the failure of the waiters ahead of it must not let it in on the way — that
// would send its acquire only to withdraw it right after (docs/redis-limiter.md, "Failure modes", shutdown).

const REFUSED = [2, 0, 0]

let current: ReturnType<typeof fakeShared> | undefined
afterEach(() => current?.close())

describe('shutdown with waiters parked under the queue bounds (fake script runner)', () => {
  it('sends one withdrawal for the acquire on its way, and nothing for the parked waiter', async () => {
    const t = (current = fakeShared())
    t.request(2, { maxQueue: 1 })
    const parked = t.request(2, { maxQueue: 1 })
    const first = t.scripts.take('acquire')
    // the second's, sent with `full`: no slot free at once; the first may still be granted rather than queued: parked
    for (const call of t.scripts.calls.splice(0)) call.answer(REFUSED)
    await settle()
    expect(parked.error).toBeUndefined()
    t.drain()
    await settle()
    // the first's withdrawal; had the parked waiter been let in when the first gave up, its acquire and its withdrawal too
    expect(t.scripts.calls.map((c) => [c.name, c.args.slice(7)])).toEqual([['release', [idOf(first)]]])
    expect(parked.error?.message).toBe('sluice is shutting down')
  })
})
