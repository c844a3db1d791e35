/**
 * Start tags of start-time fair queueing (docs/redis-limiter.md, "Fair share between apps"), the
 * parts both backends share. The Redis scripts compute the same in Lua (redis/lua-fair.ts).
 */

/** ms of age at which a re-queued waiter sits halfway between V - 1 and V */
export const REQUEUE_AGE_SCALE_MS = 1_000

/**
 * The start tag of a waiter that waited before: in (V - 1, V], lower the older it is, so it goes ahead
 * of every new waiter (docs/redis-limiter.md, "Fair share between apps": "Re-queued", "Ties and precision").
 */
export function requeueTag(virtual: number, ageMs: number): number {
  const age = Math.max(0, ageMs)
  return virtual - age / (age + REQUEUE_AGE_SCALE_MS)
}
