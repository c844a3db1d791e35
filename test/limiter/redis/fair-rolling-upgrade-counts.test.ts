import { describe, expect, it } from 'vitest'
import { grantChannelPrefix } from '../../../src/limiter/redis/keys.js'
import { waiterId } from '../../../src/limiter/redis/waiter-id.js'
import { PREVIOUS_ACQUIRE_LUA, PREVIOUS_RELEASE_LUA } from './fixtures/fair-scripts-62cb8b4.js'
import { LEASE_MS, scriptsOnRedis } from './scripts-on-redis.js'

// A rolling upgrade from the release whose scripts count each app's queued waiters with HINCRBY
// (docs/deploy.md, "Upgrading without twice the limit"): old and new replicas share one semaphore, and the new scripts
// read and write the same `n:<app>` field in their HMGET/HSET. One count: an app's finish tag is
// refunded when its last waiter withdraws — whichever version queued, granted or withdrew which —
// and never while one of its waiters is still queued (FIFO within the app). Never over the limit,
// nobody left queued.

const on = scriptsOnRedis('mixed')
let sequence = 0
const oldId = (app: string): string =>
  waiterId({ replicaId: 'old1', sequence: ++sequence, arrivedAt: Date.now(), maxHeld: Infinity, app })

async function oldAcquire(id: string): Promise<number> {
  const { holders, queue, meta, learned } = on.keys
  const args = [
    id,
    'old1',
    '1',
    LEASE_MS,
    LEASE_MS,
    3 * LEASE_MS,
    0,
    '0',
    '1',
    'org1',
    'POST /accounts/search',
    grantChannelPrefix(on.prefix),
    '0',
    '1',
  ]
  const reply = (await on.client.eval(PREVIOUS_ACQUIRE_LUA, 4, holders, queue, meta, learned, ...args)) as number[]
  return reply[0]!
}

async function oldRelease(ids: string[]): Promise<string[]> {
  const { holders, queue, meta, learned } = on.keys
  const reply = (await on.client.eval(
    PREVIOUS_RELEASE_LUA,
    4,
    holders,
    queue,
    meta,
    learned,
    '1',
    LEASE_MS,
    3 * LEASE_MS,
    grantChannelPrefix(on.prefix),
    '0',
    '-',
    ...ids,
  )) as [number, string[]]
  return reply[1]
}

const field = (name: string) => on.client.hget(on.keys.meta, name)

describe("redis scripts: old and new replicas count one app's waiters together during a rolling upgrade", () => {
  it('the finish tag stays while any waiter of the app is queued, and goes with its last, across versions', async () => {
    const holder = await on.enter({ app: 'x', replica: 'r1' })
    expect(holder.kind).toBe('granted')
    const a1 = oldId('a')
    const a2 = oldId('a')
    expect(await oldAcquire(a1)).toBe(0) // queued by an old replica: HINCRBY n:a
    expect(await oldAcquire(a2)).toBe(0)
    const a3 = await on.enter({ app: 'a', replica: 'r2' }) // queued by a new one: the same field
    expect(a3.kind).toBe('queued')
    expect(await field('n:a')).toBe('3')

    // a new replica's release grants the old replica's waiter: counted out in its HSET
    expect(await on.leave([holder.id])).toEqual([a1])
    expect(await field('n:a')).toBe('2')
    // the old replica withdraws a2 (HINCRBY -1): a3 is still queued, so app a keeps its charge
    expect(await oldRelease([a2])).toEqual([])
    expect(await field('n:a')).toBe('1')
    expect(await field('f:a')).not.toBeNull()
    // the new replica withdraws a3, the app's last: refunded down to a3's start tag (2). a2's charge
    // stays: the old script that withdrew it does not record it (`w:a`). During the rollout a refund
    // may differ from the new rule's (here 2, not 1: a1's finish; an old pod withdrawing an app's
    // last deletes the finish tag, its own rule) — never while a waiter of the app is queued
    expect(await on.leave([a3.id])).toEqual([])
    expect(Number((await field('n:a')) ?? '0')).toBe(0)
    expect(await field('f:a')).toBe('2')
    // the old replica's waiter granted by the new release still holds the only permit; the old
    // release gives it back: nothing over the limit, nothing left queued
    expect(await on.client.zrange(on.keys.holders, 0, -1)).toEqual([a1])
    expect(await oldRelease([a1])).toEqual([])
    expect(await on.client.zcard(on.keys.queue)).toBe(0)
  })

  it("an old replica's grant of a new replica's waiter counts it out (the old HINCRBY on the new scripts' field)", async () => {
    const holder = oldId('x')
    expect(await oldAcquire(holder)).toBe(1)
    const b1 = await on.enter({ app: 'b', replica: 'r2' })
    const b2 = await on.enter({ app: 'b', replica: 'r2' })
    expect(await field('n:b')).toBe('2')
    expect(await oldRelease([holder])).toEqual([b1.id])
    expect(await field('n:b')).toBe('1')
    expect(await on.leave([b2.id])).toEqual([]) // withdrawn, the app's last: refunded to its start tag, b1's finish
    expect(await field('f:b')).toBe('1')
    expect(await on.client.zrange(on.keys.holders, 0, -1)).toEqual([b1.id])
  })
})
