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
  /** Holds exactly `bytes` (bytes already in memory are counted whether or not they fit); false while the budget, or its holder's share, is exceeded. */
  set(bytes: number): boolean
  /** Gives every byte back; later calls do nothing. */
  release(): void
}

export class MemoryBudget {
  readonly #held: Record<BudgetKind, number> = { request: 0, body: 0, answer: 0, cache: 0 }
  readonly #refused: Record<BudgetKind, number> = { request: 0, body: 0, answer: 0, cache: 0 }
  /** bytes per holder (an app, or an organisation with app identity off) holding any now; none holds an entry at 0 */
  readonly #byHolder = new Map<string, number>()
  #inUse = 0
  /** the most one holder may hold: `limit × maxShare` */
  readonly share: number

  /**
   * `limit`: the budget in bytes (limit.ts: the setting, or derived from the container's limit or
   * V8's heap bound); Infinity, none, only in tests.
   * `maxShare`: the part of it one holder may take (docs/deploy.md, "Memory: a budget"), so one app
   * over its share is refused while the others keep theirs.
   */
  constructor(
    readonly limit: number,
    maxShare = 1,
  ) {
    this.share = maxShare >= 1 ? limit : Math.floor(limit * maxShare)
  }

  get inUse(): number {
    return this.#inUse
  }

  /** What `holder` holds now (0 when nothing). */
  heldBy(holder: string): number {
    return this.#byHolder.get(holder) ?? 0
  }

  /** Every holder holding bytes now, with its bytes (`/status`): as many entries as holders busy now. */
  holders(): ReadonlyMap<string, number> {
    return this.#byHolder
  }

  /** Whether `bytes` more would take `holder` past its share (the 503 then names the share, not the whole budget). */
  overShare(holder: string | undefined, bytes: number): boolean {
    return holder !== undefined && this.share < this.limit && this.heldBy(holder) + bytes > this.share
  }

  held(kind: BudgetKind): number {
    return this.#held[kind]
  }

  refusals(kind: BudgetKind): number {
    return this.#refused[kind]
  }

  /** `bytes` for `kind` (held by `holder`, within its share) when they fit, else undefined (counted as a refusal). */
  reserve(kind: BudgetKind, bytes: number, holder?: string): Reservation | undefined {
    if (!this.#fits(bytes, holder)) {
      this.#refused[kind]++
      return undefined
    }
    const reservation = new Held(this, kind, holder)
    reservation.set(bytes)
    return reservation
  }

  /**
   * Whether `bytes` for `kind` would fit now, holding nothing (a refusal is counted when not): a declared
   * body too large for the holder's share or the budget is refused before its bytes are read.
   */
  wouldFit(kind: BudgetKind, bytes: number, holder?: string): boolean {
    if (this.#fits(bytes, holder)) return true
    this.#refused[kind]++
    return false
  }

  #fits(bytes: number, holder: string | undefined): boolean {
    return bytes <= 0 || (this.#inUse + bytes <= this.limit && !this.overShare(holder, bytes))
  }

  /** @internal the one place the totals change (Held calls it) */
  change(kind: BudgetKind, delta: number, refuseIfOver: boolean, holder: string | undefined): boolean {
    if (delta > 0 && refuseIfOver && !this.#fits(delta, holder)) {
      this.#refused[kind]++
      return false
    }
    this.#held[kind] += delta
    this.#inUse += delta
    if (holder === undefined || delta === 0) return this.#inUse <= this.limit
    const mine = this.heldBy(holder) + delta
    if (mine > 0) this.#byHolder.set(holder, mine)
    else this.#byHolder.delete(holder)
    return this.#inUse <= this.limit && mine <= this.share
  }
}

class Held implements Reservation {
  #bytes = 0
  #released = false

  constructor(
    private readonly budget: MemoryBudget,
    readonly kind: BudgetKind,
    private readonly holder: string | undefined,
  ) {}

  get bytes(): number {
    return this.#bytes
  }

  grow(more: number): boolean {
    if (this.#released) return false
    if (!this.budget.change(this.kind, more, true, this.holder)) return false
    this.#bytes += more
    return true
  }

  set(bytes: number): boolean {
    if (this.#released) return false
    const delta = bytes - this.#bytes
    this.#bytes = bytes
    return this.budget.change(this.kind, delta, false, this.holder)
  }

  release(): void {
    if (this.#released) return
    this.#released = true
    this.budget.change(this.kind, -this.#bytes, false, this.holder)
    this.#bytes = 0
  }
}

/** The budget's state for `/status`: its size, what is held, each holder's share and use (`by`: what a holder is). */
export function budgetStatus(budget: MemoryBudget, by: 'app' | 'org'): Record<string, unknown> {
  const finite = (n: number): number | null => (Number.isFinite(n) ? n : null)
  return {
    budgetBytes: finite(budget.limit),
    inUse: budget.inUse,
    shareBytes: finite(budget.share),
    by,
    holders: Object.fromEntries(budget.holders()),
  }
}
