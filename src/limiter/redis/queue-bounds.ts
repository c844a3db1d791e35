import type { Waiter, WaiterState } from './waiter.js'

/** Which queue bound refused a waiter, and how many of this replica's waiters it counted then (the 503's message). */
export interface Full {
  readonly app: boolean
  readonly waiting: number
}

/**
 * One key's queue bounds on this replica — `queue.maxLength` and each app's `maxQueued`, both per
 * replica (docs/redis-limiter.md, "maxQueued") — and the waiters they count: those Redis queued,
 * and those whose acquire (sent, going out after this turn, or a grant being confirmed) may queue
 * them. Counting only the answered ones let a burst within one round trip all queue. A waiter whose
 * room depends on acquires on their way is parked until one is answered. Part of KeySemaphore, which
 * reports every waiter move here (`moved`).
 */
export class QueueBounds {
  /** waiters `queued` */
  #queued = 0
  /** waiters counted against the bounds: let in with room, or keeping the place they had */
  readonly #counted = new Set<Waiter>()
  /** the same two counts per app with a `maxQueued` (none kept for an app without one: nothing reads them) */
  readonly #apps = new Map<string, { queued: number; counted: number }>()
  /** waiters sent with `full`: the bound that refused them */
  readonly #full = new Map<Waiter, Full>()
  /** waiters `parked`, first come first */
  readonly #parked = new Set<Waiter>()

  get queued(): number {
    return this.#queued
  }

  get parked(): ReadonlySet<Waiter> {
    return this.#parked
  }

  /**
   * Whether the bounds leave a new waiter room: `room` even if every acquire of ours on its way
   * queues its waiter; a refusal when the waiters Redis already queued fill a bound (the script then
   * refuses rather than queue, unless a slot is free at once); `undefined` when it depends on
   * acquires on their way (each may be granted at once or queued).
   */
  fits(waiter: Waiter): 'room' | Full | undefined {
    const max = waiter.ticket.options.maxQueue
    if (this.#queued >= max) return { app: false, waiting: this.#queued }
    let fit: 'room' | undefined = this.#counted.size >= max ? undefined : 'room'
    const cap = waiter.policy.maxQueued
    if (Number.isFinite(cap)) {
      const app = this.#apps.get(waiter.policy.app)
      const queued = app?.queued ?? 0
      if (queued >= cap) return { app: true, waiting: queued }
      if ((app?.counted ?? 0) >= cap) fit = undefined
    }
    return fit
  }

  /** The bounds decided: it counts against them until it leaves, or is sent as `full`. */
  decided(waiter: Waiter, fit: 'room' | Full): void {
    if (fit === 'room') this.count(waiter)
    else this.#full.set(waiter, fit)
  }

  /** Sent as `full`: which bound refused it. */
  fullOf(waiter: Waiter): Full | undefined {
    return this.#full.get(waiter)
  }

  /** It counts against the bounds until it leaves (let in with room, or keeping the place it had). */
  count(waiter: Waiter): void {
    if (this.#counted.has(waiter)) return
    this.#counted.add(waiter)
    if (!Number.isFinite(waiter.policy.maxQueued)) return
    const app = this.#apps.get(waiter.policy.app)
    if (app === undefined) this.#apps.set(waiter.policy.app, { queued: 0, counted: 1 })
    else app.counted++
  }

  /** A waiter moved: the counts follow its state. */
  moved(waiter: Waiter, from: WaiterState, to: WaiterState): void {
    if (from === 'queued') this.#queuedBy(waiter, -1)
    if (to === 'queued') {
      this.count(waiter) // (counted already: only an acquire sent without `full` queues)
      this.#queuedBy(waiter, 1)
    }
    if (from === 'parked') this.#parked.delete(waiter)
    if (to === 'parked') this.#parked.add(waiter)
    if (!waiter.live) this.#left(waiter)
  }

  #queuedBy(waiter: Waiter, by: 1 | -1): void {
    this.#queued += by
    if (!Number.isFinite(waiter.policy.maxQueued)) return
    const app = this.#apps.get(waiter.policy.app)
    if (app !== undefined) app.queued += by
  }

  #left(waiter: Waiter): void {
    this.#full.delete(waiter)
    if (!this.#counted.delete(waiter) || !Number.isFinite(waiter.policy.maxQueued)) return
    const app = this.#apps.get(waiter.policy.app)
    if (app !== undefined && --app.counted <= 0) this.#apps.delete(waiter.policy.app)
  }
}
