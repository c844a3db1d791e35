import type { AppShare } from '../types.js'
import type { AppPolicy } from '../fairness/policy.js'
import { requeueTag } from '../fairness/tags.js'

/**
 * One (instance, endpoint) semaphore: held permits and waiters in the same order as the Redis backend
 * (docs/redis-limiter.md, "Fair share between apps").
 */
export interface Waiter {
  readonly arrivedAt: number
  readonly enqueuedAt: number
  /** the calling app's weight and caps */
  readonly policy: AppPolicy
  /** sent back by an upstream 429: placed at the head (a request moved from Redis queues as new) */
  readonly requeued: boolean
  /** a local slot for a permit already in flight elsewhere (the Redis fallback's pin): no cap holds it back */
  readonly uncapped?: boolean
  /** hands the permit over; the queue has already counted it as held */
  grant(): void
  /** ends the wait with an error (the waiter is already out of the queue) */
  fail(err: Error): void
}

interface Entry {
  readonly waiter: Waiter
  /** start tag: the virtual time at which its turn starts */
  readonly tag: number
  /** arrival order, to break ties between apps */
  readonly seq: number
}

/** One app's part of a key: its waiters in tag order, its held permits, its finish tag. */
interface Lane {
  readonly policy: AppPolicy
  readonly entries: Entry[]
  held: number
  /** finish tag of its last waiter: its next waiter starts no earlier */
  finish: number
  /** the lowest start tag of its waiters that gave up since it was last served (see `remove`) */
  gaveUp: number | undefined
}

export class KeyQueue {
  inFlight = 0
  /** the start tag of the last waiter granted (virtual time) */
  #virtual = 0
  #queued = 0
  #seq = 0
  readonly #lanes = new Map<string, Lane>()

  constructor(
    readonly instance: string,
    readonly endpoint: string,
    public limit: number,
  ) {}

  get queued(): number {
    return this.#queued
  }

  get idle(): boolean {
    return this.inFlight === 0 && this.#queued === 0
  }

  /** waiters of one app on this key */
  queuedOf(app: string): number {
    return this.#lanes.get(app)?.entries.length ?? 0
  }

  oldestEnqueuedAt(): number | undefined {
    let oldest: number | undefined
    for (const lane of this.#lanes.values()) {
      for (const { waiter } of lane.entries)
        if (oldest === undefined || waiter.enqueuedAt < oldest) oldest = waiter.enqueuedAt
    }
    return oldest
  }

  /** each app's held and queued permits, apps with neither left out */
  apps(): AppShare[] {
    const shares: AppShare[] = []
    for (const [app, lane] of this.#lanes) {
      if (lane.held > 0 || lane.entries.length > 0) shares.push({ app, held: lane.held, queued: lane.entries.length })
    }
    return shares.sort((a, b) => a.app.localeCompare(b.app))
  }

  #lane(policy: AppPolicy): Lane {
    let lane = this.#lanes.get(policy.app)
    if (lane === undefined) {
      lane = { policy, entries: [], held: 0, finish: 0, gaveUp: undefined }
      this.#lanes.set(policy.app, lane)
    }
    return lane
  }

  /**
   * True when a newcomer may take a permit without overtaking anyone; taken so, it is not charged, as in Redis's
   * acquire (test/limiter/fair-order-parity.test.ts holds the two alike).
   */
  canGrantNow(policy: AppPolicy): boolean {
    if (this.inFlight >= this.limit || (this.#lanes.get(policy.app)?.held ?? 0) >= policy.maxHeld) return false
    return this.#queued === 0 || !this.#headCanGo()
  }

  /** Whether some app's first waiter may take a free slot (its app is under its cap). */
  #headCanGo(): boolean {
    for (const lane of this.#lanes.values()) {
      const head = lane.entries[0]
      if (head !== undefined && (lane.held < lane.policy.maxHeld || head.waiter.uncapped === true)) return true
    }
    return false
  }

  /** Counts a permit taken at once (canGrantNow) for its app. */
  take(policy: AppPolicy): void {
    this.inFlight++
    this.#lane(policy).held++
  }

  /** A permit of this app came back. */
  give(app: string): void {
    this.inFlight--
    const lane = this.#lanes.get(app)
    if (lane === undefined) return
    lane.held--
    this.#dropIfSpent(app, lane)
  }

  /** Queues a waiter: a new one at max(V, F_app), one that waited before just below V (fairness/tags.ts). */
  enqueue(waiter: Waiter, now = Date.now()): void {
    const lane = this.#lane(waiter.policy)
    let tag: number
    if (waiter.requeued) {
      tag = requeueTag(this.#virtual, now - waiter.arrivedAt)
    } else {
      tag = Math.max(this.#virtual, lane.finish)
      lane.finish = tag + waiter.policy.cost
    }
    const entry: Entry = { waiter, tag, seq: ++this.#seq }
    const list = lane.entries
    this.#queued++
    // Common case: a new arrival goes to the back of its app's lane. Re-entries binary-search their place.
    if (list.length === 0 || list[list.length - 1]!.tag <= tag) {
      list.push(entry)
      return
    }
    let lo = 0
    let hi = list.length
    while (lo < hi) {
      const mid = (lo + hi) >>> 1
      if (list[mid]!.tag <= tag) lo = mid + 1
      else hi = mid
    }
    list.splice(lo, 0, entry)
  }

  /** Removes a waiter that gave up; false when it was already granted or removed. */
  remove(waiter: Waiter): boolean {
    const lane = this.#lanes.get(waiter.policy.app)
    if (lane === undefined) return false
    const i = lane.entries.findIndex((e) => e.waiter === waiter)
    if (i < 0) return false
    const [gone] = lane.entries.splice(i, 1)
    this.#queued--
    // Redis's refund rule (lua-fair.ts left_queue; docs/redis-limiter.md, "What is charged").
    lane.gaveUp = Math.min(lane.gaveUp ?? Infinity, gone!.tag)
    if (lane.entries.length === 0) {
      if (lane.gaveUp < lane.finish) lane.finish = lane.gaveUp
      lane.gaveUp = undefined
    }
    this.#dropIfSpent(waiter.policy.app, lane)
    return true
  }

  /** Grants while there is room: to the app head with the smallest start tag, skipping apps at their cap. */
  dispatch(): void {
    while (this.inFlight < this.limit && this.#queued > 0) {
      let best: Lane | undefined
      for (const lane of this.#lanes.values()) {
        const head = lane.entries[0]
        if (head === undefined) continue
        if (lane.held >= lane.policy.maxHeld && head.waiter.uncapped !== true) continue
        const top = best?.entries[0]
        if (top === undefined || head.tag < top.tag || (head.tag === top.tag && head.seq < top.seq)) best = lane
      }
      if (best === undefined) return // every app with waiters is at its cap
      const next = best.entries.shift()!
      this.#queued--
      this.inFlight++
      best.held++
      best.gaveUp = undefined // those that gave up before it were charged behind what it was served
      if (next.tag > this.#virtual) this.#virtual = next.tag
      next.waiter.grant()
    }
  }

  /** An app with nothing held, nothing queued and no finish tag ahead of V is forgotten. */
  #dropIfSpent(app: string, lane: Lane): void {
    if (lane.held <= 0 && lane.entries.length === 0 && lane.finish <= this.#virtual) this.#lanes.delete(app)
  }

  /** Takes every waiter out (shutdown). */
  takeAll(): Waiter[] {
    const all: Waiter[] = []
    for (const lane of this.#lanes.values()) all.push(...lane.entries.splice(0).map((e) => e.waiter))
    this.#queued = 0
    return all
  }
}
