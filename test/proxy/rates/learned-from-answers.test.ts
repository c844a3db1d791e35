import { describe, expect, it, onTestFinished } from 'vitest'
import { adminJson, startProxy } from '../../support/proxy.js'
import { send } from '../../support/http.js'
import { basicAuth, withSim } from '../../support/sim.js'
import { parsePromText, valueOf } from '../../metrics/prom-text.js'
import type { RateStatus } from '../../../src/limiter/types.js'

const ENDPOINT = 'GET /accounts/{id}/contacts'

describe('a rate nobody configured, learned from the answers (RateLimit-Policy, X-RateLimit-*)', () => {
  it('RateLimit-Policy on one answer paces the rest: none over the rate; /status shows the learned rate, per organisation', async () => {
    const sim = await withSim({ rates: { [ENDPOINT]: { requests: 3, windowMs: 1000, fields: 'ietf' } } })
    const proxy = await startProxy({ upstream: sim.apiUrl, limits: { rateMarginMs: 250 } })
    onTestFinished(() => proxy.close())
    const get = (org: string, i: number) =>
      send(proxy.url, `/v2/accounts/${i}/contacts`, { headers: { authorization: basicAuth(org) } })
    expect((await get('org1', 0)).status).toBe(200)
    const answers = await Promise.all(Array.from({ length: 9 }, (_, i) => get('org1', i + 1)))
    expect(answers.map((a) => a.status)).toEqual(Array(9).fill(200))
    expect(sim.rateStats()[`org1 ${ENDPOINT}`]).toEqual({ overRate: 0, maxInWindow: 3, admitted: 10 })
    const status = await adminJson<{ rates?: RateStatus[] }>(proxy, '/status')
    expect(status.rates).toEqual([
      {
        instance: 'org1',
        endpoint: ENDPOINT,
        source: 'published',
        learned: { requests: 3, windowMs: 1000, burst: 3, expiresInMs: expect.any(Number) as number },
        nextStartMs: expect.any(Number) as number,
      },
    ])
    const metrics = parsePromText(await (await fetch(`${proxy.adminUrl}/metrics`)).text())
    expect(valueOf(metrics, 'sluice_rate_learned_total', { endpoint: ENDPOINT, kind: 'rate' })).toBe(1)
  })

  it('X-RateLimit-Remaining: 0 with X-RateLimit-Reset holds the next start until the reset', async () => {
    const sim = await withSim({ rates: { [ENDPOINT]: { requests: 3, windowMs: 2000, fields: 'x' } } })
    const proxy = await startProxy({ upstream: sim.apiUrl })
    onTestFinished(() => proxy.close())
    for (let i = 0; i < 5; i++) {
      const answer = await send(proxy.url, `/v2/accounts/${i}/contacts`, {
        headers: { authorization: basicAuth('org1') },
      })
      expect(answer.status).toBe(200)
    }
    expect(sim.rateStats()[`org1 ${ENDPOINT}`]).toEqual({ overRate: 0, maxInWindow: 3, admitted: 5 })
  })
})
