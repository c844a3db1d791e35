import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { send, type Answer } from '../support/http.js'
import { startProxy, type RunningProxy } from '../support/proxy.js'
import { basicAuth, type Sim, startSim } from '../support/sim.js'
import { parsePromText, valueOf } from '../metrics/prom-text.js'
import { tokenHash } from '../support/apps.js'

// An app token a client puts where sluice records a name — the Basic-auth username (user and password
// swapped), x-sluice-instance, x-request-id — reaches no log line, metric label or /status: with app
// identity on, what a request names is recorded only once it authenticated for it (docs/observability.md,
// "What a client's values can reach"). Through the real proxy, its captured log, /metrics and /status.

const TOKEN = 'tok-Zq8w3N1vR7pL2xK9mB4c'
const UNAUTHENTICATED = [
  {
    code: 'SLUICE_APP_UNAUTHENTICATED',
    message:
      'sluice requires an app token: send it as the Basic-auth password (orgId:token) or in the app token header',
  },
]
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/

let sim: Sim
let proxy: RunningProxy
beforeAll(async () => {
  sim = await startSim({ latencyMs: 0 })
  proxy = await startProxy({
    upstream: sim.apiUrl,
    // every line sluice writes, the debug ones about refusals included
    logLevel: 'trace',
    metrics: { defaultMetrics: false },
    apps: { enabled: true, list: { web: { tokens: [tokenHash(TOKEN)], orgs: ['1001'] } } },
  })
})
afterAll(async () => {
  await proxy?.close()
  await sim?.close()
})

const get = (headers: Record<string, string>): Promise<Answer> => send(proxy.url, '/v2/accounts/42', { headers })
/** the access line of the request the answer was for */
function lineOf(answer: Answer): Record<string, unknown> {
  const id = answer.headers['x-request-id']
  const line = proxy.logs.find((l) => l.msg === 'request' && l.reqId === id)
  expect(line, `the access line of ${String(id)}`).toBeDefined()
  return line!
}

describe('a token where sluice records a name', () => {
  it('user and password swapped: a 401 whose line names no instance', async () => {
    const answer = await get({ authorization: basicAuth(TOKEN, '1001') })
    expect(answer.status).toBe(401)
    expect(answer.json()).toEqual(UNAUTHENTICATED)
    expect(lineOf(answer)).toMatchObject({
      instance: '-',
      status: 401,
      outcome: 'unauthenticated',
      endpoint: 'GET /accounts/{id}',
    })
  })

  it('in x-sluice-instance: a 401 without a known token, a 403 for a known app that may not use it; neither names it', async () => {
    const unknown = await get({ 'x-sluice-instance': TOKEN, 'x-sluice-app-token': 'not-a-token' })
    expect(unknown.status).toBe(401)
    expect(lineOf(unknown)).toMatchObject({ instance: '-', status: 401 })
    const known = await get({ 'x-sluice-instance': TOKEN, 'x-sluice-app-token': TOKEN })
    expect(known.status).toBe(403)
    // the answer names what the client sent (it is the client's own); the record does not
    expect(known.json()).toEqual([
      { code: 'SLUICE_APP_ORG_FORBIDDEN', message: `The app web may not use organisation ${TOKEN}` },
    ])
    expect(lineOf(known)).toMatchObject({ instance: '-', app: 'web', status: 403, outcome: 'forbidden' })
  })

  it("in x-request-id: replaced by sluice's own id, authenticated or not", async () => {
    const refused = await get({ 'x-request-id': TOKEN, 'x-sluice-instance': '1001' })
    expect(refused.status).toBe(401)
    const passed = await get({ 'x-request-id': TOKEN, authorization: basicAuth('1001', TOKEN) })
    expect(passed.status).toBe(200)
    for (const answer of [refused, passed]) expect(answer.headers['x-request-id']).toMatch(UUID)
    expect(passed.json<{ headers: Record<string, unknown> }>().headers['x-request-id']).toBe(
      passed.headers['x-request-id'],
    )
    expect(lineOf(passed)).toMatchObject({ instance: '1001', app: 'web', status: 200 })
  })

  it('a plain request id is kept once the request authenticated, and only then', async () => {
    const passed = await get({ 'x-request-id': 'app-req-7', authorization: basicAuth('1001', TOKEN) })
    expect(passed.headers['x-request-id']).toBe('app-req-7')
    expect(passed.json<{ headers: Record<string, unknown> }>().headers['x-request-id']).toBe('app-req-7')
    expect(lineOf(passed)).toMatchObject({ instance: '1001', app: 'web', status: 200, outcome: 'forwarded' })
    const refused = await get({ 'x-request-id': 'app-req-8', authorization: basicAuth('1001', 'not-a-token') })
    expect(refused.status).toBe(401)
    expect(refused.headers['x-request-id']).toMatch(UUID)
    expect(lineOf(refused)).toMatchObject({ instance: '-', status: 401 })
  })

  it('the token is in no log line, no metric and not in /status', async () => {
    const metrics = await (await fetch(proxy.adminUrl + '/metrics')).text()
    const status = await (await fetch(proxy.adminUrl + '/status')).text()
    const logs = proxy.logs.map((l) => JSON.stringify(l)).join('\n')
    expect(logs).toContain('"instance":"1001"')
    expect(metrics).toContain('org="1001"')
    for (const [place, text] of Object.entries({ logs, metrics, status })) {
      for (const form of [TOKEN, TOKEN.slice(0, 12), Buffer.from(TOKEN).toString('base64').slice(0, 16)])
        expect(text.includes(form), `${place} holds the token`).toBe(false)
    }
    const s = parsePromText(metrics)
    expect(
      valueOf(s, 'sluice_requests_total', { code: '401', outcome: 'unauthenticated', org: '_unauthenticated' }),
    ).toBe(4)
    expect(valueOf(s, 'sluice_requests_total', { code: '403', outcome: 'forbidden', org: '_unauthenticated' })).toBe(1)
    expect(valueOf(s, 'sluice_requests_total', { code: '200', outcome: 'forwarded', org: '1001' })).toBe(2)
  })
})
