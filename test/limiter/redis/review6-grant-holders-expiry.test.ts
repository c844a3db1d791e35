import { describe, expect, it } from 'vitest'
import { LEASE_MS, scriptsOnRedis } from './scripts-on-redis.js'

// docs/redis-limiter.md, "Keys": "A key's creator sets its expiry, and so does an
// acquire that adds to `holders` or `queue` (those already there may be a dead replica's, which renews
// nothing)". An acquire also adds to `holders` through grant() — the free slots go to the head waiters
// first — and grant() renews `holders` only when it was empty. When the acquirer then queues (the
// grant took the last slot), nothing renews `holders`: the granted waiter's permit expires with the
// dead replica's key before its replica's first renewal, and more requests go upstream than the limit.
//
// A slot is free with a waiter queued when the limit in force rose since it queued: here a learned
// limit (start 2, learned down to 1) whose `learned` hash expired (learning.idleMs unused); a fixed
// limit raised during a config rollout does the same.
const on = scriptsOnRedis('review6-grant-holders-expiry')
const LEARNED = `2 2 1 ${10 * LEASE_MS}` // start 2, ceiling 2, floor 1

describe('review6: a waiter granted inside an acquire that then queues keeps the holders key alive', () => {
  it('the holders key outlives the permit an acquire’s grant gave to the head waiter', async () => {
    // the learned limit is 1 (start 2)
    await on.client.hset(on.keys.learned, 'v', '1', 'b', '0', 'c', '0')
    // replica r0 held the permit and crashed: its lease ran out, and nobody renews the key, made 3L ago
    // less 300 ms (the state Redis holds then; an acquire purges nothing)
    const dead = await on.enter({ app: 'web', replica: 'r0' }, LEARNED)
    expect(dead.kind).toBe('granted')
    await on.client.zadd(on.keys.holders, 'XX', String((await on.redisNow()) - LEASE_MS), dead.id)
    await on.client.pexpire(on.keys.holders, 300)

    // r2's waiter queues behind the dead holder (limit 1)
    const w = await on.enter({ app: 'web', replica: 'r2' }, LEARNED)
    expect(w.kind).toBe('queued')
    // the learned value expires: the limit is back at its start, 2
    await on.client.del(on.keys.learned)

    // r3's acquire grants the free slot to r2's waiter (grant: head first), and queues: the slots are full
    const r3 = await on.enter({ app: 'web', replica: 'r3' }, LEARNED)
    expect(r3.kind).toBe('queued')
    expect(await on.client.zscore(on.keys.holders, w.id)).not.toBeNull()
    // r2's permit runs a lease; r2 renews the key within L/3: the key must last that long
    expect.soft(await on.client.pttl(on.keys.holders)).toBeGreaterThan(LEASE_MS + LEASE_MS / 3)

    // what goes wrong otherwise: the key expires with r2's live permit in it (r2's request is upstream
    // and r2 does not know), and the next acquire takes two slots beside it: r3's waiter and its own
    await new Promise((r) => setTimeout(r, 400))
    const stillCounted = (await on.client.zscore(on.keys.holders, w.id)) !== null
    const r4 = await on.enter({ app: 'web', replica: 'r4' }, LEARNED)
    const others = await on.client.zrange(on.keys.holders, 0, -1)
    const upstream = new Set([w.id, ...others.filter((id) => id !== dead.id)])
    expect.soft(stillCounted).toBe(true)
    expect(r4.kind).toBeDefined()
    // permits upstream on a limit of 2: r2's, and whatever Redis counts besides the dead lease
    expect(upstream.size).toBeLessThanOrEqual(2)
  })
})
