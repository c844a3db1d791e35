import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { basicAuth, startSim, type Sim } from '../support/sim.js'
import { startProxy, statusOf, type RunningProxy } from '../support/proxy.js'
import { send, until } from '../support/http.js'

describe('instances and endpoints do not block each other', () => {
  let sim: Sim
  let proxy: RunningProxy
  beforeAll(async () => {
    sim = await startSim()
    proxy = await startProxy({ upstream: sim.apiUrl, requestLog: false })
  })
  afterAll(async () => {
    await proxy.close()
    await sim.close()
  })

  it('while org1 queues on POST /accounts/search, org2 and org1 on another endpoint go straight through', async () => {
    const slow = { method: 'POST', headers: { authorization: basicAuth('org1'), 'x-sim-delay-ms': '1500' }, body: '{}' }
    const held = send(proxy.url, '/v2/accounts/search', slow)
    const queued = send(proxy.url, '/v2/accounts/search', slow)
    await until(async () => (await statusOf(proxy, 'org1', 'POST /accounts/search'))?.queued === 1, 'org1 to queue')

    const otherInstance = await send(proxy.url, '/v2/accounts/search', { method: 'POST', headers: { authorization: basicAuth('org2') }, body: '{}' })
    const otherEndpoint = await send(proxy.url, '/v2/orders/search', { method: 'POST', headers: { authorization: basicAuth('org1') }, body: '{}' })
    expect(otherInstance.status).toBe(200)
    expect(otherEndpoint.status).toBe(200)
    // Both answered while org1's search was still held and its second request still waiting.
    expect(await statusOf(proxy, 'org1', 'POST /accounts/search')).toMatchObject({ inFlight: 1, queued: 1, limit: 1 })

    expect((await held).status).toBe(200)
    expect((await queued).status).toBe(200)
  })
})
