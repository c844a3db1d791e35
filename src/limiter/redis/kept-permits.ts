import type { Kept } from './held-permits.js'
import type { KeySemaphore } from './key-semaphore.js'
import type { LimitOptions } from './ticket.js'
import type { Answer } from './shared-types.js'

/**
 * How long after Redis granted a permit this replica may keep serving its own requests with it, at most
 * (docs/redis-limiter.md, "The request path on Redis"), and never longer than a renewal period (`L/3`): what Redis
 * cannot tell the replica about — a lost message, a waiter of the previous release, which does not announce itself,
 * a loss of Redis's data not noticed yet — lasts at most this long behind it, and a longer stall gives it back unused.
 */
export const KEEP_FOR_MS = 500

export interface KeptPermitsDeps {
  readonly now: () => number
  /** gives ids back to Redis (Waiting.giveBack) */
  readonly release: (sem: KeySemaphore, ids: string[]) => Promise<void>
  /** the renewal period (`L/3`): the window is never longer */
  readonly syncMs: number
  /** KEEP_FOR_MS (within syncMs) unless a test says otherwise */
  readonly keepForMs?: number
}

/** A success on a published limit at its ceiling teaches nothing (release/lua.ts skips the rule): nothing is lost by not sending it. */
function teachesNothing(limits: LimitOptions, answer: Answer | undefined, limitInForce: number): boolean {
  if (answer === undefined) return true
  const learn = limits.learn
  if (learn === undefined || answer.outcome !== 'success') return false
  return limits.limit >= learn.ceiling && limitInForce >= learn.ceiling
}

/**
 * Permits kept by this replica for its own next request while nobody waits for the key (docs/
 * redis-limiter.md, "The request path on Redis"). A kept permit stays counted in Redis (a holder like
 * any other), so it never lets anyone over the limit; it is reused without a round trip only while the
 * key is quiet — Redis said its queue was empty and no waiter announced itself since (an acquire that
 * queues at the head tells every holder's replica, acquire/lua.ts) — and within KEEP_FOR_MS of its
 * grant. Given back by a release script on the first sign of a waiter, at its window's end, before a
 * sync (which neither renews nor reconciles it), when Redis is lost or changed, and at shutdown.
 */
export class KeptPermits {
  readonly #d: KeptPermitsDeps
  readonly #keepForMs: number
  /** the timer that gives each kept permit back at the end of its window, by semaphore */
  readonly #timers = new Map<KeySemaphore, { readonly id: string; readonly timer: NodeJS.Timeout }>()
  #closed = false

  constructor(deps: KeptPermitsDeps) {
    this.#d = deps
    this.#keepForMs = deps.keepForMs ?? Math.min(KEEP_FOR_MS, deps.syncMs)
  }

  /**
   * A permit its request gave back (`back`: taken back from the semaphore, not handed over): kept for
   * this replica's next request when that is exact and free; false when it must go back to Redis.
   */
  keep(
    sem: KeySemaphore,
    id: string,
    limits: LimitOptions,
    app: string,
    answer: Answer | undefined,
    back: Omit<Kept, 'id' | 'app' | 'arg'>,
  ): boolean {
    const now = this.#d.now()
    if (this.#closed || sem.held.kept !== undefined || !sem.quiet) return false
    if (!teachesNothing(limits, answer, sem.limit)) return false
    if (now >= back.since + this.#keepForMs || sem.leaseInDoubt(back.leaseUntil, now)) return false
    // a surplus (permits counted again after an outage) goes back: a kept one never keeps a key above its limit
    if (sem.held.size + 1 + sem.held.others > sem.limit) return false
    sem.keep({ id, app, arg: sem.arg, leaseUntil: back.leaseUntil, since: back.since })
    this.#arm(sem, id, back.since + this.#keepForMs - now)
    return true
  }

  /**
   * The kept permit of the key for a new request of `app`, taken, if it may serve it now; else
   * undefined, and a kept permit that may not (another app's, another limit's, the key no longer
   * quiet, its window or lease run out) is given back at once — its release is written before this
   * request's acquire.
   */
  take(sem: KeySemaphore, app: string): Kept | undefined {
    const kept = sem.held.kept
    if (kept === undefined) return undefined
    const now = this.#d.now()
    const usable = kept.app === app && kept.arg === sem.arg && sem.quiet && now < kept.since + this.#keepForMs
    if (!usable || sem.leaseInDoubt(kept.leaseUntil, now)) {
      this.giveBack(sem)
      return undefined
    }
    sem.keep()
    return kept
  }

  /** Someone may wait (a stale-head message), or the window ended: the kept permit goes back through a release script. */
  giveBack(sem: KeySemaphore): void {
    const kept = sem.keep()
    this.#disarm(sem)
    if (kept !== undefined) void this.#d.release(sem, [kept.id])
  }

  /** A sync goes out, or Redis became unreachable: the kept permit is given back with the sync (or once Redis answers). */
  drop(sem: KeySemaphore): void {
    const kept = sem.keep()
    this.#disarm(sem)
    if (kept !== undefined) sem.dropLater([kept.id])
  }

  /** Shutdown: every kept permit goes back, and none is kept any more. */
  close(): void {
    this.#closed = true
    for (const sem of [...this.#timers.keys()]) this.giveBack(sem)
  }

  #arm(sem: KeySemaphore, id: string, delayMs: number): void {
    // a permit kept again within its window already has its timer
    if (this.#timers.get(sem)?.id === id) return
    this.#disarm(sem)
    const timer = setTimeout(
      () => {
        this.#timers.delete(sem)
        if (sem.held.kept?.id === id) this.giveBack(sem)
      },
      Math.max(0, delayMs),
    )
    timer.unref()
    this.#timers.set(sem, { id, timer })
  }

  #disarm(sem: KeySemaphore): void {
    const armed = this.#timers.get(sem)
    if (armed === undefined) return
    clearTimeout(armed.timer)
    this.#timers.delete(sem)
  }
}
