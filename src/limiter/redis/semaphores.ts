import { BoundedMap } from '../../bounded/index.js'
import type { PermitKey } from '../types.js'
import { KeySemaphore, type KeyWaiter } from './key-semaphore.js'
import type { SemaphoreContext } from './semaphore-types.js'
import { learnsFrom, limitArg, semaphoreKeysOf, tagOf } from './keys.js'
import type { LimitOptions } from './ticket.js'
import type { IllegalTransitionError, WaiterState } from './waiter.js'

/** How many keys the memos below keep, least recently used forgotten first; past it a key costs a hash, an announcement or a learned start again. */
const KEYS_REMEMBERED = 10_000
/**
 * How many waiters done here are remembered by id at most, for a grant that comes for one (see `retired`):
 * each is kept for `recentMs` (3 leases) — 50,000 is ~3,300 contended requests a second over the default
 * 15 s, at ~150 B each (~7.5 MB at the bound); past it the oldest go first.
 */
const RETIRED_REMEMBERED = 50_000

/** Ids by when they were put, oldest first, each kept `keepMs` and at most `max` of them. */
class RetiredIds {
  readonly #ids = new Map<string, { readonly sem: KeySemaphore; readonly at: number }>()
  constructor(
    private readonly keepMs: number,
    private readonly max: number,
  ) {}

  set(id: string, sem: KeySemaphore, now: number): void {
    this.#ids.delete(id)
    this.#ids.set(id, { sem, at: now })
    for (const [old, { at }] of this.#ids) {
      if (this.#ids.size <= this.max && now - at < this.keepMs) break
      this.#ids.delete(old)
    }
  }

  get(id: string, now: number): KeySemaphore | undefined {
    const kept = this.#ids.get(id)
    return kept !== undefined && now - kept.at < this.keepMs ? kept.sem : undefined
  }
}

export interface SemaphoresConfig {
  readonly prefix: string
  readonly syncMs: number
  /** how long a key forgotten here is reconciled after a reconnect or a rollback: its Redis keys' idle expiry */
  readonly recentMs?: number
  readonly now: () => number
  /** a waiter move the lifecycle does not allow (waiter.ts) */
  illegal(err: IllegalTransitionError): void
  moved?(waiter: KeyWaiter, from: WaiterState, to: WaiterState): void
}

/** A key forgotten here: enough to reconcile it (sync/lua.ts) without a request. */
interface Recent {
  readonly key: PermitKey
  readonly arg: string
  readonly limit: number
  readonly at: number
}

/** The semaphores this replica keeps state for, its waiters by id (a grant message names only the id), and what is kept of forgotten keys. */
export class Semaphores {
  readonly #byTag = new Map<string, KeySemaphore>()
  /** every live waiter of this replica by id, in the order they were made */
  readonly #waiters = new Map<string, KeyWaiter>()
  /** (instance, endpoint) → tag and when it was last asked for, so the hot path does not hash each time */
  readonly #tags = new BoundedMap<string, { readonly tag: string; usedAt: number }>(KEYS_REMEMBERED)
  /** the learned limit in force each semaphore last had: a key used again starts from it (a fixed limit needs none) */
  readonly #known = new BoundedMap<string, number>(KEYS_REMEMBERED)
  /**
   * Waiters that were in Redis's queue and are done here, by id: a grant of one (a message after a
   * withdrawal, or after Redis's state went back in time and the id became a ghost) is given back.
   */
  readonly #retired: RetiredIds
  /**
   * Keys forgotten here within `recentMs`, oldest first: Redis's state after a failover or a rollback
   * may still hold this replica's ghosts there, so they are reconciled too (`mayHaveMoved`).
   */
  readonly #recent = new BoundedMap<string, Recent>(KEYS_REMEMBERED)
  /** `mayHaveMoved` was called: the next sync of every key reconciles the recent ones too (not made before: an outage keeps no state) */
  #reviving = false
  /** Semaphores made only to reconcile, with when they were forgotten (a use here makes them ordinary). */
  readonly #revived = new Map<KeySemaphore, number>()
  /** When this replica last announced itself to a forgotten key, so a key used again soon announces only a third of a lease later. */
  readonly #announced = new BoundedMap<string, { readonly at: number; readonly arg: string }>(KEYS_REMEMBERED)
  /**
   * When Redis last became unreachable: an announcement made before may be gone with Redis's data,
   * so it is never kept for a key used again (see `collect`).
   */
  #detachedAt = Number.NEGATIVE_INFINITY
  readonly #config: SemaphoresConfig
  readonly #context: SemaphoreContext<KeySemaphore>

  constructor(config: SemaphoresConfig) {
    this.#config = config
    this.#retired = new RetiredIds(config.recentMs ?? Number.POSITIVE_INFINITY, RETIRED_REMEMBERED)
    this.#context = {
      syncMs: config.syncMs,
      joined: (waiter) => void this.#waiters.set(waiter.id, waiter),
      left: (waiter, from) => {
        if (this.#waiters.get(waiter.id) === waiter) this.#waiters.delete(waiter.id)
        // it was in Redis's queue (never the uncontended path: granted by its acquire's reply)
        if (from === 'queued' || from === 'confirming' || (from === 'sending' && waiter.state !== 'granted'))
          this.#retired.set(waiter.id, waiter.semaphore, config.now())
      },
      limitHeard: (sem, limit) => {
        if (learnsFrom(sem.arg)) this.#known.set(sem.tag, limit)
      },
      illegal: (err) => config.illegal(err),
      moved: config.moved === undefined ? undefined : (waiter, from, to) => config.moved?.(waiter, from, to),
    }
  }

  #tagOf(key: PermitKey): string {
    const memo = this.#tags.getOrMake(`${key.instance}\n${key.endpoint}`, () => ({ tag: tagOf(key), usedAt: 0 }))
    memo.usedAt = this.#config.now()
    return memo.tag
  }

  #knownOf(tag: string, limits: LimitOptions): number {
    const { limit, learn } = limits
    if (learn === undefined) return limit
    return this.#known.get(tag) ?? Math.max(1, Math.min(limit, learn.ceiling))
  }

  /** The key's semaphore, made when this replica has none. */
  of(key: PermitKey, limits: LimitOptions): KeySemaphore {
    const tag = this.#tagOf(key)
    const arg = limitArg(limits)
    let sem = this.#byTag.get(tag)
    if (!sem) {
      const announced = this.#announced.get(tag)
      const at = announced !== undefined && announced.arg === arg ? announced.at : Number.NEGATIVE_INFINITY
      sem = new KeySemaphore(
        { instance: key.instance, endpoint: key.endpoint },
        semaphoreKeysOf(this.#config.prefix, tag),
        arg,
        this.#knownOf(tag, limits),
        at,
        this.#context,
      )
      this.#byTag.set(tag, sem)
    } else if (this.#revived.size > 0) this.#revived.delete(sem)
    sem.useLimits(arg, limits)
    return sem
  }

  byTag(tag: string): KeySemaphore | undefined {
    return this.#byTag.get(tag)
  }

  waiter(id: string): KeyWaiter | undefined {
    return this.#waiters.get(id)
  }

  /** The semaphore of a waiter that was queued in Redis and is done here, unless its id is a permit held now (granted by a reply). */
  retired(id: string): KeySemaphore | undefined {
    const sem = this.#retired.get(id, this.#config.now())
    if (sem === undefined || (this.#byTag.get(sem.tag) ?? sem).held.has(id)) return undefined
    return this.#byTag.get(sem.tag) ?? sem
  }

  /** A key's limit as this replica last heard it from Redis (for the fallback's share while Redis is away). */
  knownLimit(key: PermitKey, limits: LimitOptions): number {
    const tag = this.#tagOf(key)
    return this.#byTag.get(tag)?.limit ?? this.#knownOf(tag, limits)
  }

  /** Forgets a semaphore this replica no longer uses (its Redis keys expire by themselves). */
  collect(sem: KeySemaphore): void {
    if (!sem.isIdle()) return
    sem.stopSafety()
    if (this.#byTag.get(sem.tag) !== sem) return
    this.#byTag.delete(sem.tag)
    const now = this.#config.now()
    const at = this.#revived.get(sem) ?? now
    this.#revived.delete(sem)
    this.#recent.delete(sem.tag) // re-set: the map stays in the order the keys were forgotten
    if (now - at < (this.#config.recentMs ?? 0))
      this.#recent.set(sem.tag, { key: sem.key, arg: sem.arg, limit: sem.limit, at })
    if (sem.announcedAt <= this.#detachedAt) return
    this.#announced.set(sem.tag, { at: sem.announcedAt, arg: sem.arg })
  }

  /**
   * Redis became unreachable: it may come back without its data, so every key announces this replica
   * again on its next use. Returns every live waiter, in the order they were made.
   */
  detached(): KeyWaiter[] {
    this.#announced.clear()
    this.mayHaveMoved()
    this.#detachedAt = this.#config.now()
    return [...this.#waiters.values()]
  }

  /**
   * Redis's state may be another's or older (a reconnect, a rollback a sync found): every key this
   * replica used within `recentMs` — the ones it keeps state for, and those forgotten since — is
   * reconciled by its next sync, so no ghost of this replica keeps a slot (docs/redis-limiter.md, "Failure modes").
   */
  mayHaveMoved(): void {
    for (const sem of this.#byTag.values()) sem.mayHaveMoved()
    this.#reviving = true
  }

  /** Before a sync of every key: the keys forgotten here within `recentMs`, if `mayHaveMoved` was called since, get a semaphore to reconcile them. */
  reviveRecent(): void {
    if (!this.#reviving) return
    this.#reviving = false
    const now = this.#config.now()
    for (const [tag, recent] of [...this.#recent.entries()]) {
      this.#recent.delete(tag)
      if (now - recent.at >= (this.#config.recentMs ?? 0) || this.#byTag.has(tag)) continue
      const { key, arg, limit } = recent
      const sem = new KeySemaphore(key, semaphoreKeysOf(this.#config.prefix, tag), arg, limit, -Infinity, this.#context)
      sem.mayHaveMoved()
      this.#byTag.set(tag, sem)
      this.#revived.set(sem, recent.at)
    }
  }

  /**
   * Before a sync of every key: forgets what is kept of keys idle here for `recentMs`, their Redis keys'
   * idle expiry — nothing is left to reconcile, an announcement made then is gone with the keys, and a
   * hash is cheap next to a request — so a key idle that long costs nothing here (docs/redis-limiter.md,
   * "Status and metrics": per idle key, nothing). Learned limits stay: they outlive the semaphore's keys.
   */
  forgetIdle(): void {
    const recentMs = this.#config.recentMs
    if (recentMs === undefined) return
    const now = this.#config.now()
    this.#recent.prune((_, recent) => now - recent.at >= recentMs)
    this.#announced.prune((_, announced) => now - announced.at >= recentMs)
    this.#tags.prune((_, memo) => now - memo.usedAt >= recentMs && !this.#byTag.has(memo.tag))
  }

  /** Entries kept of keys this replica has no semaphore for (tests: none once they idled `recentMs`). */
  remembered(): number {
    return this.#tags.size + this.#known.size + this.#recent.size + this.#announced.size
  }

  all(): KeySemaphore[] {
    return [...this.#byTag.values()]
  }

  get size(): number {
    return this.#byTag.size
  }
}
