import type { AppPolicy } from '../fairness/policy.js'
import type { PermitKey } from '../types.js'
import type { SemaphoreKeys } from './keys.js'
import type { SluicePermit, Ticket } from './ticket.js'

/** One request of this replica waiting in a semaphore's Redis queue. */
export interface Waiter {
  readonly id: string
  readonly ticket: Ticket
  /** its app's weight and caps (README "Fair share between apps") */
  readonly policy: AppPolicy
  readonly semaphore: KeySemaphore
  /**
   * `deferred`: its acquire script goes out after this turn (see SharedPermits.enqueue); `sending`:
   * the script is on its way; `queued`: Redis has it in the queue; `confirming`: Redis granted it,
   * but the grant was read too late to be sure the lease still runs, and a renewal is on its way
   */
  phase: 'deferred' | 'sending' | 'queued' | 'confirming'
  /** a grant message came before the acquire script's own reply */
  grantedEarly: boolean
  /**
   * A moment (monotonic ms) at which Redis had certainly not granted it yet — when its acquire was
   * sent, or a sync that found it still queued. Its lease, once granted, runs at least until this
   * plus a lease.
   */
  notGrantedAt: number
}

/** A permit this replica holds from Redis. */
export interface HeldPermit {
  readonly permit: SluicePermit
  /** the lease lasts at least until then (monotonic ms): a lower bound from when the grant or the last renewal was sent */
  leaseUntil: number
  /** when this replica got the permit (monotonic ms): a learned limit's decrease window reads it */
  readonly grantedAt: number
}

/**
 * One shared semaphore — an (instance, endpoint) pair — as this replica knows it: its waiters in the
 * Redis queue, the permits it holds, what Redis last told it (the head of the queue), and the rules
 * that read them. It sends nothing itself (SharedPermits runs the scripts); everything per key that a
 * later rule needs (per-app queues, a learned limit) belongs here.
 */
export class KeySemaphore {
  /** the limit argument of its scripts (see limitArg in keys.ts) */
  arg: string
  /** the limit in force, as Redis last said (a learned limit changes with the API's answers) */
  limit: number
  /**
   * when this replica last refreshed its liveness and the key's description in Redis (monotonic ms);
   * -Infinity until the first time: the monotonic clock starts near 0 with the process, so 0 would
   * read as "announced at start" and a young replica's first waiters would go unannounced (and be
   * dropped from the queue as a dead replica's)
   */
  announcedAt = Number.NEGATIVE_INFINITY
  readonly waiters = new Map<string, Waiter>()
  /** waiters in phase `queued` */
  queuedCount = 0
  readonly held = new Map<string, HeldPermit>()
  /**
   * The waiter Redis last named as the queue's head (in a reply or a grant message). When it is one
   * of ours, a release here may hand the permit to it directly (see `handOverTarget`).
   */
  headHint: string | undefined
  /**
   * Stale-head messages (" <tag>") read for this key. They come on the subscriber connection, a
   * script's reply on the command connection, unordered: a reply naming a head is only believed if
   * no such message was read since its script was sent (the head it names may be the older one).
   */
  staleMessages = 0
  /** ids to release or withdraw once Redis answers again */
  readonly drops = new Set<string>()
  /** a script found that Redis no longer knew this replica (it lost its data): the next sync counts held permits again */
  recount = false
  safety: NodeJS.Timeout | undefined
  safetyAt = 0
  syncing: Promise<void> | undefined
  /** syncs so far: every few also clear dead replicas' liveness fields from the meta hash */
  syncs = 0

  constructor(
    readonly key: PermitKey,
    readonly keys: SemaphoreKeys,
    arg: string,
    limit: number,
  ) {
    this.arg = arg
    this.limit = limit
  }

  get tag(): string {
    return this.keys.tag
  }

  /**
   * This replica holds exactly the key's limit of permits: a new request can only queue, and the head
   * Redis names may be ours to hand over. Holding MORE than the limit is not "all": permits granted
   * during an outage were counted again (adopt), and each release must give its surplus slot back.
   */
  holdsAll(): boolean {
    return this.held.size === this.limit
  }

  addWaiter(waiter: Waiter): void {
    this.waiters.set(waiter.id, waiter)
  }

  /** Moves a waiter to a new phase, keeping the count of queued ones. */
  setPhase(waiter: Waiter, phase: Waiter['phase']): void {
    if (waiter.phase === 'queued') this.queuedCount--
    if (phase === 'queued') this.queuedCount++
    waiter.phase = phase
  }

  removeWaiter(waiter: Waiter): void {
    if (this.waiters.get(waiter.id) !== waiter) return
    this.waiters.delete(waiter.id)
    if (waiter.phase === 'queued') this.queuedCount--
  }

  /** this replica's waiters of one app in the queue (as `queuedCount` for all): its `maxQueued` counts them */
  queuedOf(app: string): number {
    let n = 0
    for (const w of this.waiters.values()) if (w.phase === 'queued' && w.policy.app === app) n++
    return n
  }

  /** ids of the waiters Redis has in the queue (for sync) */
  queuedIds(): string[] {
    const ids: string[] = []
    for (const w of this.waiters.values()) if (w.phase === 'queued') ids.push(w.id)
    return ids
  }

  /**
   * Takes the head a script's reply named, sent when `staleMessages` was `staleAtSend`: forgotten
   * instead when a stale-head message was read since (it may be newer than the reply).
   */
  headFromReply(head: string | undefined, staleAtSend: number): void {
    this.headHint = this.staleMessages === staleAtSend ? head : undefined
  }

  /**
   * The waiter a permit released now may be handed to, or undefined. Only when this replica held
   * every permit of the key when releasing (`holdsAll` before the release), Redis named one of our
   * waiters as the head and it is queued, and the permit's lease is sure to last beyond the next
   * renewal (`leaseUntil - now >= minLeaseLeftMs`: a stalled replica hands over nothing), and it is
   * of the same app as the permit (`app`). The hint is used once.
   */
  handOverTarget(heldAll: boolean, leaseUntil: number, now: number, minLeaseLeftMs: number, app: string): Waiter | undefined {
    const hint = this.headHint
    this.headHint = undefined
    if (!heldAll || hint === undefined) return undefined
    const next = this.waiters.get(hint)
    if (next?.phase !== 'queued') return undefined
    if (leaseUntil - now < minLeaseLeftMs) return undefined
    // Only within one app: the permit keeps its id in Redis, and the id names the app Redis counts
    // it for (the app's cap, `/status`). Between apps, the release script grants (one round trip).
    if (next.policy.app !== app) return undefined
    return next
  }

  /** A grant's lease, known to last at least until `leaseUntil`, may already have run out (or will before the next renewal). */
  static leaseInDoubt(leaseUntil: number, now: number, minLeaseLeftMs: number): boolean {
    return leaseUntil - now < minLeaseLeftMs
  }

  /** Nothing of this replica is left in the semaphore: its state can be forgotten. */
  isIdle(): boolean {
    return this.held.size === 0 && this.waiters.size === 0 && this.drops.size === 0 && this.syncing === undefined
  }

  /** Something to renew, flush or check in Redis. */
  isBusy(): boolean {
    return this.held.size > 0 || this.waiters.size > 0 || this.drops.size > 0
  }

  clearSafety(): void {
    if (this.safety) clearTimeout(this.safety)
    this.safety = undefined
  }
}
