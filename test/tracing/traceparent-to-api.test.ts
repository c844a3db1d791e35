import { describe, expect, it, onTestFinished } from 'vitest'
import { startProxy } from '../support/proxy.js'
import { basicAuth, withSim } from '../support/sim.js'
import { send } from '../support/http.js'
import { startOtlpReceiver } from '../support/otlp.js'

const TRACE_ID = '0af7651916cd43dd8448eb211c80319c'
const CALLER = `00-${TRACE_ID}-b7ad6b7169203331-01`
const KEY = 'org-key-never-exported'

/** The `traceparent` the API received for one request through `proxyUrl`. */
async function traceparentAtApi(proxyUrl: string): Promise<string> {
  const answer = await send(proxyUrl, '/v2/accounts/7/donations', {
    headers: { authorization: basicAuth('org1', KEY), traceparent: CALLER },
  })
  expect(answer.status).toBe(200)
  return answer.json<{ headers: Record<string, string> }>().headers.traceparent!
}

describe("the caller's traceparent reaches the API: as it came with tracing off, continued by sluice's span with it on", () => {
  it('off (no OTEL_* variable): passed through untouched', async () => {
    const sim = await withSim()
    const proxy = await startProxy({ upstream: sim.apiUrl })
    onTestFinished(() => proxy.close())
    expect(await traceparentAtApi(proxy.url)).toBe(CALLER)
  })

  it("on, with the defaults (OTLP protobuf to OTEL_EXPORTER_OTLP_ENDPOINT/v1/traces): same trace, sluice's attempt as parent, spans exported", async () => {
    const sim = await withSim()
    const collector = await startOtlpReceiver()
    onTestFinished(() => collector.close())
    const proxy = await startProxy(
      { upstream: sim.apiUrl },
      { otelEnv: { OTEL_EXPORTER_OTLP_ENDPOINT: collector.url } },
    )
    const seen = await traceparentAtApi(proxy.url)
    await proxy.close()
    expect(seen).toMatch(new RegExp(`^00-${TRACE_ID}-[0-9a-f]{16}-01$`))
    expect(seen).not.toBe(CALLER)

    expect(collector.exports.map((e) => [e.path, e.headers['content-type']])).toEqual([
      ['/v1/traces', 'application/x-protobuf'],
    ])
    const body = collector.exports[0]!.body
    // protobuf carries ids as bytes and names as text: the API's parent is one of the exported spans
    expect(body.includes(Buffer.from(TRACE_ID, 'hex'))).toBe(true)
    expect(body.includes(Buffer.from(seen.split('-')[2]!, 'hex'))).toBe(true)
    expect(body.includes('GET /accounts/{id}/donations')).toBe(true)
    expect(body.includes(KEY)).toBe(false)
    expect(body.includes(basicAuth('org1', KEY).slice(6))).toBe(false)
  })
})
