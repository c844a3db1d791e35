import type { Registry } from 'prom-client'
import type { AcquireOptions, Limiter, LimiterMode, LimiterStatus, Permit, PermitKey } from '../limiter/types.js'
import { WaitTooLongError } from './errors.js'
import { WaitForecasts } from './estimate.js'
import { ForecastMetrics } from './metrics.js'
import type { FailFastSettings } from './settings.js'

export { failFastSettingsSchema, type FailFastSettings } from './settings.js'
export { WaitTooLongError } from './errors.js'

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
        throw err
      },
    )
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
