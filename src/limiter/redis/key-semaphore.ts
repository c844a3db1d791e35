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
   * `parked`: not sent yet — whether the queue bounds leave it room depends on acquires still on
   * their way (see `KeySemaphore.fits`); `deferred`: its acquire script goes out after this turn (see
   * SharedPermits.enqueue); `sending`: the script is on its way; `queued`: Redis has it in the queue;
   * `confirming`: Redis granted it, but the grant was read too late to be sure the lease still runs,
   * and a renewal is on its way.
   *
   * parked → deferred | sending · deferred → sending · sending → queued (or leaves: granted, full,
   * failed) · queued → confirming (or leaves: granted) · confirming → leaves (granted, or queued again
   * under a new id). Any phase may leave by withdrawal; only `parked` and `deferred` leave nothing in Redis.
   */
  phase: 'parked' | 'deferred' | 'sending' | 'queued' | 'confirming'
  /**
   * It counts against the queue bounds (`queue.maxLength`, its app's `maxQueued`): it is queued in
   * Redis, or its acquire — sent, or going out after this turn, without `full` — may queue it there,
   * or its grant is being confirmed (it may be queued again). Set once, when the bounds let it in
   * (`KeySemaphore.count`); false for a waiter sent with `full` (the script never queues it).
   */
  counted: boolean
  /** sent with `full`: which bound refused it, and how many of this replica's waiters it counted then (the 503's message) */
  full: { readonly app: boolean; readonly waiting: number } | undefined
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
  /** waiters that count against the queue bounds (`Waiter.counted`): those queued and those whose acquire may still queue them */
  #counted = 0
  /** the same two counts per app with a `maxQueued` (apps with neither left out; none kept for an app without one: nothing reads them) */
  readonly #apps = new Map<string, { queued: number; counted: number }>()
  /** waiters not sent yet because the bounds cannot say yet whether they have room, first come first */
  readonly parked = new Set<Waiter>()
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

  /**
   * Whether the queue bounds — `maxQueue` (`queue.maxLength`) and the waiter's app's `maxQueued`,
   * both per replica — leave this new waiter room, before its acquire is sent:
   * - `room`: even if every acquire of ours still on its way queues its waiter, this one fits;
   * - a refusal (`full`): the waiters Redis already has queued fill a bound (the script then refuses
   *   rather than queue, unless a slot is free at once);
   * - `undefined`: it depends on acquires still on their way — each may be granted at once or
   *   queued — so it waits (parked) until one of them is answered.
   * Counting only the waiters whose reply is back let a burst within one round trip all queue.
   */
  fits(waiter: Waiter): 'room' | { readonly app: boolean; readonly waiting: number } | undefined {
    const max = waiter.ticket.options.maxQueue
    if (this.queuedCount >= max) return { app: false, waiting: this.queuedCount }
    let fit: 'room' | undefined = this.#counted >= max ? undefined : 'room'
    const cap = waiter.policy.maxQueued
    if (Number.isFinite(cap)) {
      const app = this.#apps.get(waiter.policy.app)
      const queued = app?.queued ?? 0
      if (queued >= cap) return { app: true, waiting: queued }
      if ((app?.counted ?? 0) >= cap) fit = undefined
    }
    return fit
  }

  /** The bounds let this waiter in (`fits` said `room`, or it keeps the place it had): it counts against them until it leaves. */
  count(waiter: Waiter): void {
    if (waiter.counted) return
    waiter.counted = true
    this.#counted++
    if (!Number.isFinite(waiter.policy.maxQueued)) return
    const app = this.#apps.get(waiter.policy.app)
    if (app === undefined) this.#apps.set(waiter.policy.app, { queued: 0, counted: 1 })
    else app.counted++
  }

  /** Moves a waiter to a new phase, keeping the counts of queued ones. */
  setPhase(waiter: Waiter, phase: Waiter['phase']): void {
    if (waiter.phase === 'queued') this.#queued(waiter, -1)
    if (phase === 'queued') {
      this.count(waiter) // (always counted already: only an acquire sent without `full` queues)
      this.#queued(waiter, 1)
    }
    if (waiter.phase === 'parked') this.parked.delete(waiter)
    if (phase === 'parked') this.parked.add(waiter)
    waiter.phase = phase
  }

  #queued(waiter: Waiter, by: 1 | -1): void {
    this.queuedCount += by
    if (!Number.isFinite(waiter.policy.maxQueued)) return
    const app = this.#apps.get(waiter.policy.app)
    if (app !== undefined) app.queued += by
  }

  removeWaiter(waiter: Waiter): void {
    if (this.waiters.get(waiter.id) !== waiter) return
    this.waiters.delete(waiter.id)
    if (waiter.phase === 'queued') this.#queued(waiter, -1)
    if (waiter.phase === 'parked') this.parked.delete(waiter)
    if (!waiter.counted) return
    this.#counted--
    if (!Number.isFinite(waiter.policy.maxQueued)) return
    const app = this.#apps.get(waiter.policy.app)
    if (app === undefined) return
    if (--app.counted <= 0) this.#apps.delete(waiter.policy.app)
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
