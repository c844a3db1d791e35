import { LimiterClosedError, QueueFullError } from '../errors.js'
import { FairShare, type AppPolicy } from '../fairness/policy.js'
import type { KeyStatus, LearnedLimitStatus, LimitChange, PermitKey, PermitOutcome } from '../types.js'
import { acquire } from './acquire/index.js'
import { adopt } from './adopt/index.js'
import { limitArg, semaphoreKeysOf, tagOf, type GlobalKeys } from './keys.js'
import { release } from './release/index.js'
import { KeySemaphore, type Waiter } from './key-semaphore.js'
import { renew } from './renew/index.js'
import { isKeyError, type ScriptRunner } from './script.js'
import { activeTags, semaphoreStatus } from './status/index.js'
import { sync } from './sync/index.js'
import { describeKey, type Grant, type LimitOptions, type SluicePermit, type Ticket } from './ticket.js'
import { appOfId, waiterId } from './waiter-id.js'

/** Timings derived from the lease, and names. */
export interface SharedConfig {
  readonly prefix: string
  readonly replicaId: string
  readonly channelPrefix: string
  readonly leaseMs: number
  /** how often the replica renews its leases and liveness */
  readonly syncMs: number
  /** how long a replica's waiters stay in the queue without it renewing its liveness */
  readonly liveMs: number
  /** an untouched semaphore's keys expire after this */
  readonly idleMs: number
  /** a monotonic clock in ms (`performance.now()`; a fake one in tests of the races) */
  readonly now?: () => number
  /** weights and caps per app (README "Fair share between apps"); default: every app weight 1, no caps */
  readonly fairness?: FairShare
}

/** What the shared side asks of the limiter around it. */
export interface SharedHooks {
  makePermit(key: PermitKey, limits: LimitOptions, grant: Grant, waitedMs: number, app: string): SluicePermit
  /** a learned limit changed by a release of this replica (README "Learned limits") */
  limitChanged?(key: PermitKey, change: LimitChange): void
  /** a Redis call failed: Redis is treated as unreachable */
  failed(err: unknown): void
  /** Redis answered an error about one semaphore's keys (see isKeyError): only that key is broken */
  keyBroken(key: PermitKey, err: unknown): void
  /** a ticket whose Redis attempt failed must be served by whatever mode is now in force */
  reroute(ticket: Ticket): void
  lost(permit: SluicePermit): void
  /** Redis had lost its data: permits still in flight were counted again */
  recounted?(key: PermitKey, count: number): void
}

const SWEEP_EVERY = 30

/** What the API answered a released permit's request, for a learned limit (see the release script). */
type Answer = { readonly outcome: 'success' | 'throttled'; readonly heldMs: number }

const asError = (err: unknown): Error => (err instanceof Error ? err : new Error(String(err)))

/**
 * This replica's side of the shared semaphores: its waiters in the Redis queues, the permits it
 * holds, and the bookkeeping that keeps both true (lease renewal, lost messages, dead holders).
 * Only what must touch Redis does: one script to acquire, one to release, one sync per active
 * semaphore and lease third — never a poll per waiter. The per-key state and the rules reading it
 * live in KeySemaphore; this class runs the scripts and applies their replies.
 */
export class SharedPermits {
  readonly #semaphores = new Map<string, KeySemaphore>()
  /** every waiter of this replica by id, for grant messages */
  readonly #waiters = new Map<string, Waiter>()
  /** semaphores used since the last heartbeat, even if idle again by then (for `/status` elsewhere) */
  readonly #touched = new Set<string>()
  #sequence = 0
  readonly #now: () => number
  readonly #fairness: FairShare

  constructor(
    private readonly scripts: ScriptRunner,
    private readonly config: SharedConfig,
    private readonly hooks: SharedHooks,
  ) {
    this.#now = config.now ?? (() => performance.now())
    this.#fairness = config.fairness ?? new FairShare()
  }

  /** A new id carrying the app, its cap and the arrival (waiter-id.ts): the scripts read them there. */
  #nextId(policy: AppPolicy, arrivedAt: number): string {
    return waiterId({ replicaId: this.config.replicaId, sequence: ++this.#sequence, arrivedAt, maxHeld: policy.maxHeld, app: policy.app })
  }

  /** (instance, endpoint) → tag, so the hot path does not hash each time; bounded */
  readonly #tags = new Map<string, string>()

  #tagOf(key: PermitKey): string {
    const text = `${key.instance}\n${key.endpoint}`
    let tag = this.#tags.get(text)
    if (tag === undefined) {
      if (this.#tags.size >= 10_000) this.#tags.clear()
      tag = tagOf(key)
      this.#tags.set(text, tag)
    }
    return tag
  }

  /**
   * When this replica last announced itself to each semaphore it has forgotten (bounded), with the
   * limit argument it announced: a key used again soon (every request of a key used one at a time
   * finds it idle) announces again only a third of a lease after the last time, as a key in
   * continuous use does — the announcement's liveness lasts a lease, and a busy key's sync renews it
   * within a third of one.
   */
  readonly #announced = new Map<string, { readonly at: number; readonly arg: string }>()

  /**
   * When Redis last became unreachable (monotonic ms): an announcement made before may be gone with
   * Redis's data (a restart without persistence, a failover), so it is never kept for a key used
   * again — neither by a semaphore forgotten in detachWaiters itself nor by one that was still busy
   * then and is forgotten later, before a script announced it anew.
   */
  #detachedAt = Number.NEGATIVE_INFINITY

  /** the limit in force each semaphore last had, kept after its state is forgotten (bounded): a key used again starts from it */
  readonly #known = new Map<string, number>()

  #semaphoreOf(key: PermitKey, limits: LimitOptions): KeySemaphore {
    const tag = this.#tagOf(key)
    const arg = limitArg(limits)
    let sem = this.#semaphores.get(tag)
    if (!sem) {
      sem = new KeySemaphore({ instance: key.instance, endpoint: key.endpoint }, semaphoreKeysOf(this.config.prefix, tag), arg, this.#knownOf(tag, limits))
      const announced = this.#announced.get(tag)
      if (announced !== undefined && announced.arg === arg) sem.announcedAt = announced.at
      this.#semaphores.set(tag, sem)
    }
    this.#touched.add(tag)
    if (sem.arg !== arg) {
      sem.arg = arg
      if (limits.learn === undefined) sem.limit = limits.limit
      sem.announcedAt = Number.NEGATIVE_INFINITY
    }
    return sem
  }

  #knownOf(tag: string, limits: LimitOptions): number {
    const { limit, learn } = limits
    if (learn === undefined) return limit
    return this.#known.get(tag) ?? Math.max(1, Math.min(limit, learn.ceiling))
  }

  /** The limit a script said is in force. */
  #setLimit(sem: KeySemaphore, limit: number | undefined): void {
    if (limit === undefined || !Number.isFinite(limit)) return
    sem.limit = limit
    if (this.#known.size >= 10_000) this.#known.clear()
    this.#known.set(sem.tag, limit)
  }

  /** A key's limit as this replica last heard it from Redis (for the fallback's share while Redis is away). */
  knownLimit(key: PermitKey, limits: LimitOptions): number {
    const tag = this.#tagOf(key)
    return this.#semaphores.get(tag)?.limit ?? this.#knownOf(tag, limits)
  }

  /** How many semaphores this replica keeps state for (none once its last request is done). */
  trackedKeys(): number {
    return this.#semaphores.size
  }

  /** Starts a ticket's wait in Redis: granted at once when a slot is free and nobody is ahead. */
  enqueue(ticket: Ticket): void {
    const sem = this.#semaphoreOf(ticket.key, ticket.options)
    const policy = this.#fairness.of(ticket.options.app)
    const waiter: Waiter = { id: this.#nextId(policy, ticket.arrivedAt), ticket, policy, semaphore: sem, phase: 'sending', grantedEarly: false, notGrantedAt: 0, counted: false, full: undefined }
    sem.addWaiter(waiter)
    this.#waiters.set(waiter.id, waiter)
    ticket.withdraw = () => this.#withdraw(waiter)
    // Behind waiters parked before it (first come, first served at the bounds), or while the bounds
    // depend on acquires still on their way: parked until they are answered.
    const fit = sem.parked.size > 0 ? undefined : sem.fits(waiter)
    if (fit === undefined) {
      sem.setPhase(waiter, 'parked')
      return
    }
    this.#admit(waiter, fit)
  }

  /** The queue bounds decided about a new waiter (see KeySemaphore.fits): its acquire goes out. */
  #admit(waiter: Waiter, fit: NonNullable<ReturnType<KeySemaphore['fits']>>): void {
    const sem = waiter.semaphore
    if (fit === 'room') sem.count(waiter)
    else waiter.full = fit
    const keepAge = waiter.ticket.retried
    if (!sem.holdsAll()) {
      sem.setPhase(waiter, 'sending')
      void this.#sendAcquire(waiter, keepAge)
      return
    }
    sem.setPhase(waiter, 'deferred')
    // Every permit of the key is held here, so this request can only join the queue: its script
    // goes out after this turn of the event loop. A request handed a permit in this turn (a
    // release's handover) starts first, without waiting behind a write that wakes Redis — on a
    // VM that write alone takes a few tenths of a millisecond.
    setImmediate(() => {
      if (!this.#isCurrent(waiter)) return // withdrawn before Redis heard of it
      sem.setPhase(waiter, 'sending')
      void this.#sendAcquire(waiter, keepAge)
    })
  }

  /**
   * Queues a waiter again, placed by its age, under a NEW id: Redis granted its old id and the lease
   * ran out (a grant confirmed too late), or dropped it from the queue (a stall made this replica
   * look dead). A grant message for the old id may still be on its way — published during the stall
   * and read only now, or read twice (by message and by reply) — and must not be taken for a grant
   * of the new wait: with the same id it would be, since the re-sent acquire moves the waiter's
   * `notGrantedAt` forward, so that stale grant would look fresh and its permit be used while Redis
   * has the waiter only in the queue (and gives the slot to someone else). Messages for the old id now
   * find no waiter and are ignored; Redis no longer knows the old id (neither holder nor waiter), so
   * nothing is left to withdraw.
   */
  #requeue(old: Waiter): void {
    const { semaphore: sem, ticket, policy } = old
    // It keeps the place it had under the queue bounds (it was counted, queued or confirming): no
    // parked waiter takes that room meanwhile, and it is never refused as full.
    this.#forget(old, false)
    const waiter: Waiter = { id: this.#nextId(policy, ticket.arrivedAt), ticket, policy, semaphore: sem, phase: 'sending', grantedEarly: false, notGrantedAt: 0, counted: false, full: undefined }
    sem.count(waiter)
    sem.addWaiter(waiter)
    this.#waiters.set(waiter.id, waiter)
    ticket.withdraw = () => this.#withdraw(waiter)
    void this.#sendAcquire(waiter, true)
  }

  /** `keepAge`: place the waiter by its age (it waited before), not by when Redis sees it. */
  async #sendAcquire(waiter: Waiter, keepAge: boolean): Promise<void> {
    const { semaphore: sem, ticket, policy } = waiter
    const sentAt = this.#now()
    const stale = sem.staleMessages
    waiter.notGrantedAt = sentAt
    waiter.grantedEarly = false
    // Placed by its age, or an app other than the named head's (whose start tag may be lower), it
    // may go ahead of the waiter named as head: forget that name. A waiter of the head's own app
    // queues behind it (FIFO within an app).
    if (keepAge || (sem.headHint !== undefined && appOfId(sem.headHint) !== policy.app)) sem.headHint = undefined
    const announce = sentAt - sem.announcedAt >= this.config.syncMs
    // Redis not knowing this replica is news only if it was told before (a new key never was)
    const announcedBefore = sem.announcedAt > Number.NEGATIVE_INFINITY
    let reply
    try {
      reply = await acquire(
        this.scripts,
        sem.keys,
        {
          id: waiter.id,
          replicaId: this.config.replicaId,
          limit: sem.arg,
          leaseMs: this.config.leaseMs,
          liveMs: this.config.liveMs,
          idleMs: this.config.idleMs,
          // at least 1: an age of 0 means a new waiter to the script (placed and charged as new)
          ageMs: keepAge ? Math.max(1, ticket.ageMs) : 0,
          // the replica's queue for the key, or its app's part of it, is full: refuse rather than queue
          full: waiter.full !== undefined,
          announce,
          instance: ticket.key.instance,
          endpoint: ticket.key.endpoint,
          channelPrefix: this.config.channelPrefix,
          wantHead: sem.holdsAll(),
          cost: policy.cost,
        },
        // a NOSCRIPT re-send of an acquire withdrawn meanwhile would run after its withdrawal
        { resendIf: () => this.#isCurrent(waiter) },
      )
    } catch (err) {
      if (!this.#isCurrent(waiter)) return
      this.#attemptFailed(waiter, err)
      return
    }
    if (announce) sem.announcedAt = Math.max(sem.announcedAt, sentAt)
    if (reply.forgot && announcedBefore) sem.recount = true
    this.#setLimit(sem, reply.limit)
    // Withdrawn meanwhile: the release sent after this acquire on the same connection undoes it.
    if (!this.#isCurrent(waiter)) return
    if (reply.kind === 'granted') {
      this.#grant(waiter)
    } else if (reply.kind === 'full') {
      const full = waiter.full ?? { app: false, waiting: sem.queuedCount }
      this.#forget(waiter)
      ticket.withdraw = undefined
      ticket.fail(full.app ? new QueueFullError(`${describeKey(ticket.key)} for app ${policy.app}`, full.waiting) : new QueueFullError(describeKey(ticket.key), full.waiting))
      this.#collect(sem)
    } else {
      sem.setPhase(waiter, 'queued')
      if (reply.head) sem.headFromReply(waiter.id, stale)
      // the next sync (within a third of a lease) arms the safety timer at the nearest lease expiry
      if (waiter.grantedEarly) this.#grant(waiter)
      // queued, not granted: the bounds may now say `full` to waiters parked behind it
      else this.#admitParked(sem)
    }
  }

  /**
   * Sends the parked waiters the queue bounds can now decide about, first come first: called
   * whenever a waiter that counted against them is answered or leaves. The first one they still
   * cannot decide about keeps its place, and those behind it wait with it (each bound depends on
   * acquires on their way, and every one of those is answered, or fails, within a round trip).
   */
  #admitParked(sem: KeySemaphore): void {
    for (const waiter of sem.parked) {
      const fit = sem.fits(waiter)
      if (fit === undefined) return
      this.#admit(waiter, fit)
    }
  }

  /**
   * A script for this waiter failed. The script may or may not have run: its id is withdrawn once
   * Redis answers again. A broken key fails the request; anything else means Redis is unreachable,
   * and the request is served by the fallback.
   */
  #attemptFailed(waiter: Waiter, err: unknown): void {
    const { semaphore: sem, ticket } = waiter
    const keyError = isKeyError(err)
    // Redis unreachable: every waiter moves to the fallback (hooks.failed), parked ones too
    this.#forget(waiter, keyError)
    ticket.withdraw = undefined
    if (keyError) {
      this.hooks.keyBroken(sem.key, err)
      ticket.fail(new LimiterClosedError(`Redis refused the semaphore of ${describeKey(sem.key)}: ${(err as Error).message}`))
      this.#collect(sem)
      return
    }
    sem.drops.add(waiter.id)
    this.hooks.failed(err)
    this.hooks.reroute(ticket)
  }

  #isCurrent(waiter: Waiter): boolean {
    return this.#waiters.get(waiter.id) === waiter
  }

  /** `admit`: a waiter it made room for under the queue bounds may be sent now (false: the room is taken on the spot, by a re-queue or a detach). */
  #forget(waiter: Waiter, admit = true): void {
    if (!this.#isCurrent(waiter)) return
    this.#waiters.delete(waiter.id)
    const sem = waiter.semaphore
    sem.removeWaiter(waiter)
    if (admit && sem.parked.size > 0) this.#admitParked(sem)
  }

  #withdraw(waiter: Waiter): void {
    if (!this.#isCurrent(waiter)) return
    this.#forget(waiter)
    if (waiter.phase === 'deferred' || waiter.phase === 'parked') {
      // never sent: nothing in Redis to undo
      this.#collect(waiter.semaphore)
      return
    }
    // Leaves the queue — or, if a grant won the race, gives the permit straight back.
    void this.#release(waiter.semaphore, [waiter.id])
  }

  /**
   * Ends a waiter's wait with the Redis permit `id` — its own id once Redis granted it, or the id of
   * a permit handed over by a release here — whose lease lasts at least until `leaseUntil`.
   *
   * A grant of its own id read too late to be sure the lease still runs until the next renewal (an
   * event-loop stall longer than the lease: the grant message or reply waited in the socket) is not
   * used: the lease may have run out and its slot been given to another replica. It is confirmed
   * first (see `#confirm`).
   */
  #grant(waiter: Waiter, id = waiter.id, leaseUntil = waiter.notGrantedAt + this.config.leaseMs): void {
    if (id === waiter.id && KeySemaphore.leaseInDoubt(leaseUntil, this.#now(), this.config.syncMs)) {
      this.#confirm(waiter)
      return
    }
    this.#forget(waiter)
    const { semaphore: sem, ticket } = waiter
    ticket.withdraw = undefined
    const tag = sem.tag
    const taken = ticket.succeed((waitedMs) => {
      const permit = this.hooks.makePermit(sem.key, ticket.options, { kind: 'redis', tag, id }, waitedMs, waiter.policy.app)
      sem.held.set(id, { permit, leaseUntil, grantedAt: this.#now() })
      return permit
    })
    if (!taken) void this.#release(sem, [id])
  }

  /**
   * A grant whose lease is in doubt: renew it if Redis still counts it (then it was never given
   * away, and the request may start), else the request goes back to its place in the queue (its
   * acquire is sent again with its age). The waiter stays withdrawable meanwhile: its withdrawal,
   * sent after this script, releases the permit if it was renewed.
   */
  #confirm(waiter: Waiter): void {
    const sem = waiter.semaphore
    sem.setPhase(waiter, 'confirming')
    const sentAt = this.#now()
    renew(this.scripts, sem.keys, { id: waiter.id, leaseMs: this.config.leaseMs, idleMs: this.config.idleMs }).then(
      (renewed) => {
        if (!this.#isCurrent(waiter)) return
        if (renewed) this.#grant(waiter, waiter.id, sentAt + this.config.leaseMs)
        else this.#requeue(waiter)
      },
      (err: unknown) => {
        if (this.#isCurrent(waiter)) this.#attemptFailed(waiter, err)
      },
    )
  }

  /**
   * A message on this replica's grant channel: Redis made one of our waiters a holder, and `head`
   * is the waiter it left at the head of the queue.
   */
  onGrantMessage(id: string, head?: string): void {
    const waiter = this.#waiters.get(id)
    if (!waiter) return // withdrawn: its release/withdraw script takes care of the permit
    waiter.semaphore.headHint = head
    this.#granted(waiter)
  }

  /**
   * Redis made this waiter a holder: it gets its permit now, or once its acquire's reply is in.
   * `leaseUntil`: a better bound of the new lease than the waiter's own, when the caller has one.
   */
  #granted(waiter: Waiter, leaseUntil?: number): void {
    if (waiter.phase === 'sending') waiter.grantedEarly = true
    else if (waiter.phase === 'queued') this.#grant(waiter, waiter.id, leaseUntil)
    // `confirming`: a second word of the same grant (message and reply); the renewal decides
  }

  /** A request re-queued by its age went ahead of the head this replica may have been told of. */
  onHeadStale(tag: string): void {
    const sem = this.#semaphores.get(tag)
    if (sem === undefined) return
    sem.headHint = undefined
    // a reply read after this message may name the head as it was before: it is not believed
    sem.staleMessages++
  }

  /**
   * A Redis permit's lease is sure to last until the next renewal (the same rule as for a grant read
   * late: `KeySemaphore.leaseInDoubt`). False after a stall since the grant or the last renewal
   * longer than two thirds of a lease — the slot may have been given to another replica — and for a
   * permit no longer held here (lost, released). Asked before a request starts on the permit.
   */
  leaseHolds(permit: SluicePermit): boolean {
    const grant = permit.grant
    if (grant.kind !== 'redis') return true
    const held = this.#semaphores.get(grant.tag)?.held.get(grant.id)
    if (held?.permit !== permit) return false
    return !KeySemaphore.leaseInDoubt(held.leaseUntil, this.#now(), this.config.syncMs)
  }

  /**
   * Gives back a permit Redis granted, with what the API answered its request (a learned limit learns
   * it in the same script). Never throws; on failure the id is retried on the next sync.
   */
  releasePermit(permit: SluicePermit, outcome?: PermitOutcome): void {
    const grant = permit.grant
    if (grant.kind !== 'redis') return
    const sem = this.#semaphores.get(grant.tag)
    const held = sem?.held.get(grant.id)
    if (!sem || held?.permit !== permit) return // already lost: Redis no longer knows it
    // every permit of the key is ours: no other replica can have released one since Redis named the head
    const heldAll = sem.holdsAll()
    sem.held.delete(grant.id)
    const now = this.#now()
    const answer = permit.limits.learn !== undefined && (outcome === 'success' || outcome === 'throttled') ? { outcome, heldMs: now - held.grantedAt } : undefined
    // A 429 on a learned limit may lower it: that slot goes back through Redis, which learns first
    // and grants only under the new limit (a handover would keep the old concurrency one more turn).
    const target = sem.handOverTarget(heldAll, held.leaseUntil, now, this.config.syncMs, permit.app)
    const next = answer?.outcome === 'throttled' ? undefined : target
    if (next) this.#handOver(sem, next, grant.id, held.leaseUntil, answer)
    else void this.#release(sem, [grant.id], heldAll, answer)
  }

  /**
   * When Redis last named one of our own waiters as the head of the queue, and this replica holds
   * every permit of the key, the permit being released is that waiter's turn: it takes the permit
   * here and now, without the release script's round trip and without the slot ever being free in
   * Redis. Then the waiter leaves the queue in the background (one script).
   *
   * Fair: the queue is first come, first served and newcomers join at its tail, so the named
   * waiter stays the head until a release grants it or it leaves — and with every permit here,
   * no release elsewhere can have granted it. A request re-queued with its age (after an
   * upstream 429) that lands ahead of it makes Redis tell this replica that the head is stale
   * (`onHeadStale`); only if that re-queue and this release cross, within a message's flight,
   * may a handover pass it. A reply naming a head read after such a message is not believed (the
   * message may be the newer: `KeySemaphore.headFromReply`). Safe: the permit stays counted in Redis all along, and it is handed
   * over only while its lease is sure to last beyond the next renewal (a stalled replica hands
   * over nothing), and never while Redis counts more holders than the limit (it names no head
   * then). Should the waiter have been granted anyway (one of our leases ran out and its slot
   * went to it), the background script finds it a holder and gives that slot back to the next head.
   */
  #handOver(sem: KeySemaphore, next: Waiter, id: string, leaseUntil: number, answer?: Answer): void {
    this.#grant(next, id, leaseUntil)
    // after this turn of the event loop: the request now served starts first, its bookkeeping after
    // (served: its start tag moves the virtual time, as Redis's own grant would; and the answer of
    // the request that had the permit is learned from there)
    setImmediate(() => void this.#release(sem, [next.id], true, answer, true))
  }

  /**
   * `wantHead`: this replica holds every permit of the key, so the head Redis names may be its to hand
   * over. `answer`: what the API answered the released permit's request, for a learned limit.
   * `served`: the ids are waiters a handover served.
   */
  async #release(sem: KeySemaphore, ids: string[], wantHead = false, answer?: Answer, served = false): Promise<void> {
    const sentAt = this.#now()
    const stale = sem.staleMessages
    try {
      const { granted, head, limit, learned } = await release(this.scripts, sem.keys, {
        ids,
        limit: sem.arg,
        leaseMs: this.config.leaseMs,
        idleMs: this.config.idleMs,
        channelPrefix: this.config.channelPrefix,
        replicaId: this.config.replicaId,
        wantHead,
        answer,
        served,
      })
      sem.headFromReply(head, stale)
      this.#setLimit(sem, limit)
      if (answer !== undefined && learned !== undefined && limit !== undefined && limit !== learned.from) {
        this.hooks.limitChanged?.(sem.key, { from: learned.from, to: limit, value: learned.value, reason: answer.outcome === 'throttled' ? 'throttled' : 'saturated', held: learned.held })
      }
      // A slot handed to one of our own waiters is granted from this reply: the script sends no
      // message for it (the reply carries the id and, at limit 1, the head a message would name —
      // taken above). Other replicas' ids are not ours: they hear by message. Lost, the reply lands
      // in the catch below: Redis counts as unreachable, and the waiter's id is given back
      // (detachWaiters), granted or not.
      for (const id of granted) {
        const waiter = this.#waiters.get(id)
        // granted by this script, so after it was sent
        if (waiter) this.#granted(waiter, sentAt + this.config.leaseMs)
      }
    } catch (err) {
      if (isKeyError(err)) this.hooks.keyBroken(sem.key, err)
      else {
        for (const id of ids) sem.drops.add(id)
        this.hooks.failed(err)
      }
    }
    this.#collect(sem)
  }

  #armSafety(sem: KeySemaphore, delayMs: number): void {
    // A little after the lease ends on Redis's clock, so the holder is expired when we look.
    const at = this.#now() + delayMs + 5
    if (sem.safety && sem.safetyAt <= at) return
    sem.clearSafety()
    sem.safetyAt = at
    sem.safety = setTimeout(() => {
      sem.safety = undefined
      if (sem.queuedCount > 0) this.syncState(sem).catch((err: unknown) => this.#syncFailed(sem, err))
    }, delayMs + 5)
    sem.safety.unref()
  }

  #syncFailed(sem: KeySemaphore, err: unknown): void {
    if (isKeyError(err)) {
      this.hooks.keyBroken(sem.key, err)
      sem.drops.clear() // nothing to withdraw from a broken key; kept, they would keep its state for ever
      this.#collect(sem)
    } else {
      this.hooks.failed(err)
    }
  }

  /** Renews, flushes and checks one semaphore (see the sync script). Rejects when Redis fails. */
  syncState(sem: KeySemaphore): Promise<void> {
    sem.syncing ??= this.#sync(sem).finally(() => {
      sem.syncing = undefined
      this.#collect(sem)
    })
    return sem.syncing
  }

  async #sync(sem: KeySemaphore): Promise<void> {
    const waiting = sem.queuedIds()
    const drop = [...sem.drops]
    sem.drops.clear()
    const renewing = [...sem.held.keys()]
    const recount = sem.recount
    const sentAt = this.#now()
    const stale = sem.staleMessages
    let reply
    try {
      reply = await sync(this.scripts, sem.keys, {
        replicaId: this.config.replicaId,
        limit: sem.arg,
        instance: sem.key.instance,
        endpoint: sem.key.endpoint,
        leaseMs: this.config.leaseMs,
        liveMs: this.config.liveMs,
        idleMs: this.config.idleMs,
        channelPrefix: this.config.channelPrefix,
        held: renewing,
        waiting,
        drop,
        sweep: sem.syncs++ % SWEEP_EVERY === 0,
        recount,
      })
    } catch (err) {
      for (const id of drop) sem.drops.add(id)
      throw err
    }
    if (recount) sem.recount = false
    sem.announcedAt = Math.max(sem.announcedAt, sentAt)
    this.#setLimit(sem, reply.limit)
    sem.headFromReply(reply.head, stale)
    for (const id of reply.lost) {
      const held = sem.held.get(id)
      if (!held) continue
      sem.held.delete(id)
      this.hooks.lost(held.permit)
    }
    if (reply.recounted.length > 0) this.#recounted(sem, reply.recounted)
    // renewed (or counted again) by this script (the lost ones are gone from `held` above): each
    // lease now lasts at least a lease from when it was sent
    for (const id of renewing) {
      const held = sem.held.get(id)
      if (held) held.leaseUntil = Math.max(held.leaseUntil, sentAt + this.config.leaseMs)
    }
    for (const id of reply.granted) {
      const waiter = sem.waiters.get(id)
      if (waiter?.phase === 'queued') this.#grant(waiter)
    }
    const missing = new Set(reply.missing)
    for (const id of waiting) {
      const waiter = sem.waiters.get(id)
      if (waiter?.phase === 'queued' && !missing.has(id)) waiter.notGrantedAt = Math.max(waiter.notGrantedAt, sentAt)
    }
    for (const id of reply.missing) {
      // Dropped from the queue while this replica looked dead (a long stall), or Redis lost its
      // data: queue again, same age.
      const waiter = sem.waiters.get(id)
      if (waiter?.phase !== 'queued') continue
      this.#requeue(waiter)
    }
    if (sem.queuedCount > 0 && reply.nearestExpiryMs >= 0) this.#armSafety(sem, reply.nearestExpiryMs)
  }

  /**
   * Redis had lost its data, and the sync counted these held permits again. A permit whose request
   * is upstream stays counted (the limit holds for it). One whose request was not sent yet must not
   * start it: while Redis had nothing, another replica may have been granted the slot that looked
   * empty. It is lost — `canStart()` false, so the proxy gives it back and its request waits again at
   * its place, as for a lost lease — and its id leaves `holders` now (one `release`; the proxy's
   * release of a lost permit sends nothing). Decided here, on the reply: a request sent while the sync
   * was on its way was counted again by it.
   */
  #recounted(sem: KeySemaphore, ids: readonly string[]): void {
    const unsent: string[] = []
    for (const id of ids) {
      const held = sem.held.get(id)
      if (held === undefined || held.permit.sent) continue
      sem.held.delete(id)
      unsent.push(id)
      this.hooks.lost(held.permit)
    }
    if (ids.length > unsent.length) this.hooks.recounted?.(sem.key, ids.length - unsent.length)
    if (unsent.length > 0) void this.#release(sem, unsent)
  }

  /**
   * Syncs every semaphore this replica has something in. Rejects with the first failure that means
   * Redis is unreachable; a broken key is reported (hooks.keyBroken) and does not fail the rest.
   */
  async syncAll(): Promise<void> {
    const busy = [...this.#semaphores.values()].filter((s) => s.isBusy())
    const results = await Promise.allSettled(busy.map((s) => this.syncState(s)))
    let unreachable: Error | undefined
    results.forEach((r, i) => {
      if (r.status === 'fulfilled') return
      if (isKeyError(r.reason)) this.#syncFailed(busy[i]!, r.reason)
      else unreachable ??= asError(r.reason)
    })
    if (unreachable !== undefined) throw unreachable
  }

  /** Forgets a semaphore this replica no longer uses (its Redis keys expire by themselves). */
  #collect(sem: KeySemaphore): void {
    if (!sem.isIdle()) return
    sem.clearSafety()
    if (this.#semaphores.get(sem.tag) !== sem) return
    this.#semaphores.delete(sem.tag)
    if (sem.announcedAt <= this.#detachedAt) return
    if (this.#announced.size >= 10_000) this.#announced.clear()
    this.#announced.set(sem.tag, { at: sem.announcedAt, arg: sem.arg })
  }

  /**
   * Redis became unreachable: every waiter leaves the shared side (its id is withdrawn once Redis is
   * back) and is returned, oldest first, to be served by the fallback.
   */
  detachWaiters(): Ticket[] {
    // Redis may come back without its data: every key announces this replica again on its next use
    this.#announced.clear()
    this.#detachedAt = this.#now()
    const waiters = [...this.#waiters.values()]
    for (const waiter of waiters) {
      this.#forget(waiter, false)
      if (waiter.phase !== 'deferred' && waiter.phase !== 'parked') waiter.semaphore.drops.add(waiter.id)
      waiter.ticket.withdraw = undefined
    }
    for (const sem of this.#semaphores.values()) {
      sem.clearSafety()
      this.#collect(sem)
    }
    return waiters.map((w) => w.ticket).sort((a, b) => a.arrivedAt - b.arrivedAt)
  }

  /**
   * Counts in Redis the permits granted without it (fallback `local`/`open`) that are still in
   * flight. `adopted` is called for each one now held in Redis, with the grant it had before —
   * for every key whose script succeeded, even when another key's failed. A key Redis refuses
   * (hooks.keyBroken) keeps its permits as they were; any other failure rejects, after the
   * successes were reported.
   */
  async adopt(permits: readonly SluicePermit[], adopted: (permit: SluicePermit, before: Grant) => void): Promise<void> {
    const groups = new Map<string, { sem: KeySemaphore; permits: SluicePermit[]; ids: string[] }>()
    for (const permit of permits) {
      if (permit.grant.kind === 'redis' || permit.released) continue
      const sem = this.#semaphoreOf(permit.key, permit.limits)
      const group = groups.get(sem.tag) ?? { sem, permits: [], ids: [] }
      group.permits.push(permit)
      // its app in the id: Redis counts it against the app's cap and in `/status`
      group.ids.push(this.#nextId(this.#fairness.of(permit.app), Date.now()))
      groups.set(sem.tag, group)
    }
    const results = await Promise.allSettled(
      [...groups.values()].map(async ({ sem, permits: list, ids }) => {
        // Held in `drops` until adopted, so a failure below never leaves them counted forever.
        for (const id of ids) sem.drops.add(id)
        const sentAt = this.#now()
        try {
          await adopt(this.scripts, sem.keys, {
            replicaId: this.config.replicaId,
            limit: sem.arg,
            leaseMs: this.config.leaseMs,
            liveMs: this.config.liveMs,
            idleMs: this.config.idleMs,
            instance: sem.key.instance,
            endpoint: sem.key.endpoint,
            ids,
          })
        } catch (err) {
          if (!isKeyError(err)) throw err
          for (const id of ids) sem.drops.delete(id)
          this.hooks.keyBroken(sem.key, err)
          this.#collect(sem)
          return
        }
        list.forEach((permit, i) => {
          const id = ids[i]!
          if (permit.released) return // released while we adopted it: leave the id in drops
          sem.drops.delete(id)
          const before = permit.grant
          permit.grant = { kind: 'redis', tag: sem.tag, id }
          sem.held.set(id, { permit, leaseUntil: sentAt + this.config.leaseMs, grantedAt: sentAt })
          adopted(permit, before)
        })
      }),
    )
    const failure = results.find((r) => r.status === 'rejected')
    if (failure) throw asError(failure.reason)
  }

/** Every permit this replica holds from Redis. */
  heldPermits(): SluicePermit[] {
    return [...this.#semaphores.values()].flatMap((s) => [...s.held.values()].map((h) => h.permit))
  }

  /** Tags of the semaphores this replica holds permits of or waits for. */
  activeTags(): string[] {
    return [...this.#semaphores.values()].filter((s) => s.held.size > 0 || s.waiters.size > 0).map((s) => s.tag)
  }

  /** Active tags plus those used since the last call: what the next heartbeat announces. */
  takeAnnouncedTags(): string[] {
    const tags = new Set([...this.activeTags(), ...this.#touched])
    this.#touched.clear()
    return [...tags]
  }

  /**
   * Every semaphore any live replica uses, with its global counts, read from Redis; and the learned
   * limits among the semaphores used within the last lease (busy or not).
   */
  async status(globalKeys: GlobalKeys): Promise<{ keys: KeyStatus[]; learned: LearnedLimitStatus[] }> {
    const tags = new Set([...(await activeTags(this.scripts, globalKeys)), ...this.activeTags()])
    const all = await Promise.all(
      [...tags].map((tag) => semaphoreStatus(this.scripts, semaphoreKeysOf(this.config.prefix, tag), this.config.idleMs)),
    )
    const byKey = (a: KeyStatus, b: KeyStatus): number => a.instance.localeCompare(b.instance) || a.endpoint.localeCompare(b.endpoint)
    const keys = all
      .filter((s) => s.inFlight > 0 || s.queued > 0)
      .map((s) => ({ ...s }))
      .sort(byKey)
    const learned = all
      .filter((s) => s.learned !== undefined && s.instance !== '')
      .sort(byKey)
      .slice(0, 1_000)
      .map((s) => ({ instance: s.instance, endpoint: s.endpoint, limit: s.limit, value: s.learned!.value, ceiling: s.learned!.ceiling }))
    return { keys, learned }
  }

  /** Clears timers (close). */
  stop(): void {
    for (const sem of this.#semaphores.values()) sem.clearSafety()
  }
}
