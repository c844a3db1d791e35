import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { send } from '../support/http.js'
import { startProxy, type RunningProxy } from '../support/proxy.js'
import { basicAuth, type Sim, startSim } from '../support/sim.js'
import { parsePromText, select, valueOf } from './prom-text.js'
import { tokenHash } from '../support/apps.js'

// With app identity on, the organisations that get series of their own (metrics.maxInstances) are
// those requests authenticated for: requests without a known token count as org="_unauthenticated"
// and take no slot, however many names they make up (docs/observability.md, "The org label and what it costs").

const TOKEN = 'app-token-web-7f2a91c4d0'

let sim: Sim
let proxy: RunningProxy
beforeAll(async () => {
  sim = await startSim({ latencyMs: 0 })
  proxy = await startProxy({
    upstream: sim.apiUrl,
    metrics: { maxInstances: 100, defaultMetrics: false },
    apps: { enabled: true, list: { web: { tokens: [tokenHash(TOKEN)], orgs: ['1001'] } } },
  })
})
afterAll(async () => {
  await proxy?.close()
  await sim?.close()
})

describe('org metric slots with app identity on', () => {
  it('120 made-up organisations with a bad token take none; the authorised one gets its own series', async () => {
    for (let i = 0; i < 120; i++) {
      const refused = await send(proxy.url, '/v2/accounts/42', {
        headers: { authorization: basicAuth(`made-up-${i}`, 'not-a-token') },
      })
      expect(refused.status).toBe(401)
    }
    expect(
      (await send(proxy.url, '/v2/accounts/42', { headers: { authorization: basicAuth('1001', TOKEN) } })).status,
    ).toBe(200)

    const s = parsePromText(await (await fetch(proxy.adminUrl + '/metrics')).text())
    const requests = select(s, 'sluice_requests_total')
    expect(valueOf(s, 'sluice_requests_total', { org: '1001', code: '200', outcome: 'forwarded' })).toBe(1)
    expect(
      valueOf(s, 'sluice_requests_total', { org: '_unauthenticated', code: '401', outcome: 'unauthenticated' }),
    ).toBe(120)
    expect(requests.filter((r) => r.labels.org === '_other')).toEqual([])
    expect(requests.filter((r) => r.labels.org?.startsWith('made-up'))).toEqual([])
    // an unauthenticated request never queues: no shed series at 0 for it
    expect(requests.filter((r) => r.labels.org === '_unauthenticated').map((r) => r.labels.code)).toEqual(['401'])
    expect(valueOf(s, 'sluice_metrics_orgs')).toBe(1)
  })
})
