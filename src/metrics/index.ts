import { collectDefaultMetrics, Counter, Gauge, Registry } from 'prom-client'
import type { Catalog } from '../catalog/types.js'
import type { KeyStatus, LimitChange, Limiter, LimiterMode, LimiterObserver, PermitKey } from '../limiter/types.js'
import type { Outcome, RequestRecord } from '../proxy/record.js'
import { QUEUE_WAIT_BUCKETS, REDIS_BUCKETS, REQUEST_BUCKETS, UPSTREAM_BUCKETS } from './buckets.js'
import { registerKeyGauges } from './key-gauges.js'
import { CellCounter, CellHistogram, ShapeCells, type CounterCell, type HistogramCell } from './cells.js'
import { codeLabel, endpointLabeler, LABELLED_METHODS, methodLabel, operationLabel, UNAUTHENTICATED_ORG, UNKNOWN_APP } from './labels.js'
import { AllOrgs, type OrgPolicy, TopOrgs } from './orgs.js'
import { readBuildInfo, type BuildInfo } from './build-info.js'
import type { MetricsSettings } from './settings.js'

export type { MetricsSettings } from './settings.js'
export { metricsSettingsSchema } from './settings.js'

/** The org label of an instance name, and who to tell when an organisation loses its own series. */
export interface OrgLabels {
  label(instance: string): string
  onDropped(listener: (org: string) => void): void
}

export interface SluiceMetrics {
  /** every metric of sluice; other areas (versioning) register their own metrics on it */
  readonly registry: Registry
  /** pass to the limiter backend: mode changes, Redis commands, lost leases */
  readonly observer: LimiterObserver
  /** Called once per request, when it is finished (answered or client gone). Cheap: a few Map lookups. */
  requestFinished(record: RequestRecord): void
  /** an upstream 429 was received (the request goes back into the queue); `endpoint` is the endpoint id */
  upstream429(endpoint: string, instance: string): void
  /** one attempt upstream is done (answered to the end, 429s included, or failed); `endpoint` is the endpoint id */
  upstreamAttempt(endpoint: string, seconds: number): void
  /**
   * A permit was granted to `app`; the function returned is called when it is given back (calls after
   * the first do nothing). Feeds sluice_app_permits_held: this replica's permits per app.
   */
  permitHeld(app: string): () => void
  /**
   * The org label of an instance, for other areas' per-org series (versions), and a hook called with
   * each organisation that lost its own series; undefined when series carry no org.
   */
  readonly orgs: OrgLabels | undefined
  /** the scrape: Prometheus text and its content type */
  scrape(): Promise<{ contentType: string; body: string }>
}

export interface MetricsDeps {
  /** the limiter once it exists (it is built with `observer`, so after the metrics); read at scrape time */
  readonly limiter: () => Limiter | undefined
  /** endpoints the catalog knows; any other endpoint id is labelled `unknown` */
  readonly catalog: Pick<Catalog, 'endpoints'>
  /** clock (ms) for re-ranking organisations; `Date.now` unless a test sets it */
  readonly now?: () => number
  /**
   * The Redis limiter's operations when the Redis backend is configured (else none): their error
   * counters and lease losses are exported at 0 before the first one happens.
   */
  readonly redisOperations?: readonly string[]
  /** what sluice_build_info reports; read from package.json and git when not given */
  readonly build?: BuildInfo
}

/** Every limiter mode, so the mode gauge has one series per mode (1 for the one in force). */
export const LIMITER_MODES: readonly LimiterMode[] = ['memory', 'redis', 'local', 'open', 'closed']

/** Outcomes whose request joined a queue: they feed the queue-wait histogram (not queue_full: it never waited). */
const QUEUED_OUTCOMES: ReadonlySet<Outcome | 'upstream_busy'> = new Set([
  'forwarded',
  'queue_timeout',
  'client_aborted',
  'upstream_error',
  'upstream_busy',
] as const)

const METHOD_NUMBERS: Readonly<Record<string, number>> = Object.fromEntries(LABELLED_METHODS.map((m, i) => [m, i + 1]))
/** 1-n for the methods that are their own label value, 0 for any other (they share the `other` label) */
const METHOD_INDEX = (method: string): number => METHOD_NUMBERS[method] ?? 0
/** the method's digit in a cell's number (status × METHOD_RADIX + method): sized by the list, so a method added to it cannot overflow into the status */
const METHOD_RADIX = LABELLED_METHODS.length + 1

/** how often the event-loop delay (nodejs_eventloop_lag_* metrics) is sampled */
export const EVENT_LOOP_SAMPLE_MS = 100

export function createMetrics(settings: MetricsSettings, deps: MetricsDeps): SluiceMetrics {
  const registry = new Registry()
  if (!settings.enabled) {
    return {
      registry,
      observer: {},
      requestFinished: () => {},
      upstream429: () => {},
      upstreamAttempt: () => {},
      permitHeld: () => () => {},
      orgs: undefined,
      scrape: async () => ({ contentType: registry.contentType, body: await registry.metrics() }),
    }
  }
  // The event-loop delay is sampled every 100 ms, not prom-client's default 10: at 10 ms the sampling
  // timer cost the proxy 7-11% of its throughput at 64 connections in three paired runs (bench/turns.ts,
  // 30 rounds each), at 100 ms nothing that showed. A stall still shows: it delays the next sample.
  if (settings.defaultMetrics) collectDefaultMetrics({ register: registry, eventLoopMonitoringPrecision: EVENT_LOOP_SAMPLE_MS })

  const build = deps.build ?? readBuildInfo()
  new Gauge({
    name: 'sluice_build_info',
    help: 'Always 1; the labels say which sluice this is: version (package.json), revision (git), node (Node.js version)',
    labelNames: ['version', 'revision', 'node'],
    registers: [registry],
  }).set({ version: build.version, revision: build.revision, node: build.node }, 1)

  const now = deps.now ?? Date.now
  const redisOperations = (deps.redisOperations ?? []).map(operationLabel)
  const withOrg = settings.instanceLabel
  const orgs: OrgPolicy =
    settings.maxInstances > 0 ? new TopOrgs(settings.maxInstances, settings.rankIntervalMs, now()) : new AllOrgs()
  const endpointOf = endpointLabeler(deps.catalog.endpoints.map((e) => e.id))
  const keyLabels = withOrg ? ['endpoint', 'org'] : ['endpoint']
  const waitByOrg = withOrg && settings.queueWaitByOrg

  // Per-request metrics: cells (plain numbers) bumped on the hot path, read by the registry at scrape time (cells.ts).
  const cellMetrics: { dropOrg(org: string): void }[] = []
  const counter = (name: string, help: string, labelNames: readonly string[]): CellCounter => {
    const metric = new CellCounter(name, help, labelNames, registry)
    cellMetrics.push(metric)
    return metric
  }
  const histogram = (name: string, help: string, buckets: readonly number[]): CellHistogram => {
    const metric = new CellHistogram(name, help, buckets, registry)
    cellMetrics.push(metric)
    return metric
  }

  /** Re-ranks the organisations when due and drops the series of those that lost their slot; run before every scrape. */
  let rerank = (): void => {}
  /** other areas' per-org series (versions), told of each organisation that lost its slot */
  const droppedListeners: ((org: string) => void)[] = []
  if (withOrg) {
    new Gauge({
      name: 'sluice_metrics_orgs',
      help: 'Organisations that have series of their own (metrics.maxInstances caps it; the rest are org="_other")',
      registers: [registry],
      collect() {
        this.set(orgs.ownCount)
      },
    })
  }

  // Per app (README "Apps: identity, access and keys"): the app label is bounded like org, by
  // metrics.maxApps, so apps that name themselves in a header cannot grow the series without end.
  const apps: OrgPolicy = settings.maxApps > 0 ? new TopOrgs(settings.maxApps, settings.rankIntervalMs, now()) : new AllOrgs()
  const appMetrics: { dropOrg(app: string): void }[] = []
  const appRequests = new CellCounter(
    'sluice_app_requests_total',
    'Requests finished, by calling app (app="_unknown": refused before the app was known), status code and outcome; 401/403 are app identity refusals',
    ['app', 'code', 'outcome'],
    registry,
  )
  const appQueueWait = new CellHistogram(
    'sluice_app_queue_wait_seconds',
    'Time spent waiting for permits, over every attempt, of requests that joined a queue, by calling app',
    QUEUE_WAIT_BUCKETS,
    registry,
  )
  appMetrics.push(appRequests, appQueueWait)
  // Permits this replica holds per app, kept by raw app name (bounded by the permits held) and
  // labelled at scrape time, so an app that loses its own series folds into `_other` at once.
  const heldByApp = new Map<string, number>()
  /** labels shown before: they stay at 0 while their app holds nothing, until it loses its own series */
  const heldShown = new Set<string>()
  new Gauge({
    name: 'sluice_app_permits_held',
    help: 'Permits this replica holds (requests in progress upstream), by calling app; sum over replicas for the whole',
    labelNames: ['app'],
    registers: [registry],
    collect() {
      const byLabel = new Map<string, number>()
      for (const label of heldShown) byLabel.set(label, 0)
      for (const [app, n] of heldByApp) {
        const label = apps.label(app)
        byLabel.set(label, (byLabel.get(label) ?? 0) + n)
      }
      this.reset()
      for (const [app, n] of byLabel) {
        heldShown.add(app)
        this.set({ app }, n)
      }
    },
  })
  const permitHeld = (app: string): (() => void) => {
    heldByApp.set(app, (heldByApp.get(app) ?? 0) + 1)
    let given = false
    return () => {
      if (given) return
      given = true
      const n = heldByApp.get(app)! - 1
      if (n === 0) heldByApp.delete(app)
      else heldByApp.set(app, n)
    }
  }

  const requests = counter(
    'sluice_requests_total',
    'Requests finished, by endpoint, method, status code the client got (0: it left first) and outcome',
    withOrg ? ['endpoint', 'method', 'code', 'outcome', 'org'] : ['endpoint', 'method', 'code', 'outcome'],
  )
  const requestDuration = histogram(
    'sluice_request_duration_seconds',
    'Time from arrival to the end of the answer, as the client saw it',
    REQUEST_BUCKETS,
  )
  const upstreamDuration = histogram(
    'sluice_upstream_duration_seconds',
    "The upstream's time per attempt sent (429s that are retried, failures and the final answer each count once)",
    UPSTREAM_BUCKETS,
  )
  const queueWait = histogram(
    'sluice_queue_wait_seconds',
    'Time spent waiting for permits, over every attempt, of requests that joined a queue',
    QUEUE_WAIT_BUCKETS,
  )
  const retries = counter('sluice_upstream_retries_total', 'Attempts sent again after an upstream 429', keyLabels)
  const upstream429s = counter('sluice_upstream_429_total', 'Upstream 429 answers received (never passed on to the client)', keyLabels)
  const leasesLost = counter(
    'sluice_lease_lost_total',
    'Permits whose Redis lease expired while the upstream request was still in progress',
    keyLabels,
  )
  const limitChanges = counter(
    'sluice_limit_changes_total',
    'Learned limits that went down (an upstream 429) or up (successes while saturated), counted when their whole number of permits changes',
    [...keyLabels, 'direction'],
  )
  const redisDuration = histogram(
    'sluice_redis_command_duration_seconds',
    'Redis commands and scripts of the limiter, by operation',
    REDIS_BUCKETS,
  )
  const redisErrors = counter('sluice_redis_errors_total', 'Redis commands and scripts of the limiter that failed, by operation', ['operation'])
  const modeChanges = new Counter({
    name: 'sluice_limiter_mode_changes_total',
    help: 'Changes of the limiter mode, by the mode entered',
    labelNames: ['mode'],
    registers: [registry],
  })
  // At 0 from the start, so the first event of each shows as an increase (docs/observability.md#alerts).
  for (const mode of LIMITER_MODES) modeChanges.inc({ mode }, 0)
  for (const op of redisOperations) {
    redisErrors.cellAtZero(op, { operation: op })
    redisDuration.cellByKey(op, { operation: op })
  }

  let observedMode: LimiterMode | undefined
  new Gauge({
    name: 'sluice_limiter_mode',
    help: 'The limiter mode in force: 1 for the active mode, 0 for the others',
    labelNames: ['mode'],
    registers: [registry],
    collect() {
      const mode = deps.limiter()?.mode() ?? observedMode
      for (const m of LIMITER_MODES) this.set({ mode: m }, m === mode ? 1 : 0)
    },
  })
  new Gauge({
    name: 'sluice_limiter_ready',
    help: '1 when the limiter can decide permits (as /readyz), else 0',
    registers: [registry],
    collect() {
      this.set(deps.limiter()?.ready() ? 1 : 0)
    },
  })

  registerKeyGauges({
    registry,
    limiter: deps.limiter,
    labelNames: keyLabels,
    labelsOf: withOrg
      ? (key: KeyStatus) => ({ endpoint: endpointOf(key.endpoint), org: orgs.label(key.instance) })
      : (key: KeyStatus) => ({ endpoint: endpointOf(key.endpoint) }),
    // A key the limiter holds gets its 429, retry and lost-lease series at 0 (at scrape time, off the
    // request path), so the first of each is an increase that rate() and increase() see.
    keySeen(labels) {
      const endpoint = labels.endpoint!
      const org = labels.org ?? ''
      keyCellAtZero(upstream429s, endpoint, org)
      keyCellAtZero(retries, endpoint, org)
      for (const direction of ['down', 'up'] as const) limitChanges.cellAtZero(`${endpoint}\n${org}\n${direction}`, withOrg ? { endpoint, org, direction } : { endpoint, direction }, org)
      if (redisOperations.length > 0) keyCellAtZero(leasesLost, endpoint, org)
    },
  })

  /** The cell of a per-key counter (retries, 429s, lost leases) for (endpoint, org). */
  const keyCell = (metric: CellCounter, endpoint: string, org: string): CounterCell => {
    const key = endpoint + '\n' + org
    return metric.find(key) ?? metric.cellByKey(key, withOrg ? { endpoint, org } : { endpoint }, org)
  }
  /** The same, exported even while it is 0 (docs/observability.md#metrics, "Counters start at 0"). */
  const keyCellAtZero = (metric: CellCounter, endpoint: string, org: string): void => {
    metric.cellAtZero(endpoint + '\n' + org, withOrg ? { endpoint, org } : { endpoint }, org)
  }

  const observer: LimiterObserver = {
    modeChanged(mode) {
      observedMode = mode
      modeChanges.inc({ mode })
    },
    redisCommand(operation, seconds, ok) {
      const op = operationLabel(operation)
      const duration = redisDuration.find(op) ?? redisDuration.cellByKey(op, { operation: op })
      duration.observe(seconds)
      if (!ok) (redisErrors.find(op) ?? redisErrors.cellByKey(op, { operation: op })).n++
    },
    leaseLost(key: PermitKey) {
      keyCell(leasesLost, endpointOf(key.endpoint), withOrg ? orgs.label(key.instance) : '').n++
    },
    limitChanged(key: PermitKey, change: LimitChange) {
      const endpoint = endpointOf(key.endpoint)
      const org = withOrg ? orgs.label(key.instance) : ''
      const direction = change.to < change.from ? 'down' : 'up'
      const id = `${endpoint}\n${org}\n${direction}`
      ;(limitChanges.find(id) ?? limitChanges.cellByKey(id, withOrg ? { endpoint, org, direction } : { endpoint, direction }, org)).n++
    },
  }

  // The counter cells a request touches, found without building a key string per request: first by
  // the endpoint label (for a catalog endpoint its id, the catalog's own string, whose hash V8 keeps;
  // labels are bounded, so this map is), then by the org, the outcome (a constant string) and a
  // number made of status and method. The outcome is a key of its own, not a digit of that number,
  // so no outcome added later can share another's cell. Dropped when organisations are re-ranked,
  // since that drops series.
  interface EndpointCells {
    readonly label: string
    readonly total: HistogramCell
    upstream: HistogramCell | undefined
    readonly counts: Map<string, ShapeCells>
  }
  /** the 503 outcomes the alerts watch: their series exist at 0 once an (endpoint, org) is seen */
  const SHED_OUTCOMES = ['queue_full', 'queue_timeout'] as const
  const cellsByEndpoint = new Map<string, EndpointCells>()

  const rerankApps = (): void => {
    const dropped = apps.rerankIfDue(now())
    for (const app of dropped) for (const metric of appMetrics) metric.dropOrg(app)
    for (const app of dropped) appCells.delete(app)
    for (const app of dropped) heldShown.delete(app)
  }
  if (!withOrg) rerank = rerankApps
  if (withOrg) {
    rerank = () => {
      rerankApps()
      const dropped = orgs.rerankIfDue(now())
      if (dropped.length === 0) return
      for (const org of dropped) for (const metric of cellMetrics) metric.dropOrg(org)
      for (const org of dropped) for (const listener of droppedListeners) listener(org)
      cellsByEndpoint.clear()
    }
  }

  function endpointCells(endpointId: string): EndpointCells {
    const label = endpointOf(endpointId)
    let cells = cellsByEndpoint.get(label)
    if (cells === undefined) {
      cells = { label, total: requestDuration.cellByKey(label, { endpoint: label }), upstream: undefined, counts: new Map() }
      cellsByEndpoint.set(label, cells)
    }
    return cells
  }

  function requestCounter(cells: EndpointCells, record: RequestRecord, org: string): CounterCell {
    let byShape = cells.counts.get(org)
    if (byShape === undefined) {
      cells.counts.set(org, (byShape = new ShapeCells()))
      // requests that did not authenticate never queue: no shed series for them
      if (org !== UNAUTHENTICATED_ORG) shedSeriesAtZero(cells.label, org)
    }
    const shape = record.status * METHOD_RADIX + METHOD_INDEX(record.method)
    let count = byShape.find(record.outcome, shape)
    if (count === undefined) {
      // keyed by the label values themselves: two odd methods are one `other` series, not two
      const method = methodLabel(record.method)
      const code = codeLabel(record.status)
      const endpoint = cells.label
      const requestKey = endpoint + '\n' + method + '\n' + code + '\n' + record.outcome + '\n' + org
      const labels: Record<string, string> = { endpoint, method, code, outcome: record.outcome }
      if (withOrg) labels.org = org
      count = requests.cellByKey(requestKey, labels, org)
      byShape.add(record.outcome, shape, count)
    }
    return count
  }

  /** The queue_full / queue_timeout series of an endpoint (not `unknown`, `unmatched`) at 0, the first time an org uses it. */
  function shedSeriesAtZero(endpoint: string, org: string): void {
    const space = endpoint.indexOf(' ')
    if (space < 0) return // `unknown`, `unmatched`: no one method, and they are not queued per endpoint
    const method = methodLabel(endpoint.slice(0, space))
    for (const outcome of SHED_OUTCOMES) {
      const key = endpoint + '\n' + method + '\n503\n' + outcome + '\n' + org
      const labels: Record<string, string> = { endpoint, method, code: '503', outcome }
      if (withOrg) labels.org = org
      requests.cellAtZero(key, labels, org)
    }
  }

  // Per app, the cells by outcome and status, so a request builds no key string.
  const appCells = new Map<string, ShapeCells>()
  function appRequestCell(app: string, record: RequestRecord): CounterCell {
    let byShape = appCells.get(app)
    if (byShape === undefined) appCells.set(app, (byShape = new ShapeCells()))
    let cell = byShape.find(record.outcome, record.status)
    if (cell === undefined) {
      const code = codeLabel(record.status)
      cell = appRequests.cellByKey(app + '\n' + code + '\n' + record.outcome, { app, code, outcome: record.outcome }, app)
      byShape.add(record.outcome, record.status, cell)
    }
    return cell
  }

  function requestFinished(record: RequestRecord): void {
    const cells = endpointCells(record.endpoint)
    const endpoint = cells.label
    // A request that did not authenticate (app identity on) takes no org slot: it may name anything.
    const org = !withOrg ? '' : record.unauthenticated === true ? UNAUTHENTICATED_ORG : orgs.forRequest(record.instance)
    requestCounter(cells, record, org).n++

    cells.total.observe(record.totalSeconds)
    if (QUEUED_OUTCOMES.has(record.outcome)) {
      const key = waitByOrg ? endpoint + '\n' + org : endpoint
      const wait = queueWait.find(key) ?? queueWait.cellByKey(key, waitByOrg ? { endpoint, org } : { endpoint }, waitByOrg ? org : '')
      wait.observe(record.queueSeconds)
    }
    if (record.retries > 0) keyCell(retries, endpoint, org).n += record.retries

    const app = record.app === undefined ? UNKNOWN_APP : apps.forRequest(record.app)
    appRequestCell(app, record).n++
    if (QUEUED_OUTCOMES.has(record.outcome)) (appQueueWait.find(app) ?? appQueueWait.cellByKey(app, { app }, app)).observe(record.queueSeconds)
  }

  return {
    registry,
    observer,
    requestFinished,
    permitHeld,
    upstream429(endpointId, instance) {
      keyCell(upstream429s, endpointOf(endpointId), withOrg ? orgs.label(instance) : '').n++
    },
    orgs: withOrg
      ? {
          label: (instance) => orgs.label(instance),
          onDropped: (listener) => void droppedListeners.push(listener),
        }
      : undefined,
    upstreamAttempt(endpointId, seconds) {
      const cells = endpointCells(endpointId)
      cells.upstream ??= upstreamDuration.cellByKey(cells.label, { endpoint: cells.label })
      cells.upstream.observe(seconds)
    },
    async scrape() {
      rerank()
      return { contentType: registry.contentType, body: await registry.metrics() }
    },
  }
}
