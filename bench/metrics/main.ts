/**
 * `node --import tsx bench/metrics/main.ts`: what metrics and the access log cost.
 *
 * 1. Hot path: ns per requestFinished() (label children cached), with upstreamAttempt() as sluice calls
 *    them for a request sent once, and per access-log line (sluice's
 *    own, and through pino with and without REDACT_PATHS, to a null stream), median of 5 runs.
 * 2. Cardinality: sluice_* series exported after traffic from N organisations on 20 endpoints each,
 *    for each instance-label setting.
 */
import pino from 'pino'
import { Writable } from 'node:stream'
import type { Catalog, Endpoint } from '../../src/catalog/types.js'
import {
  accessLogFields,
  accessLogLine,
  LOG_SERIALIZERS,
  REDACT_CENSOR,
  REDACT_PATHS,
} from '../../src/log/access-log.js'
import { createMetrics } from '../../src/metrics/index.js'
import { metricsSettingsSchema, type MetricsSettingsInput } from '../../src/metrics/settings.js'
import type { Outcome, RequestRecord } from '../../src/record/record.js'
import { createVersioning } from '../../src/versioning/index.js'
import { versionSettingsSchema } from '../../src/versioning/settings.js'

const ENDPOINTS = Array.from({ length: 20 }, (_, i) => `GET /resource${i}/{id}`)
const catalog: Pick<Catalog, 'endpoints'> = {
  endpoints: ENDPOINTS.map((id): Endpoint => ({
    id,
    method: 'GET',
    template: id.slice(4),
    limit: 5,
    limitSource: 'published',
  })),
}
const settings = (input: MetricsSettingsInput) => metricsSettingsSchema.parse({ defaultMetrics: false, ...input })

const rec = (instance: string, endpoint: string, outcome: Outcome = 'forwarded', status = 200): RequestRecord => ({
  requestId: 'a3f1c9e2-5b7d-4c1e-9f0a-1b2c3d4e5f60',
  method: 'GET',
  endpoint,
  template: endpoint.slice(4),
  instance,
  app: 'donor-sync',
  status,
  outcome,
  version: '2.11',
  upstreamVersion: '2.11',
  totalSeconds: 0.1234,
  queueSeconds: 0.02,
  upstreamSeconds: 0.1,
  retries: 0,
  upstream429s: 0,
})

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!

function nsPerOp(ops: number, run: (i: number) => void): number {
  const samples: number[] = []
  for (let r = 0; r < 5; r++) {
    const t0 = process.hrtime.bigint()
    for (let i = 0; i < ops; i++) run(i)
    samples.push(Number(process.hrtime.bigint() - t0) / ops)
  }
  return median(samples)
}

// ── 1. hot path
const records = Array.from({ length: 64 }, (_, i) => rec(`org${i % 8}`, ENDPOINTS[i % 20]!))
const metrics = createMetrics(settings({}), { limiter: () => undefined, catalog })
const metricsNoOrg = createMetrics(settings({ instanceLabel: false }), { limiter: () => undefined, catalog })
for (let i = 0; i < 100_000; i++) metrics.requestFinished(records[i & 63]!) // warm up
// the versioning counts every request by version and org on the same registry, as in src/app.ts
const versioning = createVersioning(versionSettingsSchema.parse({}), {
  log: { info: () => {}, warn: () => {}, error: () => {} },
  registry: metrics.registry,
  orgs: metrics.orgs,
})
const nullStream = new Writable({ write: (_c, _e, done) => done() })
const plain = pino({ level: 'info' }, nullStream)
const redacted = pino(
  { level: 'info', redact: { paths: REDACT_PATHS, censor: REDACT_CENSOR }, serializers: LOG_SERIALIZERS },
  nullStream,
)
// for comparison: the same credentials reached by wildcard paths, as a first draft had them
const wildcardPaths = ['authorization', 'cookie', '"x-api-key"'].flatMap((h) =>
  ['*', '*.*', '*.*.*'].map((w) => `${w}.headers[${h.startsWith('"') ? h : `"${h}"`}]`),
)
const wildcard = pino({ level: 'info', redact: { paths: wildcardPaths, censor: REDACT_CENSOR } }, nullStream)
const silent = pino({ level: 'warn' }, nullStream)
const logLine = (log: pino.Logger) => (i: number) => {
  if (log.isLevelEnabled('info')) log.info(accessLogFields(records[i & 63]!), 'request')
}

const hot: [string, number][] = [
  [
    'requestFinished (org label, 8 orgs x 20 endpoints)',
    nsPerOp(1_000_000, (i) => metrics.requestFinished(records[i & 63]!)),
  ],
  // what sluice calls per request forwarded once: the attempt's upstream time, then the finished request
  [
    'upstreamAttempt + requestFinished (org label, one attempt)',
    nsPerOp(1_000_000, (i) => {
      const r = records[i & 63]!
      metrics.upstreamAttempt(r.endpoint, r.upstreamSeconds)
      metrics.requestFinished(r)
    }),
  ],
  [
    'versioning decide (a supported version, counted by org)',
    nsPerOp(
      1_000_000,
      (i) => void versioning.decide('2.11', { id: records[i & 63]!.endpoint }, records[i & 63]!.instance),
    ),
  ],
  ['requestFinished (instanceLabel off)', nsPerOp(1_000_000, (i) => metricsNoOrg.requestFinished(records[i & 63]!))],
  ['upstream429', nsPerOp(1_000_000, (i) => metrics.upstream429(ENDPOINTS[i % 20]!, 'org1'))],
  [
    'access-log line as sluice writes it (accessLogLine, to a null stream)',
    nsPerOp(1_000_000, (i) => nullStream.write(accessLogLine(records[i & 63]!))),
  ],
  ['access-log line, pino, no redaction', nsPerOp(50_000, logLine(plain))],
  ['access-log line, pino, REDACT_PATHS + LOG_SERIALIZERS', nsPerOp(50_000, logLine(redacted))],
  [`access-log line, pino, ${wildcardPaths.length} wildcard paths (not used)`, nsPerOp(2_000, logLine(wildcard))],
  ['access-log line skipped (level warn)', nsPerOp(1_000_000, logLine(silent))],
]
console.log('\n## Hot path (median of 5 runs, ns per call)\n')
console.log('| call | ns |\n|---|---:|')
for (const [name, ns] of hot) console.log(`| ${name} | ${ns.toFixed(0)} |`)

const t0 = process.hrtime.bigint()
const body = (await metrics.scrape()).body
console.log(
  `\nscrape of that registry: ${(Number(process.hrtime.bigint() - t0) / 1e6).toFixed(1)} ms, ${body.length} bytes`,
)

// ── 2. cardinality
async function seriesAfter(input: MetricsSettingsInput, orgs: number): Promise<number> {
  const m = createMetrics(settings(input), { limiter: () => undefined, catalog })
  for (let o = 0; o < orgs; o++) {
    for (const endpoint of ENDPOINTS) {
      const org = `org${o}`
      m.upstreamAttempt(endpoint, 0.1)
      m.requestFinished(rec(org, endpoint))
      m.requestFinished(rec(org, endpoint, 'queue_timeout', 503))
      m.requestFinished({ ...rec(org, endpoint), retries: 1, upstream429s: 1 })
      m.upstream429(endpoint, org)
    }
  }
  const text = (await m.scrape()).body
  return text.split('\n').filter((l) => l.startsWith('sluice_')).length
}
console.log('\n## Series exported (sluice_* only; organisations x 20 endpoints, 2 outcomes, 429s and retries each)\n')
console.log(
  '| organisations | instanceLabel off | maxInstances 100 (default) | maxInstances 0 (no cap) |\n|---:|---:|---:|---:|',
)
for (const orgs of [1, 10, 100, 1000]) {
  const row = [
    await seriesAfter({ instanceLabel: false }, orgs),
    await seriesAfter({ maxInstances: 100 }, orgs),
    await seriesAfter({ maxInstances: 0 }, orgs),
  ]
  console.log(`| ${orgs} | ${row.join(' | ')} |`)
}
console.log('\n(+ the per-key gauges: 4 series per active key, read from the limiter at scrape time)')
