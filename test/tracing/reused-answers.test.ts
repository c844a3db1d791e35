import { describe, expect, it, onTestFinished } from 'vitest'
import { startProxy } from '../support/proxy.js'
import { basicAuth, keyStats, waitForSim, withSim } from '../support/sim.js'
import { send } from '../support/http.js'
import { startOtlpReceiver } from '../support/otlp.js'
import { COUNTRIES, COUNTRIES_ID, followersWaiting } from '../reuse/support.js'

const traceId = (n: number): string => n.toString(16).padStart(32, 'c')

describe('an answer reused without a call of its own says so in its trace', () => {
  it('a coalesced follower and a cache hit: an event on the server span, no wait, no client span', async () => {
    const sim = await withSim()
    const collector = await startOtlpReceiver()
    onTestFinished(() => collector.close())
    const proxy = await startProxy(
      { upstream: sim.apiUrl, cache: { endpoints: [COUNTRIES_ID] } },
      {
        otelEnv: {
          OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${collector.url}/v1/traces`,
          OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/json',
        },
      },
    )
    let closed = false
    onTestFinished(() => (closed ? undefined : proxy.close()))
    // identical but for the trace context, which is no part of what makes two answers the same (docs/reuse.md)
    const countries = (n: number) =>
      send(proxy.url, COUNTRIES, {
        headers: {
          authorization: basicAuth('org1'),
          'x-sim-hold': 'countries',
          traceparent: `00-${traceId(n)}-00f067aa0ba902b7-01`,
        },
      })

    const leader = countries(1)
    await waitForSim(sim, () => keyStats(sim, 'org1', COUNTRIES_ID)?.inProgress === 1, 'the call held at the API')
    const follower = countries(2)
    await followersWaiting(proxy, 1)
    sim.open('countries')
    expect((await Promise.all([leader, follower])).map((a) => a.status)).toEqual([200, 200])
    expect((await countries(3)).status).toBe(200)
    expect(keyStats(sim, 'org1', COUNTRIES_ID)?.requests).toBe(1)
    await proxy.close()
    closed = true

    const trace = (n: number) => collector.spans().filter((s) => s.traceId === traceId(n))
    expect(
      trace(1)
        .map((s) => s.name)
        .sort(),
    ).toEqual(['GET /properties/countries', 'GET /properties/countries', 'sluice.wait'])
    for (const [n, kind] of [
      [2, 'coalesced'],
      [3, 'cache_hit'],
    ] as const) {
      const spans = trace(n)
      expect(spans.map((s) => s.kind)).toEqual([2])
      expect(spans[0]!.attributes).toMatchObject({ 'sluice.outcome': kind, 'http.response.status_code': 200 })
      expect(spans[0]!.events).toEqual([{ name: 'sluice.reused', attributes: { 'sluice.reuse.kind': kind } }])
    }
  })
})
