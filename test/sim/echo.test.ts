import { get } from 'node:http'
import { request } from 'undici'
import { describe, expect, it } from 'vitest'
import { basicAuth, withSim } from '../support/sim.js'

/** GET with the path sent byte for byte (URL parsers would resolve `%2e%2e` before sending). */
function rawGet(base: string, path: string): Promise<{ status: number; body: unknown }> {
  const { hostname, port } = new URL(base)
  return new Promise((resolve, reject) => {
    get({ hostname, port, path }, (res) => {
      let text = ''
      res.on('data', (chunk: Buffer) => (text += chunk.toString()))
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) as unknown }))
    }).on('error', reject)
  })
}

describe('answers echo what was forwarded', () => {
  it('method, path as received, query, lower-case headers, body, instance, endpoint', async () => {
    const sim = await withSim()
    const res = await request(`${sim.apiUrl}/Accounts/123/contacts/?a=1&b=x%20y`, {
      method: 'POST',
      headers: {
        authorization: basicAuth('acme'),
        'Content-Type': 'application/json',
        'X-Custom': 'Yes',
        'NEON-API-VERSION': '2.11',
      },
      body: '{"firstName":"Ada"}',
    })
    expect(res.statusCode).toBe(200)
    expect(res.headers['content-type']).toBe('application/json; charset=utf-8')
    const echo = (await res.body.json()) as Record<string, unknown>
    expect(echo).toMatchObject({
      method: 'POST',
      path: '/Accounts/123/contacts/',
      query: 'a=1&b=x%20y',
      body: '{"firstName":"Ada"}',
      bodyBytes: 19,
      instance: 'acme',
      endpoint: 'POST /accounts/{id}/contacts',
      limit: 5,
    })
    expect(echo.headers).toMatchObject({
      'content-type': 'application/json',
      'x-custom': 'Yes',
      'neon-api-version': '2.11',
      authorization: basicAuth('acme'),
    })
  })

  it('cuts the echoed body at echoBodyBytes but counts all of it', async () => {
    const sim = await withSim({ echoBodyBytes: 10 })
    const res = await request(`${sim.apiUrl}/accounts`, { method: 'POST', body: 'x'.repeat(100_000) })
    expect(await res.body.json()).toMatchObject({ body: 'xxxxxxxxxx', bodyBytes: 100_000 })
  })

  it('refuses paths the catalog refuses (400) and paths outside /v2 (404), in the error shape', async () => {
    const sim = await withSim()
    expect(await rawGet(sim.url, '/v2/accounts/%2e%2e/search')).toEqual({
      status: 400,
      body: [{ code: '400', message: '"." and ".." segments are not allowed: "/accounts/%2e%2e/search"' }],
    })
    expect(await rawGet(sim.url, '/v2/accounts%2Fsearch')).toMatchObject({ status: 400 })
    const outside = await request(`${sim.url}/v3/accounts`)
    expect(outside.statusCode).toBe(404)
    expect(await outside.body.json()).toEqual([
      { code: '404', message: 'Not found: the API is under /v2, not /v3/accounts' },
    ])
    const prefixOnly = await request(`${sim.url}/v2x/accounts`)
    expect(prefixOnly.statusCode).toBe(404)
    await prefixOnly.body.dump()
    expect(sim.stats().badRequests).toBe(4)
  })
})
