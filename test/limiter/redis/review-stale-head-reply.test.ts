import { afterEach, describe, expect, it } from 'vitest'
import { FairShare } from '../../../src/limiter/fairness/policy.js'
import { fairnessSettingsSchema } from '../../../src/limiter/fairness/settings.js'
import { SharedPermits } from '../../../src/limiter/redis/shared.js'
import { SluicePermit, Ticket } from '../../../src/limiter/redis/ticket.js'
import type { Permit } from '../../../src/limiter/types.js'
import { FakeScripts, settle, turn, type Call } from './fake-scripts.js'
import { key } from './helpers.js'

// Review (fair share between apps): the head a release's REPLY names can be older than a stale-head
// message (" <tag>") read before it — the reply comes on the command connection, the message on the
// subscriber, unordered. With SFQ every new app's first waiter lands at the head (not only a rare
// re-queue by age), so the crossing docs/redis-limiter.md accepts now happens on every new app:
// the replica hands its permit to its own next waiter of the same app past another app's waiter
// Redis has at the head.

const LEASE_MS = 3_000
const SYNC_MS = 1_000
// acquire replies: [kind, head, forgot]
const GRANTED = [1, 0, 0]
const QUEUED = [0, 0, 0]
const QUEUED_AT_HEAD = [0, 1, 0]
const idOf = (call: Call): string => String(call.args[0])
const permitId = (permit: Permit | undefined): string => {
  const grant = (permit as SluicePermit).grant
  if (grant.kind !== 'redis') throw new Error('expected a Redis permit')
  return grant.id
}

function setUp(fairness: unknown = {}) {
  const scripts = new FakeScripts()
  const now = 1_000
  const shared: SharedPermits = new SharedPermits(
    scripts,
    {
      prefix: 'p',
      replicaId: 'r1',
      channelPrefix: 'p:grant:',
      leaseMs: LEASE_MS,
      syncMs: SYNC_MS,
      liveMs: LEASE_MS,
      idleMs: 3 * LEASE_MS,
      now: () => now,
      fairness: new FairShare(fairnessSettingsSchema.parse(fairness)),
    },
    {
      makePermit: (k, limit, grant, waitedMs, app) => new SluicePermit(k, limit, grant, waitedMs, (p) => shared.releasePermit(p), (p) => shared.leaseHolds(p), app),
      failed: () => {},
      keyBroken: () => {},
      reroute: () => {},
      lost: () => {},
    },
  )
  const tickets: Ticket[] = []
  const request = (app: string, limit = 1) => {
    const outcome: { permit?: Permit; error?: Error } = {}
    const ticket = new Ticket(key, { limit, maxQueue: 100, deadline: Date.now() + 60_000, app }, (p) => (outcome.permit = p), (e) => (outcome.error = e), () => {})
    tickets.push(ticket)
    shared.enqueue(ticket)
    return outcome
  }
  const close = (): void => {
    for (const t of tickets) t.fail(new Error('test over'))
    shared.stop()
  }
  return { scripts, shared, request, close }
}

let current: ReturnType<typeof setUp> | undefined
afterEach(() => current?.close())
const fresh = (fairness?: unknown) => (current = setUp(fairness))

const tagOf = (permit: Permit | undefined): string => {
  const grant = (permit as SluicePermit).grant
  if (grant.kind !== 'redis') throw new Error('expected a Redis permit')
  return grant.tag
}

describe('review: a head named by a reply older than a stale-head message', () => {
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
