import { describe, expect, it, onTestFinished } from 'vitest'
import { startProxy } from '../support/proxy.js'
import { send } from '../support/http.js'
import { basicAuth, withSim } from '../support/sim.js'

const ENDPOINT = 'GET /accounts/{id}/contacts'
const RATE = { requests: 4, windowMs: 1000 }

describe('an upstream whose whole API has one rate (catalog `per: upstream` with `rate`)', () => {
  it('every path of it waits for a start of the one key: 12 at once all 200, never more than 4 a second at the API', async () => {
    const sim = await withSim({ rates: { [ENDPOINT]: RATE }, latencyMs: 5 })
    const proxy = await startProxy({
      upstream: sim.apiUrl,
      upstreams: [
        {
          name: 'paced',
          prefix: '/paced/v2',
          url: sim.apiUrl,
          catalog: { default: 5, per: 'upstream', rate: RATE },
          instance: { from: 'upstream' },
        },
      ],
      // the margin covers a loaded machine's spread between the start and the API's arrival
      limits: { rateMarginMs: 250 },
    })
    onTestFinished(() => proxy.close())
    const answers = await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        send(proxy.url, `/paced/v2/accounts/${i}/contacts`, { headers: { authorization: basicAuth('org1') } }),
      ),
    )
    expect(answers.map((a) => a.status)).toEqual(Array(12).fill(200))
    expect(sim.rateStats()[`org1 ${ENDPOINT}`]).toEqual({ overRate: 0, maxInWindow: 4, admitted: 12 })
  }, 60_000)
})
