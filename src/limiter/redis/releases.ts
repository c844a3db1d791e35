import type { PermitOutcome } from '../types.js'
import type { KeptPermits } from './kept-permits.js'
import type { ReplicaScripts } from './replica-scripts.js'
import type { Semaphores } from './semaphores.js'
import type { SharedHooks } from './shared-types.js'
import type { SluicePermit } from './ticket.js'
import type { Waiting } from './waiting.js'

export interface ReleasesDeps {
  readonly scripts: ReplicaScripts
  readonly semaphores: Semaphores
  readonly hooks: SharedHooks
  readonly now: () => number
  /** the waiters' side: a permit handed over ends a wait there; ids go back to Redis through it (its reply may grant our waiters) */
  readonly waiting: Pick<Waiting, 'grant' | 'giveBack'>
  /** permits kept for this replica's next request while nobody waits (kept-permits.ts) */
  readonly kept: KeptPermits
}

/** The permits this replica holds from Redis, from grant to release (or handover to one of our own waiters). */
export class Releases {
  readonly #d: ReleasesDeps

  constructor(deps: ReleasesDeps) {
    this.#d = deps
  }

  /** A permit's lease is sure to last until the next renewal (docs/redis-limiter.md, "Leases"); asked before a request starts on it. */
  leaseHolds(permit: SluicePermit): boolean {
    const grant = permit.grant
    if (grant.kind !== 'redis') return true
    return this.#d.semaphores.byTag(grant.tag)?.leaseHolds(grant.id, permit, this.#d.now()) ?? false
  }

  /**
   * Gives back a permit Redis granted, with what the API answered its request (a learned limit learns
   * it in the same script). Never throws; on failure the id is retried on the next sync.
   */
  releasePermit(permit: SluicePermit, outcome?: PermitOutcome): void {
    const grant = permit.grant
    if (grant.kind !== 'redis') return
    const sem = this.#d.semaphores.byTag(grant.tag)
    const back = sem?.takeBack(grant.id, permit)
    if (!sem || !back) return // already lost: Redis no longer knows it
    const now = this.#d.now()
    const answer =
      permit.limits.learn !== undefined && (outcome === 'success' || outcome === 'throttled')
        ? { outcome, heldMs: now - back.grantedAt }
        : undefined
    const next = sem.handOver(back.heldAll, back.leaseUntil, now, permit.app)
    // A 429 on a learned limit may lower it: that slot goes back through Redis, which learns first
    // and grants only under the new limit (a handover would keep the old concurrency one more turn).
    if (next && answer?.outcome !== 'throttled') {
      // The waiter takes the permit — same id, lease and slot, never free in Redis — and leaves the
      // queue after this turn (served: its start tag moves the virtual time, as Redis's own grant
      // would; the answer is learned there). docs/redis-limiter.md, "Inside one replica".
      this.#d.waiting.grant(next, grant.id, back.leaseUntil)
      setImmediate(() => void this.#d.waiting.giveBack(sem, [next.id], true, answer, true))
    } else if (!this.#d.kept.keep(sem, grant.id, permit.limits, permit.app, answer, back)) {
      void this.#d.waiting.giveBack(sem, [grant.id], back.heldAll, answer)
    }
  }
}
