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
 * Many deadlines on one timer: a min-heap ordered on the monotonic clock, so a queued request costs a
 * heap slot rather than its own Timeout, and a wall clock stepped back cannot lengthen waits
 * (docs/benchmarks.md, "Memory"; docs/redis-limiter.md, "Failure modes").
 */
export class Deadlines {
  readonly #heap: Expiring[] = []
  /** `#due[i]`: when `#heap[i]` is due, `performance.now()` clock (a double array: no box per wait) */
  readonly #due: number[] = []
  #timer: NodeJS.Timeout | undefined
  /** when the wait the timer is armed for is due (`#due` clock) */
  #armedFor = Infinity

  get size(): number {
    return this.#heap.length
  }

  add(item: Expiring): void {
    const heap = this.#heap
    const due = performance.now() + (item.deadline - Date.now())
    item.slot = heap.length
    heap.push(item)
    this.#due.push(due)
    this.#up(item.slot)
    if (due < this.#armedFor) this.#arm()
  }

  /** Takes an item out (granted, aborted); nothing when it is not in the heap. */
  remove(item: Expiring): void {
    const i = item.slot
    const heap = this.#heap
    if (i < 0 || heap[i] !== item) return
    item.slot = -1
    const last = heap.pop()!
    const lastDue = this.#due.pop()!
    if (last !== item) {
      heap[i] = last
      this.#due[i] = lastDue
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
    if (this.#heap.length === 0) return
    const due = this.#due[0]!
    this.#armedFor = due
    this.#timer = setTimeout(this.#fire, Math.min(MAX_TIMER_MS, Math.max(0, Math.ceil(due - performance.now()))))
    this.#timer.unref()
  }

  readonly #fire = (): void => {
    this.#timer = undefined
    this.#armedFor = Infinity
    const now = performance.now()
    const heap = this.#heap
    try {
      while (heap.length > 0 && this.#due[0]! <= now) {
        const item = heap[0]!
        this.remove(item)
        item.expire()
      }
    } finally {
      // armed again even when an expiry threw: the waits after it must not be left without a timer
      if (this.#timer === undefined) this.#arm()
    }
  }

  #up(i: number): void {
    const heap = this.#heap
    const dues = this.#due
    const item = heap[i]!
    const due = dues[i]!
    while (i > 0) {
      const p = (i - 1) >> 1
      if (dues[p]! <= due) break
      this.#put(i, heap[p]!, dues[p]!)
      i = p
    }
    this.#put(i, item, due)
  }

  #down(i: number): void {
    const heap = this.#heap
    const dues = this.#due
    const n = heap.length
    const item = heap[i]!
    const due = dues[i]!
    for (;;) {
      let c = 2 * i + 1
      if (c >= n) break
      if (c + 1 < n && dues[c + 1]! < dues[c]!) c++
      if (dues[c]! >= due) break
      this.#put(i, heap[c]!, dues[c]!)
      i = c
    }
    this.#put(i, item, due)
  }

  /** places an entry at slot `i` of the heap, telling it where it is */
  #put(i: number, item: Expiring, due: number): void {
    this.#heap[i] = item
    this.#due[i] = due
    item.slot = i
  }
}
