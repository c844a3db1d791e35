import { describe, expect, it } from 'vitest'
import { send, until } from '../support/http.js'
import { adminJson, useSimAndProxy } from '../support/proxy.js'
import { basicAuth } from '../support/sim.js'
import { parsePromText, select } from './prom-text.js'

// docs/observability.md "Labels": an endpoint outside the catalog has one name in the access log, the
// metrics and /status — its template (`GET /accounts/{id}`) when the template has the shape of one the
// catalog lists (a method the catalog does not list for a path it knows), else `unknown` — so the
// names, and the label values, stay bounded by the catalog. Through the real proxy and the sim.

interface StatusRow {
  instance: string
  endpoint: string
  limit: number
  inFlight: number
  queued: number
  keys?: number
}

describe('an endpoint outside the catalog has one name in the log, /metrics and /status', () => {
  // (requests the sim holds stay in progress until the proxy closes: a short grace then)
  const stack = useSimAndProxy({}, { shutdown: { graceMs: 200 } })
  const auth = (org: string): Record<string, string> => ({ authorization: basicAuth(org) })

  /** the endpoint of every access-log line of the organisation's answered requests */
  const logEndpoints = (org: string): unknown[] =>
    stack.proxy.logs.filter((l) => l.msg === 'request' && l.instance === org && l.status === 200).map((l) => l.endpoint)
  const metricEndpoints = async (org: string): Promise<string[]> => {
    const samples = parsePromText(await (await fetch(`${stack.proxy.adminUrl}/metrics`)).text())
    return [
      ...new Set(select(samples, 'sluice_requests_total', { org, code: '200' }).map((s) => s.labels.endpoint!)),
    ].sort()
  }
  const statusRows = async (org: string): Promise<StatusRow[]> =>
    (await adminJson<{ keys: StatusRow[] }>(stack.proxy, '/status')).keys.filter((k) => k.instance === org)

  /** A request the sim never answers: in progress (its permit held) until the proxy closes. */
  const held = (org: string, method: string, path: string): void =>
    void send(stack.proxy.url, path, {
      method,
      headers: { ...auth(org), 'x-sim-hang': '1' },
      body: method === 'POST' ? '{}' : undefined,
    }).catch(() => undefined)

  it("README's GET /v2/accounts/1001 (the catalog lists only PUT /accounts/{id}) is GET /accounts/{id} everywhere", async () => {
    const answer = await send(stack.proxy.url, '/v2/accounts/1001', { headers: auth('org7') })
    expect(answer.status).toBe(200)
    expect(logEndpoints('org7')).toEqual(['GET /accounts/{id}'])
    expect(await metricEndpoints('org7')).toEqual(['GET /accounts/{id}'])

    held('org7', 'GET', '/v2/accounts/1002')
    held('org7', 'GET', '/v2/accounts/1003')
    await until(async () => (await statusRows('org7')).some((k) => k.inFlight === 2), 'both requests in progress')
    expect(await statusRows('org7')).toEqual([
      {
        instance: 'org7',
        endpoint: 'GET /accounts/{id}',
        limit: 5,
        learned: { value: 5, ceiling: 50 },
        // learnable, but still at its start (limits.default): configured, not learned (src/upstreams/status.ts)
        limitSource: 'configured',
        inFlight: 2,
        queued: 0,
        oldestWaitMs: 0,
        apps: [{ app: 'default', held: 2, queued: 0 }],
      },
    ])
  })

  it('paths whose words the catalog does not have are `unknown` everywhere: one /status row per organisation, summed like the metrics', async () => {
    for (const [method, path] of [
      ['GET', '/v2/widgets/7/frobnicate'],
      ['POST', '/v2/gadgets/xyzzy'],
    ] as const) {
      expect(
        (
          await send(stack.proxy.url, path, {
            method,
            headers: auth('org8'),
            body: method === 'POST' ? '{}' : undefined,
          })
        ).status,
      ).toBe(200)
    }
    expect(logEndpoints('org8')).toEqual(['unknown', 'unknown'])
    expect(await metricEndpoints('org8')).toEqual(['unknown'])

    held('org8', 'GET', '/v2/widgets/8/frobnicate')
    held('org8', 'POST', '/v2/gadgets/plugh')
    held('org8', 'POST', '/v2/gadgets/plugh')
    await until(async () => (await statusRows('org8')).some((k) => k.inFlight === 3), 'the three requests in progress')
    // two limiter keys (limits.default 5 each), one name: one row that sums them
    expect(await statusRows('org8')).toEqual([
      {
        instance: 'org8',
        endpoint: 'unknown',
        limit: 10,
        limitSource: 'configured',
        inFlight: 3,
        queued: 0,
        oldestWaitMs: 0,
        apps: [{ app: 'default', held: 3, queued: 0 }],
        keys: 2,
      },
    ])

    // and what a client wrote into the path is in none of the three
    const everything =
      JSON.stringify(stack.proxy.logs) +
      (await (await fetch(`${stack.proxy.adminUrl}/metrics`)).text()) +
      JSON.stringify(await adminJson(stack.proxy, '/status'))
    for (const word of ['widgets', 'frobnicate', 'gadgets', 'xyzzy', 'plugh']) expect(everything).not.toContain(word)
  })
})
