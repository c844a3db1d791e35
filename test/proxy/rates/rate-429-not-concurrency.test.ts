import { describe, expect, it, onTestFinished } from 'vitest'
import { startProxy } from '../../support/proxy.js'
import { send } from '../../support/http.js'
import { basicAuth, withSim } from '../../support/sim.js'

const ENDPOINT = 'GET /accounts/{id}/contacts'

describe('a 429 of a spent rate quota does not lower the learned concurrency limit', () => {
  it('a burst over an unknown rate draws 429s with RateLimit r=0: every client gets 200, the published limit stays', async () => {
    const sim = await withSim({ rates: { [ENDPOINT]: { requests: 2, windowMs: 1000, fields: 'ietf' } }, latencyMs: 20 })
    const proxy = await startProxy({ upstream: sim.apiUrl })
    onTestFinished(() => proxy.close())
    const answers = await Promise.all(
      Array.from({ length: 5 }, (_, i) =>
        send(proxy.url, `/v2/accounts/${i}/contacts`, { headers: { authorization: basicAuth('org1') } }),
      ),
    )
    expect(answers.map((a) => a.status)).toEqual(Array(5).fill(200))
    // the burst went out before the rate was known: the API refused some of it
    expect(sim.rateStats()[`org1 ${ENDPOINT}`]!.overRate).toBeGreaterThan(0)
    expect(proxy.logs.filter((l) => String(l.msg).startsWith('limiter: learned limit of'))).toEqual([])
  })
})
