import { describe, expect, it, onTestFinished } from 'vitest'
import { send } from '../support/http.js'
import { startProxy } from '../support/proxy.js'
import { basicAuth } from '../support/sim.js'
import { echoUpstream } from '../reuse/echo-upstream.js'

// The API's GETs take no body, and Fastify never reads one: a GET or HEAD with a body is refused
// (README "The proxy's own answers"), never forwarded with its body dropped nor shared with a
// body-less request.

const refusal = (method: string): unknown => [
  {
    code: 'SLUICE_BODY_NOT_ALLOWED',
    message: `A ${method} request must not carry a body (Content-Length above 0 or Transfer-Encoding); send it without one`,
  },
]

describe('a GET or HEAD with a body', () => {
  it('is refused with 400 SLUICE_BODY_NOT_ALLOWED (by Content-Length or chunked); nothing reaches the API; Content-Length: 0 passes', async () => {
    const upstream = await echoUpstream()
    const proxy = await startProxy({ upstream: upstream.apiUrl })
    onTestFinished(() => proxy.close())
    const auth = basicAuth('org1', 'app-key')

    const sized = await send(proxy.url, '/v2/properties/countries', {
      headers: { authorization: auth, 'content-type': 'application/json', 'content-length': '14' },
      body: '{"filter":"x"}',
    })
    expect(sized.status).toBe(400)
    expect(sized.json()).toEqual(refusal('GET'))
    expect(sized.headers.connection).toBe('close')

    const chunked = await send(proxy.url, '/v2/accounts/1001', {
      headers: { authorization: auth, 'transfer-encoding': 'chunked' },
      body: 'some bytes',
    })
    expect(chunked.status).toBe(400)
    expect(chunked.json()).toEqual(refusal('GET'))

    const head = await send(proxy.url, '/v2/accounts/1001', {
      method: 'HEAD',
      headers: { authorization: auth, 'content-length': '3' },
      body: 'abc',
    })
    expect(head.status).toBe(400)
    expect(head.text).toBe('')
    expect(upstream.seen).toEqual([])

    const empty = await send(proxy.url, '/v2/accounts/1001', {
      headers: { authorization: auth, 'content-length': '0' },
    })
    expect(empty.status).toBe(200)
    expect(upstream.seen.map((e) => [e.method, e.url, e.body])).toEqual([['GET', '/v2/accounts/1001', '']])

    const lines = proxy.logs.filter((l) => l.msg === 'request').map((l) => [l.endpoint, l.status, l.outcome])
    expect(lines).toEqual([
      ['GET /properties/countries', 400, 'bad_request'],
      ['GET /accounts/{id}', 400, 'bad_request'],
      ['GET /accounts/{id}', 400, 'bad_request'], // a HEAD is limited as its GET
      ['GET /accounts/{id}', 200, 'forwarded'],
    ])
  })
})
