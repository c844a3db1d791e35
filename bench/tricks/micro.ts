/**
 * The hot-path tricks of the access log and the metrics, each beside its plain version, in one
 * process (bench/tricks/index.ts prints the table). The plain versions are what the code would be
 * without the trick: pino's `log.info(obj, msg)` with sluice's logger settings (as src/app.ts makes
 * it), prom-client's own `observe(labels, v)` and `inc(labels)`.
 */
import pino from 'pino'
import { Counter, Histogram, Registry } from 'prom-client'
import {
  accessLogFields,
  accessLogLine,
  LOG_SERIALIZERS,
  REDACT_CENSOR,
  REDACT_PATHS,
} from '../../src/log/access-log.js'
import { lazyChildLoggerFactory } from '../../src/log/request-logger.js'
import { maskSecretText } from '../../src/log/secret-text.js'
import { QUEUE_WAIT_BUCKETS, REQUEST_BUCKETS, UPSTREAM_BUCKETS } from '../../src/metrics/buckets.js'
import { CellCounter, CellHistogram, type CounterCell, type HistogramCell } from '../../src/metrics/cells.js'
import { createMetrics } from '../../src/metrics/index.js'
import { codeLabel, endpointLabeler, methodLabel, UNKNOWN_APP } from '../../src/metrics/labels.js'
import { TopOrgs } from '../../src/metrics/orgs.js'
import { metricsSettingsSchema } from '../../src/metrics/settings.js'
import { joinedQueue, type Outcome, type RequestRecord } from '../../src/record/record.js'
import type { Pair } from './measure.js'

const ENDPOINTS = Array.from({ length: 20 }, (_, i) => `GET /resource${i}/{id}`)
const catalog = {
  endpoints: ENDPOINTS.map((id) => ({
    id,
    method: 'GET',
    template: id.slice(4),
    limit: 5,
    limitSource: 'published' as const,
  })),
}
const endpointOf = endpointLabeler(ENDPOINTS)
const OUTCOMES: readonly Outcome[] = ['forwarded', 'forwarded', 'forwarded', 'forwarded', 'queue_timeout', 'coalesced']

/** 64 finished requests: 8 organisations × 20 endpoints, three apps, mostly forwarded 200s. */
const RECORDS: readonly RequestRecord[] = Array.from({ length: 64 }, (_, i) => {
  const outcome = OUTCOMES[i % OUTCOMES.length]!
  return {
    requestId: 'a3f1c9e2-5b7d-4c1e-9f0a-1b2c3d4e5f60',
    method: i % 9 === 0 ? 'HEAD' : 'GET',
    endpoint: ENDPOINTS[i % 20]!,
    template: ENDPOINTS[i % 20]!.slice(4),
    instance: `org${i % 8}`,
    app: ['donor-sync', 'web', 'batch'][i % 3],
    status: outcome === 'queue_timeout' ? 503 : i % 7 === 0 ? 404 : 200,
    outcome,
    version: '2.11',
    upstreamVersion: '2.11',
    totalSeconds: 0.01 + (i % 13) * 0.037,
    queueSeconds: (i % 5) * 0.004,
    upstreamSeconds: 0.01 + (i % 11) * 0.03,
    retries: 0,
    upstream429s: 0,
  }
})
const rec = (i: number): RequestRecord => RECORDS[i & 63]!

/** Keeps what the lines weigh, so no line can be optimised away; the write itself is the same for both. */
let kept = 0
const sink = (line: string): void => void (kept += line.length)
export const keptChars = (): number => kept
/** the last object made, kept for the same reason */
const last: unknown[] = [undefined]
const keep = (made: unknown): void => void (last[0] = made)

/** (a) the access line: formatted by hand, or by pino with the logger sluice makes (redaction, serializers, masking). */
function accessLinePair(): Pair {
  const log = pino(
    { level: 'info', redact: { paths: REDACT_PATHS, censor: REDACT_CENSOR }, serializers: LOG_SERIALIZERS },
    { write: (line: string) => sink(maskSecretText(line)) },
  )
  return {
    name: 'access-log line: `accessLogLine` (by hand) vs pino `log.info(accessLogFields(r), "request")`',
    perRequest: 1,
    trick: (i) => sink(accessLogLine(rec(i))),
    plain: (i) => log.info(accessLogFields(rec(i)), 'request'),
  }
}

/**
 * The request's logger, which Fastify makes for every request and the proxy seldom writes to (the
 * access line goes through the root logger): made on its first line (src/log/request-logger.ts),
 * or a pino child at once, as Fastify's default `childLoggerFactory` does.
 */
function requestLoggerPair(): Pair {
  const log = pino(
    { level: 'info', redact: { paths: REDACT_PATHS, censor: REDACT_CENSOR }, serializers: LOG_SERIALIZERS },
    { write: (line: string) => sink(maskSecretText(line)) },
  )
  return {
    name: 'request logger: made on its first line (`lazyChildLoggerFactory`) vs pino `log.child({ reqId })`, no line written',
    perRequest: 1,
    trick: (i) => keep(lazyChildLoggerFactory(log, { reqId: rec(i).requestId }, {})),
    plain: (i) => keep(log.child({ reqId: rec(i).requestId }, {})),
  }
}

/** (b) one histogram observation: a cell found by the endpoint label, or prom-client's `observe(labels, v)`. */
function histogramPair(): Pair {
  const ours = new CellHistogram('x_seconds', 'x', REQUEST_BUCKETS, new Registry())
  const cells = new Map<string, HistogramCell>(ENDPOINTS.map((e) => [e, ours.cellByKey(e, { endpoint: e })]))
  const theirs = new Histogram({
    name: 'x_seconds',
    help: 'x',
    labelNames: ['endpoint'],
    buckets: REQUEST_BUCKETS,
    registers: [],
  })
  return {
    name: 'histogram observation: cell (`src/metrics/cells.ts`) vs prom-client `Histogram.observe({ endpoint }, v)`',
    perRequest: 3,
    trick: (i) => cells.get(endpointOf(rec(i).endpoint))!.observe(rec(i).totalSeconds),
    plain: (i) => theirs.observe({ endpoint: endpointOf(rec(i).endpoint) }, rec(i).totalSeconds),
  }
}

/**
 * (c) one request counted in sluice_requests_total: its cell found through Maps by endpoint label,
 * org, status, outcome and method label, as src/metrics/request-metrics.ts finds it, or
 * prom-client's `inc(labels)`. The org is the instance here on both sides (the org policy is the same).
 */
function counterPair(): Pair {
  const ours = new CellCounter('y_total', 'y', ['endpoint', 'method', 'code', 'outcome', 'org'], new Registry())
  type Counts = Map<number, Map<string, Map<string, CounterCell>>>
  const byEndpoint = new Map<string, Map<string, Counts>>()
  const cellOf = (r: RequestRecord): CounterCell => {
    const endpoint = endpointOf(r.endpoint)
    let byOrg = byEndpoint.get(endpoint)
    if (byOrg === undefined) byEndpoint.set(endpoint, (byOrg = new Map<string, Counts>()))
    let counts = byOrg.get(r.instance)
    if (counts === undefined) byOrg.set(r.instance, (counts = new Map<number, Map<string, Map<string, CounterCell>>>()))
    let byOutcome = counts.get(r.status)
    if (byOutcome === undefined) counts.set(r.status, (byOutcome = new Map<string, Map<string, CounterCell>>()))
    let byMethod = byOutcome.get(r.outcome)
    if (byMethod === undefined) byOutcome.set(r.outcome, (byMethod = new Map<string, CounterCell>()))
    const method = methodLabel(r.method)
    let cell = byMethod.get(method)
    if (cell === undefined) {
      const labels = { endpoint, method, code: codeLabel(r.status), outcome: r.outcome, org: r.instance }
      byMethod.set(method, (cell = ours.cell(labels)))
    }
    return cell
  }
  const theirs = new Counter({
    name: 'y_total',
    help: 'y',
    labelNames: ['endpoint', 'method', 'code', 'outcome', 'org'],
    registers: [],
  })
  return {
    name: 'request counter: cell by nested Maps vs prom-client `Counter.inc({ endpoint, method, code, outcome, org })`',
    perRequest: 2,
    trick: (i) => cellOf(rec(i)).n++,
    plain: (i) => {
      const r = rec(i)
      theirs.inc({
        endpoint: endpointOf(r.endpoint),
        method: methodLabel(r.method),
        code: codeLabel(r.status),
        outcome: r.outcome,
        org: r.instance,
      })
    },
  }
}

/**
 * (b) and (c) together, as a request sent once pays them: sluice's `upstreamAttempt` +
 * `requestFinished`, or the same series kept by prom-client's own metrics (same org and app policy).
 */
function wholeRequestPair(): Pair {
  const settings = metricsSettingsSchema.parse({ defaultMetrics: false })
  const metrics = createMetrics(settings, { limiter: () => undefined, catalog })
  const registers: Registry[] = []
  const orgs = new TopOrgs(settings.maxInstances, settings.rankIntervalMs, Date.now())
  const apps = new TopOrgs(settings.maxApps, settings.rankIntervalMs, Date.now())
  const requests = new Counter({
    name: 'r_total',
    help: 'r',
    labelNames: ['endpoint', 'method', 'code', 'outcome', 'org'],
    registers,
  })
  const appRequests = new Counter({ name: 'a_total', help: 'a', labelNames: ['app', 'code', 'outcome'], registers })
  const histogram = (name: string, label: string, buckets: number[]): Histogram =>
    new Histogram({ name, help: name, labelNames: [label], buckets, registers })
  const total = histogram('t_seconds', 'endpoint', REQUEST_BUCKETS)
  const upstream = histogram('u_seconds', 'endpoint', UPSTREAM_BUCKETS)
  const wait = histogram('w_seconds', 'endpoint', QUEUE_WAIT_BUCKETS)
  const appWait = histogram('aw_seconds', 'app', QUEUE_WAIT_BUCKETS)
  return {
    name: 'a request sent once: `upstreamAttempt` + `requestFinished` vs the same with prom-client `inc`/`observe`',
    perRequest: 1,
    trick: (i) => {
      const r = rec(i)
      metrics.upstreamAttempt(r.endpoint, r.upstreamSeconds)
      metrics.requestFinished(r)
    },
    plain: (i) => {
      const r = rec(i)
      const endpoint = endpointOf(r.endpoint)
      upstream.observe({ endpoint }, r.upstreamSeconds)
      const org = orgs.forRequest(r.instance)
      const code = codeLabel(r.status)
      requests.inc({ endpoint, method: methodLabel(r.method), code, outcome: r.outcome, org })
      total.observe({ endpoint }, r.totalSeconds)
      if (joinedQueue(r.outcome)) wait.observe({ endpoint }, r.queueSeconds)
      const app = r.app === undefined ? UNKNOWN_APP : apps.forRequest(r.app)
      appRequests.inc({ app, code, outcome: r.outcome })
      if (joinedQueue(r.outcome)) appWait.observe({ app }, r.queueSeconds)
    },
  }
}

export const microPairs = (): Pair[] => [
  accessLinePair(),
  requestLoggerPair(),
  histogramPair(),
  counterPair(),
  wholeRequestPair(),
]
