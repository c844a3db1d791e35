import type { Redis } from 'ioredis'
import { describe, expect, it } from 'vitest'
import { acquire } from '../../../src/limiter/redis/acquire/index.js'
import { grantChannelPrefix, semaphoreKeysOf } from '../../../src/limiter/redis/keys.js'
import { release } from '../../../src/limiter/redis/release/index.js'
import { Scripts } from '../../../src/limiter/redis/script.js'
import { waiterId } from '../../../src/limiter/redis/waiter-id.js'
import { uniquePrefix } from '../../support/redis.js'
import { useRedis } from '../../support/use-redis.js'

// What a request costs inside Redis (docs/redis-limiter.md, "Scripts", costs): the commands each
// script runs, counted with INFO commandstats on a private redis-server. Fair share between apps
// adds nothing to the uncontended path; a fixed limit costs nothing for learned limits, a learned
// one an HGET per script and, in the release that learns, the rule's reads and writes.

const redis = useRedis()
const replicaOf = (id: string): string => id.slice(0, id.lastIndexOf('/'))
const LEASE = 60_000

/** Commands run by `fn`, by name (the scripts' EVALSHA itself not counted). */
async function commandsOf(client: Redis, fn: () => Promise<unknown>): Promise<Record<string, number>> {
  await client.config('RESETSTAT')
  await fn()
  const info = await client.info('commandstats')
  const counts: Record<string, number> = {}
  for (const line of info.split('\n')) {
    const m = /^cmdstat_([a-z|]+):calls=(\d+)/.exec(line)
    if (!m || ['evalsha', 'eval', 'info', 'config|resetstat'].includes(m[1]!)) continue
    counts[m[1]!] = Number(m[2])
  }
  return counts
}

describe('redis scripts: commands per request', () => {
  it('uncontended: acquire TIME ZCARD ZPOPMIN ZADD PEXPIRE, release ZREM ZCARD ZPOPMIN; contended: queued acquires and the releases that grant them', async () => {
    const client = redis.client()
    const scripts = new Scripts(client, undefined, 5_000)
    const prefix = uniquePrefix('cost')
    const keys = semaphoreKeysOf(prefix, 'k')
    let sequence = 0
    const id = (app: string, replica: string): string =>
      waiterId({ replicaId: replica, sequence: ++sequence, arrivedAt: Date.now(), maxHeld: Infinity, app })
    const acq = (who: string, replica: string, limit: number, announce = false) =>
      acquire(scripts, keys, {
        id: who,
        replicaId: replica,
        limit: String(limit),
        leaseMs: LEASE,
        liveMs: LEASE,
        idleMs: 3 * LEASE,
        ageMs: 0,
        full: false,
        announce,
        instance: 'org1',
        endpoint: 'POST /accounts/search',
        channelPrefix: grantChannelPrefix(prefix),
        wantHead: false,
        cost: 1,
      })
    // released by the replica of the ids, as SharedPermits does
    const rel = (ids: string[], limit: number) =>
      release(scripts, keys, {
        ids,
        limit: String(limit),
        leaseMs: LEASE,
        idleMs: 3 * LEASE,
        channelPrefix: grantChannelPrefix(prefix),
        replicaId: replicaOf(ids[0]!),
        wantHead: false,
      })

    // both replicas announced, and a first contention done (V exists): the steady state
    const warm = [id('web', 'r1'), id('batch', 'r2'), id('batch', 'r2')]
    await acq(warm[0]!, 'r1', 1, true)
    await acq(warm[1]!, 'r2', 1, true)
    await rel([warm[0]!], 1)
    await acq(warm[2]!, 'r2', 1)
    await rel([warm[1]!], 1)
    await rel([warm[2]!], 1)

    const a = id('web', 'r1')
    expect(await commandsOf(client, () => acq(a, 'r1', 5))).toEqual({
      time: 1,
      zcard: 1,
      zpopmin: 1,
      zadd: 1,
      pexpire: 1,
    })
    expect(await commandsOf(client, () => rel([a], 5))).toEqual({ zrem: 1, zcard: 1, zpopmin: 1 })

    const holder = id('web', 'r1')
    await acq(holder, 'r1', 1)
    const waiter = id('batch', 'r2')
    // queued, the semaphore full: no clock (TIME only for a lease or a liveness); its start tag and
    // its app's count of waiters in one HMGET (V, F_app, n_app) and one HSET (F_app, n_app); whether
    // the queue's expiry renewed (PEXPIRE), and whether it landed at the head (ZRANGE)
    expect(await commandsOf(client, () => acq(waiter, 'r2', 1))).toEqual({
      zcard: 1,
      hmget: 1,
      hset: 1,
      zadd: 1,
      zrange: 1,
      pexpire: 1,
    })
    // queued behind it: the same — the waiters before it may be a replica's that renews nothing
    // (queue-key-expiry.test.ts)
    const second = id('batch', 'r1')
    expect(await commandsOf(client, () => acq(second, 'r1', 1))).toEqual({
      zcard: 1,
      hmget: 1,
      hset: 1,
      zadd: 1,
      zrange: 1,
      pexpire: 1,
    })
    // granting a waiter of another replica: its replica's liveness, V and its app's count in one
    // HMGET, V and the count in one HSET, the lease (TIME, ZADD; the release emptied holders and the
    // grant made it anew: PEXPIRE), the next head named at limit 1 (ZRANGE), the message (PUBLISH)
    expect(await commandsOf(client, () => rel([holder], 1))).toEqual({
      time: 1,
      zrem: 1,
      zcard: 1,
      zpopmin: 1,
      hmget: 1,
      zadd: 1,
      hset: 1,
      pexpire: 1,
      zrange: 1,
      publish: 1,
    })
    expect(await commandsOf(client, () => rel([waiter], 1))).toEqual({
      time: 1,
      zrem: 1,
      zcard: 1,
      zpopmin: 1,
      hmget: 1,
      zadd: 1,
      hset: 1,
      pexpire: 1,
      zrange: 1,
      publish: 1,
    })
    // granting a waiter of the releasing replica itself: no message (the reply says it), and its
    // liveness is not read (the HMGET reads V and the app's count only)
    const third = id('batch', 'r1')
    await acq(third, 'r1', 1)
    expect(await commandsOf(client, () => rel([second], 1))).toEqual({
      time: 1,
      zrem: 1,
      zcard: 1,
      zpopmin: 1,
      hmget: 1,
      zadd: 1,
      hset: 1,
      pexpire: 1,
      zrange: 1,
    })
  })

  it('a learned limit: one HGET more per script; the release that learns reads (and writes) the learned hash; a lowered limit grants nobody', async () => {
    const client = redis.client()
    const scripts = new Scripts(client, undefined, 5_000)
    const prefix = uniquePrefix('cost-learned')
    const keys = semaphoreKeysOf(prefix, 'k')
    let sequence = 0
    const id = (app: string, replica: string): string =>
      waiterId({ replicaId: replica, sequence: ++sequence, arrivedAt: Date.now(), maxHeld: Infinity, app })
    // start 2, ceiling 50, floor 1: learned as "<start> <ceiling> <floor> <idleMs>"
    const spec = `2 50 1 ${3_600_000}`
    const acq = (who: string, replica: string, announce = false) =>
      acquire(scripts, keys, {
        id: who,
        replicaId: replica,
        limit: spec,
        leaseMs: LEASE,
        liveMs: LEASE,
        idleMs: 3 * LEASE,
        ageMs: 0,
        full: false,
        announce,
        instance: 'org1',
        endpoint: 'GET /accounts/{id}/memberships',
        channelPrefix: grantChannelPrefix(prefix),
        wantHead: false,
        cost: 1,
      })
    const rel = (ids: string[], outcome: 's' | 't' | undefined) =>
      release(scripts, keys, {
        ids,
        limit: spec,
        leaseMs: LEASE,
        idleMs: 3 * LEASE,
        channelPrefix: grantChannelPrefix(prefix),
        replicaId: replicaOf(ids[0]!),
        wantHead: false,
        answer: outcome === undefined ? undefined : { outcome: outcome === 's' ? 'success' : 'throttled', heldMs: 10 },
      })

    // warm: both replicas announced, V exists, and a learned value exists (a success at 2 of 2 raised it)
    const warm = [id('web', 'r1'), id('batch', 'r2'), id('batch', 'r2')]
    await acq(warm[0]!, 'r1', true)
    await acq(warm[1]!, 'r2', true)
    await acq(warm[2]!, 'r2')
    await rel([warm[0]!], 's')
    await rel([warm[1]!], undefined)
    await rel([warm[2]!], undefined)
    expect(await client.hget(keys.learned, 'v')).toBe('2.5')

    // uncontended: the fixed path's five commands and the HGET of the learned value
    const a = id('web', 'r1')
    expect(await commandsOf(client, () => acq(a, 'r1'))).toEqual({
      time: 1,
      hget: 1,
      zcard: 1,
      zpopmin: 1,
      zadd: 1,
      pexpire: 1,
    })
    // a success with a slot free (not saturated): the rule reads the holders and the learned hash,
    // learns nothing (no HSET) and keeps the learned key alive (PEXPIRE)
    expect(await commandsOf(client, () => rel([a], 's'))).toEqual({
      hget: 1,
      zcard: 2,
      hmget: 1,
      pexpire: 1,
      zrem: 1,
      zpopmin: 1,
    })

    const h1 = id('web', 'r1')
    const h2 = id('web', 'r1')
    await acq(h1, 'r1')
    await acq(h2, 'r1')
    const waiter = id('batch', 'r2')
    // queued (alone): the fixed path's six commands and the HGET of the learned value
    expect(await commandsOf(client, () => acq(waiter, 'r2'))).toEqual({
      hget: 1,
      zcard: 1,
      hmget: 1,
      hset: 1,
      zadd: 1,
      pexpire: 1,
      zrange: 1,
    })
    // a 429 with both permits held: learned 2.5 → 1 (HMGET, HSET, PEXPIRE), and the freed slot is NOT
    // granted: one holder left is the new limit, so grant pops nobody (ZCARD and the lease check only)
    expect(await commandsOf(client, () => rel([h1], 't'))).toEqual({
      time: 1,
      hget: 1,
      zcard: 2,
      hmget: 1,
      hset: 1,
      pexpire: 1,
      zrem: 1,
      zrange: 1,
    })
    expect(await client.hget(keys.learned, 'v')).toBe('1')
    expect(await client.zcard(keys.queue)).toBe(1)
    // a success at the limit (saturated) raises the value a little (a probe: 1 drew the 429 at 2)
    // and grants the waiter: the learning's HMGET HSET PEXPIRE, then the fixed path's granting release
    // (its app's count of waiters down in the HSET that moves V)
    expect(await commandsOf(client, () => rel([h2], 's'))).toEqual({
      time: 1,
      hget: 1,
      zcard: 2,
      hmget: 2,
      hset: 2,
      pexpire: 2,
      zrem: 1,
      zpopmin: 1,
      zadd: 1,
      zrange: 1,
      publish: 1,
    })
    expect(await client.zrange(keys.holders, 0, -1)).toEqual([waiter])
  })

  // A published limit-5 endpoint under learning.lowerPublished is learned with start = ceiling = 5:
  // while nothing is learned, a success can change nothing (the rule only adds), so no rule runs.
  it('a success released on a published limit at its ceiling costs the fixed release and the HGET only', async () => {
    const client = redis.client()
    const scripts = new Scripts(client, undefined, 5_000)
    const prefix = uniquePrefix('cost-published')
    const keys = semaphoreKeysOf(prefix, 'k')
    let sequence = 0
    const id = (): string =>
      waiterId({ replicaId: 'r1', sequence: ++sequence, arrivedAt: Date.now(), maxHeld: Infinity, app: 'web' })
    const spec = `5 5 1 ${3_600_000}` // published 5, lowerPublished: start 5, ceiling 5
    const acq = (who: string, announce = false) =>
      acquire(scripts, keys, {
        id: who,
        replicaId: 'r1',
        limit: spec,
        leaseMs: LEASE,
        liveMs: LEASE,
        idleMs: 3 * LEASE,
        ageMs: 0,
        full: false,
        announce,
        instance: 'org1',
        endpoint: 'GET /accounts/{id}/contacts',
        channelPrefix: grantChannelPrefix(prefix),
        wantHead: false,
        cost: 1,
      })
    const a = id()
    await acq(a, true)
    const b = id()
    await acq(b)
    const cost = await commandsOf(client, () =>
      release(scripts, keys, {
        ids: [a],
        limit: spec,
        leaseMs: LEASE,
        idleMs: 3 * LEASE,
        channelPrefix: grantChannelPrefix(prefix),
        replicaId: 'r1',
        wantHead: false,
        answer: { outcome: 'success', heldMs: 10 },
      }),
    )
    expect(await client.exists(keys.learned)).toBe(0)
    // the fixed limit's release (TIME ZREM ZCARD ZPOPMIN) and the HGET of the learned value
    expect(cost).toEqual({ hget: 1, zrem: 1, zcard: 1, zpopmin: 1 })
  })

  // Holders at the ceiling fill every limit that could have been learned: a contended acquire
  // queues whatever the learned value, so it does not read it (docs/redis-limiter.md, "Costs").
  it('a queued acquire on a learned limit whose holders fill its ceiling runs the fixed path, without the HGET', async () => {
    const client = redis.client()
    const scripts = new Scripts(client, undefined, 5_000)
    const prefix = uniquePrefix('cost-ceiling')
    const keys = semaphoreKeysOf(prefix, 'k')
    let sequence = 0
    const id = (): string =>
      waiterId({ replicaId: 'r1', sequence: ++sequence, arrivedAt: Date.now(), maxHeld: Infinity, app: 'web' })
    const spec = `2 2 1 ${3_600_000}` // published 2 under lowerPublished: start 2, ceiling 2
    const acq = (who: string, a: { announce?: boolean; wantHead?: boolean } = {}) =>
      acquire(scripts, keys, {
        id: who,
        replicaId: 'r1',
        limit: spec,
        leaseMs: LEASE,
        liveMs: LEASE,
        idleMs: 3 * LEASE,
        ageMs: 0,
        full: false,
        announce: a.announce === true,
        instance: 'org1',
        endpoint: 'GET /accounts/{id}/contacts',
        channelPrefix: grantChannelPrefix(prefix),
        wantHead: a.wantHead === true,
        cost: 1,
      })
    expect((await acq(id(), { announce: true })).kind).toBe('granted')
    expect((await acq(id())).kind).toBe('granted')
    // a learned value below the ceiling: still no HGET, nothing can be granted at 2 holders; and V
    // as a first grant from the queue leaves it (the steady state: no PEXPIRE of a hash maybe new)
    await client.hset(keys.learned, 'v', '1')
    await client.hset(keys.meta, 'v', '0')
    let reply: Awaited<ReturnType<typeof acq>> | undefined
    const queued = await commandsOf(client, async () => (reply = await acq(id())))
    // (the queue's expiry renewed: PEXPIRE, as by every queued acquire)
    expect(queued).toEqual({ zcard: 1, hmget: 1, hset: 1, zadd: 1, zrange: 1, pexpire: 1 })
    // the limit in force was not read, so the reply names none (the replica keeps what it knew)
    // the holders counted, every replica's (the local fallback keeps the others' counted: no command more)
    expect(reply).toEqual({ kind: 'queued', head: false, forgot: false, limit: undefined, held: 2 })
    expect(await commandsOf(client, () => acq(id()))).toEqual({
      zcard: 1,
      hmget: 1,
      hset: 1,
      zadd: 1,
      zrange: 1,
      pexpire: 1,
    })
    // asked for the head (every permit here): the limit decides whether one is named, so it is read
    let withHead: Awaited<ReturnType<typeof acq>> | undefined
    const head = await commandsOf(client, async () => (withHead = await acq(id(), { wantHead: true })))
    expect(head).toEqual({ hget: 1, zcard: 1, hmget: 1, hset: 1, zadd: 1, zrange: 1, pexpire: 1 })
    // two holders above the learned limit 1: no head named
    expect(withHead).toEqual({ kind: 'queued', head: false, forgot: false, limit: 1, held: 2 })
  })
  it('redis.keepPermits on: an acquire queued alone at the head also tells the holders’ replicas (ZRANGE, PUBLISH); off, not', async () => {
    const client = redis.client()
    const scripts = new Scripts(client, undefined, 5_000)
    const prefix = uniquePrefix('cost-keep')
    let sequence = 0
    const acq = (k: string, replica: string, tellAlone: boolean) =>
      acquire(scripts, semaphoreKeysOf(prefix, k), {
        id: waiterId({
          replicaId: replica,
          sequence: ++sequence,
          arrivedAt: Date.now(),
          maxHeld: Infinity,
          app: 'web',
        }),
        replicaId: replica,
        limit: '1',
        leaseMs: LEASE,
        liveMs: LEASE,
        idleMs: 3 * LEASE,
        ageMs: 0,
        full: false,
        announce: false,
        instance: 'org1',
        endpoint: 'POST /accounts/search',
        channelPrefix: grantChannelPrefix(prefix),
        wantHead: false,
        cost: 1,
        tellAlone,
      })
    // on each key r1 holds the only permit (it may be keeping it for its next request), and a waiter of r2 queues alone
    const queuedAlone = async (k: string, tellAlone: boolean) => {
      await acq(k, 'r1', false)
      return await commandsOf(client, () => acq(k, 'r2', tellAlone))
    }
    const off = await queuedAlone('off', false)
    const on = await queuedAlone('on', true)
    // on, r1 hears someone waits (a kept permit goes back at once, kept-permits.ts): the holders read, one PUBLISH
    expect(on).toEqual({ ...off, zrange: off.zrange! + 1, publish: 1 })
    expect(off.publish).toBeUndefined()
    client.disconnect()
  })
})
