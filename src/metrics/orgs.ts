import { INVALID_ORG, OTHER_ORG, orgLabel } from './labels.js'

/**
 * Which organisations get series of their own when `metrics.maxInstances` caps them: the busiest of each
 * window, incumbents winning ties to limit churn (docs/observability.md, "The org label and what it costs").
 */
export class TopOrgs {
  private readonly own = new Set<string>()
  private readonly counts = new Map<string, number>()
  /** bounds the window's counts when clients invent instance names faster than scrapes come */
  private readonly countCap: number
  private nextRankAt: number

  constructor(
    private readonly max: number,
    private readonly rankIntervalMs: number,
    now: number,
  ) {
    this.countCap = Math.max(10_000, max * 10)
    this.nextRankAt = now + rankIntervalMs
  }

  /** Hot path: counts one request and returns its org label. */
  forRequest(instance: string): string {
    const n = this.counts.get(instance)
    // counted this window: already known to be a valid organisation id
    if (n !== undefined) {
      this.counts.set(instance, n + 1)
      return this.admit(instance)
    }
    const org = orgLabel(instance)
    if (org === INVALID_ORG) return org
    if (this.counts.size < this.countCap) this.counts.set(org, 1)
    return this.admit(org)
  }

  /** The org label of an instance, given a series of its own if there is room; no request is counted. */
  label(instance: string): string {
    // counted this window: already known to be a valid organisation id (the per-request versions count calls this)
    if (this.counts.has(instance)) return this.admit(instance)
    const org = orgLabel(instance)
    return org === INVALID_ORG ? org : this.admit(org)
  }

  private admit(org: string): string {
    if (this.own.has(org)) return org
    if (this.own.size < this.max) {
      this.own.add(org)
      return org
    }
    return OTHER_ORG
  }

  /** how many organisations have series of their own */
  get ownCount(): number {
    return this.own.size
  }

  /** Re-ranks when the window is over; returns the organisations that lost their own series. */
  rerankIfDue(now: number): string[] {
    if (now < this.nextRankAt) return []
    this.nextRankAt = now + this.rankIntervalMs
    const ranked = [...this.counts].sort(
      (a, b) => b[1] - a[1] || Number(this.own.has(b[0])) - Number(this.own.has(a[0])),
    )
    this.counts.clear()
    const next = new Set<string>()
    for (const [org] of ranked) {
      if (next.size >= this.max) break
      next.add(org)
    }
    // Quiet incumbents keep their slots while nobody busier needs them.
    for (const org of this.own) if (next.size < this.max) next.add(org)
    const demoted = [...this.own].filter((org) => !next.has(org))
    this.own.clear()
    for (const org of next) this.own.add(org)
    return demoted
  }
}

/** No cap: every valid organisation id is its own label. */
export class AllOrgs {
  private readonly seen = new Set<string>()
  forRequest(instance: string): string {
    return this.label(instance)
  }
  label(instance: string): string {
    const org = orgLabel(instance)
    if (org !== INVALID_ORG) this.seen.add(org)
    return org
  }
  get ownCount(): number {
    return this.seen.size
  }
  rerankIfDue(): string[] {
    return []
  }
}

export type OrgPolicy = Pick<TopOrgs, 'forRequest' | 'label' | 'rerankIfDue' | 'ownCount'>
