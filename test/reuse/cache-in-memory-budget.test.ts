import { describe, expect, it } from 'vitest'
import { send } from '../support/http.js'
import { startProxy } from '../support/proxy.js'
import { basicAuth, withSim } from '../support/sim.js'
import { parsePromText, valueOf } from '../metrics/prom-text.js'
import { REQUEST_BYTES } from '../../src/proxy/memory-hold.js'
import { COUNTRIES, COUNTRIES_ID, simCalls } from './support.js'

const figures = async (adminUrl: string) => parsePromText(await (await fetch(adminUrl + '/metrics')).text())

describe('the lookup cache counts in the memory budget: past it an answer is not kept, and no request is refused for it', () => {
  it('keeps an answer that fits, in sluice_memory_budget_used_bytes{kind="cache"}', async () => {
    const sim = await withSim()
    const proxy = await startProxy({
      upstream: sim.apiUrl,
      cache: { endpoints: [COUNTRIES_ID] },
      memory: { budgetBytes: 1_000_000, maxShare: 1 },
    })
    try {
      const auth = { authorization: basicAuth('org1') }
      expect((await send(proxy.url, COUNTRIES, { headers: auth })).headers['x-sluice-cache']).toBe('miss')
      expect((await send(proxy.url, COUNTRIES, { headers: auth })).headers['x-sluice-cache']).toBe('hit')
      const m = await figures(proxy.adminUrl)
      expect(valueOf(m, 'sluice_memory_budget_used_bytes', { kind: 'cache' })).toBe(valueOf(m, 'sluice_cache_bytes'))
      expect(valueOf(m, 'sluice_memory_budget_used_bytes', { kind: 'cache' })).toBeGreaterThan(0)
    } finally {
      await proxy.close()
    }
  })

  it('does not keep an answer past the budget: the next request asks the API again', async () => {
    const sim = await withSim()
    // room for the request in flight, not for a copy of its answer besides
    const proxy = await startProxy({
      upstream: sim.apiUrl,
      cache: { endpoints: [COUNTRIES_ID] },
      memory: { budgetBytes: REQUEST_BYTES + 100, maxShare: 1 },
    })
    try {
      const auth = { authorization: basicAuth('org1') }
      for (let i = 0; i < 2; i++) {
        const answer = await send(proxy.url, COUNTRIES, { headers: auth })
        expect(answer.status).toBe(200)
        expect(answer.headers['x-sluice-cache']).toBe('miss')
      }
      expect(simCalls(sim, 'org1')).toBe(2)
      const m = await figures(proxy.adminUrl)
      expect(valueOf(m, 'sluice_memory_budget_refusals_total', { kind: 'cache' })).toBe(2)
      expect(valueOf(m, 'sluice_memory_budget_used_bytes', { kind: 'cache' })).toBe(0)
      expect(valueOf(m, 'sluice_cache_entries')).toBe(0)
    } finally {
      await proxy.close()
    }
  })
})
