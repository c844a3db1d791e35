import { FairShare } from '../fairness/policy.js'
import type { KeyStatus, PermitKey, PermitOutcome } from '../types.js'
import { adoptPermits } from './adoption.js'
import { parseGrantMessage } from './grant-message.js'
import type { GlobalKeys } from './keys.js'
import { KeptPermits } from './kept-permits.js'
import { Releases } from './releases.js'
import { ReplicaScripts } from './replica-scripts.js'
import type { ScriptRunner } from './script.js'
import { Semaphores } from './semaphores.js'
import { sharedStatus, type SharedStatus } from './status/index.js'
import { StuckKeys } from './stuck-keys.js'
import type { OthersHeld, SharedConfig, SharedHooks } from './shared-types.js'
import { SyncLoop } from './sync-loop.js'
import type { Grant, LimitOptions, SluicePermit, Ticket } from './ticket.js'

import { waiterIds } from './waiter-id.js'
import { Waiting } from './waiting.js'

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
    // one direction: Releases and SyncLoop use Waiting, which gives ids back and reads what Redis grants in reply
    const common = { scripts: this.#scripts, semaphores: this.#semaphores, hooks, now }
    this.#kept = new KeptPermits({
      now,
      release: (sem, ids) => this.#waiting.giveBack(sem, ids),
      syncMs: config.syncMs,
      keepForMs: config.keepPermits === true ? config.keepForMs : 0,
    })
    const kept = this.#kept
    this.#waiting = new Waiting({ ...common, fairness: this.#fairness, nextId: this.#nextId, kept })
    this.#releases = new Releases({ ...common, waiting: this.#waiting, kept })
    this.#sync = new SyncLoop({
      ...common,
      waiting: this.#waiting,
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

  /** Memo entries of keys this replica has no semaphore for: none once they idled as long as their Redis keys live. */
  remembered(): number {
    return this.#semaphores.remembered()
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

  /** The heartbeat found the registry older than its last write: every key used lately is reconciled at its next sync. */
  stateWentBack(): void {
    this.#semaphores.mayHaveMoved()
  }

  /**
   * Redis became unreachable: every waiter leaves the shared side (its id is withdrawn once Redis is
   * back) and is returned, oldest first, to be served by the fallback.
   */
  detachWaiters(): Ticket[] {
    const waiters = this.#semaphores.detached()
    for (const waiter of waiters) {
      waiter.semaphore.leave(waiter, 'detached')
      waiter.ticket.leftBackend()
    }
    const tickets = waiters.map((w) => w.ticket)
    for (const sem of this.#semaphores.all()) {
      sem.stopSafety()
      // a request whose kept permit's reuse is on its way goes to the fallback like a queued acquire
      for (const ticket of sem.detachReuses()) {
        ticket.leftBackend()
        tickets.push(ticket)
      }
      // a kept permit is given back once Redis answers, and never used meanwhile (Redis may come back without it)
      this.#kept.drop(sem)
      this.#semaphores.collect(sem)
    }
    return tickets.sort((a, b) => a.arrivedAt - b.arrivedAt)
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

  /**
   * Tags of the semaphores this replica holds permits of or waits for; not one whose only permit is kept for a next
   * request (kept-permits.ts): no request is on it, and listed, every key used within the window would be read by
   * every scrape (docs/redis-limiter.md, "Status and metrics").
   */
  activeTags(): string[] {
    return this.#semaphores
      .all()
      .filter((s) => s.isActive() && !(s.held.kept !== undefined && s.held.size === 1 && !s.hasQueued))
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
