import { Deadlines, type Expiring } from '../deadlines.js'
import { LimiterClosedError, QueueFullError, QueueTimeoutError } from '../errors.js'
import { FairShare, queueRefusalOf, type AppPolicy } from '../fairness/policy.js'
import { LearnedLimits } from '../learning/store.js'
import type { LearnBounds } from '../learning/rule.js'
import type {
  AcquireOptions,
  Limiter,
  LimiterObserver,
  LimiterStatus,
  Permit,
  PermitKey,
  PermitOutcome,
} from '../types.js'
import { KeyQueue, type Waiter } from './key-queue.js'

export interface MemoryLimiterOptions {
  readonly observer?: LimiterObserver
  /** reported mode; the Redis backend reuses this limiter as its `local` fallback */
  readonly mode?: 'memory' | 'local'
  /** weights and caps per app (README "Fair share between apps"); default: every app weight 1, no caps */
  readonly fairness?: FairShare
  /** the clock of learned limits (ms); a fake one in tests of the rule */
  readonly now?: () => number
}

/** What the Redis backend's fallback may add to an acquire. */
export interface LocalAcquireOptions extends AcquireOptions {
  /** a local slot for a permit already in flight (a pin): no app cap (maxHeld, maxQueued) holds it back */
  readonly uncapped?: boolean
}

/** What learning needs of a key's acquire options, kept with its queue (made once per options: the proxy reuses them). */
interface Learning {
  readonly bounds: LearnBounds
  readonly idleMs: number
}

/** The learning of one key's acquire options, made once per (learn options, start). */
const learnings = new WeakMap<NonNullable<AcquireOptions['learn']>, Learning>()
function learningOf(learn: NonNullable<AcquireOptions['learn']>, start: number): Learning {
  let learning = learnings.get(learn)
  if (learning === undefined || learning.bounds.start !== start) {
    learning = { bounds: { start, ceiling: learn.ceiling, floor: learn.floor }, idleMs: learn.idleMs }
    learnings.set(learn, learning)
  }
  return learning
}

/** A signal that never aborts: an in-process permit cannot be lost. */
const NEVER_LOST = new AbortController().signal
/** an in-process permit has nothing to do when its request is sent (no state to lose) */
const NOTHING = (): void => {}

const keyOf = (key: PermitKey): string => `${key.instance}\n${key.endpoint}`
const describeKey = (key: PermitKey): string => `${key.endpoint} (instance ${key.instance})`

/** The in-process backend: one semaphore per (instance, endpoint), waiters in fair order between apps (KeyQueue). */
export class MemoryLimiter implements Limiter {
  readonly backend = 'memory' as const
  private readonly queues = new Map<string, KeyQueue>()
  private closedReason: string | undefined
  private readonly reportedMode: 'memory' | 'local'
  private readonly fairness: FairShare
  private readonly observer: LimiterObserver | undefined
  private readonly now: () => number
  /** learned limits, kept beyond their queues (README "Learned limits") */
  private readonly learned: LearnedLimits
  /** the learning of each key with a queue, from its latest acquire */
  private readonly learning = new Map<string, Learning>()
  /** every waiter's deadline, on one timer */
  readonly #deadlines = new Deadlines()
  /** what a waiter needs of its limiter: made once, shared by every waiter */
  readonly #host: WaiterHost = {
    deadlines: this.#deadlines,
    permit: (id, queue, app, waitedMs) => this.permit(id, queue, app, waitedMs),
    left: (id, queue) => this.dropIfIdle(id, queue),
  }

  constructor(options: MemoryLimiterOptions = {}) {
    this.reportedMode = options.mode ?? 'memory'
    this.fairness = options.fairness ?? new FairShare()
    this.observer = options.observer
    this.now = options.now ?? Date.now
    this.learned = new LearnedLimits(this.now)
    options.observer?.modeChanged?.(this.reportedMode)
  }

  mode(): 'memory' | 'local' {
    return this.reportedMode
  }

  ready(): boolean {
    return this.closedReason === undefined
  }

  acquireNow(key: PermitKey, options: LocalAcquireOptions): Permit | undefined {
    if (this.closedReason !== undefined) return undefined
    const { policy, id, queue } = this.#keyFor(key, options)
    if (!queue.canGrantNow(policy)) return undefined
    queue.take(policy)
    return this.permit(id, queue, policy.app, 0)
  }

  acquire(key: PermitKey, options: LocalAcquireOptions): Promise<Permit> {
    if (this.closedReason !== undefined) return Promise.reject(new LimiterClosedError(this.closedReason))
    const { policy, id, queue } = this.#keyFor(key, options)
    if (queue.canGrantNow(policy)) {
      queue.take(policy)
      return Promise.resolve(this.permit(id, queue, policy.app, 0))
    }
    if (options.signal?.aborted) {
      this.dropIfIdle(id, queue)
      return Promise.reject(abortReason(options.signal))
    }
    if (queue.queued >= options.maxQueue) {
      this.dropIfIdle(id, queue)
      return Promise.reject(new QueueFullError(describeKey(key), queue.queued))
    }
    // this app's part of the queue is full (fairness.apps.<app>.maxQueued); a pin is not a new
    // request but a slot already in use elsewhere (the Redis fallback's): refusing it would grant
    // that slot a second time
    // Its followers of identical calls count with its waiters (docs/reuse.md, "How many may follow").
    const mine = queue.queuedOf(policy.app) + (Number.isFinite(policy.maxQueued) ? (options.followers?.() ?? 0) : 0)
    if (mine >= policy.maxQueued && options.uncapped !== true) {
      this.dropIfIdle(id, queue)
      return Promise.reject(new QueueFullError(`${describeKey(key)} for ${queueRefusalOf(policy)}`, mine))
    }
    return this.wait(id, queue, options, policy)
  }

  /** The key's queue, its limit and learning brought up to date with this request's options. */
  #keyFor(key: PermitKey, options: LocalAcquireOptions): { policy: AppPolicy; id: string; queue: KeyQueue } {
    const policy = this.fairness.of(options.app)
    const id = keyOf(key)
    const learn = options.learn
    let learning: Learning | undefined
    let limit = options.limit
    if (learn !== undefined) {
      learning = learningOf(learn, options.limit)
      limit = this.learned.limitOf(id, learning.bounds)
    }
    let queue = this.queues.get(id)
    if (queue === undefined) {
      queue = new KeyQueue(key.instance, key.endpoint, limit)
      this.queues.set(id, queue)
    } else if (queue.limit !== limit) {
      queue.limit = limit
      queue.dispatch()
    }
    if (learning === undefined) {
      if (this.learning.size > 0) this.learning.delete(id)
    } else if (this.learning.get(id) !== learning) this.learning.set(id, learning)
    return { policy, id, queue }
  }

  limitOf(key: PermitKey, options: Pick<AcquireOptions, 'limit' | 'learn'>): number {
    const learn = options.learn
    if (learn === undefined) return options.limit
    return this.learned.limitOf(keyOf(key), { start: options.limit, ceiling: learn.ceiling, floor: learn.floor })
  }

  private wait(id: string, queue: KeyQueue, options: LocalAcquireOptions, policy: AppPolicy): Promise<Permit> {
    return new Promise<Permit>((resolve, reject) => {
      const waiter = new QueuedWaiter(this.#host, id, queue, policy, options, resolve, reject)
      this.#deadlines.add(waiter)
      waiter.signal?.addEventListener('abort', waiter, { once: true })
      queue.enqueue(waiter, waiter.enqueuedAt)
      // The queue may have room after all (its limit was raised, or a permit came back meanwhile).
      queue.dispatch()
    })
  }

  private permit(id: string, queue: KeyQueue, app: string, waitedMs: number): Permit {
    let released = false
    const grantedAt = this.now()
    return {
      waitedMs,
      lost: NEVER_LOST,
      isLost: false,
      canStart: () => true,
      markSent: NOTHING,
      release: (outcome?: PermitOutcome) => {
        if (released) return
        released = true
        // learned before the slot is given back: `held` counts this permit, as Redis's release does
        if (outcome === 'success' || outcome === 'throttled') this.learn(id, queue, outcome, grantedAt)
        queue.give(app)
        queue.dispatch()
        this.dropIfIdle(id, queue)
      },
    }
  }

  /** One answer for a learned key: the rule of docs/learned-limits.md, and the queue's limit after it. */
  private learn(id: string, queue: KeyQueue, outcome: 'success' | 'throttled', grantedAt: number): void {
    const learning = this.learning.get(id)
    if (learning === undefined) return
    const held = queue.inFlight
    // saturated: every permit of the limit in use; waiters queued beside a free slot are held back by
    // their app's cap, not by the limit (docs/learned-limits.md)
    const saturated = held >= queue.limit
    // Nothing to learn, nothing to look up, for a success of a key with nothing learned yet that has
    // room, or that starts at its ceiling (a published limit: the rule only adds; release/lua.ts alike)
    if (
      outcome === 'success' &&
      (!saturated || learning.bounds.start >= learning.bounds.ceiling) &&
      !this.learned.has(id)
    )
      return
    const { from, to, value } = this.learned.apply(id, learning.bounds, learning.idleMs, {
      outcome,
      held,
      saturated,
      grantedAt,
    })
    if (to === from) return
    queue.limit = to
    try {
      this.observer?.limitChanged?.(
        { instance: queue.instance, endpoint: queue.endpoint },
        { from, to, value, reason: outcome === 'throttled' ? 'throttled' : 'saturated', held },
      )
    } catch {
      // metrics and logs never break the limiter
    }
  }

  private dropIfIdle(id: string, queue: KeyQueue): void {
    if (queue.idle && this.queues.get(id) === queue) {
      this.queues.delete(id)
      this.learning.delete(id)
    }
  }

  status(): Promise<LimiterStatus> {
    const now = Date.now()
    const keys = [...this.queues.values()].map((q) => {
      const oldest = q.oldestEnqueuedAt()
      const learning = this.learning.get(keyOf(q))
      return {
        instance: q.instance,
        endpoint: q.endpoint,
        limit: q.limit,
        ...(learning === undefined
          ? {}
          : { learned: { value: this.learned.valueOf(keyOf(q), learning.bounds), ceiling: learning.bounds.ceiling } }),
        inFlight: q.inFlight,
        queued: q.queued,
        oldestWaitMs: oldest === undefined ? 0 : now - oldest,
        apps: q.apps(),
      }
    })
    const learned = this.learned.list().map(({ id, limit, value, ceiling }) => {
      const cut = id.indexOf('\n')
      return { instance: id.slice(0, cut), endpoint: id.slice(cut + 1), limit, value, ceiling }
    })
    return Promise.resolve({ backend: this.backend, mode: this.reportedMode, keys, learned })
  }

  /** Every waiter gets LimiterClosedError; held permits stay releasable; new acquires are refused. */
  drain(reason = 'sluice is shutting down'): void {
    this.closedReason = reason
    for (const [id, queue] of this.queues) {
      for (const waiter of queue.takeAll()) waiter.fail(new LimiterClosedError(reason))
      this.dropIfIdle(id, queue)
    }
  }

  close(): Promise<void> {
    this.drain()
    return Promise.resolve()
  }
}

/** What a waiter needs of its limiter. */
interface WaiterHost {
  readonly deadlines: Deadlines
  permit(id: string, queue: KeyQueue, app: string, waitedMs: number): Permit
  /** a waiter left its queue without a permit */
  left(id: string, queue: KeyQueue): void
}

/** A queued acquire as one object with methods, not closures: a queued request's memory is the flood's (docs/benchmarks.md, "Memory"). */
class QueuedWaiter implements Waiter, Expiring {
  readonly enqueuedAt = Date.now()
  readonly arrivedAt: number
  readonly requeued: boolean
  readonly uncapped: boolean | undefined
  readonly deadline: number
  readonly signal: AbortSignal | undefined
  slot = -1

  constructor(
    private readonly host: WaiterHost,
    private readonly id: string,
    private readonly queue: KeyQueue,
    readonly policy: AppPolicy,
    options: LocalAcquireOptions,
    private readonly resolve: (permit: Permit) => void,
    private readonly reject: (err: Error) => void,
  ) {
    this.arrivedAt = options.arrivedAt ?? this.enqueuedAt
    this.requeued = options.arrivedAt !== undefined
    this.uncapped = options.uncapped
    this.deadline = options.deadline
    this.signal = options.signal
  }

  grant(): void {
    this.#stopWatching()
    this.resolve(this.host.permit(this.id, this.queue, this.policy.app, Date.now() - this.enqueuedAt))
  }

  fail(err: Error): void {
    this.#stopWatching()
    this.reject(err)
  }

  /** the deadline passed */
  expire(): void {
    this.#giveUp(
      new QueueTimeoutError(Date.now() - this.enqueuedAt, `${this.queue.endpoint} (instance ${this.queue.instance})`),
    )
  }

  /** the client's signal aborted */
  handleEvent(): void {
    this.#giveUp(abortReason(this.signal!))
  }

  #giveUp(err: Error): void {
    if (!this.queue.remove(this)) return
    this.#stopWatching()
    this.host.left(this.id, this.queue)
    this.reject(err)
  }

  #stopWatching(): void {
    this.host.deadlines.remove(this)
    this.signal?.removeEventListener('abort', this)
  }
}

/** The error an aborted wait rejects with: the signal's own reason when it is an Error. */
export function abortReason(signal: AbortSignal): Error {
  return signal.reason instanceof Error ? signal.reason : new DOMException('The operation was aborted', 'AbortError')
}

export function createMemoryLimiter(options: MemoryLimiterOptions = {}): MemoryLimiter {
  return new MemoryLimiter(options)
}
