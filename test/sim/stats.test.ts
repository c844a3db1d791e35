import { request } from 'undici'
import { describe, expect, it } from 'vitest'
import type { SimStats } from '../support/sim.js'
import { basicAuth, keyStats, waitForSim, withSim } from '../support/sim.js'

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

describe('stats', () => {
  it('log arrivals in order with x-test-seq, bounded', async () => {
    const sim = await withSim({ arrivalLogSize: 3 })
    for (let i = 1; i <= 5; i++) {
      const res = await request(`${sim.apiUrl}/webhooks/${i}`, {
        headers: { 'x-test-seq': String(i), authorization: basicAuth('acme') },
      })
      await res.body.dump()
    }
    const { arrivals, arrivalsDropped } = sim.stats()
    expect(arrivals.map((a) => a.seq)).toEqual(['3', '4', '5'])
    expect(arrivals[0]).toMatchObject({ instance: 'acme', endpoint: 'GET /webhooks/{id}', outcome: 'admitted' })
    expect(arrivals[0]!.atMs).toBeLessThanOrEqual(arrivals[2]!.atMs)
    expect(arrivalsDropped).toBe(2)
  })

  it('integrate time in progress: busy time and the request-time integral', async () => {
    const sim = await withSim()
    const controllers = [new AbortController(), new AbortController()]
    for (const c of controllers) {
      request(`${sim.apiUrl}/webhooks`, { headers: { 'x-sim-hang': '1' }, signal: c.signal }).catch(() => undefined)
    }
    await waitForSim(sim, (s) => keyStats(s, 'default', 'GET /webhooks')?.inProgress === 2, 'two in progress')
    const before = keyStats(sim, 'default', 'GET /webhooks')!
    await sleep(30)
    const after = keyStats(sim, 'default', 'GET /webhooks')!
    const busy = after.busyMs - before.busyMs
    const integral = after.requestMs - before.requestMs
    expect(busy).toBeGreaterThan(0)
    // both were in progress the whole interval: the integral grew twice as fast as the busy time
    expect(integral).toBeCloseTo(2 * busy, 6)
    for (const c of controllers) c.abort()
    await waitForSim(sim, (s) => keyStats(s, 'default', 'GET /webhooks')?.inProgress === 0, 'none in progress')
    const idle1 = keyStats(sim, 'default', 'GET /webhooks')!
    await sleep(20)
    const idle2 = keyStats(sim, 'default', 'GET /webhooks')!
    expect(idle2.busyMs).toBe(idle1.busyMs) // idle time is not busy time
  })

  it('are served at GET /__sim/stats and reset by POST /__sim/reset', async () => {
    const sim = await withSim()
    await (await request(`${sim.apiUrl}/webhooks`, { headers: { 'x-test-seq': 'a' } })).body.dump()
    const viaHttp = (await (await request(`${sim.url}/__sim/stats`)).body.json()) as SimStats
    expect(viaHttp.keys['default GET /webhooks']).toMatchObject({
      instance: 'default',
      endpoint: 'GET /webhooks',
      requests: 1,
      maxInProgress: 1,
      limit: 5,
    })
    expect(viaHttp.arrivals).toEqual([expect.objectContaining({ seq: 'a', outcome: 'admitted' })])

    const reset = await request(`${sim.url}/__sim/reset`, { method: 'POST' })
    expect(reset.statusCode).toBe(204)
    await reset.body.dump()
    const after = sim.stats()
    expect(after.keys).toEqual({})
    expect(after.arrivals).toEqual([])
  })

  it('reset keeps requests in progress counted', async () => {
    const sim = await withSim()
    const controller = new AbortController()
    request(`${sim.apiUrl}/accounts/search`, {
      method: 'POST',
      headers: { 'x-sim-hang': '1' },
      signal: controller.signal,
    }).catch(() => undefined)
    await waitForSim(sim, (s) => keyStats(s, 'default', 'POST /accounts/search')?.inProgress === 1, 'in progress')
    sim.reset()
    expect(keyStats(sim, 'default', 'POST /accounts/search')).toMatchObject({
      inProgress: 1,
      maxInProgress: 1,
      requests: 0,
    })
    const second = await request(`${sim.apiUrl}/accounts/search`, { method: 'POST' })
    expect(second.statusCode).toBe(429) // still enforced across the reset
    await second.body.dump()
    controller.abort()
    await waitForSim(sim, (s) => keyStats(s, 'default', 'POST /accounts/search')?.inProgress === 0, 'released')
  })
})
