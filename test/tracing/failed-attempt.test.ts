import { createServer } from 'node:net'
import { describe, expect, it, onTestFinished } from 'vitest'
import { startProxy } from '../support/proxy.js'
import { basicAuth } from '../support/sim.js'
import { send } from '../support/http.js'
import { startOtlpReceiver } from '../support/otlp.js'

const TRACE_ID = '5bf92f3577b34da6a3ce929d0e0e4736'

/** A port on which nothing listens (taken, then given back). */
async function closedPort(): Promise<number> {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as { port: number }
  await new Promise<void>((resolve) => server.close(() => resolve()))
  return port
}

describe('an attempt that fails before the API answers', () => {
  it("its client span ends in error with the failure's code, and the server span with the 502", async () => {
    const collector = await startOtlpReceiver()
    onTestFinished(() => collector.close())
    const proxy = await startProxy(
      { upstream: `http://127.0.0.1:${await closedPort()}/v2` },
      {
        otelEnv: {
          OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${collector.url}/v1/traces`,
          OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/json',
        },
      },
    )
    let closed = false
    onTestFinished(() => (closed ? undefined : proxy.close()))
    const answer = await send(proxy.url, '/v2/accounts/1/donations', {
      headers: { authorization: basicAuth('org1'), traceparent: `00-${TRACE_ID}-00f067aa0ba902b7-01` },
    })
    expect(answer.status).toBe(502)
    await proxy.close()
    closed = true

    const spans = collector.spans().filter((s) => s.traceId === TRACE_ID)
    const client = spans.find((s) => s.kind === 3)!
    expect(client.status).toBe(2)
    expect(client.attributes['error.type']).toBe('ECONNREFUSED')
    expect(client.attributes['http.response.status_code']).toBeUndefined()
    const server = spans.find((s) => s.kind === 2)!
    expect(server.status).toBe(2)
    expect(server.attributes).toMatchObject({
      'http.response.status_code': 502,
      'sluice.outcome': 'upstream_error',
      'error.type': '502',
    })
  })
})
