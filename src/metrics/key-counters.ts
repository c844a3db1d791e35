import type { Registry } from 'prom-client'
import { CellCounter, type CounterCell } from './cells.js'

export type LimitDirection = 'down' | 'up'

/** Counters per limiter key; none counts on every request, so a cell is found by a key string of its label values. */
export class KeyCounters {
  private readonly retries: CellCounter
  private readonly upstream429s: CellCounter
  private readonly leasesLost: CellCounter
  private readonly limitChanges: CellCounter

  /**
   * `withOrg`: series carry the org label; `leases`: leases can be lost (the Redis backend), so their
   * series are exported at 0 too.
   */
  constructor(
    registry: Registry,
    private readonly withOrg: boolean,
    private readonly leases: boolean,
    /** series carry the upstream label (docs/observability.md, "Several upstreams") */
    private readonly withUpstream = false,
  ) {
    const labelNames = [...(withOrg ? ['endpoint', 'org'] : ['endpoint']), ...(withUpstream ? ['upstream'] : [])]
    this.retries = new CellCounter(
      'sluice_upstream_retries_total',
      'Attempts sent again after an upstream 429',
      labelNames,
      registry,
    )
    this.upstream429s = new CellCounter(
      'sluice_upstream_429_total',
      'Upstream 429 answers received (never passed on to the client)',
      labelNames,
      registry,
    )
    this.leasesLost = new CellCounter(
      'sluice_lease_lost_total',
      'Permits whose Redis lease expired while the upstream request was still in progress',
      labelNames,
      registry,
    )
    this.limitChanges = new CellCounter(
      'sluice_limit_changes_total',
      'Learned limits that went down (an upstream 429) or up (successes while saturated), counted when their whole number of permits changes',
      [...labelNames, 'direction'],
      registry,
    )
  }

  // `upstream`: the label's value ('' while series carry none)
  retried(endpoint: string, org: string, attempts: number, upstream = ''): void {
    this.cell(this.retries, endpoint, org, upstream).n += attempts
  }

  upstream429(endpoint: string, org: string, upstream = ''): void {
    this.cell(this.upstream429s, endpoint, org, upstream).n++
  }

  leaseLost(endpoint: string, org: string, upstream = ''): void {
    this.cell(this.leasesLost, endpoint, org, upstream).n++
  }

  limitChanged(endpoint: string, org: string, direction: LimitDirection, upstream = ''): void {
    const key = `${endpoint}\n${org}\n${upstream}\n${direction}`
    ;(
      this.limitChanges.find(key) ??
      this.limitChanges.cellByKey(key, this.labels(endpoint, org, upstream, direction), org)
    ).n++
  }

  /** A key the limiter holds: its series are exported at 0 from now on (docs/observability.md, "Counters start at 0"). */
  seen(endpoint: string, org: string, upstream = ''): void {
    const key = endpoint + '\n' + org + '\n' + upstream
    this.upstream429s.cellAtZero(key, this.labels(endpoint, org, upstream), org)
    this.retries.cellAtZero(key, this.labels(endpoint, org, upstream), org)
    for (const direction of ['down', 'up'] as const) {
      this.limitChanges.cellAtZero(`${key}\n${direction}`, this.labels(endpoint, org, upstream, direction), org)
    }
    if (this.leases) this.leasesLost.cellAtZero(key, this.labels(endpoint, org, upstream), org)
  }

  /** Drops the series of organisations that lost their own. */
  dropOrgs(orgs: readonly string[]): void {
    for (const org of orgs)
      for (const metric of [this.retries, this.upstream429s, this.leasesLost, this.limitChanges]) metric.dropOrg(org)
  }

  private cell(metric: CellCounter, endpoint: string, org: string, upstream: string): CounterCell {
    const key = endpoint + '\n' + org + '\n' + upstream
    return metric.find(key) ?? metric.cellByKey(key, this.labels(endpoint, org, upstream), org)
  }

  private labels(endpoint: string, org: string, upstream: string, direction?: LimitDirection): Record<string, string> {
    const labels: Record<string, string> = this.withOrg ? { endpoint, org } : { endpoint }
    if (this.withUpstream) labels.upstream = upstream
    if (direction !== undefined) labels.direction = direction
    return labels
  }
}
