import { LimiterClosedError, QueueFullError } from '../errors.js'
import { queueRefusalOf, type FairShare } from '../fairness/policy.js'
import type { AcquireReply } from './acquire/index.js'
import type { Kept } from './held-permits.js'
import type { KeySemaphore, KeyWaiter } from './key-semaphore.js'
import type { KeptPermits } from './kept-permits.js'
import type { Admission } from './semaphore-types.js'
import type { Full } from './queue-bounds.js'
import type { ReplicaScripts } from './replica-scripts.js'
import { isKeyError } from './script.js'
import type { Semaphores } from './semaphores.js'
import type { Answer, SharedHooks } from './shared-types.js'
import { describeKey, type Ticket } from './ticket.js'

export interface WaitingDeps {
  readonly scripts: ReplicaScripts
  readonly semaphores: Semaphores
  readonly hooks: SharedHooks
  readonly fairness: FairShare
  readonly now: () => number
  /** a new id of this replica (waiter-id.ts) */
  readonly nextId: (policy: { readonly app: string; readonly maxHeld: number }, arrivedAt: number) => string
  /** permits kept for this replica's next request while nobody waits (kept-permits.ts) */
  readonly kept: KeptPermits
}

/**
 * A request's wait in Redis, from its ticket to its permit (docs/redis-limiter.md, "How a wait
 * works"): sends its acquire, reads the reply and every later word of a grant (a message, a release's
 * or a sync's reply), confirms a grant read too late, queues it again under a new id when Redis lost
 * it, and withdraws it. Each step tells the waiter's KeySemaphore, which moves it (waiter.ts).
 */
export class Waiting {
  readonly #d: WaitingDeps
  readonly #leaseMs: number
  #closing = false

  constructor(deps: WaitingDeps) {
    this.#d = deps
    this.#leaseMs = deps.scripts.replica.leaseMs
  }

  /** Starts a ticket's wait in Redis: granted at once when a slot is free and nobody is ahead. */
  enqueue(ticket: Ticket): void {
    const sem = this.#d.semaphores.of(ticket.key, ticket.options)
    const policy = this.#d.fairness.of(ticket.options.app)
    const kept = this.#d.kept.take(sem, policy.app)
    if (kept !== undefined) return void this.#reuse(sem, ticket, policy.app, kept)
    const waiter = sem.join(this.#d.nextId(policy, ticket.arrivedAt), ticket, policy)
    ticket.servedBy(() => this.withdraw(waiter))
    this.#start(waiter, sem.enter(waiter))
  }

  /**
   * A permit this replica kept serves the request if Redis confirms it, in one script (reuse/lua.ts): still a holder,
   * nobody waiting, within the limit in force; else Redis released it and the request waits at its place (kept-permits.ts).
   */
  async #reuse(sem: KeySemaphore, ticket: Ticket, app: string, kept: Kept): Promise<void> {
    const sentAt = this.#d.now()
    ticket.servedBy(() => {}) // failed meanwhile: a permit the reply confirms goes back below
    sem.reusing(kept.id, ticket) // ours in Redis until the reply: a sync keeps it, a fallback takes its request
    let reply: { readonly reused: boolean; readonly limit: number | undefined }
    try {
      reply = await this.#d.scripts.reuse(sem, kept.id)
    } catch (err) {
      if (!sem.reusing(kept.id)) return // detached: the fallback serves it, the id goes back once Redis answers
      ticket.leftBackend()
      if (isKeyError(err)) {
        this.#d.hooks.keyBroken(sem.key, err)
        return ticket.fail(new LimiterClosedError(`Redis refused the semaphore of ${describeKey(sem.key)}`))
      }
      // it may or may not have run: the id goes back once Redis answers (through the key's state here, made anew if
      // forgotten)
      this.#d.semaphores.of(ticket.key, ticket.options).dropLater([kept.id])
      this.#d.hooks.failed(err)
      return this.#d.hooks.reroute(ticket)
    }
    // the fallback took the request meanwhile: the id (renewed or not) goes back once Redis answers (detachReuses)
    if (!sem.reusing(kept.id)) return
    ticket.leftBackend()
    // the key's state here may have been forgotten while the script ran (nothing held, nobody waiting)
    const now = this.#d.semaphores.of(ticket.key, ticket.options)
    now.heardLimit(reply.limit)
    // read after a stall: the lease it renewed may have ended and the slot gone to another replica (LIMITER-CHECKLIST)
    const late = reply.reused && now.leaseInDoubt(sentAt + this.#leaseMs, this.#d.now())
    if (!reply.reused || late) {
      // someone queued, or the key is over its limit: what we last heard of its queue is stale (nothing kept on it)
      now.headStale()
      // late, or {0, false}: the id was no holder (lost, or Redis went back to when it was queued) and a grant of it
      // read meanwhile was taken for ours (HeldPermits.has): it goes back now, not at its lease's end
      if (late || reply.limit === undefined) void this.giveBack(now, [kept.id])
      if (ticket.settled) return this.#d.semaphores.collect(now)
      const policy = this.#d.fairness.of(ticket.options.app)
      const { waiter, how } = now.rejoin(this.#d.nextId(policy, ticket.arrivedAt), ticket, policy)
      ticket.servedBy(() => this.withdraw(waiter))
      return this.#start(waiter, how)
    }
    const grant = { kind: 'redis', tag: now.tag, id: kept.id } as const
    const taken = ticket.succeed((waitedMs) => {
      const permit = this.#d.hooks.makePermit(now.key, ticket.options, grant, waitedMs, app)
      now.hold(kept.id, permit, sentAt + this.#leaseMs, this.#d.now(), kept.since)
      return permit
    })
    if (!taken) void this.giveBack(now, [kept.id])
  }

  /**
   * The limiter is draining (shutdown): no parked waiter is let in any more — each is failed in turn,
   * and sending its acquire would only cost a withdrawal after it.
   */
  closing(): void {
    this.#closing = true
  }

  /**
   * Sends a waiter the queue bounds let in. Deferred (every permit of the key is held here, so it can
   * only queue), its acquire goes out after this turn of the event loop: a request handed a permit in
   * this turn (a release's handover) starts first, not behind a write that wakes Redis.
   */
  #start(waiter: KeyWaiter, how: Admission): void {
    if (how === 'send') {
      void this.#sendAcquire(waiter)
      return
    }
    setImmediate(() => {
      // withdrawn (or detached) before Redis heard of it: nothing to send
      if (waiter.semaphore.undefer(waiter)) void this.#sendAcquire(waiter)
    })
  }

  /**
   * The parked waiters the bounds can now decide about are let in (sent again) or refused. (The
   * caller collects the semaphore if that left it idle: not on a grant's way, before its permit is held.)
   */
  #admitParked(sem: KeySemaphore): void {
    if (this.#closing) return
    sem.admitParked(
      (waiter, how) => this.#start(waiter, how),
      (waiter, full) => this.#refused(waiter, full),
    )
  }

  /** A queue bound refused it: 503, naming the bound. */
  #refused(waiter: KeyWaiter, full: Full): void {
    const { ticket, policy } = waiter
    ticket.leftBackend()
    ticket.fail(
      full.app
        ? new QueueFullError(`${describeKey(ticket.key)} for ${queueRefusalOf(policy)}`, full.waiting)
        : new QueueFullError(describeKey(ticket.key), full.waiting),
    )
  }

  /** Sends its acquire; placed by its age when it waited before (`Waiter.byAge`), not by when Redis sees it. */
  async #sendAcquire(waiter: KeyWaiter): Promise<void> {
    const { semaphore: sem, ticket, policy } = waiter
    const keepAge = waiter.byAge
    const sent = sem.acquireSent(waiter, keepAge, this.#d.now())
    let reply: AcquireReply
    try {
      reply = await this.#d.scripts.acquire(
        sem,
        {
          id: waiter.id,
          // at least 1: an age of 0 means a new waiter to the script (placed and charged as new)
          ageMs: keepAge ? Math.max(1, ticket.ageMs) : 0,
          // no room under the queue bounds (queue-bounds.ts): a slot free at once, else answer `full` rather than queue
          full: sent.full,
          announce: sent.announce,
          // absent from Redis after an announcement: Redis lost its data (the script leaves a mark for the sync)
          announcedBefore: sent.announcedBefore,
          wantHead: sent.wantHead,
          cost: policy.cost,
        },
        // a NOSCRIPT re-send of an acquire withdrawn meanwhile would run after its withdrawal
        { resendIf: () => waiter.live },
      )
    } catch (err) {
      if (waiter.live) this.#attemptFailed(waiter, err)
      return
    }
    sem.acquireAnswered(sent, { ...reply, quiet: reply.kind === 'granted' && reply.quiet })
    // one of ours waits (or was refused, the key full): a permit kept meanwhile serves the queue instead
    if (reply.kind !== 'granted') this.#d.kept.giveBack(sem)
    // Withdrawn meanwhile: the release sent after this acquire on the same connection undoes it.
    if (!waiter.live) return
    if (reply.kind === 'granted') {
      this.grant(waiter)
    } else if (reply.kind === 'full') {
      // sent with `full`, no slot was free at once: refused, or parked until its room is known
      const full = sem.answeredFull(waiter)
      if (full !== undefined) this.#refused(waiter, full)
      this.#admitParked(sem)
      this.#d.semaphores.collect(sem)
    } else {
      sem.queue(waiter, reply.head, sent.mark)
      // the next sync (within a third of a lease) arms the safety timer at the nearest lease expiry
      if (waiter.grantedEarly) this.grant(waiter)
      // queued, not granted: the bounds may now say `full` to waiters parked behind it
      else this.#admitParked(sem)
    }
  }

  /**
   * A script for this waiter failed; it may or may not have run. A broken key fails the request;
   * anything else means Redis is unreachable: the id is withdrawn once Redis answers again, and the
   * request is served by the fallback (where every other waiter goes too, parked ones included).
   */
  #attemptFailed(waiter: KeyWaiter, err: unknown): void {
    const { semaphore: sem, ticket } = waiter
    const keyError = isKeyError(err)
    sem.leave(waiter, 'failed')
    if (keyError) this.#admitParked(sem)
    ticket.leftBackend()
    if (keyError) {
      this.#d.hooks.keyBroken(sem.key, err)
      ticket.fail(
        new LimiterClosedError(`Redis refused the semaphore of ${describeKey(sem.key)}: ${(err as Error).message}`),
      )
      this.#d.semaphores.collect(sem)
      return
    }
    sem.dropLater([waiter.id])
    this.#d.hooks.failed(err)
    this.#d.hooks.reroute(ticket)
  }

  /** The request gave up (abort, deadline, drain): it leaves the queue, or gives back a grant that won the race. */
  withdraw(waiter: KeyWaiter): void {
    if (!waiter.live) return
    const sem = waiter.semaphore
    const sent = waiter.sent
    sem.leave(waiter, 'withdrawn')
    this.#admitParked(sem)
    if (sent) void this.giveBack(sem, [waiter.id])
    // never sent, or answered `full`: nothing in Redis to undo
    else this.#d.semaphores.collect(sem)
  }

  /**
   * Ends a waiter's wait with the Redis permit `id` — its own id once Redis granted it, or the id of a
   * permit handed over by a release here — whose lease lasts at least until `leaseUntil`. A grant of
   * its own id read too late to be sure the lease still runs until the next renewal (a stall: the
   * message or reply waited in the socket) is confirmed first: its slot may have gone to another replica.
   */
  grant(waiter: KeyWaiter, id = waiter.id, leaseUntil = waiter.notGrantedAt + this.#leaseMs): void {
    const sem = waiter.semaphore
    if (id === waiter.id && sem.leaseInDoubt(leaseUntil, this.#d.now())) {
      this.#confirm(waiter)
      return
    }
    sem.leave(waiter, 'granted')
    this.#admitParked(sem)
    const { ticket } = waiter
    ticket.leftBackend()
    const taken = ticket.succeed((waitedMs) => {
      const permit = this.#d.hooks.makePermit(
        sem.key,
        ticket.options,
        { kind: 'redis', tag: sem.tag, id },
        waitedMs,
        waiter.policy.app,
      )
      sem.hold(id, permit, leaseUntil, this.#d.now())
      return permit
    })
    if (!taken) void this.giveBack(sem, [id])
  }

  /**
   * A grant whose lease is in doubt: renewed if Redis still counts it (then it was never given away),
   * else the request goes back to its place in the queue. It stays withdrawable meanwhile: its
   * withdrawal, sent after the renewal, releases the permit if it was renewed.
   */
  #confirm(waiter: KeyWaiter): void {
    const sem = waiter.semaphore
    sem.confirm(waiter)
    const sentAt = this.#d.now()
    this.#d.scripts.renew(sem, waiter.id).then(
      (renewed) => {
        if (!waiter.live) return
        if (renewed) this.grant(waiter, waiter.id, sentAt + this.#leaseMs)
        else this.requeue(waiter)
      },
      (err: unknown) => {
        if (waiter.live) this.#attemptFailed(waiter, err)
      },
    )
  }

  /**
   * Queues a waiter again, placed by its age, under a NEW id: Redis granted its old id and the lease ran
   * out (a grant confirmed too late), or dropped it from the queue (a stall made this replica look
   * dead). A grant message for the old id may still come, and with the same id would pass for a grant
   * of the new wait (docs/redis-limiter.md, "Leases"); for the old id it finds no waiter. Redis no
   * longer knows the old id, so nothing is left to withdraw. It keeps its place under the queue bounds.
   */
  requeue(old: KeyWaiter): void {
    const { ticket, policy } = old
    const waiter = old.semaphore.requeue(old, this.#d.nextId(policy, ticket.arrivedAt))
    ticket.servedBy(() => this.withdraw(waiter))
    void this.#sendAcquire(waiter)
  }

  /** A grant message: Redis made one of our waiters a holder, and `head` is the waiter it left at the head of the queue. */
  onGrantMessage(id: string, head?: string): void {
    const waiter = this.#d.semaphores.waiter(id)
    if (!waiter) {
      // Done here (withdrawn, re-queued, served): a slot Redis gave it now serves nobody, so it goes back
      // at once — not left for a lease (a ghost after Redis's state went back in time: docs/redis-limiter.md,
      // "Failure modes"). After a withdrawal's own release it finds nothing: one script, no harm.
      const sem = this.#d.semaphores.retired(id)
      if (sem !== undefined) void this.giveBack(sem, [id])
      return
    }
    waiter.semaphore.headNamed(head)
    this.granted(waiter)
  }

  /**
   * Redis made this waiter a holder: it gets its permit now, or once its acquire's reply is in.
   * `leaseUntil`: a better bound of the new lease than the waiter's own, when the caller has one.
   */
  granted(waiter: KeyWaiter, leaseUntil?: number): void {
    if (waiter.semaphore.grantHeard(waiter)) this.grant(waiter, waiter.id, leaseUntil)
  }

  /** Releases holders and withdraws waiters of one semaphore; a slot its reply hands to one of our waiters ends that wait here (`wantHead`, `answer`, `served`: see release/lua.ts). */
  async giveBack(sem: KeySemaphore, ids: string[], wantHead = false, answer?: Answer, served = false): Promise<void> {
    const sentAt = this.#d.now()
    const mark = sem.headMark
    try {
      const { granted, head, limit, learned } = await this.#d.scripts.release(sem, { ids, wantHead, answer, served })
      sem.headHeard(head, mark)
      // a waiter is queued: a permit kept for our next request goes to it (its replica may not have said)
      if (head !== undefined) this.#d.kept.giveBack(sem)
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
        if (waiter) this.granted(waiter, sentAt + this.#leaseMs)
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

  /** A request re-queued by its age went ahead of the head this replica may have been told of. */
  onHeadStale(tag: string): void {
    const sem = this.#d.semaphores.byTag(tag)
    if (sem === undefined) return
    sem.headStale()
    // someone may be queued now: a permit kept for our next request goes to them instead
    this.#d.kept.giveBack(sem)
  }
}
