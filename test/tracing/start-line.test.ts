import { describe, expect, it, onTestFinished } from 'vitest'
import { startProxy } from '../support/proxy.js'
import { withSim } from '../support/sim.js'
import { startOtlpReceiver } from '../support/otlp.js'

describe('the start says that traces are on, and where they go', () => {
  it("one info line with the endpoint (without the collector's credentials or query), the protocol and the sampler; none when off", async () => {
    const sim = await withSim()
    const collector = await startOtlpReceiver()
    onTestFinished(() => collector.close())
    const endpoint = new URL(collector.url)
    const on = await startProxy(
      { upstream: sim.apiUrl },
      {
        otelEnv: {
          OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `http://otel:collector-pass@${endpoint.host}/v1/traces?token=collector-token`,
          OTEL_TRACES_SAMPLER: 'traceidratio',
          OTEL_TRACES_SAMPLER_ARG: '0.1',
        },
      },
    )
    onTestFinished(() => on.close())
    const off = await startProxy({ upstream: sim.apiUrl })
    onTestFinished(() => off.close())

    expect(on.logs.filter((l) => l.msg === 'traces on').map((l) => l.traces)).toEqual([
      {
        endpoint: `http://${endpoint.host}/v1/traces`,
        protocol: 'http/protobuf',
        sampler: 'traceidratio',
        ratio: 0.1,
        serviceName: 'sluice',
      },
    ])
    const text = JSON.stringify(on.logs)
    expect(text).not.toContain('collector-pass')
    expect(text).not.toContain('collector-token')
    expect(off.logs.filter((l) => l.msg === 'traces on')).toEqual([])
  })
})
