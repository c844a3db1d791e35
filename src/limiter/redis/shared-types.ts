import type { FairShare } from '../fairness/policy.js'
import type { LimitChange, PermitKey } from '../types.js'
import type { StuckHolders } from './stuck-keys.js'
import type { Grant, LimitOptions, SluicePermit, Ticket } from './ticket.js'
import type { IllegalTransitionError, WaiterState } from './waiter.js'

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
  /** redis.keepPermits: off (the default), no permit is kept and the scripts run as without the feature */
  readonly keepPermits?: boolean
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

/** What the API answered a released permit's request, for a learned limit (see the release script). */
export type Answer = { readonly outcome: 'success' | 'throttled'; readonly heldMs: number }
