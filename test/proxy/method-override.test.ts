import { describe, expect, it, onTestFinished } from 'vitest'
import { send } from '../support/http.js'
import { startProxy } from '../support/proxy.js'
import { basicAuth } from '../support/sim.js'
import { echoUpstream } from '../reuse/echo-upstream.js'

// sluice limits and queues each request by its method: a header asking the API to run another
// method would run another endpoint under the wrong limit (and could share a read's answer), so
// it is refused on every request (README "The proxy's own answers").

const message = (header: string): string =>
  `The ${header} header is refused: sluice limits each request by its method; send the request with the method it means`

describe('method-override headers are refused', () => {
  it('X-HTTP-Method-Override, X-HTTP-Method and X-Method-Override: 400 SLUICE_METHOD_OVERRIDE on a GET, a POST and a DELETE; nothing reaches the API', async () => {
    const upstream = await echoUpstream()
    const proxy = await startProxy({ upstream: upstream.apiUrl })
    onTestFinished(() => proxy.close())
    const auth = basicAuth('org1', 'app-key')
    const cases = [
      { method: 'GET', path: '/v2/accounts/1001', header: 'x-http-method-override', value: 'DELETE' },
      { method: 'GET', path: '/v2/properties/countries', header: 'x-http-method', value: 'PUT' },
      { method: 'POST', path: '/v2/accounts/search', header: 'x-method-override', value: 'GET' },
      { method: 'DELETE', path: '/v2/accounts/1001', header: 'X-HTTP-Method-Override', value: 'GET' },
    ]
    for (const c of cases) {
      const answer = await send(proxy.url, c.path, {
        method: c.method,
        headers: { authorization: auth, [c.header]: c.value },
      })
      expect(answer.status).toBe(400)
      expect(answer.json()).toEqual([{ code: 'SLUICE_METHOD_OVERRIDE', message: message(c.header.toLowerCase()) }])
    }
    expect(upstream.seen).toEqual([])
    // the same requests without the header pass
    const plain = await send(proxy.url, '/v2/accounts/1001', { headers: { authorization: auth } })
    expect(plain.status).toBe(200)
    expect(upstream.seen).toHaveLength(1)
    const refused = proxy.logs.filter((l) => l.msg === 'request' && l.status === 400)
    expect(refused.map((l) => l.outcome)).toEqual(Array(4).fill('bad_request'))
  })
})
