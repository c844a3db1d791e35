import { describe, expect, it } from 'vitest'
import { startProxy, statusOf } from '../support/proxy.js'
import { basicAuth, keyStats, withSim } from '../support/sim.js'
import { send, until } from '../support/http.js'
import { REQUEST_BYTES } from '../../src/proxy/memory-hold.js'

const SEARCH = 'POST /accounts/search' // limit 1
const BODY = '{"q":"' + 'x'.repeat(65_536 - 8) + '"}' // 64 KiB, kept whole for a retry
const EACH = REQUEST_BYTES + Buffer.byteLength(BODY)
const search = (extra: Record<string, string> = {}) => ({
  method: 'POST',
  headers: { authorization: basicAuth('org1'), 'content-type': 'application/json', ...extra },
  body: BODY,
})

const metric = async (adminUrl: string, line: string): Promise<number | undefined> => {
  const text = await (await fetch(`${adminUrl}/metrics`)).text()
  const found = text.split('\n').find((l) => l.startsWith(line + ' '))
  return found === undefined ? undefined : Number(found.slice(line.length + 1))
}

describe('the memory budget: past it new requests get 503 + Retry-After, and it recovers once the load goes', () => {
  it('holds three requests with their bodies, refuses the fourth, serves again after', async () => {
    const sim = await withSim()
    // room for three requests with their bodies, not four
    const budgetBytes = 3 * EACH + EACH / 2
    const proxy = await startProxy({ upstream: sim.apiUrl, memory: { budgetBytes, maxShare: 1 } }) // the whole budget, one organisation (shares: memory-shares.test.ts)
    try {
      const first = send(proxy.url, '/v2/accounts/search', search({ 'x-sim-hold': 'first' }))
      await until(() => keyStats(sim, 'org1', SEARCH)?.inProgress === 1, 'one request upstream')
      const queued = [
        send(proxy.url, '/v2/accounts/search', search()),
        send(proxy.url, '/v2/accounts/search', search()),
      ]
      await until(async () => (await statusOf(proxy, 'org1', SEARCH))?.queued === 2, 'two queued')
      expect(await metric(proxy.adminUrl, 'sluice_memory_budget_bytes')).toBe(budgetBytes)
      expect(await metric(proxy.adminUrl, 'sluice_memory_budget_used_bytes{kind="body"}')).toBe(
        3 * (EACH - REQUEST_BYTES),
      )
      expect(await metric(proxy.adminUrl, 'sluice_memory_budget_used_bytes{kind="request"}')).toBe(3 * REQUEST_BYTES)

      const refused = await send(proxy.url, '/v2/accounts/search', search())
      expect(refused.status).toBe(503)
      expect(Number(refused.headers['retry-after'])).toBeGreaterThanOrEqual(1)
      expect(refused.json()).toEqual([
        {
          code: 'SLUICE_MEMORY_BUDGET',
          message: `sluice holds its whole memory budget (${budgetBytes} bytes) in requests and answers now; try again after Retry-After`,
        },
      ])
      // its own outcome, apart from `unavailable` (the limiter refusing): the alerts tell shed load from a fault
      expect(proxy.logs.filter((l) => l.msg === 'request' && l.status === 503).map((l) => l.outcome)).toEqual([
        'memory_budget',
      ])
      expect(await metric(proxy.adminUrl, 'sluice_memory_budget_refusals_total{kind="request"}')).toBe(0)
      expect(await metric(proxy.adminUrl, 'sluice_memory_budget_refusals_total{kind="body"}')).toBe(1)

      sim.open('first')
      expect((await Promise.all([first, ...queued])).map((a) => a.status)).toEqual([200, 200, 200])
      await until(
        async () => (await metric(proxy.adminUrl, 'sluice_memory_budget_used_bytes{kind="request"}')) === 0,
        'every request let go',
      )
      expect(await metric(proxy.adminUrl, 'sluice_memory_budget_used_bytes{kind="body"}')).toBe(0)
      expect((await send(proxy.url, '/v2/accounts/search', search())).status).toBe(200)
      expect(keyStats(sim, 'org1', SEARCH)).toMatchObject({ requests: 4, inProgress: 0 })
    } finally {
      await proxy.close()
    }
  })
})
