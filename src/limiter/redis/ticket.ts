import { DEFAULT_APP } from '../../apps/gate.js'
import type { Deadlines, Expiring } from '../deadlines.js'
import { QueueTimeoutError } from '../errors.js'
import { abortReason } from '../memory/index.js'
import type { AcquireOptions, Permit, PermitKey, PermitOutcome } from '../types.js'

/** What a permit keeps of its acquire options: its limit, and how it is learned. */
export type LimitOptions = Pick<AcquireOptions, 'limit' | 'learn'>

export const describeKey = (key: PermitKey): string => `${key.endpoint} (instance ${key.instance})`

/** Who decided a permit: Redis (shared), the in-process fallback, or nobody (fallback `open`). */
export type Grant =
  | { readonly kind: 'redis'; readonly tag: string; readonly id: string }
  | { readonly kind: 'local'; readonly permit: Permit }
  | { readonly kind: 'open' }

/**
 * The permit handed to the proxy. Its grant can change under it: a permit granted by the `local`
 * fallback is adopted by Redis when Redis comes back, and from then on released there.
 */
export class SluicePermit implements Permit {
  /** made when someone asks for `lost`: most permits are never lost nor asked, and a grant is hot */
  #lost: AbortController | undefined
  #lostReason: Error | undefined
  #grant: Grant
  released = false
  /** its request is being (or has been) written upstream (`markSent`) */
  sent = false

  constructor(
    readonly key: PermitKey,
    /** the limit it was acquired under (needed to adopt it into Redis) */
    readonly limits: LimitOptions,
    grant: Grant,
    readonly waitedMs: number,
    private readonly onRelease: (permit: SluicePermit, outcome: PermitOutcome | undefined) => void,
    /** whether its lease (if any) is sure to last until the next renewal */
    private readonly leaseHolds: (permit: SluicePermit) => boolean,
    /** the app it was acquired for (README "Fair share between apps") */
    readonly app: string = DEFAULT_APP,
  ) {
    this.#grant = grant
  }

  /** who decided it: changes only by `adoptedBy` */
  get grant(): Grant {
    return this.#grant
  }

  /** Redis adopted it (adoption.ts) under `id` on the semaphore `tag`: released there from now on. Returns the grant it had. */
  adoptedBy(tag: string, id: string): Grant {
    const before = this.#grant
    this.#grant = { kind: 'redis', tag, id }
    return before
  }

  canStart(): boolean {
    return !this.released && this.#lostReason === undefined && this.leaseHolds(this)
  }

  markSent(): void {
    this.sent = true
  }

  get lost(): AbortSignal {
    if (!this.#lost) {
      this.#lost = new AbortController()
      if (this.#lostReason) this.#lost.abort(this.#lostReason)
    }
    return this.#lost.signal
  }

  get isLost(): boolean {
    return this.#lostReason !== undefined
  }

  release(outcome?: PermitOutcome): void {
    if (this.released) return
    this.released = true
    try {
      this.onRelease(this, outcome)
    } catch {
      // release never throws: the lease runs out in Redis if anything went wrong here
    }
  }

  markLost(reason: Error): void {
    if (this.#lostReason) return
    this.#lostReason = reason
    this.#lost?.abort(reason)
  }
}

/** One acquire call from start to its single outcome, able to withdraw from whichever backend serves it so a mode switch can move it. */
export class Ticket implements Expiring {
  readonly startedAt = Date.now()
  readonly arrivedAt: number
  readonly deadline: number
  settled = false
  slot = -1
  /** undoes the current attempt (leave the Redis queue, abort the local wait): set only by `servedBy`/`leftBackend` */
  #withdraw: (() => void) | undefined
  readonly #onAbort: (() => void) | undefined

  constructor(
    readonly key: PermitKey,
    readonly options: AcquireOptions,
    private readonly resolve: (permit: SluicePermit) => void,
    private readonly reject: (err: Error) => void,
    private readonly onSettled: (ticket: Ticket) => void,
    private readonly deadlines: Deadlines,
  ) {
    this.arrivedAt = options.arrivedAt ?? this.startedAt
    this.deadline = options.deadline
    deadlines.add(this)
    const { signal } = options
    if (signal) {
      this.#onAbort = () => this.fail(abortReason(signal))
      signal.addEventListener('abort', this.#onAbort, { once: true })
    }
  }

  /** A backend (Redis's queue, the local fallback) serves it now; `withdraw` undoes that attempt if the ticket fails. */
  servedBy(withdraw: () => void): void {
    this.#withdraw = withdraw
  }

  /** Its backend is done with it (granted, failed there, or moved elsewhere): failing it undoes nothing there. */
  leftBackend(): void {
    this.#withdraw = undefined
  }

  /** ms since the request first arrived (a duration: it means the same on every replica) */
  get ageMs(): number {
    return Math.max(0, Date.now() - this.arrivedAt)
  }

  /**
   * True when the request came back after an upstream 429: only then does its age place it (docs/redis-limiter.md,
   * "Re-queued"); a fresh request's place is when the queue sees it, which orders close arrivals exactly.
   */
  get retried(): boolean {
    return this.options.arrivedAt !== undefined
  }

  /** Ends the wait with a permit; false when the ticket had already settled (the caller must release). */
  succeed(makePermit: (waitedMs: number) => SluicePermit): boolean {
    if (this.settled) return false
    this.#settle()
    this.resolve(makePermit(Date.now() - this.startedAt))
    return true
  }

  /** the deadline passed */
  expire(): void {
    this.fail(new QueueTimeoutError(Date.now() - this.startedAt, describeKey(this.key)))
  }

  fail(err: Error): void {
    if (this.settled) return
    this.#settle()
    const withdraw = this.#withdraw
    this.#withdraw = undefined
    try {
      withdraw?.()
    } finally {
      this.reject(err)
    }
  }

  #settle(): void {
    this.settled = true
    this.deadlines.remove(this)
    if (this.#onAbort) this.options.signal?.removeEventListener('abort', this.#onAbort)
    this.onSettled(this)
  }
}
