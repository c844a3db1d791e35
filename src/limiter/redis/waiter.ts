import type { AppPolicy } from '../fairness/policy.js'
import type { Ticket } from './ticket.js'

/** Where one waiter of this replica is in its wait for a Redis permit (docs/redis-limiter.md, "The waiter's lifecycle"). */
export type WaiterState =
  | 'new'
  | 'parked'
  | 'deferred'
  | 'sending'
  | 'queued'
  | 'confirming'
  | 'granted'
  | 'refused'
  | 'failed'
  | 'withdrawn'
  | 'requeued'
  | 'detached'

/**
 * Every move a waiter may make; anything else is a bug. test/limiter/redis/waiter-lifecycle.test.ts
 * drives each of these moves through the replica's side and checks that every other is refused.
 */
export const WAITER_TRANSITIONS: { readonly [S in WaiterState]: readonly WaiterState[] } = {
  new: ['deferred', 'sending'],
  // let in when room comes (queue-bounds.ts), refused when the waiters ahead were queued rather than granted
  parked: ['deferred', 'sending', 'refused', 'withdrawn', 'detached'],
  deferred: ['sending', 'withdrawn', 'detached'],
  // `parked`: sent with `full` and answered `full`, while its room depends on acquires on their way
  sending: ['parked', 'queued', 'confirming', 'granted', 'refused', 'failed', 'withdrawn', 'detached'],
  queued: ['confirming', 'granted', 'requeued', 'withdrawn', 'detached'],
  // a renewal itself read too late is confirmed again
  confirming: ['confirming', 'granted', 'requeued', 'failed', 'withdrawn', 'detached'],
  granted: [],
  refused: [],
  failed: [],
  withdrawn: [],
  requeued: [],
  detached: [],
}

/** A move the table does not allow: a bug in the limiter, never a state of Redis or of the network. */
export class IllegalTransitionError extends Error {
  constructor(
    readonly waiterId: string,
    readonly from: WaiterState,
    readonly to: WaiterState,
  ) {
    super(`limiter bug: waiter ${waiterId} cannot go from ${from} to ${to}`)
    this.name = 'IllegalTransitionError'
  }
}

/** What a waiter tells its owner about its moves (KeySemaphore keeps its counts by them). */
export interface WaiterWatch<S> {
  /** a move the table allows was made */
  moved(waiter: Waiter<S>, from: WaiterState, to: WaiterState): void
  /** a move the table refuses was asked for: the waiter stays where it is */
  illegal(err: IllegalTransitionError): void
}

/**
 * One request of this replica waiting in a semaphore's Redis queue. Made by its KeySemaphore, which
 * moves it; `move` is the one place a state changes, and refuses what WAITER_TRANSITIONS does not list.
 */
export class Waiter<S> {
  #state: WaiterState = 'new'
  #notGrantedAt = 0
  #grantedEarly = false
  readonly #watch: WaiterWatch<S>

  constructor(
    readonly id: string,
    readonly ticket: Ticket,
    /** its app's weight and caps (README "Fair share between apps") */
    readonly policy: AppPolicy,
    /** placed by its age, not by when Redis sees it: it waited before (an upstream 429, or a place lost in Redis) */
    readonly byAge: boolean,
    /** its KeySemaphore (a type parameter: this module sits below key-semaphore.ts) */
    readonly semaphore: S,
    watch: WaiterWatch<S>,
  ) {
    this.#watch = watch
  }

  get state(): WaiterState {
    return this.#state
  }

  /** Not at an end: this replica still answers for it. */
  get live(): boolean {
    return WAITER_TRANSITIONS[this.#state].length > 0
  }

  /** Redis may know its id (withdrawing it takes a script): not when it was never sent, nor when its acquire was answered `full`. */
  get sent(): boolean {
    return this.#state !== 'new' && this.#state !== 'parked' && this.#state !== 'deferred'
  }

  /** A monotonic moment at which Redis had certainly not granted it yet; its lease, once granted, runs at least a lease past it. */
  get notGrantedAt(): number {
    return this.#notGrantedAt
  }

  /** a grant message came before its acquire's reply */
  get grantedEarly(): boolean {
    return this.#grantedEarly
  }

  /** Moves it to `to`; false (and the bug reported) when the table does not allow it. */
  move(to: WaiterState): boolean {
    const from = this.#state
    if (!WAITER_TRANSITIONS[from].includes(to)) {
      this.#watch.illegal(new IllegalTransitionError(this.id, from, to))
      return false
    }
    this.#state = to
    this.#watch.moved(this, from, to)
    return true
  }

  /** Its acquire goes out now. */
  stampSent(at: number): void {
    this.#notGrantedAt = at
    this.#grantedEarly = false
  }

  /** A sync sent at `at` found it still queued. */
  stillQueuedAt(at: number): void {
    this.#notGrantedAt = Math.max(this.#notGrantedAt, at)
  }

  /** A grant message came while its acquire was on its way. */
  heardGrantEarly(): void {
    this.#grantedEarly = true
  }
}
