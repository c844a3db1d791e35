import { describe, expect, it } from 'vitest'
import { LEASE_MS, scriptsOnRedis } from './scripts-on-redis.js'

// A holder taken into a `holders` key that already has holders must not expire with the key before
// its replica's first renewal (docs/redis-limiter.md, "Keys": a key's creator sets its expiry; each
// replica with a permit renews it every L/3). The holders already there need not belong to a replica
// that renews: one that crashed (its lease ran out, and an acquire purges nothing), one cut off from
// Redis, or a key restored from a snapshot. Their key runs out 3L after the last renewal.
const on = scriptsOnRedis('review5-holders-expiry')

describe('review5: the holders key outlives a permit taken beside a crashed replica’s expired lease', () => {
  it('the acquire that joins holders renews the key’s expiry, so the key never counts fewer permits than are live', async () => {
    // replica r0 held a permit of a limit-2 key and crashed: its lease ran out (a lease ago and more)
    // and nobody renews the key, made 3L ago less 300 ms (the state Redis holds then)
    const dead = await on.enter({ app: 'web', replica: 'r0' }, 2)
    expect(dead.kind).toBe('granted')
    await on.client.zadd(on.keys.holders, 'XX', String((await on.redisNow()) - LEASE_MS), dead.id)
    await on.client.pexpire(on.keys.holders, 300)

    // r2 takes the free slot (the expired lease is still counted: an acquire purges nothing)
    const live = await on.enter({ app: 'web', replica: 'r2' }, 2)
    expect(live.kind).toBe('granted')
    // its lease runs L; its replica renews the key within L/3: the key must last that long
    expect.soft(await on.client.pttl(on.keys.holders)).toBeGreaterThan(LEASE_MS + LEASE_MS / 3)

    // what goes wrong otherwise: the key expires with r2's live permit in it, and two more are
    // granted beside it: three requests upstream on a limit of 2 until r2's next sync
    await new Promise((r) => setTimeout(r, 400))
    expect.soft(await on.client.zscore(on.keys.holders, live.id)).not.toBeNull()
    const c = await on.enter({ app: 'web', replica: 'r3' }, 2)
    const d = await on.enter({ app: 'web', replica: 'r3' }, 2)
    const granted = [c, d].filter((x) => x.kind === 'granted').length
    expect(1 + granted).toBeLessThanOrEqual(2)
  })
})
