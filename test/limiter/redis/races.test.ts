import { afterEach, describe, expect, it } from 'vitest'
import type { LearnOptions } from '../../../src/limiter/types.js'
import {
  fakeShared,
  GRANTED,
  idOf,
  LEASE_MS,
  permitId,
  QUEUED,
  QUEUED_AT_HEAD,
  settle,
  SYNC_MS,
  tagOf,
  turn,
} from './fake-scripts.js'

// The race rules of the shared side, without timing: a fake script runner answers each script when
// the test says so, in the order the test picks, and a fake clock says what time it is. The same
// cases run against a real redis-server in handover.test.ts, stale-grant.test.ts and aborts.test.ts.

let current: ReturnType<typeof fakeShared> | undefined
afterEach(() => current?.close())
const fresh = (startAt?: number) => (current = fakeShared({ startAt }))

describe('shared permits: races, deterministically (fake script runner and clock)', () => {
  it('a replica whose monotonic clock is still below a sync interval announces itself with its first acquire', async () => {
    // A young process (performance.now() near 0): unannounced, Redis would see no liveness for the
    // replica and the next grant would drop its waiters from the queue as a dead replica's.
    const { scripts, request } = fresh(0)
    request()
    const first = scripts.take('acquire')
    expect(first.args[8]).toBe('1') // ARGV announce
    first.answer(GRANTED)
    await settle()
    request()
    await turn() // (the one permit is ours: the acquire goes out after this turn)
    expect(scripts.take('acquire').args[8]).toBe('0') // announced a moment ago: not again
  })

  it('a grant message read before the acquire reply: the permit waits for the reply, and is made once', async () => {
    const { scripts, shared, request } = fresh()
    const w = request()
    const acquire = scripts.take('acquire')
    shared.onGrantMessage(idOf(acquire))
    await settle()
    expect(w.permit).toBeUndefined() // not before Redis confirmed the acquire ran
    acquire.answer(QUEUED)
    await settle()
    expect(permitId(w.permit)).toBe(idOf(acquire))
    shared.onGrantMessage(idOf(acquire)) // the same grant again (message after reply): ignored
    await settle()
    expect(scripts.names()).toEqual([])
  })

  it('a grant named both by a release reply and by its message: one permit, nothing released twice', async () => {
    const { scripts, shared, request } = fresh()
    const first = request(2)
    scripts.take('acquire').answer(GRANTED)
    await settle()
    const second = request(2)
    scripts.take('acquire').answer(GRANTED)
    await settle()
    const w = request(2)
    await turn() // (both permits are ours: its acquire goes out after this turn)
    const acquire = scripts.take('acquire')
    acquire.answer(QUEUED)
    await settle()
    first.permit!.release() // not all of ours named: a release script
    const release = scripts.take('release')
    release.answer([1, [idOf(acquire)], null])
    await settle()
    expect(permitId(w.permit)).toBe(idOf(acquire))
    shared.onGrantMessage(idOf(acquire))
    await settle()
    expect(scripts.names()).toEqual([])
    second.permit!.release()
    w.permit!.release()
    expect(scripts.names()).toEqual(['release', 'release'])
  })

  it('limit 1: a release reply granting our own waiter names the next head as its message would, so the next release hands over', async () => {
    // No message is published for a waiter granted to the releasing replica (release/lua.ts): the
    // reply must carry the head "<id> <head>" carried, or the next release here could not hand over.
    const { scripts, request } = fresh()
    const first = request(1)
    scripts.take('acquire').answer(GRANTED)
    await settle()
    const w1 = request(1)
    await turn()
    const a1 = scripts.take('acquire')
    a1.answer(QUEUED)
    const w2 = request(1)
    await turn()
    const a2 = scripts.take('acquire')
    a2.answer(QUEUED)
    await settle()
    first.permit!.release()
    scripts.take('release').answer([1, [idOf(a1)], idOf(a2), 1])
    await settle()
    expect(permitId(w1.permit)).toBe(idOf(a1))
    w1.permit!.release() // the head named by the reply is ours, and we hold the only permit: handed over
    await settle()
    expect(permitId(w2.permit)).toBe(idOf(a1))
    await turn()
    const served = scripts.take('release') // its queue entry leaves in the background
    expect(served.args[4]).toBe('2')
    expect(served.args.slice(7)).toEqual([idOf(a2)])
  })

  it('a withdrawal crossing a grant: the release sent after the acquire undoes it, no permit is made', async () => {
    const { scripts, request } = fresh()
    const abort = new AbortController()
    const w = request(1, { signal: abort.signal })
    const acquire = scripts.take('acquire')
    abort.abort()
    const withdrawal = scripts.take('release')
    expect(withdrawal.args.slice(7)).toEqual([idOf(acquire)])
    acquire.answer(GRANTED) // Redis ran the acquire first: the withdrawal releases that permit
    await settle()
    expect(w.permit).toBeUndefined()
    expect(w.error?.name).toBe('AbortError')
    expect(scripts.names()).toEqual([])
    // a NOSCRIPT re-send of that acquire would be dropped: its waiter is gone
    expect(acquire.options?.resendIf?.()).toBe(false)
  })

  it('a handover to our own head waiter, and none once a re-queue made that head stale', async () => {
    const { scripts, shared, request } = fresh()
    const first = request()
    scripts.take('acquire').answer(GRANTED)
    await settle()
    const w = request() // every permit here: deferred to after this turn
    expect(scripts.names()).toEqual([])
    await turn()
    const acquire = scripts.take('acquire')
    expect(acquire.args[12]).toBe('1') // wantHead
    acquire.answer(QUEUED_AT_HEAD)
    await settle()

    first.permit!.release() // handed over here and now, no round trip
    expect(permitId(w.permit)).toBe(permitId(first.permit))
    await turn()
    expect(scripts.take('release').args.slice(7)).toEqual([idOf(acquire)]) // its queue entry, in the background

    const x = request()
    await turn()
    const acquireX = scripts.take('acquire')
    acquireX.answer(QUEUED_AT_HEAD)
    await settle()
    shared.onHeadStale(tagOf(w.permit)) // " <tag>": another replica's request re-queued by its age went ahead
    w.permit!.release() // the head may not be x any more: Redis decides
    await settle()
    expect(x.permit).toBeUndefined()
    expect(scripts.take('release').args.slice(7)).toEqual([permitId(w.permit)])
  })

  it('a request sent back by an upstream 429 within the same ms is still placed by its age (never as new, charged again)', () => {
    const { scripts, request } = fresh()
    request(1, { arrivedAt: Date.now() })
    expect(Number(scripts.take('acquire').args[6])).toBeGreaterThan(0)
  })

  it('a grant read after a stall longer than the lease is confirmed first; given away meanwhile, the request queues again by its age', async () => {
    const { scripts, shared, request, advance } = fresh()
    const w = request()
    const acquire = scripts.take('acquire')
    expect(acquire.args[6]).toBe(0) // a first attempt: placed as Redis sees it
    acquire.answer(QUEUED)
    await settle()
    advance(LEASE_MS + 500) // frozen: the grant message waited in the socket
    shared.onGrantMessage(idOf(acquire))
    await settle()
    expect(w.permit).toBeUndefined()
    const renew = scripts.take('renew')
    expect(renew.args).toEqual([LEASE_MS, 3 * LEASE_MS, idOf(acquire)])
    advance(1_200)
    // (the request's age is read from the wall clock: let it show at least 2 ms)
    const since = Date.now()
    while (Date.now() < since + 2) {
      // busy
    }
    renew.answer(0) // Redis no longer counts it: its lease ran out and was purged
    await settle()
    expect(w.permit).toBeUndefined()
    const again = scripts.take('acquire')
    // a new id: a grant message for the old one, still on its way, cannot be taken for this wait's
    expect(idOf(again)).not.toBe(idOf(acquire))
    expect(Number(again.args[6])).toBeGreaterThan(0) // placed by its age: back at its place
    again.answer(QUEUED)
    await settle()
    shared.onGrantMessage(idOf(acquire)) // the stale grant's second word (its message after the reply)
    await settle()
    expect(w.permit).toBeUndefined()
    // the old id serves nobody here: given back, whatever Redis still has of it (here nothing)
    expect(scripts.take('release').args.slice(7)).toEqual([idOf(acquire)])
    expect(scripts.names()).toEqual([])
    shared.onGrantMessage(idOf(again)) // Redis's grant of the new wait
    await settle()
    expect(permitId(w.permit)).toBe(idOf(again))
  })

  it('a waiter dropped during a stall and queued again: a grant message of its old wait, read late, is not a grant of the new one', async () => {
    const { scripts, shared, request, advance } = fresh()
    const w = request()
    const acquire = scripts.take('acquire')
    acquire.answer(QUEUED)
    await settle()
    // Frozen past the lease: Redis granted the waiter (message published, unread), the lease ran
    // out, another replica's script purged it and gave the slot away.
    advance(LEASE_MS * 2)
    const syncing = shared.syncAll()
    const sync = scripts.take('sync')
    sync.answer([-1, [], [], [idOf(acquire)], null, []]) // neither holder nor waiter any more
    await syncing
    const again = scripts.take('acquire') // queued again by its age
    shared.onGrantMessage(idOf(acquire)) // the grant published during the stall, read only now
    again.answer(QUEUED) // Redis has the waiter in its queue, not among the holders
    await settle()
    expect(w.permit).toBeUndefined()
    expect(scripts.take('release').args.slice(7)).toEqual([idOf(acquire)]) // the old id given back
    expect(scripts.names()).toEqual([])
    shared.onGrantMessage(idOf(again))
    await settle()
    expect(permitId(w.permit)).toBe(idOf(again))
  })

  it('a grant read after a stall, still counted in Redis: renewed, then used', async () => {
    const { scripts, shared, request, advance } = fresh()
    const w = request()
    const acquire = scripts.take('acquire')
    acquire.answer(QUEUED)
    await settle()
    advance(LEASE_MS * 2)
    shared.onGrantMessage(idOf(acquire))
    scripts.take('renew').answer(1)
    await settle()
    expect(permitId(w.permit)).toBe(idOf(acquire))
  })

  it('a permit whose lease may run out before the next renewal is not handed over', async () => {
    const { scripts, request, advance } = fresh()
    const first = request()
    scripts.take('acquire').answer(GRANTED)
    await settle()
    const w = request()
    await turn()
    scripts.take('acquire').answer(QUEUED_AT_HEAD)
    await settle()
    advance(LEASE_MS - SYNC_MS + 1) // less than a renewal period of the lease is sure
    first.permit!.release()
    expect(w.permit).toBeUndefined()
    expect(scripts.take('release').args.slice(7)).toEqual([permitId(first.permit)])
  })

  it('a permit granted just before a stall longer than the lease cannot start a request after it: given back, never used', async () => {
    const { scripts, request, advance } = fresh()
    const w = request()
    scripts.take('acquire').answer(GRANTED)
    await settle()
    expect(w.permit!.canStart()).toBe(true) // the proxy asks right after the grant
    // frozen after the grant, before the request was written upstream (a new socket connecting)
    advance(LEASE_MS - SYNC_MS + 1)
    expect(w.permit!.isLost).toBe(false) // no sync has run yet: nothing reported it lost
    expect(w.permit!.canStart()).toBe(false) // the proxy asks again right before the write
    w.permit!.release()
    expect(scripts.take('release').args.slice(7)).toEqual([permitId(w.permit)])
    expect(w.permit!.canStart()).toBe(false)
  })
})

describe('shared permits and learned limits (fake script runner and clock)', () => {
  const LEARN: LearnOptions = { ceiling: 50, floor: 1, idleMs: 60_000 }
  // acquire replies with the limit in force as their fourth element
  const grantedAt = (limit: number) => [1, 0, 0, limit]

  it('a handover passes the answer of the permit it hands on to the release it sends anyway; a change Redis reports is told once', async () => {
    const { scripts, request, advance, changes } = fresh()
    const a = request(2, { learn: LEARN })
    const acquireA = scripts.take('acquire')
    expect(acquireA.args[2]).toBe('2 50 1 60000') // a learned limit's argument: start ceiling floor idleMs
    acquireA.answer(grantedAt(2))
    await settle()
    const b = request(2, { learn: LEARN })
    scripts.take('acquire').answer(grantedAt(2))
    await settle()
    const w = request(2, { learn: LEARN }) // both permits here: deferred, then asks for the head
    await turn()
    const acquireW = scripts.take('acquire')
    acquireW.answer([0, 1, 0, 2])
    await settle()

    advance(40)
    a.permit!.release('success') // handed over to w here and now
    expect(permitId(w.permit)).toBe(permitId(a.permit))
    await turn()
    const background = scripts.take('release')
    expect(background.args[5]).toBe('s 40') // a's answer, 40 ms after its grant
    expect(background.args.slice(7)).toEqual([idOf(acquireW)])
    background.answer([1, [], null, 2, 2, '2.5', 2])
    await settle()
    expect(changes).toEqual([]) // 2 → 2: no change of the whole limit

    b.permit!.release('throttled')
    const release = scripts.take('release')
    expect(String(release.args[5])).toMatch(/^t \d+$/)
    expect(release.args.slice(7)).toEqual([permitId(b.permit)])
    release.answer([1, [], null, 1, 2, '1', 2])
    await settle()
    expect(changes).toEqual([{ from: 2, to: 1, value: 1, reason: 'throttled', held: 2 }])
  })

  it('a limit lowered in Redis below what this replica holds means it no longer holds them all: the next release goes through Redis, no handover', async () => {
    const { scripts, shared, request } = fresh()
    const a = request(2, { learn: LEARN })
    scripts.take('acquire').answer(grantedAt(2))
    await settle()
    const b = request(2, { learn: LEARN })
    scripts.take('acquire').answer(grantedAt(2))
    await settle()
    const w = request(2, { learn: LEARN })
    await turn()
    const acquireW = scripts.take('acquire')
    acquireW.answer([0, 1, 0, 2]) // queued at the head: a handover would be possible at limit 2
    await settle()

    // another replica's 429 lowered the learned limit to 1; this replica's sync hears of it
    const syncing = shared.syncAll()
    scripts.take('sync').answer([-1, [], [], [], idOf(acquireW), [], 1])
    await syncing

    a.permit!.release('success') // holds 2 against a limit of 1: the surplus goes back to Redis
    expect(w.permit).toBeUndefined()
    const release = scripts.take('release')
    expect(release.args.slice(7)).toEqual([permitId(a.permit)])
    expect(release.args[4]).toBe('0') // not every permit is ours: no head asked for
    void b
  })

  it('a fixed limit sends no answer to learn from', async () => {
    const { scripts, request } = fresh()
    const a = request(1)
    const acquire = scripts.take('acquire')
    expect(acquire.args[2]).toBe('1')
    acquire.answer(GRANTED)
    await settle()
    a.permit!.release('success')
    expect(scripts.take('release').args[5]).toBe('-')
  })
})
