import { afterEach, describe, expect, it } from 'vitest'
import { send } from '../support/http.js'
import { startProxy, type RunningProxy } from '../support/proxy.js'
import { basicAuth, withSim, type Sim } from '../support/sim.js'

interface Echo {
  headers: Record<string, string>
}

let proxy: RunningProxy | undefined
afterEach(async () => {
  await proxy?.close()
  proxy = undefined
})

async function setUp(
  day: string,
  versions: Record<string, unknown>,
  simRetired?: (version: string, now: Date) => boolean,
): Promise<{ sim: Sim; proxy: RunningProxy }> {
  const now = () => new Date(`${day}T10:00:00Z`)
  const sim = await withSim({ now, ...(simRetired ? { isRetired: simRetired } : {}) })
  proxy = await startProxy({ upstream: sim.apiUrl, versions }, { now })
  return { sim, proxy }
}

const contacts = (p: RunningProxy, version?: string) =>
  send(p.url, '/v2/accounts/17/contacts', {
    headers: { authorization: basicAuth('org1'), ...(version ? { 'neon-api-version': version } : {}) },
  })

describe('through the real proxy: the version the API gets', () => {
  it('rewrite: a retired version goes upstream as the next one, and the answer says so', async () => {
    const { proxy } = await setUp('2026-09-12', { retired: 'rewrite' })
    const res = await contacts(proxy, '2.9')
    expect(res.status).toBe(200)
    expect(res.json<Echo>().headers['neon-api-version']).toBe('2.10')
    expect(res.headers['x-sluice-api-version']).toBe('2.10')
    expect(res.headers['x-sluice-version-notice']).toBe(
      'API version 2.9 was retired on 2026-09-12; this request was sent as 2.10',
    )
  })

  it('pass and pin: without the header, none goes upstream, or the pinned one', async () => {
    const passing = await setUp('2026-09-12', {})
    const passed = await contacts(passing.proxy)
    expect(passed.json<Echo>().headers).not.toHaveProperty('neon-api-version')
    await passing.proxy.close()

    const pinning = await setUp('2026-09-12', { missing: 'pin', pin: '2.11' })
    const pinned = await contacts(pinning.proxy)
    expect(pinned.json<Echo>().headers['neon-api-version']).toBe('2.11')
    expect(pinned.headers['x-sluice-api-version']).toBe('2.11')
  })

  it('a version retiring soon reaches the API as is, and the app gets Deprecation and Sunset', async () => {
    const { proxy } = await setUp('2026-09-11', {})
    const res = await contacts(proxy, '2.9')
    expect(res.json<Echo>().headers['neon-api-version']).toBe('2.9')
    expect(res.headers.deprecation).toBe(`@${Date.UTC(2024, 11, 14) / 1000}`)
    expect(res.headers.sunset).toBe('Sat, 12 Sep 2026 00:00:00 GMT')
  })

  it("the 410 poisoning: an API 410 for one organisation's resource does not answer another organisation 410", async () => {
    const { sim, proxy } = await setUp('2026-10-01', { retired: 'rewrite' })
    // `curl -X PUT …/v2/accounts/9 -u anyorg:x -H 'NEON-API-VERSION: 2.12' -H 'x-sim-status: 410'`, for 2.12, 2.11 and 2.10
    for (const version of ['2.12', '2.11', '2.10']) {
      const gone = await send(proxy.url, '/v2/accounts/9', {
        method: 'PUT',
        headers: { authorization: basicAuth('anyorg'), 'neon-api-version': version, 'x-sim-status': '410' },
      })
      expect(gone.status).toBe(410)
    }
    // `curl …/v2/accounts/1/contacts -u otherorg:y -H 'NEON-API-VERSION: 2.12'` (and the others)
    for (const version of ['2.12', '2.11', '2.10']) {
      const res = await send(proxy.url, '/v2/accounts/1/contacts', {
        headers: { authorization: basicAuth('otherorg'), 'neon-api-version': version },
      })
      expect(res.status).toBe(200)
      expect(res.json<Echo>().headers['neon-api-version']).toBe(version)
    }
    expect(sim.stats().keys['otherorg GET /accounts/{id}/contacts']).toMatchObject({ requests: 3 })
  })

  it('API 410s for a version from two organisations on two endpoints are learned: the next request is rewritten', async () => {
    // This API retired 2.10 early; the calendar does not know yet.
    const { sim, proxy } = await setUp('2026-10-01', { retired: 'rewrite' }, (v) => ['2.9', '2.10'].includes(v))
    const get = (org: string, path: string) =>
      send(proxy.url, path, { headers: { authorization: basicAuth(org), 'neon-api-version': '2.10' } })
    expect((await get('org1', '/v2/accounts/17/contacts')).status).toBe(410) // the API's own 410, passed through
    expect((await get('org2', '/v2/accounts/17/contacts')).status).toBe(410)
    expect((await get('org2', '/v2/accounts/17')).status).toBe(410)
    const next = await contacts(proxy, '2.10')
    expect(next.status).toBe(200)
    expect(next.json<Echo>().headers['neon-api-version']).toBe('2.11')
    expect(sim.stats().keys['org1 GET /accounts/{id}/contacts']).toMatchObject({ requests: 2, rejected410: 1 })
    expect(
      proxy.logs.some(
        (l) => l.level === 50 && String(l.msg).startsWith('the upstream answered 410 for API version 2.10'),
      ),
    ).toBe(true)
  })
})
