import { Histogram, type Registry } from 'prom-client'

/** predicted minus actual wait, seconds: negative when the wait was longer than predicted */
export const PREDICTION_ERROR_BUCKETS = [
  -10, -5, -2, -1, -0.5, -0.25, -0.1, -0.05, 0, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10,
]

/** How good the wait predictions were, for requests that queued and got their permit. */
export class ForecastMetrics {
  readonly #error: Histogram<'estimate'>

  constructor(registry: Registry) {
    this.#error = new Histogram({
      name: 'sluice_queue_wait_prediction_error_seconds',
      help: 'Predicted minus actual wait of requests that queued and got a permit; estimate: expected (the Retry-After and header figure) or lower_bound (what refusals are decided on)',
      labelNames: ['estimate'],
      buckets: PREDICTION_ERROR_BUCKETS,
      registers: [registry],
    })
    // Both series from the start, so a dashboard shows 0 rather than nothing.
    this.#error.zero({ estimate: 'expected' })
    this.#error.zero({ estimate: 'lower_bound' })
  }

  observed(expectedMs: number, lowerMs: number, actualMs: number): void {
    this.#error.observe({ estimate: 'expected' }, (expectedMs - actualMs) / 1000)
    this.#error.observe({ estimate: 'lower_bound' }, (lowerMs - actualMs) / 1000)
  }
}
