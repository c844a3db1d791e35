import { describe, expect, it, onTestFinished } from 'vitest'
import { startProxy, statusOf } from '../support/proxy.js'
import { basicAuth, keyStats, waitForSim, withSim } from '../support/sim.js'
import { send, until } from '../support/http.js'
import { startOtlpReceiver } from '../support/otlp.js'

const SEARCH = 'POST /accounts/search'
const traceId = (n: number): string => n.toString(16).padStart(32, 'a')

describe("the wait for a permit is a span with the request's queue position and predicted wait", () => {
  it('on a limit-1 key held by one request, the second waits first in line and the third second, both with a predicted wait', async () => {
    const sim = await withSim()
    const collector = await startOtlpReceiver()
    onTestFinished(() => collector.close())
    // one permit given back is enough for the forecast to predict
    const proxy = await startProxy(
      { upstream: sim.apiUrl, failFast: { minSamples: 1 } },
      {
        otelEnv: {
          OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${collector.url}/v1/traces`,
          OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/json',
        },
      },
    )
    let closed = false
    onTestFinished(() => (closed ? undefined : proxy.close()))
    // different bodies: never one identical search answering another (docs/reuse.md)
    const search = (n: number, headers: Record<string, string> = {}) =>
      send(proxy.url, '/v2/accounts/search', {
        method: 'POST',
        headers: {
          authorization: basicAuth('org1'),
          'content-type': 'application/json',
          traceparent: `00-${traceId(n)}-00f067aa0ba902b7-01`,
          ...headers,
        },
        body: JSON.stringify({ n }),
      })

    expect((await search(0)).status).toBe(200)
    const held = search(1, { 'x-sim-hold': 'first' })
    await waitForSim(sim, () => keyStats(sim, 'org1', SEARCH)?.inProgress === 1, 'the first search held at the API')
    const second = search(2)
    await until(async () => (await statusOf(proxy, 'org1', SEARCH))?.queued === 1, 'the second search queued')
    const third = search(3)
    await until(async () => (await statusOf(proxy, 'org1', SEARCH))?.queued === 2, 'the third search queued')
    sim.open('first')
    expect((await Promise.all([held, second, third])).map((a) => a.status)).toEqual([200, 200, 200])
    await proxy.close()
    closed = true

    const waitOf = (n: number) =>
      collector.spans().find((s) => s.traceId === traceId(n) && s.name === 'sluice.wait')!.attributes
    // nothing to wait for: predicted 0
    expect(waitOf(0)).toEqual({
      'sluice.wait.requeued': false,
      'sluice.queue.position': 0,
      'sluice.wait.predicted_ms': 0,
    })
    expect(waitOf(1)).toMatchObject({ 'sluice.queue.position': 0, 'sluice.wait.predicted_ms': 0 })
    expect(waitOf(2)).toMatchObject({ 'sluice.queue.position': 0 })
    expect(waitOf(3)).toMatchObject({ 'sluice.queue.position': 1 })
    for (const n of [2, 3]) expect(waitOf(n)['sluice.wait.predicted_ms']).toBeTypeOf('number')
  })
})
