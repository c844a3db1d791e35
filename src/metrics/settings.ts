import { z } from 'zod'

/** Settings of metrics (issue: observability). */
export const metricsSettingsSchema = z.strictObject({
  /** label series with the instance (organisation) */
  instanceLabel: z.boolean().default(true),
})
export type MetricsSettings = z.output<typeof metricsSettingsSchema>
