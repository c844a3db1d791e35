import { describe, expect, it } from 'vitest'
import type { PermitKey } from '../../../src/limiter/types.js'
import { useRedis } from '../../support/use-redis.js'
import { closeAll, eventually, key, opts, redisLimiter, sleep, testSettings } from './helpers.js'

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

  it('a lease that ran out during an event-loop stall is reported lost, never silently taken again', async () => {
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
    // block the event loop for three lease times: no renewal can run
    const until = Date.now() + 1_500
    while (Date.now() < until) {
      /* stall */
    }
    await eventually(() => lostKeys.length === 2, 5_000, 'both permits to be reported lost')
    expect(heard).toMatchObject({ code: 'SLUICE_LEASE_LOST' })
    expect(held.lost.aborted).toBe(true)
    expect(held.lost.reason).toMatchObject({ code: 'SLUICE_LEASE_LOST' })
    expect(lostKeys).toEqual([key, key])
    const holders = await inspect.keys(`${settings.keyPrefix}:*:holders`)
    for (const k of holders) expect(await inspect.zcard(k)).toBe(0)
    watched.release()
    held.release() // harmless
    // the slot is free again for others
    const next = await a.acquire(key, opts(1))
    next.release()
    await a.close()
  })
})
