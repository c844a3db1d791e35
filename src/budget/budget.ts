/**
 * One memory budget for what clients can make sluice hold (docs/deploy.md, "Memory: a budget"): queued and
 * in-flight requests, their buffered bodies, answers held for slow readers, the lookup cache. Past
 * it new work is refused (503 + Retry-After) before the container's limit would OOM-kill the process.
 */

/** What holds the bytes: one gauge series each. */
export const BUDGET_KINDS = ['request', 'body', 'answer', 'cache'] as const
export type BudgetKind = (typeof BUDGET_KINDS)[number]

/** Bytes held for one owner; `release` gives them back, once, whatever path ends it. */
export interface Reservation {
  readonly kind: BudgetKind
  /** bytes held now */
  readonly bytes: number
  /** Holds `more` bytes too when they fit the budget; false (and nothing held) when they do not. */
  grow(more: number): boolean
  /** Holds exactly `bytes` (bytes already in memory are counted whether or not they fit); false while the budget is exceeded. */
  set(bytes: number): boolean
  /** Gives every byte back; later calls do nothing. */
  release(): void
}

export class MemoryBudget {
  readonly #held: Record<BudgetKind, number> = { request: 0, body: 0, answer: 0, cache: 0 }
  readonly #refused: Record<BudgetKind, number> = { request: 0, body: 0, answer: 0, cache: 0 }
  #inUse = 0

  /** `limit`: the budget in bytes; Infinity when none applies (no container limit and no setting) */
  constructor(readonly limit: number) {}

  get inUse(): number {
    return this.#inUse
  }

  held(kind: BudgetKind): number {
    return this.#held[kind]
  }

  refusals(kind: BudgetKind): number {
    return this.#refused[kind]
  }

  /** `bytes` for `kind` when they fit, else undefined (counted as a refusal). */
  reserve(kind: BudgetKind, bytes: number): Reservation | undefined {
    if (!this.#fits(bytes)) {
      this.#refused[kind]++
      return undefined
    }
    const reservation = new Held(this, kind)
    reservation.set(bytes)
    return reservation
  }

  #fits(bytes: number): boolean {
    return bytes <= 0 || this.#inUse + bytes <= this.limit
  }

  /** @internal the one place the totals change (Held calls it) */
  change(kind: BudgetKind, delta: number, refuseIfOver: boolean): boolean {
    if (delta > 0 && refuseIfOver && !this.#fits(delta)) {
      this.#refused[kind]++
      return false
    }
    this.#held[kind] += delta
    this.#inUse += delta
    return this.#inUse <= this.limit
  }
}

class Held implements Reservation {
  #bytes = 0
  #released = false

  constructor(
    private readonly budget: MemoryBudget,
    readonly kind: BudgetKind,
  ) {}

  get bytes(): number {
    return this.#bytes
  }

  grow(more: number): boolean {
    if (this.#released) return false
    if (!this.budget.change(this.kind, more, true)) return false
    this.#bytes += more
    return true
  }

  set(bytes: number): boolean {
    if (this.#released) return false
    const delta = bytes - this.#bytes
    this.#bytes = bytes
    return this.budget.change(this.kind, delta, false)
  }

  release(): void {
    if (this.#released) return
    this.#released = true
    this.budget.change(this.kind, -this.#bytes, false)
    this.#bytes = 0
  }
}
