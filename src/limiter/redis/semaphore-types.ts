import type { IllegalTransitionError, Waiter, WaiterState } from './waiter.js'

/** How a waiter the queue bounds let in goes out: now, or after this turn of the event loop. */
export type Admission = 'send' | 'defer'

/** What an acquire was sent with, for reading its reply. */
export interface AcquireSent {
  readonly sentAt: number
  /** stale-head messages read before it was sent (see HeadHint.fromReply) */
  readonly mark: number
  readonly announce: boolean
  /** announced before: Redis not knowing this replica is news (a new key never was announced) */
  readonly announcedBefore: boolean
  readonly wantHead: boolean
  readonly full: boolean
}

/** What a sync was sent with, for reading its reply. */
export interface SyncSent {
  readonly sentAt: number
  readonly mark: number
  readonly waiting: readonly string[]
  readonly drop: readonly string[]
  readonly renewing: readonly string[]
  readonly recount: boolean
  readonly sweep: boolean
  /** the epoch the previous sync wrote ('' unknown) and the one this sync writes (docs/redis-limiter.md, "Failure modes") */
  readonly expectEpoch: string
  readonly epoch: string
  readonly reconcile: boolean
  /** ids Redis may have of waiters not queued (an acquire on its way, a grant being confirmed): a reconciliation keeps them */
  readonly keep: readonly string[]
  /** how many of the first `renewing` ids have a lease that cannot have run out before the sync runs */
  readonly sure: number
}

/** What a semaphore (`S`: KeySemaphore, a parameter so this module sits below it) needs from the replica around it. */
export interface SemaphoreContext<S> {
  /** a lease must last this long still to be used (the renewal period: a third of a lease) */
  readonly syncMs: number
  /** a waiter was made (`new`) or reached an end: the replica's index of waiters by id follows */
  joined(waiter: Waiter<S>): void
  /** `from`: the state it left (it was in Redis's queue: a grant of its id may still come) */
  left(waiter: Waiter<S>, from: WaiterState): void
  /** a script said which limit is in force */
  limitHeard(sem: S, limit: number): void
  illegal(err: IllegalTransitionError): void
  moved?(waiter: Waiter<S>, from: WaiterState, to: WaiterState): void
}

/** What a script's reply tells a semaphore whatever its operation: the loss of this replica, the limit in force, the permits counted (every replica's). */
export interface ReplyHeard {
  readonly forgot: boolean
  /** an acquire granted at once whose grant found the queue empty (kept-permits.ts) */
  readonly quiet?: boolean
  readonly limit: number | undefined
  readonly held?: number | undefined
}
