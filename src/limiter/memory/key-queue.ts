/**
 * One (instance, endpoint) semaphore: a count of held permits and a FIFO of waiters ordered by
 * arrival time. A request sent back by an upstream 429 keeps its original arrival time, so it is
 * inserted ahead of everyone who arrived after it (normally the head).
 */
export interface Waiter {
  readonly arrivedAt: number
  readonly enqueuedAt: number
  /** hands the permit over; the queue has already counted it as held */
  grant(): void
  /** ends the wait with an error (the waiter is already out of the queue) */
  fail(err: Error): void
}

export class KeyQueue {
  inFlight = 0
  private readonly waiters: Waiter[] = []

  constructor(
    readonly instance: string,
    readonly endpoint: string,
    public limit: number,
  ) {}

  get queued(): number {
    return this.waiters.length
  }

  get idle(): boolean {
    return this.inFlight === 0 && this.waiters.length === 0
  }

  oldestEnqueuedAt(): number | undefined {
    let oldest: number | undefined
    for (const w of this.waiters) if (oldest === undefined || w.enqueuedAt < oldest) oldest = w.enqueuedAt
    return oldest
  }

  /** True when a newcomer may take a permit now without overtaking anyone. */
  canGrantNow(): boolean {
    return this.waiters.length === 0 && this.inFlight < this.limit
  }

  enqueue(waiter: Waiter): void {
    const list = this.waiters
    // Common case: the newest arrival goes to the back. Re-entries binary-search their place.
    if (list.length === 0 || list[list.length - 1]!.arrivedAt <= waiter.arrivedAt) {
      list.push(waiter)
      return
    }
    let lo = 0
    let hi = list.length
    while (lo < hi) {
      const mid = (lo + hi) >>> 1
      if (list[mid]!.arrivedAt <= waiter.arrivedAt) lo = mid + 1
      else hi = mid
    }
    list.splice(lo, 0, waiter)
  }

  /** Removes a waiter that gave up; false when it was already granted or removed. */
  remove(waiter: Waiter): boolean {
    const i = this.waiters.indexOf(waiter)
    if (i < 0) return false
    this.waiters.splice(i, 1)
    return true
  }

  /** Grants permits to the head waiters while there is room. */
  dispatch(): void {
    while (this.inFlight < this.limit && this.waiters.length > 0) {
      const next = this.waiters.shift()!
      this.inFlight++
      next.grant()
    }
  }

  /** Takes every waiter out (shutdown). */
  takeAll(): Waiter[] {
    return this.waiters.splice(0, this.waiters.length)
  }
}
