import { describe, expect, it, onTestFinished } from 'vitest'
import { basicAuth } from '../support/sim.js'
import { startProxy, statusOf, useSimAndProxy } from '../support/proxy.js'
import { send, until } from '../support/http.js'

const SEARCH = 'POST /accounts/search'

describe('the instance a request counts against', () => {
  const stack = useSimAndProxy()

  it('is the Basic-auth username; the API key is in no key, status or log line', async () => {
    const held = send(stack.proxy.url, '/v2/accounts/search', {
      method: 'POST',
      headers: { authorization: basicAuth('org-7', 'very-secret-key'), 'x-sim-delay-ms': '1500' },
      body: '{}',
    })
    await until(async () => (await statusOf(stack.proxy, 'org-7', SEARCH))?.inFlight === 1, 'org-7 in flight')
    const status = JSON.stringify(await (await fetch(`${stack.proxy.adminUrl}/status`)).json())
    expect(status).not.toContain('very-secret-key')
    expect((await held).status).toBe(200)
    const metrics = await (await fetch(`${stack.proxy.adminUrl}/metrics`)).text()
    expect(metrics).not.toContain('very-secret-key')
    expect(JSON.stringify(stack.proxy.logs)).not.toContain('very-secret-key')
    expect(stack.proxy.logs.find((l) => l.msg === 'request' && l.instance === 'org-7')).toBeDefined()
  })

  it('without Basic auth, the instance header names it; without either, it is "default"', async () => {
    // GET /campaigns is limited to 1 here (5 at the stack.sim, which sees both as "default": the header is sluice's own).
    const limited = await startProxy({ upstream: stack.sim.apiUrl, limits: { overrides: { 'GET /campaigns': 1 } } })
    onTestFinished(() => limited.close())
    const viaHeader = send(limited.url, '/v2/campaigns', {
      headers: { 'x-sluice-instance': 'org-h', 'x-sim-delay-ms': '1500' },
    })
    const anonymous = send(limited.url, '/v2/campaigns', { headers: { 'x-sim-delay-ms': '1500' } })
    // Both in flight at once: each counts against its own instance, neither waits for the other.
    await until(
      async () =>
        (await statusOf(limited, 'org-h', 'GET /campaigns'))?.inFlight === 1 &&
        (await statusOf(limited, 'default', 'GET /campaigns'))?.inFlight === 1,
      'both in flight',
    )
    const seen = (await viaHeader).json<{ headers: Record<string, string> }>().headers
    expect(seen).not.toHaveProperty('x-sluice-instance')
    expect((await anonymous).status).toBe(200)
    const logged = limited.logs.filter((l) => l.msg === 'request').map((l) => l.instance)
    expect(logged).toEqual(expect.arrayContaining(['org-h', 'default']))
  })

  it('an instance header with a control character or over 128 characters is 400 SLUICE_BAD_INSTANCE', async () => {
    const long = await send(stack.proxy.url, '/v2/campaigns', { headers: { 'x-sluice-instance': 'x'.repeat(129) } })
    expect(long.status).toBe(400)
    expect(long.json()).toEqual([
      {
        code: 'SLUICE_BAD_INSTANCE',
        message: 'The instance (organisation id) from the x-sluice-instance header must be 1-128 printable characters',
      },
    ])
  })
})
