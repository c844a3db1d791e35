import { describe, expect, it, onTestFinished } from 'vitest'
import { adminJson, startProxy } from '../../support/proxy.js'
import { send } from '../../support/http.js'
import { basicAuth, withSim } from '../../support/sim.js'
import type { RateStatus } from '../../../src/limiter/types.js'

const ENDPOINT = 'GET /accounts/{id}/memberships'

describe('a rate nobody publishes, learned from 429 + Retry-After alone', () => {
  it('10/s, 55 at once, then 55 more: every client 200, the API throttles only the first window, /status and the log name it', async () => {
    const sim = await withSim({ rates: { [ENDPOINT]: { requests: 10, windowMs: 1000, fields: 'none' } }, latencyMs: 5 })
    const proxy = await startProxy({ upstream: sim.apiUrl, requestLog: false })
    onTestFinished(() => proxy.close())
    const burst = (from: number) =>
      Promise.all(
        Array.from({ length: 55 }, (_, i) =>
          send(proxy.url, `/v2/accounts/${from + i}/memberships`, { headers: { authorization: basicAuth('org1') } }),
        ),
      )
    expect((await burst(0)).map((a) => a.status)).toEqual(Array(55).fill(200))
    const first = sim.rateStats()[`org1 ${ENDPOINT}`]!.overRate
    // before anything is known the first window is over: then about one 429 a window at most
    expect(first).toBeLessThan(25)
    expect((await burst(100)).map((a) => a.status)).toEqual(Array(55).fill(200))
    const second = sim.rateStats()[`org1 ${ENDPOINT}`]!.overRate - first
    expect(second).toBeLessThanOrEqual(6)
    const status = await adminJson<{ rates?: RateStatus[] }>(proxy, '/status')
    const entry = status.rates?.find((r) => r.instance === 'org1' && r.endpoint === ENDPOINT)
    expect(entry?.source).toBe('learned')
    // found from the accepted starts, then probed up: at most one above the API's rate (its probe)
    expect(entry?.learned).toMatchObject({ windowMs: 1000, burst: 1 })
    expect(entry!.learned!.requests).toBeGreaterThanOrEqual(5)
    expect(entry!.learned!.requests).toBeLessThanOrEqual(11)
    expect(
      proxy.logs.some((l) => String(l.msg).startsWith(`limiter: rate of ${ENDPOINT} (instance org1) learned`)),
    ).toBe(true)
  })
})
