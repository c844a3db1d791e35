import type { Registry } from 'prom-client'
import type { AcquireOptions, Limiter, LimiterMode, LimiterStatus, Permit, PermitKey } from '../limiter/types.js'
import { WaitTooLongError } from './errors.js'
import { WaitForecasts } from './estimate.js'
import { ForecastMetrics } from './metrics.js'
import type { FailFastSettings } from './settings.js'

export { failFastSettingsSchema, type FailFastSettings } from './settings.js'
export { WaitTooLongError } from './errors.js'

/** Retry-After is at most this (s): past it a client is better told to come back than to count on a figure. */
export const MAX_RETRY_AFTER_S = 120
/** Retry-After is spread over [1, 1 + this) times the forecast, so refused clients do not come back together. */
export const RETRY_AFTER_JITTER = 0.5

/** The response header carrying a predicted wait, in ms. */
export const PREDICTED_WAIT_HEADER = 'x-sluice-queue-wait-ms'

const predictedWaits = new WeakMap<Permit, number>()

/** The wait predicted for a request when it joined its queue (only with `failFast.header` on, for requests that queued). */
export const predictedWaitOf = (permit: Permit): number | undefined => predictedWaits.get(permit)

/**
 * A limiter that refuses at once a request whose predicted wait passes its deadline. It counts only
 * what goes through it, so it works alike over either backend without looking inside it.
 */
export class ForecastingLimiter implements Limiter {
  readonly #inner: Limiter
  readonly #forecasts: WaitForecasts
  readonly #metrics: ForecastMetrics

  constructor(
    inner: Limiter,
    private readonly settings: FailFastSettings,
    registry: Registry,
    /** the clock (ms); tests of the prediction drive a virtual one */
    private readonly now: () => number = Date.now,
  ) {
    this.#inner = inner
    this.#forecasts = new WaitForecasts(settings.minSamples)
    this.#metrics = new ForecastMetrics(registry)
  }

  get backend(): 'memory' | 'redis' {
    return this.#inner.backend
  }

  mode(): LimiterMode {
    return this.#inner.mode()
  }

  acquire(key: PermitKey, options: AcquireOptions): Promise<Permit> {
    const load = this.#forecasts.of(key.instance, key.endpoint)
    const arrived = this.now()
    // a learned limit as the backend last knew it (README "Learned limits"), else the fixed one
    const limit = options.learn === undefined ? options.limit : (this.#inner.limitOf?.(key, options) ?? options.limit)
    const prediction = this.#forecasts.predict(load, limit, arrived)
    const { expectedMs, lowerMs } = prediction
    options.onForecast?.(load.waiting, expectedMs)
    if (this.settings.enabled && lowerMs !== undefined && arrived + lowerMs > options.deadline) {
      const expected = Math.max(expectedMs ?? lowerMs, lowerMs)
      const err = new WaitTooLongError(
        `${key.endpoint} (instance ${key.instance})`,
        Math.round(expected),
        Math.max(0, options.deadline - arrived),
      )
      const headers: Record<string, string> = { 'retry-after': String(Math.max(1, Math.ceil(expected / 1000))) }
      if (this.settings.header) headers[PREDICTED_WAIT_HEADER] = String(Math.round(expected))
      return Promise.reject(Object.assign(err, { headers }))
    }
    load.waiting++
    return this.#inner.acquire(key, options).then(
      (permit) => {
        load.waiting--
        const grantedAt = this.now()
        if (prediction.waits && expectedMs !== undefined && lowerMs !== undefined)
          this.#metrics.observed(expectedMs, lowerMs, grantedAt - arrived)
        load.granted(grantedAt)
        let released = false
        const timed: Permit = {
          waitedMs: permit.waitedMs,
          lost: permit.lost,
          // read through: whether the lease is lost is known only when it is asked
          get isLost() {
            return permit.isLost
          },
          // read through too: asked right before the request is written upstream
          canStart: () => permit.canStart(),
          markSent: () => permit.markSent(),
          // whether a rate gate counted the start: the rates read it with the answer
          get startCounted() {
            return permit.startCounted
          },
          release: (outcome) => {
            if (released) return
            released = true
            load.released(grantedAt, this.now())
            permit.release(outcome)
          },
        }
        if (this.settings.header && prediction.waits && expectedMs !== undefined)
          predictedWaits.set(timed, Math.round(expectedMs))
        return timed
      },
      (err: unknown) => {
        load.waiting--
        // a full queue or a passed deadline: come back when the queue ahead is forecast to have cleared
        const code = (err as { code?: unknown; headers?: unknown }).code
        if ((code === 'SLUICE_QUEUE_FULL' || code === 'SLUICE_QUEUE_TIMEOUT') && !('headers' in (err as object)))
          Object.assign(err as object, { headers: { 'retry-after': this.retryAfter(key, limit) } })
        throw err
      },
    )
  }

  /**
   * Retry-After (s) of a 503 for `key` (docs/requests.md, "Retry-After"): the forecast wait of its queue now;
   * while too few permits came back, the mean hold time per round ahead, or how long the oldest permit has
   * been held; never below 1 s, at most MAX_RETRY_AFTER_S, spread by RETRY_AFTER_JITTER. `oneHold`: at
   * least one mean hold time, when what frees the room is a request ending (the memory budget).
   */
  retryAfter(key: PermitKey, limit: number, oneHold = false): string {
    const load = this.#forecasts.of(key.instance, key.endpoint)
    const now = this.now()
    const rounds = 1 + Math.floor(load.waiting / Math.max(1, limit))
    const oldest = load.grants.length > 0 ? now - load.grants[0]! : 0
    const ms =
      this.#forecasts.predict(load, limit, now).expectedMs ?? (load.samples > 0 ? rounds * load.serviceMs : oldest)
    const hold = oneHold ? (load.samples > 0 ? load.serviceMs : oldest) : 0
    const spread = Math.max(ms, hold) * (1 + RETRY_AFTER_JITTER * Math.random())
    return String(Math.min(MAX_RETRY_AFTER_S, Math.max(1, Math.ceil(spread / 1000))))
  }

  status(): Promise<LimiterStatus> {
    return this.#inner.status()
  }

  limitOf(key: PermitKey, options: Pick<AcquireOptions, 'limit' | 'learn'>): number {
    return this.#inner.limitOf?.(key, options) ?? options.limit
  }

  ready(): boolean {
    return this.#inner.ready()
  }

  drain(): void {
    this.#inner.drain()
  }

  close(): Promise<void> {
    return this.#inner.close()
  }
}

export function forecastingLimiter(inner: Limiter, settings: FailFastSettings, registry: Registry): ForecastingLimiter {
  return new ForecastingLimiter(inner, settings, registry, Date.now)
}
