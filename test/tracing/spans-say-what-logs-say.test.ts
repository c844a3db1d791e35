import { describe, expect, it, onTestFinished } from 'vitest'
import { startProxy } from '../support/proxy.js'
import { basicAuth, withSim } from '../support/sim.js'
import { send } from '../support/http.js'
import { startOtlpReceiver } from '../support/otlp.js'

// Traces say what logs say (docs/observability.md, "The spans"): a path the catalog lacks is `unknown`
// in its spans as in its access line and metrics, never its letters-only segments; a client span
// names the upstream the attempt went to, not always the CRM's.

const TRACE_ID = '0af7651916cd43dd8448eb211c80319c'

describe('spans of an unknown path, and of another upstream', () => {
  it('are named `unknown` and carry the server.address/port of the upstream they went to', async () => {
    const crm = await withSim()
    const other = await withSim()
    const collector = await startOtlpReceiver()
    onTestFinished(() => collector.close())
    const proxy = await startProxy(
      {
        upstream: crm.apiUrl,
        upstreams: [{ name: 'reports', prefix: '/reports', url: other.apiUrl, catalog: { default: 5 } }],
      },
      {
        otelEnv: {
          OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${collector.url}/v1/traces`,
          OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/json',
        },
      },
    )
    let closed = false
    onTestFinished(() => (closed ? undefined : proxy.close()))
    const headers = (span: string) => ({
      authorization: basicAuth('org1'),
      traceparent: `00-${TRACE_ID}-${span}-01`,
    })
    expect((await send(proxy.url, '/v2/users/johndoe/exports', { headers: headers('00f067aa0ba902b1') })).status).toBe(
      200,
    )
    expect(
      (await send(proxy.url, '/reports/users/johndoe/exports', { headers: headers('00f067aa0ba902b2') })).status,
    ).toBe(200)
    await proxy.close()
    closed = true

    const access = proxy.logs.filter((l) => l.msg === 'request completed' || l.reqId !== undefined)
    for (const line of access.filter((l) => l.endpoint !== undefined)) expect(line.endpoint).toBe('unknown')
    const spans = collector.spans().filter((s) => s.traceId === TRACE_ID)
    const servers = spans.filter((s) => s.kind === 2).sort((a, b) => (a.startNs < b.startNs ? -1 : 1))
    const clients = spans.filter((s) => s.kind === 3)
    expect(servers.map((s) => [s.name, s.attributes['http.route'], s.attributes['sluice.endpoint']])).toEqual([
      ['GET unknown', 'unknown', 'unknown'],
      ['GET unknown', 'unknown', 'unknown'],
    ])
    const byParent = (server: (typeof servers)[number]) => clients.find((c) => c.parentSpanId === server.spanId)!
    const port = (url: string): number => Number(new URL(url).port)
    const [toCrm, toOther] = servers.map(byParent)
    expect([toCrm!.name, toCrm!.attributes['url.template'], toCrm!.attributes['server.port']]).toEqual([
      'GET unknown',
      'unknown',
      port(crm.apiUrl),
    ])
    expect([toOther!.name, toOther!.attributes['url.template'], toOther!.attributes['server.port']]).toEqual([
      'GET unknown',
      'unknown',
      port(other.apiUrl),
    ])
    const bytes = Buffer.concat(collector.exports.map((e) => e.body)).toString('utf8')
    expect(bytes).not.toContain('johndoe')
  })
})
