import type { PermitOutcome } from '../types.js'
import type { KeySemaphore } from './key-semaphore.js'
import type { KeptPermits } from './kept-permits.js'
import type { ReplicaScripts } from './replica-scripts.js'
import { isKeyError } from './script.js'
import type { Semaphores } from './semaphores.js'
import type { SharedHooks } from './shared.js'
import type { SluicePermit } from './ticket.js'
import type { Answer, Granting } from './waiting.js'

export interface ReleasesDeps {
  readonly scripts: ReplicaScripts
  readonly semaphores: Semaphores
  readonly hooks: SharedHooks
  readonly now: () => number
  /** the waiters' side: a permit handed over, or granted by a release's reply, ends a wait there */
  readonly waiting: () => Granting
  /** permits kept for this replica's next request while nobody waits (kept-permits.ts) */
  readonly kept: () => KeptPermits
}

/** The permits this replica holds from Redis, from grant to release (or handover to one of our own waiters). */
export class Releases {
  readonly #d: ReleasesDeps
  readonly #leaseMs: number

  constructor(deps: ReleasesDeps) {
    this.#d = deps
    this.#leaseMs = deps.scripts.replica.leaseMs
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
      this.#d.waiting().grant(next, grant.id, back.leaseUntil)
      setImmediate(() => void this.release(sem, [next.id], true, answer, true))
    } else if (!this.#d.kept().keep(sem, grant.id, permit.limits, permit.app, answer, back)) {
      void this.release(sem, [grant.id], back.heldAll, answer)
    }
  }

  /** Releases holders and withdraws waiters of one semaphore (`wantHead`, `answer`, `served`: see release/lua.ts). */
  async release(sem: KeySemaphore, ids: string[], wantHead = false, answer?: Answer, served = false): Promise<void> {
    const sentAt = this.#d.now()
    const mark = sem.head.mark
    try {
      const { granted, head, limit, learned } = await this.#d.scripts.release(sem, { ids, wantHead, answer, served })
      sem.head.fromReply(head, mark)
      sem.heardLimit(limit)
      if (answer !== undefined && learned !== undefined && limit !== undefined && limit !== learned.from) {
        this.#d.hooks.limitChanged?.(sem.key, {
          from: learned.from,
          to: limit,
          value: learned.value,
          reason: answer.outcome === 'throttled' ? 'throttled' : 'saturated',
          held: learned.held,
        })
      }
      // A slot handed to one of our own waiters is granted from this reply (no message is sent for it;
      // the reply carries the head a message would name, taken above). Were the reply lost, Redis
      // counts as unreachable and the waiter's id is given back (detachWaiters), granted or not.
      for (const id of granted) {
        const waiter = this.#d.semaphores.waiter(id)
        // granted by this script, so after it was sent
        if (waiter) this.#d.waiting().granted(waiter, sentAt + this.#leaseMs)
      }
    } catch (err) {
      if (isKeyError(err)) this.#d.hooks.keyBroken(sem.key, err)
      else {
        sem.dropLater(ids)
        this.#d.hooks.failed(err)
      }
    }
    this.#d.semaphores.collect(sem)
  }
}
