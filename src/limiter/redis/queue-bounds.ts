import type { Waiter, WaiterState } from './waiter.js'

/** Which queue bound refused a waiter, and how many of this replica's waiters it counted then (the 503's message). */
export interface Full {
  readonly app: boolean
  readonly waiting: number
}

/** What the bounds decided about a parked waiter (`QueueBounds.decide`). */
export type Decision = 'room' | Full | undefined

/**
 * One app's part of the counts: kept while the app has waiters pending (any app: order within it), and
 * for an app with a `maxQueued` while it has waiters counted — queued and counted are kept for those only.
 */
interface AppCounts {
  queued: number
  counted: number
  pending: number
  parked: number
}

/** Waiters ahead of the one being decided, in a walk of the pending ones. */
interface Ahead {
  /** pending: in flight with `full` (may need room when answered) or parked */
  pending: number
  /** parked: known to need room */
  parked: number
}

const isCapped = (waiter: Waiter<unknown>): boolean => Number.isFinite(waiter.policy.maxQueued)

/** A capped app's followers of identical calls on the key now: they take part of its `maxQueued` (docs/reuse.md). */
const followersOf = (waiter: Waiter<unknown>): number => waiter.ticket.options.followers?.() ?? 0

/**
 * One key's queue bounds on this replica — `queue.maxLength` and each app's `maxQueued`, both per
 * replica (docs/redis-limiter.md, "maxQueued") — and the waiters they count. Part of KeySemaphore,
 * which reports every waiter move here (`moved`).
 *
 * Every waiter let in is either **counted** — queued in Redis, or its acquire (sent, going out after
 * this turn, or a grant being confirmed) may queue it — or **pending**: the bounds had no room for it
 * when it came, so its acquire goes out with `full`, which the script answers with a slot free at
 * once (granted: the bounds never mattered) or `full`. Counting only the waiters Redis answered as
 * queued let a burst within one round trip all queue; holding back a waiter whose room depends on
 * acquires on their way (each may be granted at once or queued) made a burst on a free key go out a
 * bound's worth per round trip, and every app wait behind a capped one. A pending waiter answered
 * `full` is refused when the waiters Redis queued (and the parked ones ahead of it) fill a bound,
 * let in (counted, sent again) when there is room, and else **parked** at its place until the
 * acquires on their way are answered.
 *
 * Order: a new waiter takes room only when no pending waiter is ahead of it that could (all of them
 * for `maxLength`, its app's for `maxQueued`) and none of its own app is pending (it goes out behind
 * them, so one answered `full` and let in is sent before it), and pending waiters are decided first
 * come first, so a later request never queues where an earlier one of its app is refused or ahead of
 * one of its app let in. Parked waiters count towards the bounds: at most `bound − queued` of them
 * wait, the rest are refused.
 *
 * Nothing is allocated here for a request that fits (the uncontended path): a counted waiter is a
 * number, the set of pending waiters and the per-app counts are made when first needed, and a capped
 * app's counts only once the key has a second waiter (until then its one waiter is `#lone`).
 */
export class QueueBounds<S> {
  /** waiters `queued` (all counted) */
  #queued = 0
  /** waiters counted: every waiter let in that is not pending */
  #counted = 0
  /** the same counts per app with a `maxQueued` */
  #apps: Map<string, AppCounts> | undefined
  /** pending waiters (sent with `full`, or parked), first come first */
  #pending: Set<Waiter<S>> | undefined
  #parked = 0
  /** the key's one counted waiter, of a capped app, while no app has counts: they are made when another comes */
  #lone: Waiter<S> | undefined

  get queued(): number {
    return this.#queued
  }

  /** How many waiters are parked (tests, and the walk's shortcut). */
  get parked(): number {
    return this.#parked
  }

  #app(waiter: Waiter<S>): AppCounts {
    this.#apps ??= new Map()
    let app = this.#apps.get(waiter.policy.app)
    if (app === undefined) {
      app = { queued: 0, counted: 0, pending: 0, parked: 0 }
      this.#apps.set(waiter.policy.app, app)
    }
    return app
  }

  #dropAppIfEmpty(waiter: Waiter<S>, app: AppCounts): void {
    if (app.queued === 0 && app.counted === 0 && app.pending === 0 && app.parked === 0)
      this.#apps?.delete(waiter.policy.app)
    if (this.#apps?.size === 0) this.#apps = undefined
  }

  /** Another waiter comes: the lone one's app gets its counts. */
  #unlone(): void {
    const lone = this.#lone
    if (lone === undefined) return
    this.#lone = undefined
    const app = this.#app(lone)
    app.counted++
    if (lone.state === 'queued') app.queued++
  }

  /**
   * A new waiter (or one queued again that was never counted): `room` (counted: its acquire may queue
   * it) when it fits even if every acquire of ours on its way queues its waiter and every pending
   * waiter ahead is let in; else it is pending, and its acquire goes out with `full`.
   */
  enter(waiter: Waiter<S>): 'room' | 'pending' {
    this.#unlone()
    const max = waiter.ticket.options.maxQueue
    const pending = this.#pending?.size ?? 0
    const app = this.#apps?.get(waiter.policy.app)
    // a waiter of its app still undecided (its `full` acquire on its way, or parked) goes out first
    let room = this.#counted + pending < max && (app?.pending ?? 0) === 0
    if (room && isCapped(waiter) && (app?.counted ?? 0) + followersOf(waiter) >= waiter.policy.maxQueued) room = false
    if (room) {
      this.#count(waiter)
      return 'room'
    }
    this.#pending ??= new Set()
    this.#pending.add(waiter)
    this.#app(waiter).pending++
    return 'pending'
  }

  /** A waiter queued again that was counted: it keeps the place it had under the bounds. */
  keep(waiter: Waiter<S>): void {
    this.#unlone()
    this.#count(waiter)
  }

  #count(waiter: Waiter<S>): void {
    this.#counted++
    if (!isCapped(waiter)) return
    const app = this.#apps?.get(waiter.policy.app)
    if (app !== undefined) app.counted++
    // no app has counts (so none is pending) and it is the only waiter counted
    else if (this.#counted === 1 && this.#apps === undefined) this.#lone = waiter
    else this.#app(waiter).counted++
  }

  /** Its acquire goes out with `full`: the script must not queue it. */
  isPending(waiter: Waiter<S>): boolean {
    return this.#pending?.has(waiter) ?? false
  }

  /**
   * A pending waiter's acquire was answered `full`: the bound that refuses it now, when the waiters
   * Redis queued fill one; else undefined (it is parked, and `decide` lets it in or refuses it).
   */
  refusesAtOnce(waiter: Waiter<S>): Full | undefined {
    if (!this.isPending(waiter)) return { app: false, waiting: this.#queued }
    if (this.#queued >= waiter.ticket.options.maxQueue) return { app: false, waiting: this.#queued }
    if (!isCapped(waiter)) return undefined
    const queued = (this.#apps?.get(waiter.policy.app)?.queued ?? 0) + followersOf(waiter)
    if (queued >= waiter.policy.maxQueued) return { app: true, waiting: queued }
    return undefined
  }

  /**
   * Walks the pending waiters first come first and decides each parked one: `room` (it is counted
   * from then on), a refusal (`Full`), or undefined (it stays parked: its room depends on acquires
   * on their way). A pending waiter in flight ahead keeps room for itself, in case it is answered
   * `full`; a parked one ahead also counts towards a refusal (it is known to need room).
   */
  walk(decided: (waiter: Waiter<S>, decision: Exclude<Decision, undefined>) => void): void {
    if (this.#parked === 0 || this.#pending === undefined) return
    const all: Ahead = { pending: 0, parked: 0 }
    const apps = new Map<string, Ahead>()
    for (const waiter of [...this.#pending]) {
      let app: Ahead | undefined
      if (isCapped(waiter)) {
        app = apps.get(waiter.policy.app)
        if (app === undefined) apps.set(waiter.policy.app, (app = { pending: 0, parked: 0 }))
      }
      const parked = waiter.state === 'parked'
      const decision = parked ? this.#decide(waiter, all, app) : undefined
      if (decision === undefined) {
        all.pending++
        if (app) app.pending++
        if (parked) {
          all.parked++
          if (app) app.parked++
        }
        continue
      }
      if (decision === 'room') this.#letIn(waiter)
      decided(waiter, decision)
    }
  }

  #decide(waiter: Waiter<S>, all: Ahead, ahead: Ahead | undefined): Decision {
    const max = waiter.ticket.options.maxQueue
    if (this.#queued + all.parked >= max) return { app: false, waiting: this.#queued + all.parked }
    if (ahead !== undefined) {
      const cap = waiter.policy.maxQueued
      const app = this.#apps?.get(waiter.policy.app)
      const followers = followersOf(waiter)
      const queued = (app?.queued ?? 0) + ahead.parked + followers
      if (queued >= cap) return { app: true, waiting: queued }
      if ((app?.counted ?? 0) + ahead.pending + followers >= cap) return undefined
    }
    return this.#counted + all.pending < max ? 'room' : undefined
  }

  /** A pending waiter has room now: counted from here on. */
  #letIn(waiter: Waiter<S>): void {
    this.#pending?.delete(waiter)
    if (this.#pending?.size === 0) this.#pending = undefined
    const app = this.#apps?.get(waiter.policy.app)
    if (app) app.pending--
    this.#count(waiter)
    if (app) this.#dropAppIfEmpty(waiter, app)
  }

  /** A waiter moved: the counts follow its state. */
  moved(waiter: Waiter<S>, from: WaiterState, to: WaiterState): void {
    // only an acquire sent without `full` queues its waiter (one sent with it is counted if it does)
    if (to === 'queued' && this.isPending(waiter)) this.#letIn(waiter)
    const app = this.#apps?.get(waiter.policy.app)
    // queued and counted are kept for a capped app only
    const capped = app !== undefined && isCapped(waiter) ? app : undefined
    if (from === 'queued') {
      this.#queued--
      if (capped) capped.queued--
    }
    if (to === 'queued') {
      this.#queued++
      if (capped) capped.queued++
    }
    if (from === 'parked') {
      this.#parked--
      if (app) app.parked--
    }
    if (to === 'parked') {
      this.#parked++
      if (app) app.parked++
    }
    if (!waiter.live) this.#left(waiter, app, capped)
    if (app) this.#dropAppIfEmpty(waiter, app)
  }

  #left(waiter: Waiter<S>, app: AppCounts | undefined, capped: AppCounts | undefined): void {
    if (this.#pending?.delete(waiter)) {
      if (app) app.pending--
      if (this.#pending.size === 0) this.#pending = undefined
    } else {
      this.#counted--
      if (capped) capped.counted--
      if (this.#lone === waiter) this.#lone = undefined
    }
  }
}
