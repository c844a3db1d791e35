import { request } from 'undici'
import { describe, expect, it } from 'vitest'
import { basicAuth, keyStats, withSim } from '../support/sim.js'

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

async function post(url: string, headers: Record<string, string> = {}): Promise<void> {
  const res = await request(url, {
    method: 'POST',
    body: '{}',
    headers: { authorization: basicAuth('acme'), ...headers },
  })
  await res.body.dump()
}

describe('stats: handoffs', () => {
  it('time a freed slot of a full key stays idle until the next request arrives', async () => {
    const sim = await withSim()
    const search = `${sim.apiUrl}/accounts/search` // limit 1: every request fills it
    await post(search, { 'x-sim-delay-ms': '5' })
    expect(keyStats(sim, 'acme', 'POST /accounts/search')).toMatchObject({
      handoffs: 0,
      handoffP50Ms: null,
      handoffP99Ms: null,
    })
    await sleep(40)
    await post(search)
    const key = keyStats(sim, 'acme', 'POST /accounts/search')!
    expect(key.handoffs).toBe(1)
    // the first request left before its answer was written, and the client slept 40 ms after it
    expect(key.handoffP50Ms).toBeGreaterThanOrEqual(39)
    expect(sim.stats().handoffs).toMatchObject({ count: 1, p50Ms: key.handoffP50Ms, p99Ms: key.handoffP99Ms })
  })

  it('count no handoff when a request leaves a key below its limit', async () => {
    const sim = await withSim()
    const contacts = `${sim.apiUrl}/accounts/7/contacts` // limit 5
    for (let i = 0; i < 3; i++) await post(contacts)
    expect(keyStats(sim, 'acme', 'POST /accounts/{id}/contacts')).toMatchObject({ requests: 3, handoffs: 0 })
    expect(sim.stats().handoffs).toEqual({ count: 0, p50Ms: null, p99Ms: null })
  })

  it('pair each slot freed at the limit with the next arrival, and start again at a reset', async () => {
    const sim = await withSim()
    const search = `${sim.apiUrl}/accounts/search`
    for (let i = 0; i < 4; i++) await post(search)
    expect(keyStats(sim, 'acme', 'POST /accounts/search')?.handoffs).toBe(3)
    sim.reset()
    await post(search)
    await post(search)
    // the figures start again: the one handoff after the reset
    expect(keyStats(sim, 'acme', 'POST /accounts/search')?.handoffs).toBe(1)
    expect(sim.stats().handoffs.count).toBe(1)
  })
})
