import { afterEach, describe, expect, it } from 'vitest'
import { send, until } from '../support/http.js'
import { adminJson, startProxy, statusOf, type RunningProxy } from '../support/proxy.js'
import { basicAuth, keyStats, startSim, type Sim } from '../support/sim.js'

const SEARCH = 'POST /accounts/search' // limit 1
const RETIREMENT_DAY = () => new Date('2026-09-12T10:00:00Z') // 2.9 retired today

let sim: Sim | undefined
let proxy: RunningProxy | undefined
afterEach(async () => {
  await sim?.close()
  await proxy?.close()
})

describe('through the real proxy: a request refused for its version never reaches the API nor takes a permit', () => {
  it('410, 400 for a bad header and 400 at the gate, answered while the only permit is held', async () => {
    const api = (sim = await startSim({ now: RETIREMENT_DAY }))
    // A short queue wait: were a refused request queued behind the held permit, it would get a 503, not hang.
    const p = (proxy = await startProxy(
      { upstream: api.apiUrl, queue: { maxWaitMs: 3_000 }, versions: { gate: 'reject' } },
      { now: RETIREMENT_DAY },
    ))

    // Hold the only permit of (org1, POST /accounts/search) with a request the sim never answers.
    const hold = new AbortController()
    const held = send(p.url, '/v2/accounts/search', {
      method: 'POST',
      headers: {
        authorization: basicAuth('org1'),
        'neon-api-version': '2.11',
        'x-sim-hang': '1',
        'x-test-seq': 'held',
      },
      body: '{}',
      signal: hold.signal,
    }).catch(() => undefined)
    await until(() => keyStats(api, 'org1', SEARCH)?.inProgress === 1, 'the held request upstream')

    const search = (version: string, seq: string) =>
      send(p.url, '/v2/accounts/search', {
        method: 'POST',
        headers: { authorization: basicAuth('org1'), 'neon-api-version': version, 'x-test-seq': seq },
        body: '{}',
      })
    const retired = await search('2.9', 'retired')
    expect(retired.status).toBe(410)
    expect(retired.json()).toEqual([
      {
        code: 'SLUICE_VERSION_RETIRED',
        message: 'API version 2.9 was retired on 2026-09-12; move to 2.10 or later (the latest is 2.12)',
      },
    ])
    const malformed = await search('2.12.1', 'malformed')
    expect(malformed.status).toBe(400)
    expect(malformed.json()).toEqual([
      {
        code: 'SLUICE_BAD_VERSION_HEADER',
        message: 'The NEON-API-VERSION header must hold one API version <major>.<minor> such as 2.12; got "2.12.1"',
      },
    ])
    // The gate (custom objects came with 2.10).
    const gated = await send(p.url, '/v2/customObjects', {
      headers: { authorization: basicAuth('org1'), 'neon-api-version': '2.6', 'x-test-seq': 'gated' },
    })
    expect(gated.status).toBe(400)
    expect(gated.json<{ code: string }[]>()[0]?.code).toBe('SLUICE_VERSION_TOO_OLD')

    // The held request still has the permit, nothing queued, and the API saw none of the refused ones.
    expect(await statusOf(p, 'org1', SEARCH)).toMatchObject({ inFlight: 1, queued: 0 })
    expect(await statusOf(p, 'org1', 'GET /customObjects')).toBeUndefined()
    expect(api.stats().arrivals.map((a) => a.seq)).toEqual(['held'])
    expect(keyStats(api, 'org1', SEARCH)).toMatchObject({ requests: 1, rejected410: 0 })

    // Counted on the admin port's /metrics, labelled by validated version and reason only.
    const metrics = await (await fetch(`${p.adminUrl}/metrics`)).text()
    expect(metrics).toContain('sluice_version_rejections_total{version="2.9",reason="retired"} 1')
    expect(metrics).toContain('sluice_version_rejections_total{version="invalid",reason="malformed"} 1')
    expect(metrics).toContain('sluice_version_rejections_total{version="2.6",reason="gate"} 1')
    expect(metrics).not.toContain('2.12.1')

    // The held request ends when the API drops it (a permit follows the upstream, not the client).
    hold.abort()
    await held
    await api.close()
    sim = undefined
    await until(
      async () => (await adminJson<{ keys: unknown[] }>(p, '/status')).keys.length === 0,
      'the held permit back',
    )
  })
})
