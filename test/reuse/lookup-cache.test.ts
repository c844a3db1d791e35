import { setTimeout as sleep } from 'node:timers/promises'
import { describe, expect, it } from 'vitest'
import { send } from '../support/http.js'
import { startProxy, useSimAndProxy } from '../support/proxy.js'
import { basicAuth, startSim } from '../support/sim.js'
import { parsePromText, valueOf } from '../metrics/prom-text.js'
import { COUNTRIES, COUNTRIES_ID, reuseStatus, simCalls } from './support.js'

const burst = (url: string, auth: string, n: number) =>
  Promise.all(Array.from({ length: n }, () => send(url, COUNTRIES, { headers: { authorization: auth } })))

describe('lookup lists served from the cache (cache.endpoints)', () => {
  const stack = useSimAndProxy({ latencyMs: 200 }, { cache: { endpoints: [COUNTRIES_ID] } })

  it('a second burst 1 s later costs no upstream call: x-sluice-cache hit, an Age, the same body', async () => {
    const auth = basicAuth('org1', 'app-key')
    const first = await burst(stack.proxy.url, auth, 20)
    expect(first.map((a) => a.status)).toEqual(Array(20).fill(200))
    expect(first.every((a) => a.headers['x-sluice-cache'] === 'miss')).toBe(true)
    const callsAfterFirst = simCalls(stack.sim, 'org1')

    await sleep(1_000)
    const second = await burst(stack.proxy.url, auth, 20)
    expect(simCalls(stack.sim, 'org1')).toBe(callsAfterFirst)
    expect(second.map((a) => a.status)).toEqual(Array(20).fill(200))
    expect(second.map((a) => a.headers['x-sluice-cache'])).toEqual(Array(20).fill('hit'))
    for (const a of second) expect(Number(a.headers.age)).toBeGreaterThanOrEqual(1)
    expect(new Set(second.map((a) => a.text))).toEqual(new Set([first[0]!.text]))
    // each client keeps its own request id
    expect(new Set(second.map((a) => a.headers['x-request-id'])).size).toBe(20)

    const metrics = parsePromText(await (await fetch(stack.proxy.adminUrl + '/metrics')).text())
    expect(valueOf(metrics, 'sluice_cache_requests_total', { endpoint: COUNTRIES_ID, result: 'hit' })).toBe(20)
    expect(valueOf(metrics, 'sluice_permits_saved_total', { endpoint: COUNTRIES_ID, by: 'cache' })).toBe(20)
    expect(valueOf(metrics, 'sluice_cache_entries')).toBe(1)
    expect(valueOf(metrics, 'sluice_cache_bytes')).toBeGreaterThan(Buffer.byteLength(first[0]!.text))
    const saved = (await reuseStatus(stack.proxy)).permitsSaved.find((k) => k.instance === 'org1')
    expect(saved).toMatchObject({ endpoint: COUNTRIES_ID, cacheHits: 20 })
  })

  it('another API key of the same org does not get that answer; the credential shows nowhere', async () => {
    const before = simCalls(stack.sim, 'org1')
    const other = await send(stack.proxy.url, COUNTRIES, { headers: { authorization: basicAuth('org1', 'other-key') } })
    expect(other.headers['x-sluice-cache']).toBe('miss')
    expect(simCalls(stack.sim, 'org1')).toBe(before + 1)
    const status = await (await fetch(stack.proxy.adminUrl + '/status')).text()
    const metrics = await (await fetch(stack.proxy.adminUrl + '/metrics')).text()
    for (const secret of ['app-key', 'other-key', basicAuth('org1', 'app-key').slice(6)]) {
      expect(status).not.toContain(secret)
      expect(metrics).not.toContain(secret)
      expect(JSON.stringify(stack.proxy.logs)).not.toContain(secret)
    }
  })

  it('Cache-Control: no-cache goes upstream (and refreshes the entry); a POST and an uncached endpoint never hit', async () => {
    const auth = basicAuth('org1', 'app-key')
    const before = simCalls(stack.sim, 'org1')
    const fresh = await send(stack.proxy.url, COUNTRIES, {
      headers: { authorization: auth, 'cache-control': 'no-cache' },
    })
    expect(fresh.headers['x-sluice-cache']).toBe('miss')
    expect(simCalls(stack.sim, 'org1')).toBe(before + 1)
    const again = await send(stack.proxy.url, COUNTRIES, { headers: { authorization: auth } })
    expect(again.headers['x-sluice-cache']).toBe('hit')
    expect(Number(again.headers.age)).toBe(0)
    const states = await send(stack.proxy.url, '/v2/properties/states', { headers: { authorization: auth } })
    expect(states.headers['x-sluice-cache']).toBeUndefined()
  })
})

describe('the cache is bounded', () => {
  it('cache.maxEntries: the least recently used answer goes, and is counted as an eviction', async () => {
    const sim = await startSim({ latencyMs: 200 })
    const lists = ['countries', 'states', 'genders']
    const proxy = await startProxy({
      upstream: sim.apiUrl,
      cache: { endpoints: lists.map((l) => `GET /properties/${l}`), maxEntries: 2 },
    })
    try {
      const auth = basicAuth('org1')
      for (const l of lists)
        expect(
          (await send(proxy.url, `/v2/properties/${l}`, { headers: { authorization: auth } })).headers[
            'x-sluice-cache'
          ],
        ).toBe('miss')
      const metrics = parsePromText(await (await fetch(proxy.adminUrl + '/metrics')).text())
      expect(valueOf(metrics, 'sluice_cache_evictions_total')).toBe(1)
      expect(valueOf(metrics, 'sluice_cache_entries')).toBe(2)
      // countries went first; genders and states are still there
      expect(
        (await send(proxy.url, '/v2/properties/genders', { headers: { authorization: auth } })).headers[
          'x-sluice-cache'
        ],
      ).toBe('hit')
      expect(
        (await send(proxy.url, '/v2/properties/countries', { headers: { authorization: auth } })).headers[
          'x-sluice-cache'
        ],
      ).toBe('miss')
    } finally {
      await proxy.close()
      await sim.close()
    }
  })

  it('a bad cache.endpoints entry stops the start, naming the key', async () => {
    const { loadSettings } = await import('../../src/config/load.js')
    expect(() => loadSettings({ SLUICE_CACHE_ENDPOINTS: '["POST /accounts/search"]' })).toThrow(
      /cache\.endpoints\.0.*: a GET or HEAD endpoint id/,
    )
    const sim = await startSim()
    await expect(
      startProxy({ upstream: sim.apiUrl, cache: { endpoints: ['GET /properties/countrys'] } }),
    ).rejects.toThrow(
      'cache.endpoints (SLUICE_CACHE_ENDPOINTS): "GET /properties/countrys" is not an endpoint of the catalog (config/endpoints.yaml)',
    )
    await sim.close()
  })
})
