import { describe, expect, it, onTestFinished } from 'vitest'
import { startProxy } from '../../support/proxy.js'
import { send } from '../../support/http.js'
import { basicAuth, withSim } from '../../support/sim.js'
import { parsePromText, valueOf } from '../../metrics/prom-text.js'

const ENDPOINT = 'GET /accounts/{id}/contacts'
const RATE = { requests: 4, windowMs: 1000 }

describe('a rate-limited endpoint: requests wait for their start, the API never sees more than N per window', () => {
  it('in process: 16 at once all answered 200, no window of the API over the rate', async () => {
    const sim = await withSim({ rates: { [ENDPOINT]: RATE }, latencyMs: 5 })
    // the margin covers a loaded machine's spread between the start and the API's arrival
    const proxy = await startProxy({ upstream: sim.apiUrl, limits: { rates: { [ENDPOINT]: RATE }, rateMarginMs: 250 } })
    onTestFinished(() => proxy.close())
    const answers = await Promise.all(
      Array.from({ length: 16 }, (_, i) =>
        send(proxy.url, `/v2/accounts/${i}/contacts`, { headers: { authorization: basicAuth('org1') } }),
      ),
    )
    expect(answers.map((a) => a.status)).toEqual(Array(16).fill(200))
    expect(sim.rateStats()[`org1 ${ENDPOINT}`]).toEqual({ overRate: 0, maxInWindow: 4, admitted: 16 })
    // every start under the rate is one observation of its wait, by endpoint
    const metrics = parsePromText(await (await fetch(`${proxy.adminUrl}/metrics`)).text())
    expect(valueOf(metrics, 'sluice_rate_wait_seconds_count', { endpoint: ENDPOINT })).toBe(16)
    expect(valueOf(metrics, 'sluice_rate_wait_seconds_sum', { endpoint: ENDPOINT })).toBeGreaterThan(1)
    // another organisation has its own rate
    const other = await send(proxy.url, '/v2/accounts/1/contacts', { headers: { authorization: basicAuth('org2') } })
    expect(other.status).toBe(200)
  })

  it("a start past the request's deadline is refused at once, 503 SLUICE_WAIT_TOO_LONG, and reserves nothing", async () => {
    const sim = await withSim({ rates: { [ENDPOINT]: { requests: 1, windowMs: 60_000 } } })
    const proxy = await startProxy({
      upstream: sim.apiUrl,
      limits: { rates: { [ENDPOINT]: { requests: 1, windowMs: 60_000 } } },
    })
    onTestFinished(() => proxy.close())
    const headers = { authorization: basicAuth('org1'), 'x-sluice-max-wait': '2' }
    expect((await send(proxy.url, '/v2/accounts/1/contacts', { headers })).status).toBe(200)
    const refused = await send(proxy.url, '/v2/accounts/2/contacts', { headers })
    expect(refused.status).toBe(503)
    expect(refused.json()).toEqual([
      {
        code: 'SLUICE_WAIT_TOO_LONG',
        message: expect.stringMatching(
          /^The queue for GET \/accounts\/\{id\}\/contacts \(instance org1\) is predicted to take \d+ ms, longer than this request may wait \(\d+ ms\); try again after Retry-After$/,
        ) as string,
      },
    ])
    expect(Number(refused.headers['retry-after'])).toBeGreaterThan(50)
    expect(sim.rateStats()[`org1 ${ENDPOINT}`]).toEqual({ overRate: 0, maxInWindow: 1, admitted: 1 })
  })
})
