import { afterEach, describe, expect, it } from 'vitest'
import { fakeShared, GRANTED, LEASE_MS, QUEUED, settle, SYNC_MS } from './fake-scripts.js'

// A waiter the queue bounds had no room for goes out with `full`: it may take a slot free at once,
// never a place in the queue. Granted, but its grant read too late (a stall) and its lease lost
// meanwhile, it waits again by its age (docs/redis-limiter.md, "Leases") — and goes through the bounds
// again as a new waiter would: `queue.maxLength` holds (it never had a place under it to keep). A
// waiter the bounds counted keeps its place (LIMITER-CHECKLIST "Bounds under a burst").

const REFUSED = [2, 0, 0]
const FULL = 'The queue for POST /accounts/search (instance org1) is full (1 waiting); try again later'

let current: ReturnType<typeof fakeShared> | undefined
afterEach(() => current?.close())

describe('a waiter queued again after a grant read too late, under queue.maxLength (fake script runner)', () => {
  it('sent with `full` at first: sent with `full` again (by its age), refused while the queue is full — never a second waiter queued on a bound of 1', async () => {
    const t = (current = fakeShared())
    const a = t.request(1, { maxQueue: 1 })
    t.scripts.take('acquire').answer(QUEUED) // the replica's one place is taken
    await settle()
    const b = t.request(1, { maxQueue: 1 })
    const first = t.scripts.take('acquire')
    expect(first.args[7]).toBe('1')
    t.advance(LEASE_MS - SYNC_MS + 1) // a stall: its grant is read too late to trust the lease
    first.answer(GRANTED)
    await settle()
    t.scripts.take('renew').answer(0) // Redis no longer counts it: it waits again, under a new id
    await settle()
    const again = t.scripts.take('acquire')
    expect({ full: again.args[7], byAge: Number(again.args[6]) > 0 }).toEqual({ full: '1', byAge: true })
    again.answer(REFUSED)
    await settle()
    expect([a.error, b.error?.message, (b.error as { code?: string }).code]).toEqual([
      undefined,
      FULL,
      'SLUICE_QUEUE_FULL',
    ])
  })

  it('counted at first: keeps its place (queueable again, by its age)', async () => {
    const t = (current = fakeShared())
    const b = t.request(1, { maxQueue: 1 })
    const first = t.scripts.take('acquire')
    expect(first.args[7]).toBe('0')
    t.advance(LEASE_MS - SYNC_MS + 1)
    first.answer(GRANTED)
    await settle()
    t.scripts.take('renew').answer(0)
    await settle()
    const again = t.scripts.take('acquire')
    expect({ full: again.args[7], byAge: Number(again.args[6]) > 0 }).toEqual({ full: '0', byAge: true })
    again.answer(QUEUED)
    await settle()
    expect(b.error).toBeUndefined()
  })
})
