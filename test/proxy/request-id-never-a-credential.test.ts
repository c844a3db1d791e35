import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { send, type Answer } from '../support/http.js'
import { basic, startProxy, type RunningProxy } from '../support/proxy.js'
import { startSim, type Sim } from '../support/sim.js'

// A client's x-request-id becomes the request's id (returned, sent upstream, logged) only when it
// holds none of the credentials the request carries — its Authorization, either half of a Basic
// pair, the app token header — also with app identity off (docs/observability.md, "What a client's
// values can reach"). Otherwise sluice's own id is used everywhere.

const API_KEY = 'api-key-9d41c07b2e5f'
const TOKEN = 'app-token-early-3a7c51e0'
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/

let sim: Sim
let proxy: RunningProxy
beforeAll(async () => {
  sim = await startSim({ latencyMs: 0 })
  proxy = await startProxy({ upstream: sim.apiUrl })
})
afterAll(async () => {
  await proxy?.close()
  await sim?.close()
})

/** the id the client got back, the id the API got, and the access line's */
async function ids(requestId: string, headers: Record<string, string> = {}): Promise<[unknown, unknown, unknown]> {
  const answer: Answer = await send(proxy.url, '/v2/accounts/42', {
    headers: { authorization: basic('1001', API_KEY), 'x-request-id': requestId, ...headers },
  })
  expect(answer.status).toBe(200)
  const returned = answer.headers['x-request-id']
  const line = proxy.logs.find((l) => l.msg === 'request' && l.reqId === returned)
  return [returned, answer.json<{ headers: Record<string, unknown> }>().headers['x-request-id'], line?.reqId]
}

describe('with app identity off, a request id', () => {
  it("that is the API key, holds it, or swaps it with the org, is replaced by sluice's own", async () => {
    for (const [given, headers] of [
      [API_KEY, {}],
      [`req-${API_KEY}-1`, {}],
      [API_KEY, { authorization: basic(API_KEY, '1001') }],
    ] as const) {
      const [returned, upstream, logged] = await ids(given, headers)
      expect(returned).toMatch(UUID)
      expect([upstream, logged]).toEqual([returned, returned])
    }
  })

  it('that is the app token sent alongside is replaced too', async () => {
    const [returned] = await ids(TOKEN, { 'x-sluice-app-token': TOKEN })
    expect(returned).toMatch(UUID)
  })

  it('that holds no credential is kept everywhere', async () => {
    expect(await ids('app-req-42')).toEqual(['app-req-42', 'app-req-42', 'app-req-42'])
  })

  it('no logged request id holds a credential', () => {
    const logged = proxy.logs.filter((l) => l.msg === 'request').map((l) => String(l.reqId))
    expect(logged).toHaveLength(5)
    for (const id of logged) for (const secret of [API_KEY, TOKEN]) expect(id).not.toContain(secret)
  })
})
