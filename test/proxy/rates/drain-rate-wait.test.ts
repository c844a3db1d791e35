import { describe, expect, it, onTestFinished } from 'vitest'
import { startProxy } from '../../support/proxy.js'
import { send, until } from '../../support/http.js'
import { basicAuth, withSim } from '../../support/sim.js'

const ENDPOINT = 'GET /accounts/{id}/contacts'
const RATE = { requests: 1, windowMs: 20_000 }

describe('shutting down while a request waits for its start under a rate', () => {
  it('it is answered 503 SLUICE_UNAVAILABLE at once, like the queued, and never sent', async () => {
    const sim = await withSim({ rates: { [ENDPOINT]: RATE } })
    const proxy = await startProxy({
      upstream: sim.apiUrl,
      limits: { rates: { [ENDPOINT]: RATE } },
      shutdown: { graceMs: 30_000 },
    })
    onTestFinished(() => proxy.close())
    const headers = { authorization: basicAuth('org1') }
    expect((await send(proxy.url, '/v2/accounts/1/contacts', { headers })).status).toBe(200)
    const waiting = send(proxy.url, '/v2/accounts/2/contacts', { headers })
    await until(async () => {
      const status = (await (await fetch(`${proxy.adminUrl}/status`)).json()) as {
        keys: { endpoint: string; inFlight: number }[]
      }
      return status.keys.some((k) => k.endpoint === ENDPOINT && k.inFlight === 1)
    }, 'the second request holding its permit, waiting for its start')
    await proxy.close()
    const answer = await waiting
    expect(answer.status).toBe(503)
    expect(answer.json()).toEqual([{ code: 'SLUICE_UNAVAILABLE', message: 'sluice is shutting down' }])
    expect(sim.rateStats()[`org1 ${ENDPOINT}`]).toEqual({ overRate: 0, maxInWindow: 1, admitted: 1 })
  })
})
