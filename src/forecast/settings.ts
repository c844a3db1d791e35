import { z } from 'zod'

/** Failing fast on a predicted wait (README "Spending fewer permits"). */
export const failFastSettingsSchema = z.strictObject({
  /** answer 503 SLUICE_WAIT_TOO_LONG at once when the queue ahead surely outlasts the request's deadline */
  enabled: z.boolean().default(true),
  /** permits a key must have given back before its service time is trusted for a prediction */
  minSamples: z.number().int().positive().default(5),
  /** send `x-sluice-queue-wait-ms` (the predicted wait) with answers to requests that had to queue */
  header: z.boolean().default(false),
})
export type FailFastSettings = z.output<typeof failFastSettingsSchema>
