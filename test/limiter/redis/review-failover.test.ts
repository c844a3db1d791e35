import { afterEach, describe, expect, it } from 'vitest'
import { semaphoreKeysOf, tagOf } from '../../../src/limiter/redis/keys.js'
import type { RedisLimiter } from '../../../src/limiter/redis/index.js'
import { localShare, shareBasis } from '../../../src/limiter/redis/local-share.js'
import type { SluicePermit } from '../../../src/limiter/redis/ticket.js'
import type { Permit, PermitKey } from '../../../src/limiter/types.js'
import { rollBack, snapshot } from '../../support/rollback.js'
import { needs } from '../../support/tools.js'
import { useRedis } from '../../support/use-redis.js'
import { permitId } from './fake-scripts.js'
import { closeAll, eventually, key, opts, redisLimiter, sleep, testSettings, heardByAll } from './helpers.js'
import { sharedOnRedis } from './shared-on-redis.js'

// Review of the failover change (rollback ghosts, local shares). Each test here failed on the branch
// as reviewed (13d46a5): it states what the issue asks.

const keys: PermitKey[] = Array.from({ length: 40 }, (_, i) => ({ instance: `org${i}`, endpoint: 'POST /x' }))

describe('local shares when the replicas last heard differ (stale heartbeat views)', () => {
  const HEARTBEAT = 1_000 // staleMs: two heartbeats
  /** A replica that heard `beats` (id → last beat, Redis ms) at its heartbeat at `at`, its run begun at `since`. */
  const basisOf = (self: string, at: number, since: number, beats: Record<string, number>) =>
    shareBasis(self, { at, beats: new Map(Object.entries(beats)) }, since, true, 2 * HEARTBEAT)

  it('a replica gone (crashed, or left) but still in the list the others last heard owns no slot once it missed a heartbeat: a limit-1 key is still served', () => {
    // b owns the key's only slot by the hash; b is dead: its last beat is 2.5 heartbeats old when a last heard
    const both = { live: ['a', 'b'], claims: true }
    const k = keys.find((x) => localShare(1, x, 'b', both) === 1)!
    const a = basisOf('a', 10_000, 0, { a: 10_000, b: 7_500 })
    expect(localShare(1, k, 'a', a), 'the only live replica serves the key').toBe(1)
  })

  it('views one heartbeat apart (c joined after a and b last heard the registry) add up to no more than the limit', () => {
    const a = basisOf('a', 10_000, 0, { a: 10_000, b: 9_500 })
    const b = basisOf('b', 9_500, 0, { a: 9_000, b: 9_500 })
    const c = basisOf('c', 10_200, 10_200, { a: 10_000, b: 9_500, c: 10_200 }) // its first beat
    const over = keys.filter((k) => localShare(1, k, 'a', a) + localShare(1, k, 'b', b) + localShare(1, k, 'c', c) > 1)
    expect(
      over.map((k) => k.instance),
      'limit-1 keys with 2 slots',
    ).toEqual([])
  })
})

let current: { close(): void } | undefined
afterEach(() => current?.close())
const redis = useRedis()

describe(`ghosts the change leaves ${needs('redis-server')}`, () => {
  it('a rollback that reaches back less than one sync, without a reconnect (a proxy in front, a redirecting shard failover): the ghost holder is removed and the live permit not lost', async () => {
    const client = redis.client()
    const a = sharedOnRedis(client, { replicaId: 'a' })
    current = a
    const keys = semaphoreKeysOf(a.prefix, tagOf(key))
    const first = a.request(1)
    await eventually(() => first.permit !== undefined, 5_000, 'the first grant')
    const second = a.request(1, { app: 'other' }) // another app: granted by Redis, not handed over here
    await eventually(async () => (await client.zcard(keys.queue)) === 1, 5_000, 'the second queued')
    await a.shared.syncAll()
    const old = await snapshot(client, a.prefix) // taken after the last sync: the epoch in it is the one expected
    first.permit!.release()
    await eventually(() => second.permit !== undefined, 5_000, 'the second grant')
    ;(second.permit as SluicePermit).markSent() // its request is upstream
    await rollBack(client, a.prefix, old) // a few ms of writes lost; the connection stays up
    await a.shared.syncAll()
    expect({
      holders: await client.zrange(keys.holders, 0, -1),
      queue: await client.zrange(keys.queue, 0, -1),
      lost: a.lost.length,
    }).toEqual({ holders: [permitId(second.permit)], queue: [], lost: 0 })
    second.permit!.release()
  })

  it('a key this replica was idle on at the reconnect is not reconciled: its ghost holder keeps the slot for a lease', async () => {
    const client = redis.client()
    const a = sharedOnRedis(client, { replicaId: 'a' }) // lease 60 s
    current = a
    const keys = semaphoreKeysOf(a.prefix, tagOf(key))
    const first = a.request(1)
    await eventually(() => first.permit !== undefined, 5_000, 'the first grant')
    await a.shared.syncAll()
    const old = await snapshot(client, a.prefix)
    first.permit!.release() // the key is idle here now: its state is forgotten
    await eventually(async () => (await client.zcard(keys.holders)) === 0, 5_000, 'released')
    await eventually(() => a.shared.trackedKeys() === 0, 5_000, 'the key forgotten here')
    await rollBack(client, a.prefix, old)
    a.shared.detachWaiters() // the reconnect of a failover
    await a.shared.syncAll()
    const next = a.request(1)
    await eventually(() => next.permit !== undefined, 3_000, 'served without waiting out the ghost (lease 60 s)')
    next.permit!.release()
  })
})

let limiters: RedisLimiter[] = []
afterEach(async () => {
  await closeAll(limiters)
  limiters = []
})

describe.skipIf(process.env.SLUICE_TEST_REDIS_URL)(`the switch into local fallback ${needs('redis-server')}`, () => {
  it('limit 1, two replicas: the one owning the slot in fallback does not grant it while the other replica’s Redis permit is upstream', async () => {
    const settings = testSettings(redis.url, { leaseMs: 600 })
    const a = await redisLimiter(settings, { replicaId: 'a' })
    const b = await redisLimiter(settings, { replicaId: 'b' })
    limiters = [a, b]
    await eventually(() => a.replicas() === 2 && b.replicas() === 2, 5_000, 'both seeing two')
    await heardByAll(redis.client(), settings.keyPrefix, 2) // each takes its slots only then
    const live = [a.replicaId, b.replicaId]
    const owner = localShare(1, key, a.replicaId, { live, claims: true }) === 1 ? a : b
    const other = owner === a ? b : a
    const client = redis.client()
    const rk = semaphoreKeysOf(settings.keyPrefix, tagOf(key))
    const held = (await other.acquire(key, opts(1, { deadlineMs: 30_000 }))) as SluicePermit
    held.markSent() // upstream
    const gone = new AbortController()
    let second: Permit | undefined
    owner.acquire(key, opts(1, { deadlineMs: 30_000, signal: gone.signal })).then(
      (p) => (second = p),
      () => {},
    )
    await eventually(async () => (await client.zcard(rk.queue)) === 1, 5_000, 'the owner’s waiter queued')
    client.disconnect()
    await redis.stop() // a blip is enough: every detached waiter is re-routed to the fallback at once
    await eventually(() => a.mode() === 'local' && b.mode() === 'local', 10_000, 'both in local')
    await sleep(300)
    const inFlight = second === undefined ? 1 : 2
    gone.abort()
    second?.release()
    held.release()
    await redis.start()
    expect(inFlight, 'requests upstream on a limit-1 key').toBe(1)
  })
})

describe('a key stalled ghost after ghost (the issue: one ghost granted per lease, 0 requests served for minutes)', () => {
  it('is reported stuck: a grant to a holder that serves no request is not progress', async () => {
    const { StuckKeys } = await import('../../../src/limiter/redis/stuck-keys.js')
    const LEASE = 2_000
    let now = 0
    const told: string[] = []
    const stuck = new StuckKeys(
      LEASE,
      () => now,
      (k) => told.push(k.instance),
    )
    const flags: (number | undefined)[] = []
    // each read a lease and a little apart: a new ghost holds the slot, the same live waiters queue behind
    for (let i = 0; i < 6; i++) {
      const [out] = stuck.read([
        {
          instance: 'org1',
          endpoint: 'POST /accounts/search',
          limit: 1,
          inFlight: 1,
          queued: 11,
          oldestWaitMs: now,
          holders: [{ replica: 'a.1', app: 'default', ageMs: 60_000 + now }],
          progress: `a.1/ghost${i} |b.2/live0`,
        },
      ])
      flags.push(out!.stuckMs)
      now += LEASE + 100
    }
    expect(told, '11 waiters, 0 served for 6 leases').toEqual(['org1'])
  })
})

describe('the memory of waiters done here (Semaphores.#retired, 4,096 ids across every key)', () => {
  it('a ghost grant for a waiter done ~4,100 contended requests ago is still given back at once', async () => {
    const { fakeShared, QUEUED, idOf, settle } = await import('./fake-scripts.js')
    const t = fakeShared()
    current = t
    const churn = async (): Promise<string> => {
      const gone = new AbortController()
      t.request(1, { signal: gone.signal })
      const acquire = t.scripts.take('acquire')
      acquire.answer(QUEUED)
      await settle()
      gone.abort()
      await settle()
      t.scripts.take('release') // its withdrawal (left unanswered: nothing depends on it)
      return idOf(acquire)
    }
    const ghost = await churn()
    for (let i = 0; i < 4_100; i++) await churn() // ~10 s of a busy replica's contended traffic
    t.shared.onGrantMessage(ghost) // the copy a failover promoted still queued it, and granted it
    await settle()
    expect(t.scripts.names(), 'the ghost’s slot given back (else it is held for a lease)').toEqual(['release'])
  })
})

describe('starts in local fallback (LIMITER-CHECKLIST: "Rates — every item above, for starts as well as slots")', () => {
  it('the replicas’ local shares of a rate add up to the rate, never more (1 and 4 per window on 3 replicas)', async () => {
    const { gcraParams } = await import('../../../src/limiter/rate/gcra.js')
    const { RedisRateGate } = await import('../../../src/limiter/redis/rate-gate.js')
    const alive = ['r1', 'r2', 'r3']
    for (const requests of [1, 4]) {
      const params = gcraParams({ requests, windowMs: 1_000, burst: 1 })
      let now = 10_000
      let starts = 0
      for (const self of alive) {
        const host = {
          scripts: undefined as never,
          keyPrefix: 'p',
          mode: () => 'local' as const,
          replicas: () => alive.length,
          shareOf: (k: PermitKey, n: number) => localShare(n, k, self, { live: alive, claims: true }),
          settleMs: 0,
        }
        const gate = new RedisRateGate(host, { warn: () => undefined }, () => now)
        gate.modeChanged('local')
        now += 1_000 // past the fallback's first window
        // one window of this replica's starts, as many as it will give
        for (let i = 0; i < 10; i++) {
          const r = await gate.reserve(keys[0]!, params, 999)
          if (r.granted && r.delayMs < 1_000) starts++
        }
        now -= 1_000
      }
      expect(starts, `starts in one window on 3 replicas at ${requests} per window`).toBeLessThanOrEqual(requests)
    }
  })
})
