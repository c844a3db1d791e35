import { describe, expect, it } from 'vitest'
import { basicAuth, keyStats } from '../support/sim.js'
import { useSimAndProxy } from '../support/proxy.js'
import { send } from '../support/http.js'

interface Echo {
  method: string
  path: string
  query: string
  headers: Record<string, string>
  body: string
  endpoint: string
}

describe('what passes through: statuses, bodies, headers, canonical paths', () => {
  const stack = useSimAndProxy()

  it('every upstream status passes unchanged, 222 Merged Account included', async () => {
    for (const status of [200, 201, 204, 222, 400, 401, 404, 409, 500, 503]) {
      const answer = await send(stack.proxy.url, '/v2/accounts/12', {
        method: 'PUT',
        headers: { 'x-sim-status': String(status) },
        body: '{}',
      })
      expect(answer.status).toBe(status)
    }
  })

  it('path variants are one endpoint, forwarded as the canonical path with the query kept', async () => {
    stack.sim.reset()
    const variants = [
      '/v2/accounts/search',
      '/v2/accounts/search/',
      '/v2//accounts//search',
      '/v2/ACCOUNTS/Search',
      '/v2/%61ccounts/searc%68',
      '//v2/accounts/search',
    ]
    for (const path of variants) {
      const answer = await send(stack.proxy.url, `${path}?page=2`, {
        method: 'POST',
        headers: { authorization: basicAuth('org1') },
        body: '{}',
      })
      expect(answer.status).toBe(200)
      expect(answer.json<Echo>()).toMatchObject({
        path: '/accounts/search',
        query: 'page=2',
        endpoint: 'POST /accounts/search',
      })
    }
    expect(keyStats(stack.sim, 'org1', 'POST /accounts/search')).toMatchObject({
      requests: variants.length,
      maxInProgress: 1,
    })
  })

  it('hop-by-hop and sluice control headers are dropped; the rest, Authorization included, is forwarded', async () => {
    const answer = await send(stack.proxy.url, '/v2/campaigns', {
      headers: {
        authorization: basicAuth('org1', 'k3y'),
        connection: 'keep-alive, x-drop-me',
        'x-drop-me': '1',
        'keep-alive': 'timeout=5',
        'proxy-authorization': 'Basic abc',
        te: 'trailers',
        'x-sluice-max-wait': '30',
        'x-sluice-app': 'billing',
        'x-custom': 'kept',
        'neon-api-version': '2.12',
      },
    })
    const seen = answer.json<Echo>().headers
    expect(seen.authorization).toBe(basicAuth('org1', 'k3y'))
    expect(seen['x-custom']).toBe('kept')
    expect(seen['neon-api-version']).toBe('2.12')
    for (const gone of ['x-drop-me', 'keep-alive', 'proxy-authorization', 'te', 'x-sluice-max-wait', 'x-sluice-app'])
      expect(seen).not.toHaveProperty(gone)
  })

  it('x-request-id: kept when the app sends one, generated otherwise; upstream, answer and log agree', async () => {
    const given = await send(stack.proxy.url, '/v2/campaigns', { headers: { 'x-request-id': 'app-req-42' } })
    expect(given.headers['x-request-id']).toBe('app-req-42')
    expect(given.json<Echo>().headers['x-request-id']).toBe('app-req-42')
    expect(stack.proxy.logs.find((l) => l.msg === 'request' && l.reqId === 'app-req-42')).toMatchObject({
      endpoint: 'GET /campaigns',
      status: 200,
      outcome: 'forwarded',
    })

    const generated = await send(stack.proxy.url, '/v2/campaigns')
    const id = generated.headers['x-request-id'] as string
    expect(id).toMatch(/^[0-9a-f-]{36}$/)
    expect(generated.json<Echo>().headers['x-request-id']).toBe(id)
  })

  it('the access log never carries the API key', () => {
    const text = JSON.stringify(stack.proxy.logs)
    expect(text).not.toContain('k3y')
    expect(text).not.toContain(basicAuth('org1', 'k3y'))
  })
})
