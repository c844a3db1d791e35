import { describe, expect, it } from 'vitest'
import { LEASE_MS, scriptsOnRedis } from './scripts-on-redis.js'

// A waiter queued behind others must not expire with the queue key before its replica's first
// renewal (docs/redis-limiter.md, "Keys": a key's creator sets its expiry; each replica with a waiter
// renews it every L/3). The waiters already there need not belong to a replica that renews: one that
// crashed, or was cut off from Redis. Their key runs out 3L after the last renewal, and with it the
// new waiter's place: it would wait for its replica's next sync to queue it again, at the back.
const on = scriptsOnRedis('queue-key-expiry')

describe('the queue key outlives a waiter queued behind a crashed replica’s waiter', () => {
  it('the acquire that queues behind others renews the key’s expiry, so the waiter keeps its place', async () => {
    // replica r0 holds the only permit of a limit-1 key and has a waiter queued; then it crashed, and
    // nobody renews the queue key, made 3L ago less 300 ms (the state Redis holds then)
    expect((await on.enter({ app: 'web', replica: 'r0' })).kind).toBe('granted')
    expect((await on.enter({ app: 'web', replica: 'r0' })).kind).toBe('queued')
    await on.client.pexpire(on.keys.queue, 300)

    // r2's waiter queues behind it
    const live = await on.enter({ app: 'web', replica: 'r2' })
    expect(live.kind).toBe('queued')
    // its replica renews the key within L/3: the key must last that long
    expect.soft(await on.client.pttl(on.keys.queue)).toBeGreaterThan(LEASE_MS + LEASE_MS / 3)

    // what goes wrong otherwise: the key expires, and r2's waiter with it
    await new Promise((r) => setTimeout(r, 400))
    expect(await on.client.zscore(on.keys.queue, live.id)).not.toBeNull()
  })
})
