import { connect } from 'node:net'
import { describe, expect, it } from 'vitest'
import { basicAuth } from '../support/sim.js'
import { useSimAndProxy } from '../support/proxy.js'
import { send } from '../support/http.js'

describe('bad input is answered 400 (or 404/410) with a code, and never reaches the API', () => {
  const stack = useSimAndProxy()

  const cases: [string, string, number, string][] = [
    ['a .. segment', '/v2/accounts/../webhooks', 400, 'SLUICE_BAD_PATH_TRAVERSAL'],
    ['an encoded .. segment', '/v2/accounts/%2e%2E/webhooks', 400, 'SLUICE_BAD_PATH_TRAVERSAL'],
    ['an encoded slash', '/v2/accounts/1%2Fcontacts', 400, 'SLUICE_BAD_PATH_SEPARATOR'],
    ['an encoded backslash', '/v2/accounts/1%5Ccontacts', 400, 'SLUICE_BAD_PATH_SEPARATOR'],
    ['an encoded NUL', '/v2/accounts/1%00/contacts', 400, 'SLUICE_BAD_PATH_CONTROL_CHAR'],
    ['an encoded control character', '/v2/accounts/1%1b/contacts', 400, 'SLUICE_BAD_PATH_CONTROL_CHAR'],
    ['a malformed escape', '/v2/accounts/1%zz/contacts', 400, 'SLUICE_BAD_PATH_ENCODING'],
    ['API v1', '/v1/accounts', 410, 'SLUICE_API_V1_RETIRED'],
    ['a path outside the API root', '/v3/accounts', 404, 'SLUICE_NOT_FOUND'],
  ]
  for (const [what, path, status, code] of cases) {
    it(`${what}: ${status} ${code}`, async () => {
      const before = stack.sim.stats().keys
      const answer = await send(stack.proxy.url, path, { headers: { authorization: basicAuth('org1') } })
      expect(answer.status).toBe(status)
      const body = answer.json<[{ code: string; message: string }]>()
      expect(body).toHaveLength(1)
      expect(body[0]).toEqual({ code, message: expect.any(String) as string })
      expect(body[0].message.length).toBeGreaterThan(10)
      expect(stack.sim.stats().keys).toEqual(before)
    })
  }

  it('a Basic Authorization header that is not base64("org:key"): 400 SLUICE_BAD_AUTHORIZATION', async () => {
    const answer = await send(stack.proxy.url, '/v2/campaigns', {
      headers: { authorization: `Basic ${Buffer.from('no-colon').toString('base64')}` },
    })
    expect(answer.status).toBe(400)
    expect(answer.json()).toEqual([
      { code: 'SLUICE_BAD_AUTHORIZATION', message: 'The Authorization header is Basic but not base64("orgId:apiKey")' },
    ])
  })

  it('a max-wait header that is not a number of seconds: 400 SLUICE_BAD_MAX_WAIT', async () => {
    const answer = await send(stack.proxy.url, '/v2/campaigns', { headers: { 'x-sluice-max-wait': 'soon' } })
    expect(answer.status).toBe(400)
    expect(answer.json<[{ code: string }]>()[0].code).toBe('SLUICE_BAD_MAX_WAIT')
  })

  it('a raw control character in the request line: 400 in the error shape, the proxy keeps serving', async () => {
    const raw = await new Promise<string>((resolve, reject) => {
      const url = new URL(stack.proxy.url)
      const socket = connect(Number(url.port), url.hostname, () =>
        socket.write('GET /v2/accounts/1\x01/contacts HTTP/1.1\r\nHost: x\r\n\r\n'),
      )
      let data = ''
      socket.on('data', (d) => (data += d.toString()))
      socket.on('end', () => resolve(data))
      socket.on('error', reject)
    })
    expect(raw).toMatch(/^HTTP\/1.1 400 /)
    expect(JSON.parse(raw.slice(raw.indexOf('\r\n\r\n') + 4))).toEqual([
      {
        code: 'SLUICE_BAD_PATH_CONTROL_CHAR',
        message: 'The request target holds the control character 0x01 at offset 14',
      },
    ])
    expect((await send(stack.proxy.url, '/v2/campaigns')).status).toBe(200)
  })
})
