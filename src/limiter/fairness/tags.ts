/**
 * Start tags of start-time fair queueing (docs/redis-limiter.md, "Fair share between apps"), the
 * parts both backends share. The Redis scripts compute the same in Lua (redis/lua-fair.ts).
 */

/** ms of age at which a re-queued waiter sits halfway between V - 1 and V */
export const REQUEUE_AGE_SCALE_MS = 1_000

/**
 * The start tag of a waiter that waited before (sent back by an upstream 429; in Redis also one that
 * lost its place there): in (V - 1, V], lower the older it is, so it goes ahead of every new waiter
 * (whose tag is at least V) and re-queued waiters keep their arrival order among themselves. A
 * request moved between Redis and the fallback is queued as new instead (FIFO within its app).
 * Ages a ms apart differ by 1000 / (age + 1000)² — more than a double resolves near V while that
 * stays above V × 2⁻⁵²: with V near 10⁷ (a day at 100 grants a second) up to about ten minutes of
 * age, with V near 1 for weeks; older re-entries a few ms apart may tie (then the queue's tie rule
 * orders them).
 */
export function requeueTag(virtual: number, ageMs: number): number {
  const age = Math.max(0, ageMs)
  return virtual - age / (age + REQUEUE_AGE_SCALE_MS)
}
