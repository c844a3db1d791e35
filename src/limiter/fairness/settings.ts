import { z } from 'zod'
import { appName } from '../../apps/settings.js'

/**
 * Settings of fair share between apps (README "Fair share between apps"). One place for every app,
 * whether a token or the app header names it, so the token file (a secret) holds only secrets.
 */

/** How one app shares a key with the others. */
export const appShareSchema = z.strictObject({
  /** its share of a contended key against other backlogged apps, relative to their weights */
  weight: z.number().min(0.01).max(1000).default(1),
  /** `interactive` counts `fairness.interactiveBoost` times its weight; `batch` counts its weight */
  class: z.enum(['interactive', 'batch']).default('interactive'),
  /** most permits the app holds on one key at once (across every replica); unset: no cap */
  maxHeld: z.number().int().positive().optional(),
  /** most waiters of the app per key on one replica; past it 503 SLUICE_QUEUE_FULL; unset: only queue.maxLength */
  maxQueued: z.number().int().positive().optional(),
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
