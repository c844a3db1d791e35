import { describe, expect, it } from 'vitest'
import { basicAuth } from '../support/sim.js'
import { statusOf, useSimAndProxy } from '../support/proxy.js'
import { send, until } from '../support/http.js'

describe('instances and endpoints do not block each other', () => {
  const stack = useSimAndProxy({}, { requestLog: false })

  it('while org1 queues on POST /accounts/search, org2 and org1 on another endpoint go straight through', async () => {
    const slow = { method: 'POST', headers: { authorization: basicAuth('org1'), 'x-sim-delay-ms': '1500' }, body: '{}' }
    const held = send(stack.proxy.url, '/v2/accounts/search', slow)
    const queued = send(stack.proxy.url, '/v2/accounts/search', slow)
    await until(
      async () => (await statusOf(stack.proxy, 'org1', 'POST /accounts/search'))?.queued === 1,
      'org1 to queue',
    )

    const otherInstance = await send(stack.proxy.url, '/v2/accounts/search', {
      method: 'POST',
      headers: { authorization: basicAuth('org2') },
      body: '{}',
    })
    const otherEndpoint = await send(stack.proxy.url, '/v2/orders/search', {
      method: 'POST',
      headers: { authorization: basicAuth('org1') },
      body: '{}',
    })
    expect(otherInstance.status).toBe(200)
    expect(otherEndpoint.status).toBe(200)
    // Both answered while org1's search was still held and its second request still waiting.
    expect(await statusOf(stack.proxy, 'org1', 'POST /accounts/search')).toMatchObject({
      inFlight: 1,
      queued: 1,
      limit: 1,
    })

    expect((await held).status).toBe(200)
    expect((await queued).status).toBe(200)
  })
})
