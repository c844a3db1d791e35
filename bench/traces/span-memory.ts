/**
 * What a queued request's spans hold while it waits (part of `npm run bench -- traces`): 10,000
 * requests' server and wait spans made in this process, sampled, as the proxy makes them, and the
 * heap measured after a full collection, before and after.
 */
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import { createTracing } from '../../src/tracing/sdk.js'
import { tracingSettingsFromEnv } from '../../src/tracing/settings.js'
import type { RequestSpans } from '../../src/tracing/types.js'

const REQUESTS = 10_000

/** a full collection, without starting node with --expose-gc */
function collect(): void {
  setFlagsFromString('--expose-gc')
  ;(runInNewContext('gc') as () => void)()
}

export async function spanMemoryPerQueuedRequest(): Promise<string> {
  // A collector nobody listens on: the spans here never end, so nothing is exported.
  const settings = tracingSettingsFromEnv({
    OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:9',
    OTEL_TRACES_SAMPLER: 'always_on',
  })!
  const tracing = createTracing(settings, {
    upstream: 'https://api.neoncrm.com/v2',
    version: () => 'bench',
    log: { info: () => undefined, warn: () => undefined },
  })
  const headers = { authorization: 'Basic b3JnOmtleQ==', 'neon-api-version': '2.12', host: 'sluice' }
  collect()
  const before = process.memoryUsage().heapUsed
  const held: RequestSpans[] = []
  for (let i = 0; i < REQUESTS; i++) {
    const spans = tracing.request('POST', headers)
    spans.waitBegins(false)
    spans.forecast(i, 1234)
    held.push(spans)
  }
  collect()
  const perRequest = (process.memoryUsage().heapUsed - before) / REQUESTS
  held.length = 0
  await tracing.shutdown()
  return `Heap held by one queued request's spans (server and wait span, sampled), ${REQUESTS.toLocaleString('en')} made in one process: ${(perRequest / 1024).toFixed(2)} KB.`
}
