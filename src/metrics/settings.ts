import { z } from 'zod'

/** Settings of metrics. docs/observability.md says what each one costs in series. */
export const metricsSettingsSchema = z.strictObject({
  /** count requests, waits and limiter events; off leaves /metrics with only what other areas register */
  enabled: z.boolean().default(true),
  /** label per-key series with the organisation (label `org`); off aggregates every organisation into one series */
  instanceLabel: z.boolean().default(true),
  /**
   * most organisations that get a series of their own; the rest are counted under `org="_other"`.
   * Those with the most requests in the last `rankIntervalMs` keep their own series. 0 = no cap.
   */
  maxInstances: z.number().int().nonnegative().default(100),
  /**
   * also label the queue-wait histogram with the organisation: per-org p99 waits, at 19 series per
   * (endpoint, org) instead of per endpoint. Off, per-org waits show in sluice_queue_oldest_wait_seconds.
   */
  queueWaitByOrg: z.boolean().default(false),
  /**
   * most apps that get a series of their own in the per-app metrics; the rest are counted under
   * `app="_other"`, re-ranked like organisations. 0 = no cap.
   */
  maxApps: z.number().int().nonnegative().default(20),
  /** how often the top `maxInstances` organisations are re-ranked by their recent request count */
  rankIntervalMs: z.number().int().positive().default(300_000),
  /** also export prom-client's default process_* and nodejs_* metrics */
  defaultMetrics: z.boolean().default(true),
})
export type MetricsSettings = z.output<typeof metricsSettingsSchema>
export type MetricsSettingsInput = z.input<typeof metricsSettingsSchema>
