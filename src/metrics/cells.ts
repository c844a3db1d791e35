import type { Metric, Registry } from 'prom-client'

/** What the registry reads from a metric at scrape time (prom-client's own shape, which it does not export). */
export interface MetricSnapshot {
  readonly name: string
  readonly help: string
  readonly type: 'counter' | 'histogram'
  readonly aggregator: 'sum'
  readonly values: { readonly labels: Readonly<Record<string, string | number>>; readonly value: number; readonly metricName?: string }[]
}

/**
 * Counters and histograms whose hot path is plain arithmetic on a cached cell. prom-client's own
 * `inc()`/`observe()` hash and validate the label set on every call, even through a `labels()` child
 * (about 0.7-0.9 µs each here, see bench/metrics); these cost a Map lookup and an addition. The
 * registry reads them through the same `get()` shape as prom-client's metrics, at scrape time.
 */

interface Series<C> {
  readonly labels: Readonly<Record<string, string>>
  /** the organisation the series belongs to, so its series can be dropped together ('' when none) */
  readonly org: string
  readonly cell: C
}

abstract class CellMetric<C> {
  protected readonly series = new Map<string, Series<C>>()
  readonly aggregator = 'sum' as const

  constructor(
    readonly name: string,
    readonly help: string,
    readonly labelNames: readonly string[],
    registry: Registry,
  ) {
    // prom-client types registerMetric for its own classes; the registry only calls get(), reset() and
    // reads name/help/type/aggregator, which this class provides.
    registry.registerMetric(this as unknown as Metric)
  }

  /** The cell of a label tuple already seen, by the caller's key for it. */
  find(key: string): C | undefined {
    return this.series.get(key)?.cell
  }

  /** Creates the cell of a new label tuple; `values` in `labelNames` order. */
  create(key: string, org: string, values: readonly string[]): C {
    const labels: Record<string, string> = {}
    this.labelNames.forEach((name, i) => (labels[name] = values[i]!))
    const cell = this.newCell()
    this.series.set(key, { labels, org, cell })
    return cell
  }

  /** Drops every series of one organisation. */
  dropOrg(org: string): void {
    for (const [key, s] of this.series) if (s.org === org) this.series.delete(key)
  }

  reset(): void {
    this.series.clear()
  }

  protected abstract newCell(): C
}

export interface CounterCell {
  n: number
}

export class CellCounter extends CellMetric<CounterCell> {
  readonly type = 'counter' as const

  protected newCell(): CounterCell {
    return { n: 0 }
  }

  // eslint-disable-next-line @typescript-eslint/require-await -- the registry awaits get()
  async get(): Promise<MetricSnapshot> {
    const values = [...this.series.values()].map((s) => ({ labels: s.labels, value: s.cell.n }))
    return { name: this.name, help: this.help, type: this.type, values, aggregator: this.aggregator }
  }
}

export class HistogramCell {
  /** per bucket, not cumulative; the last one is +Inf */
  readonly counts: number[]
  sum = 0
  count = 0

  constructor(private readonly bounds: readonly number[]) {
    this.counts = new Array<number>(bounds.length + 1).fill(0)
  }

  observe(value: number): void {
    const b = this.bounds
    let i = 0
    while (i < b.length && value > b[i]!) i++
    this.counts[i]!++
    this.sum += value
    this.count++
  }
}

export class CellHistogram extends CellMetric<HistogramCell> {
  readonly type = 'histogram' as const
  private readonly bounds: readonly number[]

  constructor(name: string, help: string, labelNames: readonly string[], buckets: readonly number[], registry: Registry) {
    super(name, help, labelNames, registry)
    this.bounds = [...buckets].sort((a, b) => a - b)
  }

  protected newCell(): HistogramCell {
    return new HistogramCell(this.bounds)
  }

  // eslint-disable-next-line @typescript-eslint/require-await -- the registry awaits get()
  async get(): Promise<MetricSnapshot> {
    const values: MetricSnapshot['values'] = []
    for (const { labels, cell } of this.series.values()) {
      let cumulative = 0
      for (let i = 0; i <= this.bounds.length; i++) {
        cumulative += cell.counts[i]!
        const le = i < this.bounds.length ? this.bounds[i]! : '+Inf'
        values.push({ metricName: `${this.name}_bucket`, labels: { ...labels, le }, value: cumulative })
      }
      values.push({ metricName: `${this.name}_sum`, labels, value: cell.sum })
      values.push({ metricName: `${this.name}_count`, labels, value: cell.count })
    }
    return { name: this.name, help: this.help, type: this.type, values, aggregator: this.aggregator }
  }
}
