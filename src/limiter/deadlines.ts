/** The longest delay Node's setTimeout takes: above it (about 24.8 days) the timer fires at once. */
export const MAX_TIMER_MS = 2_147_483_647

/** A wait with a deadline, kept in a Deadlines heap; `slot` belongs to the heap (-1: not in one). */
export interface Expiring {
  /** ms since epoch, `Date.now()` clock */
  readonly deadline: number
  slot: number
  /** its deadline has passed (it is already out of the heap) */
  expire(): void
}

/**
 * Many deadlines on one timer: a min-heap by deadline, the timer armed for the earliest. A queued
 * request then costs a heap slot instead of its own Timeout and closures (docs/benchmarks.md,
 * "Memory"). Every wait whose deadline has passed expires when the timer fires — late, all at once,
 * if the event loop was blocked, as separate timers would. A deadline beyond what setTimeout takes
 * (MAX_TIMER_MS) is reached in steps, so a long `queue.maxWaitMs` never makes every wait end at once.
 * The timer is `unref`'d (a wait alone never keeps the process alive) and stopped when the heap empties.
 */
export class Deadlines {
  readonly #heap: Expiring[] = []
  #timer: NodeJS.Timeout | undefined
  /** the deadline the timer is armed for */
  #armedFor = Infinity

  get size(): number {
    return this.#heap.length
  }

  add(item: Expiring): void {
    const heap = this.#heap
    item.slot = heap.length
    heap.push(item)
    this.#up(item.slot)
    if (item.deadline < this.#armedFor) this.#arm()
  }

  /** Takes an item out (granted, aborted); nothing when it is not in the heap. */
  remove(item: Expiring): void {
    const i = item.slot
    const heap = this.#heap
    if (i < 0 || heap[i] !== item) return
    item.slot = -1
    const last = heap.pop()!
    if (last !== item) {
      heap[i] = last
      last.slot = i
      this.#down(i)
      this.#up(last.slot)
    }
    // An earlier deadline gone leaves the timer to fire early and re-arm; an empty heap stops it.
    if (heap.length === 0) this.#stop()
  }

  #stop(): void {
    if (this.#timer !== undefined) clearTimeout(this.#timer)
    this.#timer = undefined
    this.#armedFor = Infinity
  }

  #arm(): void {
    this.#stop()
    const next = this.#heap[0]
    if (next === undefined) return
    this.#armedFor = next.deadline
    this.#timer = setTimeout(this.#fire, Math.min(MAX_TIMER_MS, Math.max(0, next.deadline - Date.now())))
    this.#timer.unref()
  }

  readonly #fire = (): void => {
    this.#timer = undefined
    this.#armedFor = Infinity
    const now = Date.now()
    const heap = this.#heap
    while (heap.length > 0 && heap[0]!.deadline <= now) {
      const item = heap[0]!
      this.remove(item)
      item.expire()
    }
    if (this.#timer === undefined) this.#arm()
  }

  #up(i: number): void {
    const heap = this.#heap
    const item = heap[i]!
    while (i > 0) {
      const p = (i - 1) >> 1
      const parent = heap[p]!
      if (parent.deadline <= item.deadline) break
      heap[i] = parent
      parent.slot = i
      i = p
    }
    heap[i] = item
    item.slot = i
  }

  #down(i: number): void {
    const heap = this.#heap
    const n = heap.length
    const item = heap[i]!
    for (;;) {
      let c = 2 * i + 1
      if (c >= n) break
      if (c + 1 < n && heap[c + 1]!.deadline < heap[c]!.deadline) c++
      const child = heap[c]!
      if (child.deadline >= item.deadline) break
      heap[i] = child
      child.slot = i
      i = c
    }
    heap[i] = item
    item.slot = i
  }
}
