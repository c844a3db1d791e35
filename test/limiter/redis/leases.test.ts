import { describe, expect, it } from 'vitest'
import type { SluicePermit } from '../../../src/limiter/redis/ticket.js'
import type { PermitKey } from '../../../src/limiter/types.js'
import { leftInRedis } from '../../support/redis.js'
import { useRedis } from '../../support/use-redis.js'
import { closeAll, eventually, key, opts, redisLimiter, sleep, testSettings } from './helpers.js'
import { needs } from '../../support/tools.js'

const redis = useRedis()

describe('redis limiter: leases', () => {
  it('a permit held for several lease times is renewed: nobody else gets its slot meanwhile', async () => {
    const settings = testSettings(redis.url, { leaseMs: 1_000 })
    const a = await redisLimiter(settings)
    const b = await redisLimiter(settings)
    const held = await a.acquire(key, opts(1))
    let granted = false
    const waiting = b.acquire(key, opts(1, { deadlineMs: 20_000 })).then((p) => ((granted = true), p))
    await sleep(3_500)
    expect(granted).toBe(false)
    expect(held.lost.aborted).toBe(false)
    held.release()
    ;(await waiting).release()
    await closeAll([a, b])
  })

  it('a lease past its expiry but still counted in Redis (nobody purged it) is renewed after a stall, not reported lost', async () => {
    const settings = testSettings(redis.url, { leaseMs: 500 })
    const lostKeys: PermitKey[] = []
    const a = await redisLimiter(settings, { observer: { leaseLost: (k) => lostKeys.push(k) } })
    const inspect = redis.client()
    const held = await a.acquire(key, opts(2))
    // its request runs: were the stall to outlast the keys' expiry (3 leases), the permit is counted
    // again as after a loss of Redis's data — kept only because its request is upstream
    held.markSent()
    const [holdersKey] = await inspect.keys(`${settings.keyPrefix}:*:holders`)
    const before = Number(await inspect.zscore(holdersKey!, grantId(held)))
    stall(1_500) // three lease times: no renewal runs, and no other replica purges the lease
    // the first sync after the stall renews it (a later expiry) — or, as before, purges it
    await eventually(
      async () => lostKeys.length > 0 || Number(await inspect.zscore(holdersKey!, grantId(held))) > before,
      5_000,
      'a sync after the stall',
    )
    expect(lostKeys).toEqual([])
    expect(held.lost.aborted).toBe(false)
    expect(await inspect.zcard(holdersKey!)).toBe(1)
    held.release()
    await eventually(async () => (await inspect.zcard(holdersKey!)) === 0, 5_000, 'the permit back')
    await a.close()
  })

  it('a lease purged in Redis while its request runs (it ran out and a release elsewhere dropped it) is reported lost, never silently taken again', async () => {
    const settings = testSettings(redis.url, { leaseMs: 500 })
    const lostKeys: PermitKey[] = []
    const a = await redisLimiter(settings, { observer: { leaseLost: (k) => lostKeys.push(k) } })
    const inspect = redis.client()
    const held = await a.acquire(key, opts(2))
    const watched = await a.acquire(key, opts(2))
    // one permit's signal is taken before the loss (a listener hears it), the other's only after
    let heard: unknown
    watched.lost.addEventListener('abort', () => {
      heard = watched.lost.reason as unknown
    })
    // what another replica's release does to leases that ran out (live_holders in the scripts)
    const [holdersKey] = await inspect.keys(`${settings.keyPrefix}:*:holders`)
    await inspect.zrem(holdersKey!, grantId(held), grantId(watched))
    await eventually(() => lostKeys.length === 2, 5_000, 'both permits to be reported lost')
    expect(heard).toMatchObject({ code: 'SLUICE_LEASE_LOST' })
    expect(held.lost.aborted).toBe(true)
    expect(held.lost.reason).toMatchObject({ code: 'SLUICE_LEASE_LOST' })
    expect(lostKeys).toEqual([key, key])
    expect(await inspect.zcard(holdersKey!)).toBe(0) // never taken again
    watched.release()
    held.release() // harmless
    // the slot is free again for others
    const next = await a.acquire(key, opts(1))
    next.release()
    await a.close()
  })

  it.skipIf(process.env.SLUICE_TEST_REDIS_URL)(
    `after Redis loses its data, the permits in flight are counted again, not forgotten ${needs('redis-server')}`,
    async () => {
      const settings = testSettings(redis.url, { leaseMs: 600 })
      const lostKeys: PermitKey[] = []
      const a = await redisLimiter(settings, { observer: { leaseLost: (k) => lostKeys.push(k) } })
      const inspect = redis.client()
      const held = await a.acquire(key, opts(1))
      held.markSent() // its request is upstream (an unsent one is held back instead: recount-before-send.test.ts)
      await inspect.flushall() // this test's own server: as a restart without persistence does
      await eventually(
        async () => lostKeys.length > 0 || (await leftInRedis(inspect, settings.keyPrefix)).holders === 1,
        5_000,
        'a sync after the loss',
      )
      expect(lostKeys).toEqual([])
      expect(held.lost.aborted).toBe(false)
      // counted: another request waits for it
      let granted = false
      const next = a.acquire(key, opts(1)).then((p) => ((granted = true), p))
      await eventually(
        async () => (await leftInRedis(inspect, settings.keyPrefix)).queued === 1,
        5_000,
        'the next request queued',
      )
      expect(granted).toBe(false)
      held.release()
      ;(await next).release()
      await a.close()
    },
  )
})

function grantId(permit: unknown): string {
  const grant = (permit as SluicePermit).grant
  if (grant.kind !== 'redis') throw new Error('expected a Redis permit')
  return grant.id
}

/** Blocks the event loop, as a long garbage collection or a busy handler would. */
function stall(ms: number): void {
  const until = performance.now() + ms
  while (performance.now() < until) {
    // busy
  }
}
