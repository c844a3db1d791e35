import { describe, expect, it } from 'vitest'
import { startProxy, statusOf } from '../support/proxy.js'
import { basicAuth, keyStats, withSim } from '../support/sim.js'
import { send, until } from '../support/http.js'
import { REQUEST_BYTES } from '../../src/proxy/memory-hold.js'

const SEARCH = 'POST /accounts/search' // limit 1
const BODY = '{"q":"' + 'x'.repeat(16_384 - 8) + '"}'
const search = (extra: Record<string, string> = {}, signal?: AbortSignal) => ({
  method: 'POST',
  headers: { authorization: basicAuth('org1'), 'content-type': 'application/json', ...extra },
  body: BODY,
  signal,
})

async function used(adminUrl: string): Promise<Record<string, number>> {
  const text = await (await fetch(`${adminUrl}/metrics`)).text()
  const figures: Record<string, number> = {}
  for (const m of text.matchAll(/^sluice_memory_budget_used_bytes\{kind="(\w+)"\} (\d+)$/gm))
    figures[m[1]!] = Number(m[2])
  return figures
}

describe('the memory budget gives a request back exactly once, whichever way it ends', () => {
  it('a client that left its queue, a queue timeout, an upstream failure, a refused body of undeclared length: all given back', async () => {
    const sim = await withSim()
    const proxy = await startProxy({
      upstream: sim.apiUrl,
      memory: { budgetBytes: 200_000 },
      failFast: { enabled: false },
    })
    try {
      const first = send(proxy.url, '/v2/accounts/search', search({ 'x-sim-hold': 'first' }))
      await until(() => keyStats(sim, 'org1', SEARCH)?.inProgress === 1, 'one request upstream')
      const one = { request: REQUEST_BYTES, body: Buffer.byteLength(BODY), answer: 0, cache: 0 }
      expect(await used(proxy.adminUrl)).toEqual(one)

      // the client hangs up while queued
      const leaving = new AbortController()
      const left = send(proxy.url, '/v2/accounts/search', search({}, leaving.signal)).catch(() => 'gone')
      await until(async () => (await statusOf(proxy, 'org1', SEARCH))?.queued === 1, 'one queued')
      expect((await used(proxy.adminUrl)).request).toBe(2 * REQUEST_BYTES)
      leaving.abort()
      expect(await left).toBe('gone')
      await until(async () => (await used(proxy.adminUrl)).request === REQUEST_BYTES, 'the hung-up request given back')

      // the wait runs past its deadline
      const late = await send(proxy.url, '/v2/accounts/search', search({ 'x-sluice-max-wait': '0.2' }))
      expect(late.json()).toMatchObject([{ code: 'SLUICE_QUEUE_TIMEOUT' }])
      await until(
        async () => (await used(proxy.adminUrl)).request === REQUEST_BYTES,
        'the timed-out request given back',
      )

      // a body of undeclared length (chunked) larger than the budget: refused as it arrives
      const big = await send(proxy.url, '/v2/accounts/search', {
        ...search({ 'transfer-encoding': 'chunked' }),
        body: 'y'.repeat(300_000),
      })
      expect(big.status).toBe(503)
      expect(big.json()).toMatchObject([{ code: 'SLUICE_MEMORY_BUDGET' }])
      await until(
        async () => (await used(proxy.adminUrl)).body === Buffer.byteLength(BODY),
        'the refused body given back',
      )

      sim.open('first')
      expect((await first).status).toBe(200)
      // the upstream fails
      const failed = await send(proxy.url, '/v2/accounts/search', search({ 'x-sim-destroy': '1' }))
      expect(failed.status).toBe(502)
      await until(async () => (await used(proxy.adminUrl)).request === 0, 'every request given back')
      expect(await used(proxy.adminUrl)).toEqual({ request: 0, body: 0, answer: 0, cache: 0 })
    } finally {
      await proxy.close()
    }
  })
})
