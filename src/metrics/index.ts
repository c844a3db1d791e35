import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client'
import type { Catalog } from '../catalog/types.js'
import type { KeyStatus, Limiter, LimiterMode, LimiterObserver, PermitKey } from '../limiter/types.js'
import type { Outcome, RequestRecord } from '../proxy/record.js'
import { QUEUE_WAIT_BUCKETS, REDIS_BUCKETS, REQUEST_BUCKETS, UPSTREAM_BUCKETS } from './buckets.js'
import { registerKeyGauges } from './key-gauges.js'
import { LabelCache } from './label-cache.js'
import { codeLabel, endpointLabeler, methodLabel, operationLabel } from './labels.js'
import { AllOrgs, type OrgPolicy, TopOrgs } from './orgs.js'
import type { MetricsSettings } from './settings.js'

export type { MetricsSettings } from './settings.js'
export { metricsSettingsSchema } from './settings.js'

export interface SluiceMetrics {
  /** every metric of sluice; other areas (versioning) register their own metrics on it */
  readonly registry: Registry
  /** pass to the limiter backend: mode changes, Redis commands, lost leases */
  readonly observer: LimiterObserver
  /** Called once per request, when it is finished (answered or client gone). Cheap: a few Map lookups. */
  requestFinished(record: RequestRecord): void
  /** an upstream 429 was received (the request goes back into the queue); `endpoint` is the endpoint id */
  upstream429(endpoint: string, instance: string): void
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

interface PerKey {
  readonly queueWait: { observe(value: number): void }
  readonly retries: { inc(value?: number): void }
}
interface PerEndpoint {
  readonly total: { observe(value: number): void }
  readonly upstream: { observe(value: number): void }
}

export function createMetrics(settings: MetricsSettings, deps: MetricsDeps): SluiceMetrics {
  const registry = new Registry()
  if (!settings.enabled) {
    return {
      registry,
      observer: {},
      requestFinished: () => {},
      upstream429: () => {},
      scrape: async () => ({ contentType: registry.contentType, body: await registry.metrics() }),
    }
  }
  if (settings.defaultMetrics) collectDefaultMetrics({ register: registry })

  const now = deps.now ?? Date.now
  const withOrg = settings.instanceLabel
  const orgs: OrgPolicy =
    settings.maxInstances > 0 ? new TopOrgs(settings.maxInstances, settings.rankIntervalMs, now()) : new AllOrgs()
  const endpointOf = endpointLabeler(deps.catalog.endpoints.map((e) => e.id))
  const keyLabels = withOrg ? ['endpoint', 'org'] : ['endpoint']

  const requestChildren = new LabelCache<{ inc(): void }>()
  const keyChildren = new LabelCache<PerKey>()
  const upstream429Children = new LabelCache<{ inc(): void }>()
  const leaseChildren = new LabelCache<{ inc(): void }>()

  if (withOrg) {
    // Registered before every per-org metric on purpose: prom-client reads each metric in registry
    // order within one tick, so this synchronous collect re-ranks the organisations (and drops the
    // series of those that lost their slot) before any per-org metric is read for the same scrape.
    new Gauge({
      name: 'sluice_metrics_orgs',
      help: 'Organisations that have series of their own (metrics.maxInstances caps it; the rest are org="_other")',
      registers: [registry],
      collect() {
        for (const org of orgs.rerankIfDue(now())) {
          requestChildren.dropOrg(org)
          keyChildren.dropOrg(org)
          upstream429Children.dropOrg(org)
          leaseChildren.dropOrg(org)
        }
        this.set(orgs.ownCount)
      },
    })
  }

  const requests = new Counter({
    name: 'sluice_requests_total',
    help: 'Requests finished, by endpoint, method, status code the client got (0: it left first) and outcome',
    labelNames: withOrg ? ['endpoint', 'method', 'code', 'outcome', 'org'] : ['endpoint', 'method', 'code', 'outcome'],
    registers: [registry],
  })
  const requestDuration = new Histogram({
    name: 'sluice_request_duration_seconds',
    help: 'Time from arrival to the end of the answer, as the client saw it',
    labelNames: ['endpoint'],
    buckets: REQUEST_BUCKETS,
    registers: [registry],
  })
  const upstreamDuration = new Histogram({
    name: 'sluice_upstream_duration_seconds',
    help: "The upstream's time on the final attempt of forwarded requests",
    labelNames: ['endpoint'],
    buckets: UPSTREAM_BUCKETS,
    registers: [registry],
  })
  const queueWait = new Histogram({
    name: 'sluice_queue_wait_seconds',
    help: 'Time spent waiting for permits, over every attempt, of requests that joined a queue',
    labelNames: keyLabels,
    buckets: QUEUE_WAIT_BUCKETS,
    registers: [registry],
  })
  const retries = new Counter({
    name: 'sluice_upstream_retries_total',
    help: 'Attempts sent again after an upstream 429',
    labelNames: keyLabels,
    registers: [registry],
  })
  const upstream429s = new Counter({
    name: 'sluice_upstream_429_total',
    help: 'Upstream 429 answers received (never passed on to the client)',
    labelNames: keyLabels,
    registers: [registry],
  })
  const leasesLost = new Counter({
    name: 'sluice_lease_lost_total',
    help: 'Permits whose Redis lease expired while the upstream request was still in progress',
    labelNames: keyLabels,
    registers: [registry],
  })
  const redisDuration = new Histogram({
    name: 'sluice_redis_command_duration_seconds',
    help: 'Redis commands and scripts of the limiter, by operation',
    labelNames: ['operation'],
    buckets: REDIS_BUCKETS,
    registers: [registry],
  })
  const redisErrors = new Counter({
    name: 'sluice_redis_errors_total',
    help: 'Redis commands and scripts of the limiter that failed, by operation',
    labelNames: ['operation'],
    registers: [registry],
  })
  const modeChanges = new Counter({
    name: 'sluice_limiter_mode_changes_total',
    help: 'Changes of the limiter mode, by the mode entered',
    labelNames: ['mode'],
    registers: [registry],
  })

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

  const endpointChildren = new Map<string, PerEndpoint>()
  const redisChildren = new Map<string, { duration: { observe(v: number): void }; errors: { inc(): void } }>()

  /** Cached child of a per-key counter (upstream 429s, lost leases). */
  const keyCounter = (cache: LabelCache<{ inc(): void }>, counter: Counter, endpoint: string, org: string) => {
    const key = endpoint + '\n' + org
    const hit = cache.get(key)
    if (hit) return hit
    const labels = withOrg ? [endpoint, org] : [endpoint]
    return cache.set(key, org, counter.labels(...labels), () => counter.remove(...labels))
  }

  registerKeyGauges({
    registry,
    limiter: deps.limiter,
    labelNames: keyLabels,
    labelsOf: withOrg
      ? (key: KeyStatus) => ({ endpoint: endpointOf(key.endpoint), org: orgs.label(key.instance) })
      : (key: KeyStatus) => ({ endpoint: endpointOf(key.endpoint) }),
  })

  const observer: LimiterObserver = {
    modeChanged(mode) {
      observedMode = mode
      modeChanges.inc({ mode })
    },
    redisCommand(operation, seconds, ok) {
      const op = operationLabel(operation)
      let child = redisChildren.get(op)
      if (!child) {
        child = { duration: redisDuration.labels(op), errors: redisErrors.labels(op) }
        redisChildren.set(op, child)
      }
      child.duration.observe(seconds)
      if (!ok) child.errors.inc()
    },
    leaseLost(key: PermitKey) {
      const org = withOrg ? orgs.label(key.instance) : ''
      keyCounter(leaseChildren, leasesLost, endpointOf(key.endpoint), org).inc()
    },
  }

  function requestFinished(record: RequestRecord): void {
    const endpoint = endpointOf(record.endpoint)
    const org = withOrg ? orgs.forRequest(record.instance) : ''

    const requestKey = endpoint + '\n' + record.method + '\n' + record.status + '\n' + record.outcome + '\n' + org
    let counter = requestChildren.get(requestKey)
    if (!counter) {
      const base = [endpoint, methodLabel(record.method), codeLabel(record.status), record.outcome]
      const labels = withOrg ? [...base, org] : base
      counter = requestChildren.set(requestKey, org, requests.labels(...labels), () => requests.remove(...labels))
    }
    counter.inc()

    let perEndpoint = endpointChildren.get(endpoint)
    if (!perEndpoint) {
      perEndpoint = { total: requestDuration.labels(endpoint), upstream: upstreamDuration.labels(endpoint) }
      endpointChildren.set(endpoint, perEndpoint)
    }
    perEndpoint.total.observe(record.totalSeconds)
    if (record.outcome === 'forwarded' || record.upstreamSeconds > 0) perEndpoint.upstream.observe(record.upstreamSeconds)

    const queued = QUEUED_OUTCOMES.has(record.outcome)
    if (!queued && record.retries === 0) return
    const key = endpoint + '\n' + org
    let perKey = keyChildren.get(key)
    if (!perKey) {
      const labels = withOrg ? [endpoint, org] : [endpoint]
      perKey = keyChildren.set(key, org, { queueWait: queueWait.labels(...labels), retries: retries.labels(...labels) }, () => {
        queueWait.remove(...labels)
        retries.remove(...labels)
      })
    }
    if (queued) perKey.queueWait.observe(record.queueSeconds)
    if (record.retries > 0) perKey.retries.inc(record.retries)
  }

  return {
    registry,
    observer,
    requestFinished,
    upstream429(endpointId, instance) {
      const org = withOrg ? orgs.label(instance) : ''
      keyCounter(upstream429Children, upstream429s, endpointOf(endpointId), org).inc()
    },
    async scrape() {
      return { contentType: registry.contentType, body: await registry.metrics() }
    },
  }
}
