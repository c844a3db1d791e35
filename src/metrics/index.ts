import { Registry } from 'prom-client'
import type { Catalog } from '../catalog/types.js'
import type { KeyStatus, Limiter, LimiterObserver } from '../limiter/types.js'
import { joinedQueue, type RequestRecord } from '../record/record.js'
import { AppMetrics } from './app-metrics.js'
import type { BuildInfo } from './build-info.js'
import { KeyCounters } from './key-counters.js'
import { registerKeyGauges } from './key-gauges.js'
import { endpointLabeler } from './labels.js'
import { createLimiterMetrics } from './limiter-metrics.js'
import { AllOrgs, type OrgPolicy, TopOrgs } from './orgs.js'
import { createRegistry, registerOrgCount } from './registry.js'
import { RequestMetrics } from './request-metrics.js'
import type { MetricsSettings } from './settings.js'
import { DEFAULT_UPSTREAM, splitScoped } from '../upstreams/scope.js'

export type { MetricsSettings } from './settings.js'
export { metricsSettingsSchema } from './settings.js'
export { LIMITER_MODES } from './limiter-metrics.js'
export { EVENT_LOOP_SAMPLE_MS } from './registry.js'

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
  upstreamAttempt(endpoint: string, seconds: number, socketWaitSeconds?: number): void
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
  /** more upstreams than the CRM's: per-key series carry the `upstream` label (docs/observability.md, "Several upstreams") */
  readonly upstreamLabel?: boolean
  /** `learning.floor` (sluice_learned_limits_at_floor); 1 when not given */
  readonly learnedFloor?: number
}

/** Every metric of sluice on one registry, each family in its own module, made in the order the scrape lists them. */
export function createMetrics(settings: MetricsSettings, deps: MetricsDeps): SluiceMetrics {
  if (!settings.enabled) return disabledMetrics()
  const registry = createRegistry(settings.defaultMetrics, deps.build)
  const now = deps.now ?? Date.now
  const policy = (max: number): OrgPolicy =>
    max > 0 ? new TopOrgs(max, settings.rankIntervalMs, now()) : new AllOrgs()
  const orgs = settings.instanceLabel ? policy(settings.maxInstances) : undefined
  const endpointOf = endpointLabeler(deps.catalog.endpoints.map((e) => e.id))
  const withUpstream = deps.upstreamLabel === true
  /** the labels of a limiter key, whose instance is scoped by its upstream (src/upstreams/scope.ts); `upstream` '' when series carry none */
  const keyLabels = (endpointId: string, scoped: string): { endpoint: string; org: string; upstream: string } => {
    // no other upstream configured: no key is scoped, and the instance is taken as it is
    const { upstream, instance } = withUpstream ? splitScoped(scoped) : { upstream: DEFAULT_UPSTREAM, instance: scoped }
    return {
      endpoint: endpointOf(endpointId),
      org: orgs === undefined ? '' : orgs.label(instance),
      upstream: withUpstream ? upstream : '',
    }
  }

  if (orgs !== undefined) registerOrgCount(registry, orgs)
  const apps = new AppMetrics(registry, policy(settings.maxApps))
  const requests = new RequestMetrics(registry, {
    endpointOf,
    orgs,
    waitByOrg: orgs !== undefined && settings.queueWaitByOrg,
    withUpstream,
  })
  const redisOperations = deps.redisOperations ?? []
  const keys = new KeyCounters(registry, orgs !== undefined, redisOperations.length > 0, withUpstream)
  const observer = createLimiterMetrics(registry, { limiter: deps.limiter, redisOperations, keys, keyLabels })
  registerKeyGauges({
    registry,
    limiter: deps.limiter,
    labelNames: [...(orgs === undefined ? ['endpoint'] : ['endpoint', 'org']), ...(withUpstream ? ['upstream'] : [])],
    labelsOf: (key: KeyStatus) => {
      const { endpoint, org, upstream } = keyLabels(key.endpoint, key.instance)
      return { endpoint, ...(orgs === undefined ? {} : { org }), ...(withUpstream ? { upstream } : {}) }
    },
    keySeen: (labels) => keys.seen(labels.endpoint!, labels.org ?? '', labels.upstream ?? ''),
    ...(deps.learnedFloor === undefined ? {} : { learnedFloor: deps.learnedFloor }),
  })

  /** other areas' per-org series (versions), told of each organisation that lost its slot */
  const droppedListeners: ((org: string) => void)[] = []
  /** Re-ranks apps and organisations when due and drops the series of those that lost their slot; run before every scrape. */
  const rerank = (): void => {
    apps.rerank(now())
    if (orgs === undefined) return
    const dropped = orgs.rerankIfDue(now())
    requests.dropOrgs(dropped)
    keys.dropOrgs(dropped)
    for (const org of dropped) for (const listener of droppedListeners) listener(org)
  }

  return {
    registry,
    observer,
    requestFinished(record) {
      const queued = joinedQueue(record.outcome)
      const counted = requests.requestFinished(record, queued)
      if (record.retries > 0)
        keys.retried(
          counted.endpoint,
          counted.org,
          record.retries,
          withUpstream ? (record.upstream ?? DEFAULT_UPSTREAM) : '',
        )
      apps.requestFinished(record, queued)
    },
    upstream429(endpointId, instance) {
      const { endpoint, org, upstream } = keyLabels(endpointId, instance)
      keys.upstream429(endpoint, org, upstream)
    },
    upstreamAttempt: (endpointId, seconds, socketWait) => requests.upstreamAttempt(endpointId, seconds, socketWait),
    permitHeld: (app) => apps.permitHeld(app),
    orgs:
      orgs === undefined
        ? undefined
        : { label: (instance) => orgs.label(instance), onDropped: (listener) => void droppedListeners.push(listener) },
    async scrape() {
      rerank()
      return { contentType: registry.contentType, body: await registry.metrics() }
    },
  }
}

/** Metrics off: an empty registry (other areas may still register on it) and calls that do nothing. */
function disabledMetrics(): SluiceMetrics {
  const registry = new Registry()
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
