import { refusal } from '../errors/refusal.js'

/**
 * As many requests as `queue.maxLength` already wait for identical calls of one (instance,
 * endpoint) on this replica: the next is refused like a full queue (README "Spending fewer permits").
 */
export const FollowersFullError = refusal<[number, string]>(
  'SLUICE_QUEUE_FULL',
  '%d requests already wait for identical calls to %s; try again later',
  503,
  'queue_full',
)

export type FollowersFullError = InstanceType<typeof FollowersFullError>

/**
 * An app's requests waiting on one (instance, endpoint) — following identical calls and waiting for a
 * permit — are at its `maxQueued` (or its share, `queue.maxShare`): the next is refused like a full queue
 * (docs/reuse.md, "How many may follow"). The last argument names the bound.
 */
export const AppWaitsFullError = refusal<[number, string, string, string]>(
  'SLUICE_QUEUE_FULL',
  '%d requests of app %s already wait on %s (its %s); try again later',
  503,
  'queue_full',
)
