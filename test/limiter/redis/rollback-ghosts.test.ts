import { afterEach, describe, expect, it } from 'vitest'
import { semaphoreKeysOf, tagOf } from '../../../src/limiter/redis/keys.js'
import type { RedisLimiter } from '../../../src/limiter/redis/index.js'
import type { SluicePermit } from '../../../src/limiter/redis/ticket.js'
import type { Permit } from '../../../src/limiter/types.js'
import { rollBack, snapshot } from '../../support/rollback.js'
import { needs } from '../../support/tools.js'
import { useRedis } from '../../support/use-redis.js'
import { fakeShared, GRANTED, idOf, permitId, QUEUED, settle, type Call } from './fake-scripts.js'
import { closeAll, eventually, key, opts, redisLimiter, testSettings } from './helpers.js'
import { sharedOnRedis } from './shared-on-redis.js'
import { Scripts } from '../../../src/limiter/redis/script.js'
import { sync } from '../../../src/limiter/redis/sync/index.js'
import { waiterId } from '../../../src/limiter/redis/waiter-id.js'
import { uniquePrefix } from '../../support/redis.js'

// Redis's state older than a replica's — a failover to a replica that had not caught up, a restart
// from an RDB — holds entries of this replica that serve no live request: waiters it served or
// withdrew since, holders it released. Its liveness keeps them alive, so they are ghosts: a grant to
// one holds the slot for a lease, then the next. The replica finds out (a reconnect, or the epoch its
// last sync wrote gone) and removes them at once (docs/redis-limiter.md, "Failure modes";
// LIMITER-CHECKLIST "Redis older than the replica").

let current: { close(): void } | undefined
afterEach(() => current?.close())

/** What a sync was sent with (sync/lua.ts: the lists, then the epochs, the reconcile flag and the ids kept). */
function syncSent(call: Call) {
  const a = call.args.map(String)
  let i = 10
  const list = (): string[] => {
    const n = Number(a[i])
    const ids = a.slice(i + 1, i + 1 + n)
    i += 1 + n
    return ids
  }
  const held = list()
  const waiting = list()
  list() // drop
  const [expectEpoch, epoch, reconcile] = [a[i], a[i + 1], a[i + 2]]
  i += 3
  const keep = list()
  return { recount: a[9], held, waiting, expectEpoch, epoch, reconcile, keep, below: a[i] }
}

// sync reply: nearest expiry, lost, granted, missing, head, recounted, limit, forgot, ghosts
const quietSync = [-1, [], [], [], null, [], 1, 0, 0]

describe('ghosts, deterministically (fake script runner)', () => {
  it('a grant for a waiter that left the queue here gives the slot back at once; one for a permit held here, nothing', async () => {
    const t = (current = fakeShared())
    const { scripts, request } = t
    const gone = new AbortController()
    const w = request(1, { signal: gone.signal })
    const acquire = scripts.take('acquire')
    acquire.answer(QUEUED)
    await settle()
    gone.abort()
    await settle()
    expect(scripts.take('release').args.slice(7)).toEqual([idOf(acquire)]) // its withdrawal
    expect(w.error).toBeDefined()
    // Redis granted that id anyway (a ghost of an older state): the slot would stay taken for a lease
    t.shared.onGrantMessage(idOf(acquire))
    await settle()
    expect(scripts.take('release').args.slice(7)).toEqual([idOf(acquire)])
    // a waiter granted by a reply, then its message: the permit is held here and stays held
    const held = request(1)
    scripts.take('acquire').answer(GRANTED)
    await settle()
    t.shared.onGrantMessage(permitId(held.permit))
    await settle()
    expect(scripts.names()).toEqual([])
    expect(held.permit!.canStart()).toBe(true)
    // an id this replica never queued: nothing to give back (not ours to judge)
    t.shared.onGrantMessage('r1/0000000000~00000099::default')
    await settle()
    expect(scripts.names()).toEqual([])
  })

  it('each sync checks the epoch the previous one wrote; after a reconnect the next sync reconciles and counts again', async () => {
    const { scripts, shared, request } = (current = fakeShared())
    const w = request(1)
    scripts.take('acquire').answer(GRANTED)
    await settle()
    let syncing = shared.syncAll()
    const firstCall = scripts.take('sync')
    const first = syncSent(firstCall)
    firstCall.answer(quietSync)
    await syncing
    expect([first.expectEpoch, first.reconcile, first.held]).toEqual(['', '0', [permitId(w.permit)]])
    syncing = shared.syncAll()
    const secondCall = scripts.take('sync')
    const second = syncSent(secondCall)
    secondCall.answer(quietSync)
    await syncing
    expect([second.expectEpoch, second.reconcile, second.recount]).toEqual([first.epoch, '0', '0'])
    expect(second.epoch).not.toBe(first.epoch)
    // the connection closed (a failover, a restart): Redis may come back as another server or an older state
    shared.detachWaiters()
    syncing = shared.syncAll()
    const thirdCall = scripts.take('sync')
    const third = syncSent(thirdCall)
    thirdCall.answer(quietSync)
    await syncing
    expect([third.reconcile, third.recount, third.held]).toEqual(['1', '1', [permitId(w.permit)]])
    syncing = shared.syncAll()
    const fourthCall = scripts.take('sync')
    expect([syncSent(fourthCall).reconcile, syncSent(fourthCall).recount]).toEqual(['0', '0'])
    fourthCall.answer(quietSync)
    await syncing
  })

  it('a waiter whose acquire is on its way is kept by a reconciliation (the script cannot tell it from a ghost)', async () => {
    const { scripts, shared, request } = (current = fakeShared())
    request(2)
    const acquire = scripts.take('acquire') // not answered yet
    const syncing = shared.syncAll()
    const call = scripts.take('sync')
    expect(syncSent(call).keep).toEqual([idOf(acquire)])
    call.answer(quietSync)
    await syncing
    acquire.answer(QUEUED)
  })
})

const redis = useRedis()

describe(`ghosts on a real redis-server ${needs('redis-server')}`, () => {
  it('Redis put back to an older state under a running replica: its next sync removes its ghosts and counts its permit again', async () => {
    const client = redis.client()
    const a = sharedOnRedis(client, { replicaId: 'a' })
    current = a
    const keys = semaphoreKeysOf(a.prefix, tagOf(key))
    const first = a.request(1)
    await eventually(() => first.permit !== undefined, 5_000, 'the first grant')
    const second = a.request(1)
    await eventually(async () => (await client.zcard(keys.queue)) === 1, 5_000, 'the second queued')
    await a.shared.syncAll()
    const old = await snapshot(client, a.prefix) // the copy a failover will promote
    first.permit!.release() // served on the state about to be lost
    await eventually(() => second.permit !== undefined, 5_000, 'the second grant')
    ;(second.permit as SluicePermit).markSent() // its request is upstream
    await a.shared.syncAll()
    await rollBack(client, a.prefix, old)
    // the older state: the first permit still a holder, the second waiter still queued — both serve nothing
    expect(await client.zcard(keys.queue)).toBe(1)
    await a.shared.syncAll() // the epoch its last sync wrote is gone: a rollback
    const held = permitId(second.permit)
    expect({
      holders: await client.zrange(keys.holders, 0, -1),
      queue: await client.zrange(keys.queue, 0, -1),
      lost: a.lost.length,
    }).toEqual({ holders: [held], queue: [], lost: 0 })
    expect((second.permit as Permit).canStart()).toBe(true)
    second.permit!.release()
  })
})

describe(`a reconciliation spares ids made after its sync was sent ${needs('redis-server')}`, () => {
  it("a sync re-sent after NOSCRIPT that runs after a later acquire does not take that acquire's id for a ghost", async () => {
    const client = redis.client()
    const prefix = uniquePrefix('rollback-below')
    const keys = semaphoreKeysOf(prefix, tagOf(key))
    const arrivedAt = Date.now()
    const id = (sequence: number): string =>
      waiterId({ replicaId: 'a', sequence, arrivedAt, maxHeld: Infinity, app: 'web' })
    // a ghost (sequence 1, made before the sync) and a waiter whose acquire ran after it was sent (sequence 3)
    await client.zadd(keys.queue, '1', id(1), '2', id(3))
    await sync(new Scripts(client, undefined, 5_000), keys, {
      replicaId: 'a',
      limit: '1',
      instance: key.instance,
      endpoint: key.endpoint,
      leaseMs: 60_000,
      liveMs: 60_000,
      idleMs: 180_000,
      channelPrefix: `${prefix}:grant:`,
      held: [],
      waiting: [],
      drop: [],
      sweep: false,
      recount: false,
      reconcile: true,
      below: (3).toString(36).padStart(8, '0'), // ids 1 and 2 were made when it was sent
    })
    // the ghost gone; the later waiter kept (and granted the free slot: its replica hears it as usual)
    expect([...(await client.zrange(keys.holders, 0, -1)), ...(await client.zrange(keys.queue, 0, -1))]).toEqual([
      id(3),
    ])
  })
})

let limiters: RedisLimiter[] = []
afterEach(async () => {
  await closeAll(limiters)
  limiters = []
})

describe.skipIf(process.env.SLUICE_TEST_REDIS_URL)(
  `two replicas, Redis rolled back and every client cut off, as a Sentinel failover does ${needs('redis-server')}`,
  () => {
    it('the queue holds only live waiters once both are back, and the key serves on without waiting out a ghost', async () => {
      // a long lease: a ghost left to expire would stall the key far past the wait below
      const settings = testSettings(redis.url, { leaseMs: 30_000 })
      const a = await redisLimiter(settings, { replicaId: 'a' })
      const b = await redisLimiter(settings, { replicaId: 'b' })
      limiters = [a, b]
      const client = redis.client()
      const keys = semaphoreKeysOf(settings.keyPrefix, tagOf(key))
      const p1 = await a.acquire(key, opts(1, { deadlineMs: 60_000 }))
      const a2 = a.acquire(key, opts(1, { deadlineMs: 60_000 }))
      await eventually(async () => (await client.zcard(keys.queue)) === 1, 5_000, 'a2 queued')
      const a3 = a.acquire(key, opts(1, { deadlineMs: 60_000 }))
      await eventually(async () => (await client.zcard(keys.queue)) === 2, 5_000, 'a3 queued')
      const b1 = b.acquire(key, opts(1, { deadlineMs: 60_000 }))
      await eventually(async () => (await client.zcard(keys.queue)) === 3, 5_000, 'b1 queued')
      const old = await snapshot(client, settings.keyPrefix)
      const entries = async () => [
        ...(await client.zrange(keys.holders, 0, -1)),
        ...(await client.zrange(keys.queue, 0, -1)),
      ]
      const ghosts = (await entries()).filter((id) => id.startsWith('a.')) // A's holder and two waiters
      expect(ghosts).toHaveLength(3)
      // served on the newer state, which is about to be lost
      p1.release()
      ;(await a2).release()
      ;(await a3).release()
      const held = (await b1) as SluicePermit
      held.markSent()
      const a4 = a.acquire(key, opts(1, { deadlineMs: 60_000 })) // a live waiter of A
      await eventually(async () => (await client.zcard(keys.queue)) === 1, 5_000, 'a4 queued')
      await rollBack(client, settings.keyPrefix, old)
      await client.client('KILL', 'TYPE', 'normal', 'SKIPME', 'yes') // what Sentinel does on a switch
      // back: A's ghosts gone, B's permit counted as a holder, A's live waiter there once (queued, or
      // granted: A may reach the new state before B counts its permit again — the switch's bound)
      await eventually(
        async () => {
          const now = await entries()
          return (
            now.length === 2 &&
            now.includes(permitId(held)) &&
            !now.some((id) => ghosts.includes(id)) &&
            (await client.zscore(keys.holders, permitId(held))) !== null
          )
        },
        5_000,
        'only live entries',
      )
      expect(held.canStart()).toBe(true)
      held.release()
      const served = await Promise.race([a4, new Promise<undefined>((r) => setTimeout(r, 5_000, undefined))])
      expect(served, 'A4 served without waiting out a ghost lease').toBeDefined()
      served!.release()
    })
  },
)
