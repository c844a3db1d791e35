import { afterEach, describe, expect, it } from 'vitest'
import { acquire } from '../../../src/limiter/redis/acquire/index.js'
import { grantChannelPrefix, semaphoreKeysOf, tagOf } from '../../../src/limiter/redis/keys.js'
import { sync } from '../../../src/limiter/redis/sync/index.js'
import type { SluicePermit } from '../../../src/limiter/redis/ticket.js'
import { waiterId } from '../../../src/limiter/redis/waiter-id.js'
import { eventually, key } from './helpers.js'
import { scriptsOnRedis } from './scripts-on-redis.js'
import { sharedOnRedis } from './shared-on-redis.js'

// Redis lost its data (a restart without persistence, a failover to an empty replica) while this
// replica held permits, their requests upstream. The first script of the replica that finds its
// liveness gone — an acquire that announces it again, or one queued without announcing — writes it
// back; a sync of the replica sent before that acquire's reply is read carries no `recount`, and
// used to take the liveness it found for proof that nothing was lost: it reported every held permit
// lost instead of counting it again, and the requests ran on upstream uncounted — a third request
// granted at a limit of 2. The acquire now leaves a mark (`!<replica>`) that the sync reads with the
// liveness and deletes (docs/redis-limiter.md, "Failure modes"; LIMITER-CHECKLIST "Redis losing its data").

const LEASE = 60_000
const on = scriptsOnRedis('recount-race')

/** the scripts as replica `replica` sends them; `announce` '0', '1' (first time) or '2' (announced before) */
function replica(replicaId: string) {
  let sequence = 0
  const common = () => ({
    leaseMs: LEASE,
    liveMs: LEASE,
    idleMs: 3 * LEASE,
    instance: 'org1',
    endpoint: 'POST /accounts/search',
    channelPrefix: grantChannelPrefix(on.prefix),
  })
  return {
    acquire: async (limit: number, announce: '0' | '1' | '2') => {
      const id = waiterId({ replicaId, sequence: ++sequence, arrivedAt: Date.now(), maxHeld: Infinity, app: 'web' })
      const reply = await acquire(on.scripts, on.keys, {
        ...common(),
        id,
        replicaId,
        limit: String(limit),
        ageMs: 0,
        full: false,
        announce: announce !== '0',
        announcedBefore: announce === '2',
        wantHead: false,
        cost: 1,
      })
      return { id, ...reply }
    },
    // keep: waiters whose acquire's reply is not read yet (on their way): a reconciliation keeps them
    sync: (limit: number, held: string[], recount = false, sweep = false, keep: string[] = []) =>
      sync(on.scripts, on.keys, {
        ...common(),
        replicaId,
        limit: String(limit),
        held,
        waiting: [],
        drop: [],
        sweep,
        recount,
        keep,
      }),
  }
}

describe('redis scripts: a sync sent before the reply of the acquire that found Redis had lost its data', () => {
  it('an acquire announcing again: the sync counts the held permit again, and the mark is gone after it', async () => {
    const r1 = replica('r1')
    const held = await r1.acquire(2, '1')
    expect(held.kind).toBe('granted')
    await on.client.flushall()
    const next = await r1.acquire(2, '2') // writes r1's liveness back, and the mark
    expect([next.kind, next.forgot]).toEqual(['granted', true])
    const reply = await r1.sync(2, [held.id], false, false, [next.id]) // sent before that reply was read: no recount
    expect({ lost: reply.lost, recounted: reply.recounted }).toEqual({ lost: [], recounted: [held.id] })
    expect(await on.client.zrange(on.keys.holders, 0, -1)).toEqual(expect.arrayContaining([held.id, next.id]))
    expect(await on.client.hexists(on.keys.meta, '!r1')).toBe(0)
  })

  it('an acquire queued without announcing: the same', async () => {
    const r1 = replica('r1')
    const r2 = replica('r2')
    const held = await r1.acquire(1, '1')
    await on.client.flushall()
    expect((await r2.acquire(1, '1')).kind).toBe('granted') // another replica takes the slot that looks empty
    const queued = await r1.acquire(1, '0') // announced a moment ago: not again; finds its liveness gone
    expect([queued.kind, queued.forgot]).toEqual(['queued', true])
    const reply = await r1.sync(1, [held.id])
    expect({ lost: reply.lost, recounted: reply.recounted }).toEqual({ lost: [], recounted: [held.id] })
  })

  it('a first announcement (a key new to the replica) leaves no mark: a lease purged meanwhile is still lost', async () => {
    const r1 = replica('r1')
    const first = await r1.acquire(2, '1')
    expect(first.forgot).toBe(true) // Redis never knew it: no news
    expect(await on.client.hexists(on.keys.meta, '!r1')).toBe(0)
    await on.client.zrem(on.keys.holders, first.id) // as a purge of its expired lease would
    const reply = await r1.sync(2, [first.id])
    expect({ lost: reply.lost, recounted: reply.recounted }).toEqual({ lost: [first.id], recounted: [] })
  })

  it('a mark older than a lease is not believed (its key went idle here before a sync read it), and the sync deletes it', async () => {
    const r1 = replica('r1')
    const held = await r1.acquire(2, '1')
    const [s] = await on.client.time()
    await on.client.hset(on.keys.meta, '!r1', String(Number(s) * 1000 - LEASE - 1))
    await on.client.zrem(on.keys.holders, held.id)
    const reply = await r1.sync(2, [held.id])
    expect({
      lost: reply.lost,
      recounted: reply.recounted,
      mark: await on.client.hexists(on.keys.meta, '!r1'),
    }).toEqual({ lost: [held.id], recounted: [], mark: 0 })
  })

  it("the sweep drops a mark older than the idle time (a dead replica's), and keeps a recent one", async () => {
    const r1 = replica('r1')
    await r1.acquire(2, '1')
    const [s] = await on.client.time()
    const now = Number(s) * 1000
    await on.client.hset(on.keys.meta, '!dead', String(now - 3 * LEASE - 1), '!r2', String(now))
    await r1.sync(2, [], false, true)
    expect(await on.client.hmget(on.keys.meta, '!dead', '!r2')).toEqual([null, String(now)])
  })
})

let current: { close(): void } | undefined
afterEach(() => current?.close())

describe('a replica whose sync goes out before an acquire reply says Redis had lost its data, on a real redis-server', () => {
  it('limit 2: the permit whose request is upstream is counted again, not lost; a third request waits', async () => {
    const client = on.redis.client()
    const t = sharedOnRedis(client, { leaseMs: 60_000 })
    current = t
    const keys = semaphoreKeysOf(t.prefix, tagOf(key))
    const a = t.request(2)
    await eventually(() => a.permit !== undefined, 5_000, "A's permit")
    const permitA = a.permit as SluicePermit
    permitA.markSent() // A's request is upstream
    await client.flushall() // Redis loses its data
    t.advance(20_000) // a third of a lease later: the next acquire announces the replica again
    t.runner.hold = new Set(['acquire'])
    const b = t.request(2) // its acquire runs in Redis (the replica's liveness back); its reply is held
    await eventually(() => t.runner.held.length === 1, 5_000, "B's acquire run in Redis")
    t.runner.hold = new Set()
    await t.shared.syncAll() // the tick's sync, sent before B's reply is read
    t.runner.passAll()
    await eventually(() => b.permit !== undefined, 5_000, "B's permit")
    expect({
      aLost: permitA.isLost,
      aCanStart: permitA.canStart(),
      lost: t.lost.length,
      holders: await client.zcard(keys.holders),
    }).toEqual({ aLost: false, aCanStart: true, lost: 0, holders: 2 })
    const c = t.request(2)
    await eventually(async () => (await client.zcard(keys.queue)) === 1, 5_000, 'a third request queued')
    expect(c.permit).toBeUndefined()
    permitA.release()
    await eventually(() => c.permit !== undefined, 5_000, "C's permit once A's request is done")
    b.permit!.release()
    c.permit!.release()
  })
})
