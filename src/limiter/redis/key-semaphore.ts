import type { AppPolicy } from '../fairness/policy.js'
import type { PermitKey } from '../types.js'
import { HeadHint } from './head-hint.js'
import { HeldPermits, type Held } from './held-permits.js'
import type { SemaphoreKeys } from './keys.js'
import type { AcquireSent, Admission, ReplyHeard, SemaphoreContext, SyncSent } from './semaphore-types.js'
import { QueueBounds, type Full } from './queue-bounds.js'
import type { LimitOptions, SluicePermit, Ticket } from './ticket.js'
import { Waiter, type WaiterState, type WaiterWatch } from './waiter.js'

/** Every 30th sync also clears dead replicas' liveness fields from the meta hash (it reads the whole hash). */
const SWEEP_EVERY = 30

/** Epochs a sync writes: unique in this process, so a state older than a key's last sync never holds the one expected. */
let epochs = 0
/**
 * One shared semaphore — an (instance, endpoint) pair — as this replica knows it, and the one owner of
 * that state (docs/redis-limiter.md, "The replica's side"): its waiters and their lifecycle
 * (waiter.ts), the counts the queue bounds read, the permits it holds with their leases, what Redis
 * last said (the head of the queue, the limit in force), the ids to give back once Redis answers, and
 * its sync and safety timer. It sends nothing itself: Waiting, SyncLoop and adoption run the scripts
 * and tell it what they sent and what came back.
 */
export class KeySemaphore {
  readonly #context: SemaphoreContext
  /** the limit argument of its scripts (see limitArg in keys.ts) */
  #arg: string
  /** the limit in force, as Redis last said (a learned limit changes with the API's answers) */
  #limit: number
  /**
   * when this replica last refreshed its liveness and the key's description in Redis (monotonic ms);
   * -Infinity until the first time: 0 would read as "announced at start" on a young process's clock,
   * and its first waiters, unannounced, would be dropped from the queue as a dead replica's
   */
  #announcedAt: number
  readonly #waiters = new Map<string, Waiter>()
  readonly #bounds = new QueueBounds()
  /** ids to release or withdraw once Redis answers again (made when first needed: most keys never have any) */
  #drops: Set<string> | undefined
  /** a script found that Redis no longer knew this replica (it lost its data): the next sync counts held permits again */
  #recount = false
  /** Redis may be another server or an older state (a reconnect): the next sync removes this replica's ghosts */
  #reconcile = false
  /** the epoch the last sync wrote ('' when not known: none yet, or the sync failed) */
  #epoch = ''
  #safety: NodeJS.Timeout | undefined
  #safetyAt = 0
  #syncing: Promise<void> | undefined
  #syncs = 0
  readonly #watch: WaiterWatch
  /** the permits it holds here, with their leases */
  readonly held = new HeldPermits()
  /** the head of the queue, as Redis last named it */
  readonly head = new HeadHint()

  constructor(
    readonly key: PermitKey,
    readonly keys: SemaphoreKeys,
    arg: string,
    limit: number,
    announcedAt: number,
    context: SemaphoreContext,
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

  /**
   * This replica holds exactly the key's limit of permits: a new request can only queue, and the head
   * Redis names may be ours to hand over. Holding MORE is not "all": permits granted during an outage
   * were counted again (adopt), and each release must give its surplus slot back.
   */
  #holdsAll(): boolean {
    return this.held.size === this.#limit
  }

  /** A new waiter of this key (`new`); `byAge`: placed by its age (it waited before). */
  join(id: string, ticket: Ticket, policy: AppPolicy, byAge = ticket.retried): Waiter {
    const waiter = new Waiter(id, ticket, policy, byAge, this, this.#watch)
    this.#waiters.set(id, waiter)
    this.#context.joined(waiter)
    return waiter
  }

  /** Lets a new waiter in: counted by the queue bounds if they have room, else sent with `full` (queue-bounds.ts). */
  enter(waiter: Waiter): Admission {
    this.#bounds.enter(waiter)
    return this.#send(waiter)
  }

  #send(waiter: Waiter): Admission {
    // every permit of the key is here: it can only queue, so it goes out after a handover of this turn
    if (this.#holdsAll()) {
      waiter.move('deferred')
      return 'defer'
    }
    waiter.move('sending')
    return 'send'
  }

  /** Sent with `full`, answered `full`: refused (the bound, for the 503) if the waiters Redis queued fill one, else parked. */
  answeredFull(waiter: Waiter): Full | undefined {
    const full = this.#bounds.refusesAtOnce(waiter)
    waiter.move(full === undefined ? 'parked' : 'refused')
    return full
  }

  /** Decides the parked waiters, first come first: let in (`start`: sent again, counted), refused, or left parked. */
  admitParked(start: (waiter: Waiter, how: Admission) => void, refuse: (waiter: Waiter, full: Full) => void): void {
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
  undefer(waiter: Waiter): boolean {
    return waiter.state === 'deferred' && waiter.move('sending')
  }

  /** Every move of a waiter (Waiter.move) comes here: the counts follow the states. */
  #moved(waiter: Waiter, from: WaiterState, to: WaiterState): void {
    this.#bounds.moved(waiter, from, to)
    if (!waiter.live) {
      if (this.#waiters.get(waiter.id) === waiter) this.#waiters.delete(waiter.id)
      this.#context.left(waiter, from)
    }
    this.#context.moved?.(waiter, from, to)
  }

  /** Its acquire goes out now: what it is sent with. `keepAge`: placed by its age (it waited before). */
  acquireSent(waiter: Waiter, keepAge: boolean, now: number): AcquireSent {
    const mark = this.head.mark
    waiter.stampSent(now)
    this.head.sending(waiter.policy.app, keepAge)
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
    if (reply.forgot && sent.announcedBefore) this.#recount = true
    this.heardLimit(reply.limit)
    this.held.heardTotal(reply.held)
  }

  /** Redis queued it; `atHead`: as the head (asked for when every permit is here). */
  queue(waiter: Waiter, atHead: boolean, mark: number): void {
    waiter.move('queued')
    if (atHead) this.head.fromReply(waiter.id, mark)
  }

  /** A grant of it was heard: true when it takes its permit now (queued); while sending, once the reply is in. */
  grantHeard(waiter: Waiter): boolean {
    if (waiter.state === 'sending') waiter.heardGrantEarly()
    // `confirming`: a second word of the same grant (message and reply); the renewal decides
    return waiter.state === 'queued'
  }

  /**
   * Its waiting ends: `granted`, `failed`, `withdrawn` (an id sent is given back by the caller's
   * release), `detached` (an id sent is given back once Redis answers again).
   */
  leave(waiter: Waiter, end: 'granted' | 'failed' | 'withdrawn' | 'detached'): void {
    const sent = waiter.sent
    if (waiter.move(end) && end === 'detached' && sent) this.dropLater([waiter.id])
  }

  /** A grant read too late to be sure its lease still runs: a renewal goes out. */
  confirm(waiter: Waiter): void {
    waiter.move('confirming')
  }

  /**
   * It waits again under the new id `id`, placed by its age (see Waiting.requeue). Counted against the
   * queue bounds, it keeps its place there; sent with `full` (it was let in for a slot free at once,
   * and granted), it goes through the bounds again as a new waiter would: the bound holds.
   */
  requeue(old: Waiter, id: string): Waiter {
    const counted = !this.#bounds.isPending(old)
    old.move('requeued')
    const waiter = this.join(id, old.ticket, old.policy, true)
    if (counted) this.#bounds.keep(waiter)
    else this.#bounds.enter(waiter)
    waiter.move('sending')
    return waiter
  }

  /** The waiter of that id, if it is queued. */
  queuedWaiter(id: string): Waiter | undefined {
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
    const held = this.held.get(id)
    return held?.permit === permit && !this.leaseInDoubt(held.leaseUntil, now)
  }

  /** The permit is given back: what it was, or undefined when it is not held here (lost already). */
  takeBack(id: string, permit: SluicePermit): (Omit<Held, 'permit'> & { readonly heldAll: boolean }) | undefined {
    const held = this.held.get(id)
    if (held?.permit !== permit) return undefined
    // every permit of the key is ours: no other replica can have released one since Redis named the head
    const heldAll = this.#holdsAll()
    this.held.remove(id)
    return { heldAll, leaseUntil: held.leaseUntil, grantedAt: held.grantedAt, since: held.since }
  }

  /**
   * The waiter a permit given back now is handed to, here and now, or undefined (the hint is used
   * once): only when this replica held every permit of the key, Redis named one of our queued waiters
   * as the head, it is of the permit's app (the id Redis keeps names the app it counts), and the lease
   * is sure to last beyond the next renewal (a stalled replica hands over nothing). Why this is fair
   * and safe: docs/redis-limiter.md, "Inside one replica", and test/limiter/redis/handover.test.ts.
   */
  handOver(heldAll: boolean, leaseUntil: number, now: number, app: string): Waiter | undefined {
    const hint = this.head.take()
    if (!heldAll || hint === undefined) return undefined
    const next = this.queuedWaiter(hint)
    if (next === undefined || this.leaseInDoubt(leaseUntil, now)) return undefined
    return next.policy.app === app ? next : undefined
  }

  /** ids Redis may know that must be released or withdrawn once it answers again (by the next sync) */
  dropLater(ids: readonly string[]): void {
    if (ids.length === 0) return
    this.#drops ??= new Set()
    for (const id of ids) this.#drops.add(id)
  }

  undrop(ids: readonly string[]): void {
    for (const id of ids) this.#drops?.delete(id)
  }

  /** The key is broken (Redis refuses it): nothing to withdraw from it; kept, the ids would keep its state for ever. */
  forgetDrops(): void {
    this.#drops = undefined
    this.#reconcile = false // nor can its keys be reconciled: kept, the broken key would be synced in vain forever
  }

  /** One sync at a time per key: the one running, or the one `run` starts; `done` after it ends. */
  syncOnce(run: () => Promise<void>, done: () => void): Promise<void> {
    this.#syncing ??= run().finally(() => {
      this.#syncing = undefined
      done()
    })
    return this.#syncing
  }

  /** A sync goes out now: what it is sent with (the ids to drop leave `drops`: back with `dropLater` if it fails). */
  syncSent(now: number): SyncSent {
    const drop = this.#drops === undefined ? [] : [...this.#drops]
    this.#drops = undefined
    const sweep = this.#syncs++ % SWEEP_EVERY === 0
    // queued, and others Redis may have (an acquire on its way, a grant being confirmed): a reconciliation keeps both
    const waiting: string[] = []
    const keep: string[] = []
    for (const w of this.#waiters.values()) if (w.sent) (w.state === 'queued' ? waiting : keep).push(w.id)
    const { ids: renewing, sure } = this.held.renewing(now + this.#context.syncMs)
    return {
      sentAt: now,
      mark: this.head.mark,
      waiting,
      drop,
      renewing,
      sure,
      recount: this.#recount,
      sweep,
      expectEpoch: this.#epoch,
      epoch: `${++epochs}`,
      reconcile: this.#reconcile,
      keep,
    }
  }

  /** Redis may come back as another server or an older state (a failover): reconcile and count again (docs/redis-limiter.md, "Failure modes"). */
  mayHaveMoved(): void {
    this.#reconcile = true
    this.#recount = true
  }

  /** A sync failed: it may or may not have run, so the epoch it wrote is not known. */
  syncFailed(): void {
    this.#epoch = ''
  }

  /** What every sync reply says: held permits counted again, liveness announced, limit, head. */
  synced(sent: SyncSent, reply: ReplyHeard & { readonly head: string | undefined }): void {
    if (sent.recount) this.#recount = false
    if (sent.reconcile) this.#reconcile = false
    this.#epoch = sent.epoch
    // It found Redis had lost its data: a grant made before the loss but read after this sync went
    // out was not in its list, so the next sync counts again too (once: that one finds us known).
    if (reply.forgot) this.#recount = true
    this.#announcedAt = Math.max(this.#announcedAt, sent.sentAt)
    this.heardLimit(reply.limit)
    this.held.heardTotal(reply.held)
    this.head.fromReply(reply.head, sent.mark)
  }

  /** The sync found these waiters still queued (not granted before it was sent). */
  stillQueued(ids: readonly string[], missing: ReadonlySet<string>, at: number): void {
    for (const id of ids) if (!missing.has(id)) this.queuedWaiter(id)?.stillQueuedAt(at)
  }

  /** Arms the timer that syncs a little after the nearest lease ends on Redis's clock (so the holder is expired when we look). */
  armSafety(delayMs: number, now: number, fire: () => void): void {
    const at = now + delayMs + 5
    if (this.#safety && this.#safetyAt <= at) return
    this.stopSafety()
    this.#safetyAt = at
    this.#safety = setTimeout(() => {
      this.#safety = undefined
      fire()
    }, delayMs + 5)
    this.#safety.unref()
  }

  stopSafety(): void {
    if (this.#safety) clearTimeout(this.#safety)
    this.#safety = undefined
  }

  /** Nothing of this replica is left in the semaphore: its state can be forgotten. */
  isIdle(): boolean {
    return !this.isActive() && (this.#drops?.size ?? 0) === 0 && this.#syncing === undefined
  }

  /** Something to renew, flush, check or reconcile in Redis. */
  isBusy(): boolean {
    return this.held.size > 0 || this.#waiters.size > 0 || (this.#drops?.size ?? 0) > 0 || this.#reconcile
  }

  /** It holds permits or has waiters (the heartbeat lists it for `/status`). */
  isActive(): boolean {
    return this.held.size > 0 || this.#waiters.size > 0
  }
}
