import { describe, expect, it } from 'vitest'
import { grantChannelPrefix } from '../../../src/limiter/redis/keys.js'
import { FCFS_RELEASE_LUA } from './fixtures/fcfs-release-765cda3.js'
import { appOf, LEASE_MS, scriptsOnRedis } from './scripts-on-redis.js'

// Fair share between apps during a rolling upgrade: an upgrade from the FCFS scripts
// (docs/deploy.md §6 says RollingUpdate with Redis; nothing says this change needs Recreate) leaves
// waiters of the older form `<replica>/<sequence>` queued with their arrival in µs (~1.7e15) as score. The new
// grant moves V to the highest start tag granted, so one such grant puts V near 1.7e15 for as
// long as the key stays busy — where a double resolves only 0.25. Costs below 0.125 (weight > 2,
// interactive) then vanish: F_app never moves, every waiter of that app is tagged V, and V never
// moves past it: an app of lower weight gets nothing while it is backlogged.

const on = scriptsOnRedis('oldfmt')
const { enter, leave } = on

describe('redis scripts: a waiter of the older id form (FCFS score) during a rolling upgrade', () => {
  it('does not poison V: weights 3:1 still give the lighter app its share afterwards', async () => {
    const holder = await enter({ app: 'x', cost: 0.25 })
    expect(holder.kind).toBe('granted')
    // what the pre-fair-share acquire script wrote for an old replica's waiter: liveness, and the
    // arrival in µs as its score
    const [s, us] = await on.client.time()
    await on.client.hset(
      on.keys.meta,
      '@old-replica.1a2b',
      String(Number(s) * 1000 + Math.floor(Number(us) / 1000) + LEASE_MS),
    )
    await on.client.zadd(on.keys.queue, String(Number(s) * 1_000_000 + Number(us)), 'old-replica.1a2b/1')
    let current = (await leave([holder.id]))[0]!
    expect(current).toBe('old-replica.1a2b/1')

    // after the rollout: weight 3 and weight 1, both interactive (boost 4): costs 1/12 and 1/4
    for (let i = 0; i < 20; i++) {
      await enter({ app: 'heavy', cost: 1 / 12, replica: 'r1' })
      await enter({ app: 'light', cost: 1 / 4, replica: 'r2' })
    }
    const order: string[] = []
    for (let i = 0; i < 16; i++) {
      current = (await leave([current]))[0]!
      order.push(appOf(current))
    }
    // 3:1 → about 4 of 16 for light
    expect(order.filter((a) => a === 'light').length).toBeGreaterThanOrEqual(3)
  })

  it("an old replica's release during the rollout grants a live new replica's waiter (it is not dropped as dead)", async () => {
    // the old replica holds the permit (an id of the older form); a new replica r1 waits
    const [s, us] = await on.client.time()
    const nowMs = Number(s) * 1000 + Math.floor(Number(us) / 1000)
    await on.client.hset(on.keys.meta, '@old-replica.1a2b', String(nowMs + LEASE_MS))
    await on.client.zadd(on.keys.holders, String(nowMs + LEASE_MS), 'old-replica.1a2b/7')
    const waiter = await enter({ app: 'web', cost: 0.25, replica: 'r1' })
    expect(waiter.kind).toBe('queued')
    // the old replica releases with the script it has
    const reply = (await on.client.eval(
      FCFS_RELEASE_LUA,
      3,
      on.keys.holders,
      on.keys.queue,
      on.keys.meta,
      1,
      LEASE_MS,
      3 * LEASE_MS,
      grantChannelPrefix(on.prefix),
      '0',
      'old-replica.1a2b/7',
    )) as [number, string[]]
    expect(reply[1]).toEqual([waiter.id])
  })
})
