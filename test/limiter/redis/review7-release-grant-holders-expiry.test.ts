import { describe, expect, it } from 'vitest'
import { LEASE_MS, scriptsOnRedis } from './scripts-on-redis.js'

// review6 (0746276) made an acquire whose grant() puts a head waiter into a `holders` key already there
// renew that key. release runs the same grant() and was left as it was: grant() renews `holders` only
// when it was empty. A release that withdraws a waiter (deadline, abort) is sent by a replica that may
// not have synced the key yet (a new waiter waits up to L/3 for its replica's first sync, and queuing
// renews only `queue`): its grant hands the free slot to the head waiter, in a key whose only other
// holder is a crashed replica's, about to expire — and nothing renews it. The granted permit expires
// with the key before its replica's first renewal, and more requests go upstream than the limit.
//
// A slot is free with waiters queued when the limit in force rose since they queued: here a learned
// limit (start 2, learned down to 1) whose `learned` hash expired, as in review6.
const on = scriptsOnRedis('review7-release-grant-holders-expiry')
const LEARNED = `2 2 1 ${10 * LEASE_MS}` // start 2, ceiling 2, floor 1

describe('review7: a waiter granted by a release keeps the holders key alive', () => {
  it('the holders key outlives the permit a withdrawing release’s grant gave to the head waiter', async () => {
    // the learned limit is 1 (start 2)
    await on.client.hset(on.keys.learned, 'v', '1', 'b', '0', 'c', '0')
    // replica r0 held the permit and crashed: its lease ran out, nobody renews the key (made 3L ago
    // less 300 ms); an acquire purges nothing, and live_holders purges only a full semaphore
    const dead = await on.enter({ app: 'web', replica: 'r0' }, LEARNED)
    expect(dead.kind).toBe('granted')
    await on.client.zadd(on.keys.holders, 'XX', String((await on.redisNow()) - LEASE_MS), dead.id)
    await on.client.pexpire(on.keys.holders, 300)

    // r2's and r3's waiters queue behind the dead holder (limit 1); neither replica has synced yet
    const w = await on.enter({ app: 'web', replica: 'r2' }, LEARNED)
    expect(w.kind).toBe('queued')
    const r3 = await on.enter({ app: 'web', replica: 'r3' }, LEARNED)
    expect(r3.kind).toBe('queued')
    // the learned value expires: the limit is back at its start, 2
    await on.client.del(on.keys.learned)

    // r3's waiter gives up (its deadline): the release's grant hands the free slot to r2's waiter
    expect(await on.leave([r3.id], LEARNED)).toEqual([w.id])
    expect(await on.client.zscore(on.keys.holders, w.id)).not.toBeNull()
    // r2's permit runs a lease; r2 renews the key within L/3: the key must last that long
    expect.soft(await on.client.pttl(on.keys.holders)).toBeGreaterThan(LEASE_MS + LEASE_MS / 3)

    // what goes wrong otherwise: the key expires with r2's live permit in it (r2's request is upstream
    // and r2 does not know), and the next two acquires both take a slot beside it
    await new Promise((res) => setTimeout(res, 400))
    const stillCounted = (await on.client.zscore(on.keys.holders, w.id)) !== null
    expect.soft(stillCounted).toBe(true)
    const r4 = await on.enter({ app: 'web', replica: 'r4' }, LEARNED)
    const r5 = await on.enter({ app: 'web', replica: 'r5' }, LEARNED)
    const upstream = new Set([w.id, ...[r4, r5].filter((x) => x.kind === 'granted').map((x) => x.id)])
    // permits upstream on a limit of 2
    expect(upstream.size).toBeLessThanOrEqual(2)
  })
})
