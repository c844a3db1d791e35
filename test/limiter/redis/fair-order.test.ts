import { describe, expect, it } from 'vitest'
import { grantChannelPrefix } from '../../../src/limiter/redis/keys.js'
import { release } from '../../../src/limiter/redis/release/index.js'
import { semaphoreStatus } from '../../../src/limiter/redis/status/index.js'
import { appOf, LEASE_MS, scriptsOnRedis, type Who } from './scripts-on-redis.js'

// The order the scripts grant in (docs/redis-limiter.md, "Fair share between apps"), read straight
// from a real redis-server: one connection, one script after another, no replica and no timer — so
// the order is exact. Two replica ids take turns queueing, as if from two processes; the limiter
// around the scripts is tested across real replicas in fair-share-replicas.test.ts.

const on = scriptsOnRedis('fair')
const ARRIVED = Date.UTC(2026, 0, 1)

/** Queues (or grants at once) a waiter: replica ids r1 and r2 take turns unless told; `at` is ms since ARRIVED (the tie-break), else its sequence. */
const enter = (who: Omit<Who, 'arrivedAt'> & { readonly at?: number }, limit = 1) =>
  on.enter(
    {
      ...who,
      replica: who.replica ?? (on.sequence % 2 === 0 ? 'r1' : 'r2'),
      arrivedAt: ARRIVED + (who.at ?? on.sequence + 1),
    },
    limit,
  )
const { leave } = on
const seqOf = (id: string): number => parseInt(id.slice(id.lastIndexOf('/') + 1).split(':')[0]!, 36)

/** Limit 1: releases the holder, again and again; the ids granted in turn. */
async function serve(holder: string, count: number): Promise<string[]> {
  const order: string[] = []
  let current = holder
  for (let i = 0; i < count; i++) {
    const granted = await leave([current])
    expect(granted).toHaveLength(1)
    current = granted[0]!
    order.push(current)
  }
  return order
}

describe('redis scripts: weighted fair order between apps, FIFO within an app', () => {
  it('weights 3:1 over a long backlog: 3 grants to 1 in every round, FIFO within each app, across two replica ids', async () => {
    const holder = await enter({ app: 'first' })
    expect(holder.kind).toBe('granted')
    for (let i = 0; i < 60; i++) {
      await enter({ app: 'heavy', cost: 1 / 3 })
      await enter({ app: 'light', cost: 1 })
    }
    const order = await serve(holder.id, 80)
    for (let round = 0; round < 80; round += 4) {
      expect(
        order
          .slice(round, round + 4)
          .map(appOf)
          .sort(),
        `round ${round / 4}`,
      ).toEqual(['heavy', 'heavy', 'heavy', 'light'])
    }
    for (const app of ['heavy', 'light']) {
      const mine = order.filter((id) => appOf(id) === app).map(seqOf)
      expect(mine).toEqual([...mine].sort((a, b) => a - b))
    }
  })

  it("a new app's first waiter goes ahead of a flooding app's backlog; the head's replicas hear that their head is stale", async () => {
    const holder = await enter({ app: 'batch', replica: 'r1' })
    for (let i = 0; i < 24; i++) await enter({ app: 'batch' })
    const served = await serve(holder.id, 5)
    const sub = on.redis.client()
    const heard: string[] = []
    sub.on('message', (_c: string, m: string) => heard.push(m))
    const holderReplica = served[4]!.slice(0, served[4]!.lastIndexOf('/'))
    await sub.subscribe(grantChannelPrefix(on.prefix) + holderReplica)
    const web = await enter({ app: 'web', replica: 'r3' })
    expect(await serve(served[4]!, 2)).toEqual([web.id, expect.stringMatching(/:batch$/)])
    await expect.poll(() => heard).toContain(' k1')
    await sub.quit()
  })

  it("equal start tags are served in one replica's arrival order; a request re-queued with its age goes to the head, older first", async () => {
    const holder = await enter({ app: 'x' })
    // both at V: the later arrival queued first must not go first (between replicas, ties go by
    // replica id: waiter-id.ts)
    const late = await enter({ app: 'b', at: 20, replica: 'r2' })
    const early = await enter({ app: 'a', at: 10, replica: 'r2' })
    const next = await enter({ app: 'a', at: 30 })
    const retriedYoung = await enter({ app: 'b', age: 300 })
    const retriedOld = await enter({ app: 'a', age: 900 })
    expect(await serve(holder.id, 5)).toEqual([retriedOld.id, retriedYoung.id, early.id, late.id, next.id])
  })

  it('maxHeld: an app at its cap stays where it is while other apps are served past it, across replicas; held and queued per app in the status', async () => {
    const limit = 3
    const b0 = await enter({ app: 'batch', maxHeld: 1 }, limit)
    expect(b0.kind).toBe('granted')
    const b1 = await enter({ app: 'batch', maxHeld: 1 }, limit)
    const b2 = await enter({ app: 'batch', maxHeld: 1 }, limit)
    expect([b1.kind, b2.kind]).toEqual(['queued', 'queued']) // slots free, but its cap is held
    const w0 = await enter({ app: 'web' }, limit)
    const w1 = await enter({ app: 'web' }, limit)
    expect([w0.kind, w1.kind]).toEqual(['granted', 'granted'])
    const w2 = await enter({ app: 'web' }, limit)
    expect(w2.kind).toBe('queued')
    const status = await semaphoreStatus(on.scripts, on.keys, 3 * LEASE_MS)
    expect(status.apps).toEqual([
      { app: 'batch', held: 1, queued: 2 },
      { app: 'web', held: 2, queued: 1 },
    ])
    // a web permit comes back: batch is ahead in the queue but at its cap, so web's waiter is served
    expect(await leave([w0.id], limit)).toEqual([w2.id])
    // batch's permit comes back: its next waiter is under the cap again
    expect(await leave([b0.id], limit)).toEqual([b1.id])
    expect(await leave([w1.id], limit)).toEqual([]) // b2 still held back by b1
    expect(await on.client.pttl(on.keys.queue)).toBeGreaterThan(0) // put back as the last waiter: the key made anew has its expiry
    expect(await leave([b1.id], limit)).toEqual([b2.id])
  })

  it('a handover moves the virtual time to the tag of the waiter it served', async () => {
    const holder = await enter({ app: 'a' })
    const w = await enter({ app: 'a', cost: 5 }) // tag 0, F_a = 5
    const w2 = await enter({ app: 'a', cost: 5 }) // tag 5
    // the holder's replica hands its permit to w without Redis (shared.ts): then its queue entry leaves, served
    await release(on.scripts, on.keys, {
      ids: [w.id],
      limit: '1',
      leaseMs: LEASE_MS,
      idleMs: 3 * LEASE_MS,
      channelPrefix: grantChannelPrefix(on.prefix),
      replicaId: 'r1',
      wantHead: true,
      served: true,
    })
    expect(await on.client.hget(on.keys.meta, 'v')).toBe('0')
    await leave([holder.id]) // w2 granted by Redis
    expect(await on.client.hget(on.keys.meta, 'v')).toBe('5')
    // a withdrawal (not served) leaves V alone
    const w3 = await enter({ app: 'a', cost: 5 }) // tag 10
    await leave([w3.id])
    expect(await on.client.hget(on.keys.meta, 'v')).toBe('5')
    expect(w2.kind).toBe('queued')
  })
})
