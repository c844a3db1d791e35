import type { AppPolicy } from '../fairness/policy.js'
import type { PermitKey } from '../types.js'
import { HeadHint } from './head-hint.js'
import { HeldPermits, type HeldView, type LeftHere, type SyncedLeases, type TakenBack } from './held-permits.js'
import type { SemaphoreKeys } from './keys.js'
import type { AcquireSent, Admission, ReplyHeard, SemaphoreContext, SyncSent } from './semaphore-types.js'
import { QueueBounds, type Full } from './queue-bounds.js'
import { SafetyTimer } from './safety-timer.js'
import { SyncBook } from './sync-book.js'
import type { LimitOptions, SluicePermit, Ticket } from './ticket.js'
import { Waiter, type WaiterState, type WaiterWatch } from './waiter.js'

/** A waiter of a KeySemaphore. */
export type KeyWaiter = Waiter<KeySemaphore>

/**
 * One shared semaphore — an (instance, endpoint) pair — as this replica knows it, and the one owner of that state
 * (docs/redis-limiter.md, "The replica's side"): its waiters and their lifecycle (waiter.ts), the queue bounds' counts,
 * the permits it holds (one perhaps kept, or being reused) with their leases, what Redis last said (head, limit), the
 * ids to give back once Redis answers, its sync and safety timer. It sends nothing itself: Waiting, SyncLoop and
 * adoption run the scripts and tell it what they sent and what came back.
 */
export class KeySemaphore {
  readonly #context: SemaphoreContext<KeySemaphore>
  /** the limit argument of its scripts (see limitArg in keys.ts) */
  #arg: string
  /** the limit in force, as Redis last said (a learned limit changes with the API's answers) */
  #limit: number
  /** when this replica last refreshed its liveness and the key's description in Redis (monotonic ms); -Infinity until the
   * first time: 0 would read as "announced at start" on a young process's clock, and its first waiters dropped as a dead replica's */
  #announcedAt: number
  readonly #waiters = new Map<string, KeyWaiter>()
  readonly #bounds = new QueueBounds<KeySemaphore>()
  /** the ids to give back once Redis answers, and what the next sync does (sync-book.ts) */
  readonly #book = new SyncBook()
  readonly #safety = new SafetyTimer()
  readonly #watch: WaiterWatch<KeySemaphore>
  /** the permits it holds here, with their leases: changed only through this class's verbs */
  readonly #held = new HeldPermits()
  /** the head of the queue, as Redis last named it: changed only through this class's verbs */
  readonly #head = new HeadHint()

  constructor(
    readonly key: PermitKey,
    readonly keys: SemaphoreKeys,
    arg: string,
    limit: number,
    announcedAt: number,
    context: SemaphoreContext<KeySemaphore>,
  ) {
    this.#arg = arg
    this.#limit = limit
    this.#announcedAt = announcedAt
    this.#context = context
    this.#watch = { moved: (waiter, from, to) => this.#moved(waiter, from, to), illegal: (err) => context.illegal(err) }
  }

  get tag(): string {
    return this.keys.tag
  }

  get arg(): string {
    return this.#arg
  }

  get limit(): number {
    return this.#limit
  }

  get announcedAt(): number {
    return this.#announcedAt
  }

  /** The permits it holds, read-only: they change through `hold`, `takeBack` and `synced`. */
  get held(): HeldView {
    return this.#held
  }

  /** A grant (or an adoption) made this permit ours, under `id` (`since`: Redis granted it then, if earlier: a kept permit). */
  hold(id: string, permit: SluicePermit, leaseUntil: number, grantedAt: number, since = grantedAt): void {
    this.#held.hold(id, permit, leaseUntil, grantedAt, since)
  }

  /** Keeps a permit for the next request (kept-permits.ts), or with none takes it: the one kept before is returned. */
  keep(kept?: HeldView['kept']): HeldView['kept'] {
    return this.#held.swapKept(kept)
  }

  /** A kept permit's reuse goes out for `ticket` (a sync keeps its id), or (none) ended: false if its request went to the fallback. */
  reusing(id: string, ticket?: Ticket): boolean {
    if (ticket === undefined) return this.#held.reuseEnded(id)
    this.#held.reuseSent(id, ticket)
    return true
  }

  /** Redis became unreachable: requests whose reuse is on its way go to the fallback; their ids go back once Redis answers. */
  detachReuses(): Ticket[] {
    const { ids, tickets } = this.#held.detachReuses()
    if (ids.length > 0) this.dropLater(ids)
    return tickets
  }

  /** Nobody has queued since Redis said the queue was empty, as far as this replica heard (HeadHint.quiet). */
  get quiet(): boolean {
    return this.#head.quiet
  }

  /** Where the stale-head messages stand now (HeadHint.mark): a script sent now passes it back with its reply. */
  get headMark(): number {
    return this.#head.mark
  }

  /** A script sent at `mark` named the head of the queue (HeadHint.fromReply). */
  headHeard(head: string | undefined, mark: number): void {
    this.#head.fromReply(head, mark)
  }

  /** A grant message named the head left in the queue. */
  headNamed(head: string | undefined): void {
    this.#head.named(head)
  }

  /** A stale-head message: a waiter re-queued by its age may have gone ahead of the head named. */
  headStale(): void {
    this.#head.stale()
  }

  /** The acquire options name another limit: scripts get the new argument, and the key is announced again. */
  useLimits(arg: string, limits: LimitOptions): void {
    if (arg === this.#arg) return
    this.#arg = arg
    if (limits.learn === undefined) this.#limit = limits.limit
    this.#announcedAt = Number.NEGATIVE_INFINITY
  }

  /** A script's reply said which limit is in force. */
  heardLimit(limit: number | undefined): void {
    if (limit === undefined || !Number.isFinite(limit)) return
    this.#limit = limit
    this.#context.limitHeard(this, limit)
  }

  /** Exactly the limit held here: a request can only queue. MORE is not "all": an outage's permits counted again give their surplus back. */
  #holdsAll(): boolean {
    return this.#held.size === this.#limit
  }

  /** A new waiter of this key (`new`); `byAge`: placed by its age (it waited before). */
  join(id: string, ticket: Ticket, policy: AppPolicy, byAge = ticket.retried): KeyWaiter {
    const waiter = new Waiter<KeySemaphore>(id, ticket, policy, byAge, this, this.#watch)
    this.#waiters.set(id, waiter)
    this.#context.joined(waiter)
    return waiter
  }

  /** A request whose kept permit `reuse` gave back waits under `id` by its age, kept by the bounds as a requeued waiter
   * (it came before those that queued during its reuse: none passes it or pushes it out; docs/redis-limiter.md) */
  rejoin(id: string, ticket: Ticket, policy: AppPolicy): { readonly waiter: KeyWaiter; readonly how: Admission } {
    const waiter = this.join(id, ticket, policy, true)
    this.#bounds.keep(waiter)
    return { waiter, how: this.#send(waiter) }
  }

  /** Lets a new waiter in: counted by the queue bounds if they have room, else sent with `full` (queue-bounds.ts). */
  enter(waiter: KeyWaiter): Admission {
    this.#bounds.enter(waiter)
    return this.#send(waiter)
  }

  #send(waiter: KeyWaiter): Admission {
    // every permit of the key is here: it can only queue, so it goes out after a handover of this turn
    if (this.#holdsAll()) {
      waiter.move('deferred')
      return 'defer'
    }
    waiter.move('sending')
    return 'send'
  }

  /** Sent with `full`, answered `full`: refused (the bound, for the 503) if the waiters Redis queued fill one, else parked. */
  answeredFull(waiter: KeyWaiter): Full | undefined {
    const full = this.#bounds.refusesAtOnce(waiter)
    waiter.move(full === undefined ? 'parked' : 'refused')
    return full
  }

  /** Decides the parked waiters, first come first: let in (`start`: sent again, counted), refused, or left parked. */
  admitParked(start: (w: KeyWaiter, how: Admission) => void, refuse: (w: KeyWaiter, full: Full) => void): void {
    this.#bounds.walk((waiter, decision) => {
      if (decision === 'room') {
        start(waiter, this.#send(waiter))
      } else {
        waiter.move('refused')
        refuse(waiter, decision)
      }
    })
  }

  /** A deferred waiter's turn came: its acquire goes out. False when it left meanwhile. */
  undefer(waiter: KeyWaiter): boolean {
    return waiter.state === 'deferred' && waiter.move('sending')
  }

  /** Every move of a waiter (KeyWaiter.move) comes here: the counts follow the states. */
  #moved(waiter: KeyWaiter, from: WaiterState, to: WaiterState): void {
    this.#bounds.moved(waiter, from, to)
    if (!waiter.live) {
      if (this.#waiters.get(waiter.id) === waiter) this.#waiters.delete(waiter.id)
      this.#context.left(waiter, from)
    }
    this.#context.moved?.(waiter, from, to)
  }

  /** Its acquire goes out now: what it is sent with. `keepAge`: placed by its age (it waited before). */
  acquireSent(waiter: KeyWaiter, keepAge: boolean, now: number): AcquireSent {
    const mark = this.#head.mark
    waiter.stampSent(now)
    this.#head.sending(waiter.policy.app, keepAge)
    // every permit is here, so it can only queue for one of ours: a permit that ends meanwhile goes back, not kept
    if (this.#holdsAll()) this.#head.noisy()
    const announcedBefore = this.#announcedAt > Number.NEGATIVE_INFINITY
    const announce = now - this.#announcedAt >= this.#context.syncMs
    return {
      sentAt: now,
      mark,
      announce,
      announcedBefore,
      wantHead: this.#holdsAll(),
      full: this.#bounds.isPending(waiter),
    }
  }

  /** What every acquire reply says, whatever became of its waiter. */
  acquireAnswered(sent: AcquireSent, reply: ReplyHeard): void {
    if (sent.announce) this.#announcedAt = Math.max(this.#announcedAt, sent.sentAt)
    if (reply.forgot && sent.announcedBefore) this.#book.forgotten()
    this.#head.queueHeard(reply.quiet === true && !(reply.forgot && sent.announcedBefore), sent.mark)
    this.heardLimit(reply.limit)
    this.#held.heardTotal(reply.held)
  }

  /** Redis queued it; `atHead`: as the head (asked for when every permit is here). */
  queue(waiter: KeyWaiter, atHead: boolean, mark: number): void {
    waiter.move('queued')
    if (atHead) this.#head.fromReply(waiter.id, mark)
  }

  /** A grant of it was heard: true when it takes its permit now (queued); while sending, once the reply is in. */
  grantHeard(waiter: KeyWaiter): boolean {
    if (waiter.state === 'sending') waiter.heardGrantEarly()
    // `confirming`: a second word of the same grant (message and reply); the renewal decides
    return waiter.state === 'queued'
  }

  /** Its waiting ends: `granted`, `failed`, `withdrawn` (an id sent is given back by the caller), `detached` (once Redis answers). */
  leave(waiter: KeyWaiter, end: 'granted' | 'failed' | 'withdrawn' | 'detached'): void {
    const sent = waiter.sent
    if (waiter.move(end) && end === 'detached' && sent) this.dropLater([waiter.id])
  }

  /** A grant read too late to be sure its lease still runs: a renewal goes out. */
  confirm(waiter: KeyWaiter): void {
    waiter.move('confirming')
  }

  /** It waits again under the new id `id`, placed by its age (Waiting.requeue). Counted against the queue bounds, it keeps
   * its place; sent with `full` (let in for a free slot, and granted), it goes through the bounds as a new waiter would. */
  requeue(old: KeyWaiter, id: string): KeyWaiter {
    const counted = !this.#bounds.isPending(old)
    old.move('requeued')
    const waiter = this.join(id, old.ticket, old.policy, true)
    if (counted) this.#bounds.keep(waiter)
    else this.#bounds.enter(waiter)
    waiter.move('sending')
    return waiter
  }

  /** The waiter of that id, if it is queued. */
  queuedWaiter(id: string): KeyWaiter | undefined {
    const waiter = this.#waiters.get(id)
    return waiter?.state === 'queued' ? waiter : undefined
  }

  get hasQueued(): boolean {
    return this.#bounds.queued > 0
  }

  /** A lease known to last until `leaseUntil` may run out before the next renewal. */
  leaseInDoubt(leaseUntil: number, now: number): boolean {
    return leaseUntil - now < this.#context.syncMs
  }

  /** Whether this permit is held here under `id` and its lease is sure to last until the next renewal. */
  leaseHolds(id: string, permit: SluicePermit, now: number): boolean {
    const held = this.#held.get(id)
    return held?.permit === permit && !this.leaseInDoubt(held.leaseUntil, now)
  }

  /** The permit is given back: what it was, or undefined when it is not held here (lost already). */
  takeBack(id: string, permit: SluicePermit): TakenBack | undefined {
    // every permit of the key is ours: no other replica can have released one since Redis named the head
    return this.#held.takeBack(id, permit, this.#holdsAll())
  }

  /** The waiter a permit given back now goes to, or undefined (the hint is used once): only when we held every permit,
   * Redis named our queued waiter the head, of the permit's app (its id names the app Redis counts), and the lease
   * outlasts the next renewal (a stalled replica hands over nothing). redis-limiter.md, "Inside one replica" */
  handOver(heldAll: boolean, leaseUntil: number, now: number, app: string): KeyWaiter | undefined {
    const hint = this.#head.take()
    if (!heldAll || hint === undefined) return undefined
    const next = this.queuedWaiter(hint)
    if (next === undefined || this.leaseInDoubt(leaseUntil, now)) return undefined
    return next.policy.app === app ? next : undefined
  }

  /** ids Redis may know that must be released or withdrawn once it answers again (by the next sync) */
  dropLater(ids: readonly string[]): void {
    this.#book.dropLater(ids)
  }

  undrop(ids: readonly string[]): void {
    this.#book.undrop(ids)
  }

  /** The key is broken (Redis refuses it): nothing to withdraw from it; kept, the ids would keep its state for ever. */
  forgetDrops(): void {
    this.#book.forgetDrops()
  }

  /** One sync at a time per key: the one running, or the one `run` starts; `done` after it ends. */
  syncOnce(run: () => Promise<void>, done: () => void): Promise<void> {
    return this.#book.once(run, done)
  }

  /** A sync goes out now: what it is sent with (the ids to drop leave `drops`: back with `dropLater` if it fails). */
  syncSent(now: number): SyncSent {
    const marks = this.#book.take()
    // queued, and others Redis may have (an acquire on its way, a grant being confirmed): a reconciliation keeps both
    const waiting: string[] = []
    const keep: string[] = this.#held.reusingIds() // a kept permit's reuse on its way: renewed by it, not a ghost
    for (const w of this.#waiters.values()) if (w.sent) (w.state === 'queued' ? waiting : keep).push(w.id)
    const { ids: renewing, sure } = this.#held.renewing(now + this.#context.syncMs)
    return { sentAt: now, mark: this.#head.mark, waiting, renewing, sure, keep, ...marks }
  }

  /** Redis may come back as another server or an older state (a failover): reconcile and count again (docs/redis-limiter.md, "Failure modes"). */
  mayHaveMoved(): void {
    this.#book.mayHaveMoved()
    this.#head.noisy() // nor is its queue as last heard: no permit is kept on it
  }

  /** A sync failed: it may or may not have run, so the epoch it wrote is not known. */
  syncFailed(): void {
    this.#book.failed()
  }

  /** What every sync reply says: held permits counted again, liveness announced, limit, head; and the leases it found `lost`,
   * `recounted` (those not sent yet leave: HeldPermits.recounted) and renewed until `leaseUntil`. Returns those that left. */
  synced(sent: SyncSent, reply: ReplyHeard & { readonly head: string | undefined }, leases: SyncedLeases): LeftHere {
    this.#book.synced(sent, reply.forgot)
    this.#announcedAt = Math.max(this.#announcedAt, sent.sentAt)
    this.heardLimit(reply.limit)
    this.#held.heardTotal(reply.held)
    this.#head.fromReply(reply.head, sent.mark)
    const lost = leases.lost.flatMap((id) => this.#held.lose(id) ?? [])
    const unsent = leases.recounted.length > 0 ? this.#held.recounted(leases.recounted) : []
    this.#held.renewed(sent.renewing, leases.leaseUntil)
    return { lost, unsent }
  }

  /** The sync found these waiters still queued (not granted before it was sent). */
  stillQueued(ids: readonly string[], missing: ReadonlySet<string>, at: number): void {
    for (const id of ids) if (!missing.has(id)) this.queuedWaiter(id)?.stillQueuedAt(at)
  }

  /** Arms the timer that syncs a little after the nearest lease ends on Redis's clock (so the holder is expired when we look). */
  armSafety(delayMs: number, now: number, fire: () => void): void {
    this.#safety.arm(delayMs, now, fire)
  }

  stopSafety(): void {
    this.#safety.stop()
  }

  /** Nothing of this replica is left in the semaphore: its state can be forgotten. */
  isIdle(): boolean {
    return !this.isActive() && !this.#book.hasDrops && !this.#book.syncing
  }

  /** Something to renew, flush, check or reconcile in Redis. */
  isBusy(): boolean {
    return this.#held.size > 0 || this.#waiters.size > 0 || this.#book.hasDrops || this.#book.reconciling
  }

  /** It holds permits or has waiters (the heartbeat lists it for `/status`). */
  isActive(): boolean {
    return this.#held.size > 0 || this.#waiters.size > 0
  }
}
