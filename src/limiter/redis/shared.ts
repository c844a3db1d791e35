import { FairShare } from '../fairness/policy.js'
import type { KeyStatus, LimitChange, PermitKey, PermitOutcome } from '../types.js'
import { adoptPermits } from './adoption.js'
import { parseGrantMessage } from './grant-message.js'
import type { GlobalKeys } from './keys.js'
import { KeptPermits } from './kept-permits.js'
import { Releases } from './releases.js'
import { ReplicaScripts } from './replica-scripts.js'
import type { ScriptRunner } from './script.js'
import { Semaphores } from './semaphores.js'
import { sharedStatus, type SharedStatus } from './status/index.js'
import { StuckKeys, type StuckHolders } from './stuck-keys.js'
import { SyncLoop } from './sync-loop.js'
import type { Grant, LimitOptions, SluicePermit, Ticket } from './ticket.js'
import type { IllegalTransitionError, WaiterState } from './waiter.js'
import { waiterIds } from './waiter-id.js'
import { Waiting } from './waiting.js'

/** Permits of other replicas counted on a key, kept counted by the local fallback for `forMs` (docs/redis-limiter.md, "Failure modes"). */
export interface OthersHeld {
  readonly key: PermitKey
  readonly limit: number
  readonly count: number
  readonly forMs: number
}

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
  /** how long a permit may be kept for this replica's next request (kept-permits.ts; KEEP_FOR_MS unless a test says) */
  readonly keepForMs?: number
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
  /**
   * Redis had lost its data: the held permits whose requests are upstream were counted again
   * (`counted`), those not sent yet were given back (`heldBack`: each also reported `lost`)
   */
  recounted?(key: PermitKey, counts: { readonly counted: number; readonly heldBack: number }): void
  /** a sync removed this replica's entries that served no live request (Redis's state went back in time) */
  reconciled?(key: PermitKey, removed: number): void
  /** a status read found a key with waiters and no grant for longer than a lease (once per spell) */
  stuck?(key: PermitKey, holders: StuckHolders): void
  /** a waiter move the lifecycle does not allow (waiter.ts): a bug, refused; thrown when not given */
  bug?(err: IllegalTransitionError): void
  /** every waiter move (tests follow the lifecycle with it) */
  waiterMoved?(id: string, from: WaiterState, to: WaiterState): void
}

/**
 * This replica's side of the shared semaphores: one script to acquire, one to release, one sync per active
 * semaphore and lease third, never a poll per waiter. A front over one module per job (docs/development.md).
 */
export class SharedPermits {
  readonly #semaphores: Semaphores
  readonly #scripts: ReplicaScripts
  readonly #waiting: Waiting
  readonly #releases: Releases
  readonly #sync: SyncLoop
  readonly #kept: KeptPermits
  readonly #fairness: FairShare
  readonly #now: () => number
  readonly #nextId: ReturnType<typeof waiterIds>
  readonly #stuck: StuckKeys

  constructor(
    scripts: ScriptRunner,
    private readonly config: SharedConfig,
    private readonly hooks: SharedHooks,
  ) {
    const now = config.now ?? (() => performance.now())
    this.#now = now
    this.#fairness = config.fairness ?? new FairShare()
    this.#nextId = waiterIds(config.replicaId)
    this.#stuck = new StuckKeys(config.leaseMs, now, (key, holders) => hooks.stuck?.(key, holders))
    this.#semaphores = new Semaphores({
      prefix: config.prefix,
      syncMs: config.syncMs,
      recentMs: config.idleMs,
      now,
      illegal: (err) => {
        if (hooks.bug === undefined) throw err
        hooks.bug(err)
      },
      moved:
        hooks.waiterMoved === undefined ? undefined : (waiter, from, to) => hooks.waiterMoved?.(waiter.id, from, to),
    })
    this.#scripts = new ReplicaScripts(scripts, config)
    const release = (sem: Parameters<Releases['release']>[0], ids: string[]): Promise<void> =>
      this.#releases.release(sem, ids)
    const common = { scripts: this.#scripts, semaphores: this.#semaphores, hooks, now }
    this.#kept = new KeptPermits({ now, release, keepForMs: config.keepForMs })
    const kept = this.#kept
    this.#waiting = new Waiting({ ...common, fairness: this.#fairness, nextId: this.#nextId, release, kept })
    this.#releases = new Releases({ ...common, waiting: () => this.#waiting, kept: () => kept })
    this.#sync = new SyncLoop({
      ...common,
      waiting: this.#waiting,
      release,
      nextSequence: this.#nextId.next,
      beforeSync: (sem) => kept.drop(sem),
    })
  }

  /** A key's limit as this replica last heard it from Redis (for the fallback's share while Redis is away). */
  knownLimit(key: PermitKey, limits: LimitOptions): number {
    return this.#semaphores.knownLimit(key, limits)
  }

  /** How many semaphores this replica keeps state for (none once its last request is done). */
  trackedKeys(): number {
    return this.#semaphores.size
  }

  /** Starts a ticket's wait in Redis: granted at once when a slot is free and nobody is ahead. */
  enqueue(ticket: Ticket): void {
    this.#waiting.enqueue(ticket)
  }

  /** A message on this replica's grant channel (grant-message.ts). */
  onMessage(text: string): void {
    const message = parseGrantMessage(text)
    if (message.kind === 'stale-head') this.onHeadStale(message.tag)
    else this.onGrantMessage(message.id, message.head)
  }

  /** A grant message: one of our waiters is a holder, and `head` the waiter left at the head of the queue. */
  onGrantMessage(id: string, head?: string): void {
    this.#waiting.onGrantMessage(id, head)
  }

  /** A request re-queued by its age went ahead of the head this replica may have been told of. */
  onHeadStale(tag: string): void {
    this.#waiting.onHeadStale(tag)
  }

  leaseHolds(permit: SluicePermit): boolean {
    return this.#releases.leaseHolds(permit)
  }

  releasePermit(permit: SluicePermit, outcome?: PermitOutcome): void {
    this.#releases.releasePermit(permit, outcome)
  }

  syncAll(): Promise<void> {
    return this.#sync.syncAll()
  }

  /**
   * Redis became unreachable: every waiter leaves the shared side (its id is withdrawn once Redis is
   * back) and is returned, oldest first, to be served by the fallback.
   */
  detachWaiters(): Ticket[] {
    const waiters = this.#semaphores.detached()
    for (const waiter of waiters) {
      waiter.semaphore.leave(waiter, 'detached')
      waiter.ticket.withdraw = undefined
    }
    for (const sem of this.#semaphores.all()) {
      sem.stopSafety()
      // a kept permit is given back once Redis answers, and never used meanwhile (Redis may come back without it)
      this.#kept.drop(sem)
      sem.head.noisy()
      this.#semaphores.collect(sem)
    }
    return waiters.map((w) => w.ticket).sort((a, b) => a.arrivedAt - b.arrivedAt)
  }

  /** Counts in Redis the permits granted without it that are still in flight (adoption.ts). */
  adopt(permits: readonly SluicePermit[], adopted: (permit: SluicePermit, before: Grant) => void): Promise<void> {
    const d = {
      scripts: this.#scripts,
      semaphores: this.#semaphores,
      hooks: this.hooks,
      fairness: this.#fairness,
      now: this.#now,
      nextId: this.#nextId,
    }
    return adoptPermits(d, permits, adopted)
  }

  /** Every permit this replica holds from Redis. */
  heldPermits(): SluicePermit[] {
    return this.#semaphores.all().flatMap((s) => s.held.permits())
  }

  /**
   * Other replicas' permits Redis last counted on the keys this replica uses (Fallback.pinAll), kept for
   * `L − L/3`: the least a lease renewed every `L/3` still had at the switch — longer, and a limit-1
   * key would go over a lease without a start.
   */
  othersHeld(): OthersHeld[] {
    return this.#semaphores
      .all()
      .filter((s) => s.held.others > 0)
      .map((s) => ({
        key: s.key,
        limit: s.limit,
        count: s.held.others,
        forMs: this.config.leaseMs - this.config.syncMs,
      }))
  }

  /** Tags of the semaphores this replica holds permits of or waits for. */
  activeTags(): string[] {
    return this.#semaphores
      .all()
      .filter((s) => s.isActive())
      .map((s) => s.tag)
  }

  /**
   * What the next heartbeat announces: the keys busy now, never those used since the last one, so the
   * registry, and so `/status` and the scrape, follow what is busy (docs/redis-limiter.md, "Status and metrics").
   */
  announcedTags(): string[] {
    return this.activeTags()
  }

  /** `/status` from Redis: the semaphores busy on any replica, and their learned limits. */
  async status(globalKeys: GlobalKeys): Promise<Omit<SharedStatus, 'keys'> & { keys: KeyStatus[] }> {
    const read = await sharedStatus(this.#scripts.runner, globalKeys, {
      prefix: this.config.prefix,
      idleMs: this.config.idleMs,
      localTags: () => this.activeTags(),
    })
    return { ...read, keys: this.#stuck.read(read.keys) }
  }

  /** The limiter is draining (shutdown): parked waiters are not let in any more, only failed (Waiting.closing). */
  closing(): void {
    this.#waiting.closing()
    this.#kept.close()
  }

  /** Clears timers (close). */
  stop(): void {
    for (const sem of this.#semaphores.all()) sem.stopSafety()
  }
}
