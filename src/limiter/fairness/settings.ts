import { z } from 'zod'
import { appName } from '../../apps/settings.js'

/** Settings of fair share between apps (README "Fair share between apps"), kept out of the token file so it holds only secrets. */

/** How one app shares a key with the others. */
export const appShareSchema = z
  .strictObject({
    /** its share of a contended key against other backlogged apps, relative to their weights */
    weight: z.number().min(0.01).max(1000).default(1),
    /** `interactive` counts `fairness.interactiveBoost` times its weight; `batch` counts its weight */
    class: z.enum(['interactive', 'batch']).default('interactive'),
    /** most permits the app holds on one key at once (across every replica); unset: no cap */
    maxHeld: z.number().int().positive().optional(),
    /** most waiters of the app per key on one replica; past it 503 SLUICE_QUEUE_FULL; unset: only queue.maxLength */
    maxQueued: z.number().int().positive().optional(),
  })
  // While a capped app's waiters lead the queue and slots are free, every Redis script looks past
  // them for another app's waiter: maxQueued × replicas bounds that scan (docs/redis-limiter.md,
  // "Fair share between apps", maxHeld).
  .refine((s) => s.maxHeld === undefined || s.maxQueued !== undefined, {
    path: ['maxHeld'],
    message: "needs maxQueued as well (it bounds the scan past a capped app's waiters)",
    // said only of an otherwise valid entry (a maxHeld of 0 is reported as such)
    when: (payload) => payload.issues.length === 0,
  })
export type AppShareSettings = z.output<typeof appShareSchema>

export const fairnessSettingsSchema = z.strictObject({
  /** how many times an interactive app's weight counts against a batch app's */
  interactiveBoost: z.number().int().min(1).max(100).default(4),
  /** how apps not listed in `fairness.apps` share (the `default` app and header-named apps included) */
  default: appShareSchema.prefault({}),
  /** by app name: weight, class, maxHeld, maxQueued */
  apps: z.record(appName, appShareSchema).default({}),
})
export type FairnessSettings = z.output<typeof fairnessSettingsSchema>
