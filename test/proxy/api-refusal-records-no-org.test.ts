import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { parsePromText, select, valueOf } from '../metrics/prom-text.js'
import { send, until, type Answer } from '../support/http.js'
import { adminJson, startProxy, type RunningProxy } from '../support/proxy.js'
import { basicAuth, type Sim, startSim } from '../support/sim.js'

// With app identity off, a Basic pair sent with user and password swapped puts the API key where
// sluice reads the organisation. When the API refuses the request's credentials (401, 403), nothing
// vouched for the name: the request's record carries no organisation — `-` in the access line,
// org="_unauthenticated" in the request metrics, no series of its own (docs/observability.md, "What a
// client's values can reach"). Other answers keep the organisation as sent.

const API_KEY = 'k9Xq2Lw7Rt4Zp8Vn3Hs6'

let sim: Sim
let proxy: RunningProxy
beforeAll(async () => {
  sim = await startSim({ latencyMs: 0 })
  proxy = await startProxy({ upstream: sim.apiUrl, metrics: { defaultMetrics: false } })
})
afterAll(async () => {
  await proxy?.close()
  await sim?.close()
})

const get = (authorization: string, status: number): Promise<Answer> =>
  send(proxy.url, '/v2/accounts/42', { headers: { authorization, 'x-sim-status': String(status) } })
/** the access line of the request the answer was for */
function lineOf(answer: Answer): Record<string, unknown> {
  const id = answer.headers['x-request-id']
  const line = proxy.logs.find((l) => l.msg === 'request' && l.reqId === id)
  expect(line, `the access line of ${String(id)}`).toBeDefined()
  return line!
}

describe('app identity off: the API refuses the credentials', () => {
  it('a 401 or 403 from the API records no organisation; a 404 or a 200 keeps it', async () => {
    const refused401 = await get(basicAuth(API_KEY, '1001'), 401)
    const refused403 = await get(basicAuth(API_KEY, '1001'), 403)
    const notFound = await get(basicAuth('1001', API_KEY), 404)
    const ok = await get(basicAuth('1001', API_KEY), 200)
    expect([refused401.status, refused403.status, notFound.status, ok.status]).toEqual([401, 403, 404, 200])
    // the API's answers pass as they came; only the record changes
    expect(refused401.headers['x-request-id']).toBeDefined()

    expect(lineOf(refused401)).toMatchObject({
      instance: '-',
      status: 401,
      outcome: 'forwarded',
      endpoint: 'GET /accounts/{id}',
    })
    expect(lineOf(refused403)).toMatchObject({ instance: '-', status: 403, outcome: 'forwarded' })
    expect(lineOf(notFound)).toMatchObject({ instance: '1001', status: 404, outcome: 'forwarded' })
    expect(lineOf(ok)).toMatchObject({ instance: '1001', status: 200, outcome: 'forwarded' })
    expect(proxy.logs.filter((l) => l.msg === 'request' && JSON.stringify(l).includes(API_KEY))).toEqual([])

    const s = parsePromText(await (await fetch(proxy.adminUrl + '/metrics')).text())
    const requests = select(s, 'sluice_requests_total')
    expect(valueOf(s, 'sluice_requests_total', { org: '_unauthenticated', code: '401', outcome: 'forwarded' })).toBe(1)
    expect(valueOf(s, 'sluice_requests_total', { org: '_unauthenticated', code: '403', outcome: 'forwarded' })).toBe(1)
    expect(valueOf(s, 'sluice_requests_total', { org: '1001', code: '404', outcome: 'forwarded' })).toBe(1)
    expect(valueOf(s, 'sluice_requests_total', { org: '1001', code: '200', outcome: 'forwarded' })).toBe(1)
    expect(requests.filter((r) => r.labels.org === API_KEY)).toEqual([])
  })

  it('a follower given the refused answer of an identical call records no organisation either', async () => {
    const headers = { authorization: basicAuth(API_KEY, '1001'), 'x-sim-status': '401', 'x-sim-hold': 'refusal' }
    const followers = async (): Promise<number> =>
      (await adminJson<{ reuse: { coalescing: { followers: number } } }>(proxy, '/status')).reuse.coalescing.followers
    const leader = send(proxy.url, '/v2/accounts/7', { headers })
    await until(() => sim.stats().keys[`${API_KEY} GET /accounts/{id}`]?.inProgress === 1, 'the leader reaches the API')
    const follower = send(proxy.url, '/v2/accounts/7', { headers })
    await until(async () => (await followers()) === 1, 'the second request follows the first')
    sim.open('refusal')
    const answers = await Promise.all([leader, follower])
    expect(answers.map((a) => a.status)).toEqual([401, 401])
    expect(lineOf(answers[0])).toMatchObject({ instance: '-', status: 401, outcome: 'forwarded' })
    expect(lineOf(answers[1])).toMatchObject({ instance: '-', status: 401, outcome: 'coalesced' })
  })
})
