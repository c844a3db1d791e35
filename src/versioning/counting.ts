/**
 * What the versioning counts (metrics.ts, and the requests per version /status shows). Cells are bound
 * to a route when it is built, once a day, so a request bumps integers and looks nothing up.
 */
import type { Registry } from 'prom-client'
import type { Day } from './days.js'
import { createVersionMetrics, type Cell, type OrgLabels, type RequestCell, type VersionMetrics } from './metrics.js'
import type { Ruling } from './policy.js'

/** Everything one request through a route counts, bound with the route. */
export class RouteCounts {
  constructor(
    private readonly orgs: OrgLabels | undefined,
    private readonly requests: RequestCell,
    /** set on routes answered locally */
    private readonly rejections: Cell | undefined,
    /** set on routes that send another version than asked */
    private readonly rewrites: Cell | undefined,
  ) {}

  /** A request took the route: counted in full before the gate, which may still warn or refuse. */
  request(instance: string): void {
    this.requests.count(instance, this.orgs)
    if (this.rejections !== undefined) this.rejections.n++
    if (this.rewrites !== undefined) this.rewrites.n++
  }
}

export class VersionCounting {
  private readonly metrics: VersionMetrics
  /** each rewrite cell with the version it sends: a version sent upstream is in use (the gauge) */
  private readonly rewritesTo = new Map<string, { readonly to: string; readonly cell: Cell }>()
  /** requests whose header is no version: each answered 400 */
  readonly malformed: RouteCounts
  /** well-formed versions past the table's bound on unknown versions: one label for them all */
  readonly other: RouteCounts

  /**
   * `retirements` yields, at scrape time, each known version with a retirement day; the gauge shows
   * those that requests named or were sent as (a version nobody uses needs no alert).
   */
  constructor(
    registry: Registry | undefined,
    private readonly orgs: OrgLabels | undefined,
    retirements: () => Iterable<readonly [string, Day]>,
  ) {
    this.metrics = createVersionMetrics(registry, () => this.inUse(retirements), orgs)
    this.malformed = this.counts('invalid', 'invalid', 'malformed', undefined)
    this.other = this.counts('other', 'unknown', undefined, undefined)
  }

  /** The counters of a route for requests naming `asked` (`none`: no header) in `state` (`absent`: no header). */
  route(asked: string, state: string, ruling: Ruling<unknown>): RouteCounts {
    if (ruling.kind === 'reject') return this.counts(asked, state, 'retired', undefined)
    const d = ruling.decision
    return this.counts(asked, state, undefined, d.action === 'pass' ? undefined : d.upstream)
  }

  /** The cell a gate outcome bumps, bound when the outcome is first met (per route and endpoint). */
  gate(version: string, endpointId: string, mode: 'warn' | 'reject'): Cell {
    return mode === 'reject'
      ? this.metrics.rejections.cell({ version, reason: 'gate' })
      : this.metrics.gateWarnings.cell({ version, endpoint: endpointId })
  }

  /** A retirement was learned from upstream 410s. */
  learned(version: string): void {
    this.metrics.learned.cell({ version }).n++
  }

  /**
   * Requests since start by the version they named (`none`: without the header; `invalid`: malformed),
   * summed over the request cells of each state: the cells are the one count, read when asked.
   */
  requestsByVersion(): Map<string, number> {
    const sums = new Map<string, number>()
    for (const { labels, cell } of this.metrics.requests.entries())
      sums.set(labels.version, (sums.get(labels.version) ?? 0) + cell.n)
    return sums
  }

  private counts(
    asked: string,
    state: string,
    rejected: 'retired' | 'malformed' | undefined,
    sentAs: string | undefined,
  ): RouteCounts {
    const m = this.metrics
    let rewrites: Cell | undefined
    if (sentAs !== undefined) {
      rewrites = m.rewrites.cell({ from: asked, to: sentAs })
      this.rewritesTo.set(`${asked}\u0000${sentAs}`, { to: sentAs, cell: rewrites })
    }
    return new RouteCounts(
      this.orgs,
      m.requests.cell({ version: asked, state }),
      rejected === undefined ? undefined : m.rejections.cell({ version: asked, reason: rejected }),
      rewrites,
    )
  }

  private *inUse(retirements: () => Iterable<readonly [string, Day]>): Iterable<readonly [string, Day]> {
    const all = [...retirements()] // first: it brings the day up to date
    const used = new Set<string>()
    for (const [version, n] of this.requestsByVersion()) if (n > 0) used.add(version)
    for (const { to, cell } of this.rewritesTo.values()) if (cell.n > 0) used.add(to)
    for (const r of all) if (used.has(r[0])) yield r
  }
}
