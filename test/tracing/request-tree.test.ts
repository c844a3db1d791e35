import { describe, expect, it, onTestFinished } from 'vitest'
import { startProxy } from '../support/proxy.js'
import { basicAuth, keyStats, withSim } from '../support/sim.js'
import { send } from '../support/http.js'
import { startOtlpReceiver, type ReceivedSpan } from '../support/otlp.js'

const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736'
const CALLER_SPAN = '00f067aa0ba902b7'
const KEY = 'org-key-never-exported'
const QUERY_SECRET = 'apiKey-in-query-never-exported'

describe('traces: a request that got one 429 upstream, then its answer, as the collector receives it', () => {
  it('a server span under the caller, a wait per queueing, a client span per attempt; the API gets the attempt as parent; no credential', async () => {
    // The sim answers the first request 429 (its pushback draws 0 < 0.5) and every later one normally.
    const draws = [0]
    const sim = await withSim({ rejectRatio: 0.5, random: () => draws.shift() ?? 0.99 })
    const collector = await startOtlpReceiver()
    onTestFinished(() => collector.close())
    const proxy = await startProxy(
      { upstream: sim.apiUrl, retry: { baseDelayMs: 1, maxDelayMs: 5 } },
      {
        otelEnv: {
          OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${collector.url}/v1/traces`,
          OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/json',
          OTEL_SERVICE_NAME: 'sluice-test',
        },
      },
    )
    let closed = false
    onTestFinished(() => (closed ? undefined : proxy.close()))

    const answer = await send(proxy.url, `/v2/accounts/123/donations?${QUERY_SECRET}=1`, {
      headers: {
        authorization: basicAuth('org1', KEY),
        traceparent: `00-${TRACE_ID}-${CALLER_SPAN}-01`,
        tracestate: 'vendor=opaque',
      },
    })
    expect(answer.status).toBe(200)
    expect(answer.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/)
    expect(keyStats(sim, 'org1', 'GET /accounts/{id}/donations')).toMatchObject({ requests: 2, pushback429: 1 })
    // Closing the proxy sends what the batch processor holds: no timer to wait for.
    await proxy.close()
    closed = true

    const spans = collector.spans().filter((s) => s.traceId === TRACE_ID)
    const server = spans.find((s) => s.kind === 2)!
    expect(server).toMatchObject({ name: 'GET /accounts/{id}/donations', parentSpanId: CALLER_SPAN, status: 0 })
    expect(server.attributes).toEqual({
      'http.request.method': 'GET',
      'http.route': '/accounts/{id}/donations',
      'http.response.status_code': 200,
      'sluice.request_id': answer.headers['x-request-id'],
      'sluice.outcome': 'forwarded',
      'sluice.endpoint': 'GET /accounts/{id}/donations',
      'sluice.app': 'default',
      'sluice.instance': 'org1',
      'sluice.retries': 1,
      'sluice.upstream_429s': 1,
    })
    expect(server.resource['service.name']).toBe('sluice-test')
    expect(server.events.map((e) => e.name)).toEqual(['sluice.backoff'])

    const byStart = (a: ReceivedSpan, b: ReceivedSpan): number => (a.startNs < b.startNs ? -1 : 1)
    const waits = spans.filter((s) => s.name === 'sluice.wait').sort(byStart)
    expect(
      waits.map((w) => [
        w.parentSpanId,
        w.kind,
        w.attributes['sluice.wait.requeued'],
        w.attributes['sluice.queue.position'],
      ]),
    ).toEqual([
      [server.spanId, 1, false, 0],
      [server.spanId, 1, true, 0],
    ])

    const attempts = spans.filter((s) => s.kind === 3).sort(byStart)
    expect(
      attempts.map((a) => [
        a.name,
        a.parentSpanId,
        a.attributes['http.response.status_code'],
        a.attributes['http.request.resend_count'],
        a.status,
      ]),
    ).toEqual([
      ['GET /accounts/{id}/donations', server.spanId, 429, undefined, 2],
      ['GET /accounts/{id}/donations', server.spanId, 200, 1, 0],
    ])
    expect(attempts[1]!.attributes).toMatchObject({
      'server.address': '127.0.0.1',
      'server.port': Number(new URL(sim.apiUrl).port),
      'url.template': '/accounts/{id}/donations',
    })
    expect(spans).toHaveLength(5)

    // The API saw the answered attempt as the parent, and the caller's tracestate as it came.
    const seen = answer.json<{ headers: Record<string, string> }>().headers
    expect(seen.traceparent).toBe(`00-${TRACE_ID}-${attempts[1]!.spanId}-01`)
    expect(seen.tracestate).toBe('vendor=opaque')

    // Nothing the collector received holds a credential, the path's ids or the query.
    const bytes = Buffer.concat(collector.exports.map((e) => e.body)).toString('utf8')
    for (const secret of [KEY, basicAuth('org1', KEY).slice(6), QUERY_SECRET, '/accounts/123'])
      expect(bytes).not.toContain(secret)
  })
})
