import { describe, expect, it } from 'vitest'
import { grantChannelPrefix } from '../../../src/limiter/redis/keys.js'
import { sync } from '../../../src/limiter/redis/sync/index.js'
import { appOfId } from '../../../src/limiter/redis/waiter-id.js'
import { LEASE_MS, scriptsOnRedis } from './scripts-on-redis.js'

// Fair share between apps, the Redis half of test/limiter/memory/fair-abandoned-refund.test.ts:
// waiters that give up (deadline, abort: withdrawn by the release script) must not leave their app
// charged, or an impatient app falls behind every app that kept its waiters.

const on = scriptsOnRedis('refund')
const { enter, leave } = on

describe('redis scripts: waiters that gave up do not keep their app charged', () => {
  it('an app whose waiters all gave up gets its turn among the first once it is backlogged again', async () => {
    const holder = await enter({ app: 'b' })
    expect(holder.kind).toBe('granted')
    const abandoned = []
    for (let i = 0; i < 20; i++) abandoned.push((await enter({ app: 'a' })).id)
    for (const id of abandoned) await leave([id]) // each withdrawn on its own, oldest first (timeouts)
    for (let i = 0; i < 20; i++) await enter({ app: 'b' })
    await enter({ app: 'a' })
    const order: string[] = []
    let current = holder.id
    for (let i = 0; i < 4; i++) {
      current = (await leave([current]))[0]!
      order.push(appOfId(current)!)
    }
    expect(order).toContain('a')
  })
})

// The refund is exact (lua-fair.ts left_queue, the same rule as KeyQueue's): once an app's last
// waiter is gone, its finish tag goes back to the start tag of the earliest of its waiters that gave
// up since it was last served — what it was served stays charged, in whatever order the rest gave up.
describe('redis scripts: the refund rule', () => {
  it("a served waiter's charge stays when the app's next waiter gives up", async () => {
    const holder = await enter({ app: 'x' })
    const a1 = await enter({ app: 'a' }) // tag 0, F_a = 1
    expect(await leave([holder.id])).toEqual([a1.id]) // served: V = 0
    const a2 = await enter({ app: 'a' }) // tag 1, F_a = 2
    await leave([a2.id]) // gave up, the app's last: back to 1 (a1's finish), not to V
    expect(await on.client.hget(on.keys.meta, 'f:a')).toBe('1')
    const a3 = await enter({ app: 'a' }) // tag 1
    const b = await enter({ app: 'b' }) // tag 0: ahead of a3 although it queued after
    expect(await leave([a1.id])).toEqual([b.id])
    expect(await leave([b.id])).toEqual([a3.id])
  })

  it('waiters that gave up oldest first, one served between: refunded down to the first that gave up after it', async () => {
    const holder = await enter({ app: 'x' })
    const a = []
    for (let i = 0; i < 4; i++) a.push((await enter({ app: 'a' })).id) // tags 0 1 2 3, F_a = 4
    await leave([a[0]!]) // gave up; others of a wait: no refund yet (FIFO within a)
    expect(await on.client.hget(on.keys.meta, 'f:a')).toBe('4')
    expect(await leave([holder.id])).toEqual([a[1]]) // served (tag 1), V = 1
    await leave([a[2]!])
    expect(await on.client.hget(on.keys.meta, 'f:a')).toBe('4')
    await leave([a[3]!]) // the last: back to 2, a[1]'s finish
    expect(await on.client.hget(on.keys.meta, 'f:a')).toBe('2')
    expect(await on.client.hget(on.keys.meta, 'n:a')).toBe('0')
    expect(await on.client.hexists(on.keys.meta, 'w:a')).toBe(0)
  })

  it("a dead replica's waiters dropped by a grant are refunded by the same rule", async () => {
    const holder = await enter({ app: 'x', replica: 'r1' })
    const dead = await enter({ app: 'a', replica: 'r2' }) // tag 0, F_a = 1
    await on.client.hdel(on.keys.meta, '@r2')
    expect(await leave([holder.id])).toEqual([])
    expect(await on.client.zscore(on.keys.queue, dead.id)).toBeNull()
    expect(await on.client.hget(on.keys.meta, 'f:a')).toBe('0')
  })
})

describe("redis scripts: sync's sweep", () => {
  it('removes the counts at 0 and the pending refunds of apps with none queued, and keeps those of apps still waiting', async () => {
    const holder = await enter({ app: 'x' })
    const a = await enter({ app: 'a' })
    const b1 = await enter({ app: 'b' })
    const b2 = await enter({ app: 'b' })
    await leave([b1.id]) // gave up while b2 waits: refund pending (w:b)
    expect(await leave([holder.id])).toEqual([a.id]) // a's last served: n:a written as 0
    expect(await on.client.hget(on.keys.meta, 'n:a')).toBe('0')
    // an old replica's withdrawal leaves a w: behind it would not clear (its release keeps none)
    await on.client.hset(on.keys.meta, 'w:gone', '3')
    await sync(on.scripts, on.keys, {
      replicaId: 'r1',
      limit: '1',
      instance: 'org1',
      endpoint: 'POST /accounts/search',
      leaseMs: LEASE_MS,
      liveMs: LEASE_MS,
      idleMs: 3 * LEASE_MS,
      channelPrefix: grantChannelPrefix(on.prefix),
      held: [a.id],
      waiting: [b2.id],
      drop: [],
      sweep: true,
      recount: false,
    })
    const meta = await on.client.hgetall(on.keys.meta)
    expect(meta['n:a']).toBeUndefined()
    expect(meta['w:gone']).toBeUndefined()
    expect(meta['n:b']).toBe('1')
    expect(meta['w:b']).toBeDefined()
  })
})
