import { Counter, Gauge, type Registry } from 'prom-client'
import type { Limiter, LimiterMode, LimiterObserver } from '../limiter/types.js'
import { QUEUE_WAIT_BUCKETS, REDIS_BUCKETS } from './buckets.js'
import { CellCounter, CellHistogram } from './cells.js'
import type { KeyCounters } from './key-counters.js'
import { operationLabel } from './labels.js'

/** Every limiter mode, so the mode gauge has one series per mode (1 for the one in force). */
export const LIMITER_MODES: readonly LimiterMode[] = ['memory', 'redis', 'local', 'open', 'closed']

export interface LimiterMetricsOptions {
  /** the limiter once it exists (it is built with the observer, so after the metrics); read at scrape time */
  readonly limiter: () => Limiter | undefined
  /** the Redis limiter's operations (else none): their error counters are exported at 0 from the start */
  readonly redisOperations: readonly string[]
  /** the per-key counters that lost leases and limit changes count in */
  readonly keys: KeyCounters
  /** the (endpoint, org) labels of a limiter key */
  readonly keyLabels: (
    endpointId: string,
    instance: string,
  ) => { readonly endpoint: string; readonly org: string; readonly upstream: string }
}

/**
 * The limiter's own metrics: Redis commands (time and errors, by operation), the mode in force and
 * its changes, readiness; and the observer the limiter reports its events to.
 */
// eslint-disable-next-line max-lines-per-function -- one declaration per metric, in the order docs/observability.md lists them
export function createLimiterMetrics(registry: Registry, options: LimiterMetricsOptions): LimiterObserver {
  const redisDuration = new CellHistogram(
    'sluice_redis_command_duration_seconds',
    'Redis commands and scripts of the limiter, by operation',
    REDIS_BUCKETS,
    registry,
  )
  const redisErrors = new CellCounter(
    'sluice_redis_errors_total',
    'Redis commands and scripts of the limiter that failed, by operation',
    ['operation'],
    registry,
  )
  const modeChanges = new Counter({
    name: 'sluice_limiter_mode_changes_total',
    help: 'Changes of the limiter mode, by the mode entered',
    labelNames: ['mode'],
    registers: [registry],
  })
  // At 0 from the start, so the first event of each shows as an increase (docs/observability.md#alerts).
  for (const mode of LIMITER_MODES) modeChanges.inc({ mode }, 0)
  for (const op of options.redisOperations.map(operationLabel)) {
    redisErrors.cellAtZero(op, { operation: op })
    redisDuration.cellByKey(op, { operation: op })
  }

  // rates (docs/redis-limiter.md, "Rates"): by endpoint only, so a series per rated endpoint, none for the others
  const rateWait = new CellHistogram(
    'sluice_rate_wait_seconds',
    'Time a request waited for its start under a rate, after its permit, by endpoint',
    QUEUE_WAIT_BUCKETS,
    registry,
  )
  const rateLearned = new CellCounter(
    'sluice_rate_learned_total',
    "What upstream answers taught about a rate, by endpoint and kind: 'rate' (a published rate), 'estimated' (found from 429s and Retry-After) or 'hold' (a Retry-After, a spent quota)",
    ['endpoint', 'kind'],
    registry,
  )
  // set when taught, never collected: nothing at scrape time per key
  const rateLearnedValue = new Gauge({
    name: 'sluice_rate_learned_per_second',
    help: 'The rate last published or learned for the endpoint (any organisation), in requests per second',
    labelNames: ['endpoint'],
    registers: [registry],
  })

  let observedMode: LimiterMode | undefined
  new Gauge({
    name: 'sluice_limiter_mode',
    help: 'The limiter mode in force: 1 for the active mode, 0 for the others',
    labelNames: ['mode'],
    registers: [registry],
    collect() {
      const mode = options.limiter()?.mode() ?? observedMode
      for (const m of LIMITER_MODES) this.set({ mode: m }, m === mode ? 1 : 0)
    },
  })
  new Gauge({
    name: 'sluice_limiter_ready',
    help: '1 when the limiter is ready (as /readyz): 0 once it shuts down, or in fallback closed before Redis first answered',
    registers: [registry],
    collect() {
      this.set(options.limiter()?.ready() ? 1 : 0)
    },
  })

  const { keys, keyLabels } = options
  return {
    modeChanged(mode) {
      observedMode = mode
      modeChanges.inc({ mode })
    },
    redisCommand(operation, seconds, ok) {
      const op = operationLabel(operation)
      ;(redisDuration.find(op) ?? redisDuration.cellByKey(op, { operation: op })).observe(seconds)
      if (!ok) (redisErrors.find(op) ?? redisErrors.cellByKey(op, { operation: op })).n++
    },
    leaseLost(key) {
      const { endpoint, org, upstream } = keyLabels(key.endpoint, key.instance)
      keys.leaseLost(endpoint, org, upstream)
    },
    limitChanged(key, change) {
      const { endpoint, org, upstream } = keyLabels(key.endpoint, key.instance)
      keys.limitChanged(endpoint, org, change.to < change.from ? 'down' : 'up', upstream)
    },
    rateWaited(key, seconds) {
      const { endpoint } = keyLabels(key.endpoint, key.instance)
      ;(rateWait.find(endpoint) ?? rateWait.cellByKey(endpoint, { endpoint })).observe(seconds)
    },
    rateLearned(key, kind, rate) {
      const { endpoint } = keyLabels(key.endpoint, key.instance)
      rateLearned.cell({ endpoint, kind }).n++
      if (rate !== undefined) rateLearnedValue.set({ endpoint }, (rate.requests * 1000) / rate.windowMs)
    },
  }
}
