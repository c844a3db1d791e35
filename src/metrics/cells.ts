import { Counter, type Metric, type Registry } from 'prom-client'

/**
 * Fast metrics: the hot path bumps plain numbers in cells and the registry reads them at scrape time,
 * because prom-client's `inc(labels)` hashes and validates labels on every call (docs/benchmarks.md,
 * "Hot-path tricks"). `cellAtZero` series exist before they count (docs/observability.md, "Counters start at 0").
 */
export interface CounterCell {
  n: number
}

interface Series<L extends string> {
  readonly labels: Readonly<Record<L, string>>
  /** the organisation the series belongs to, so its series can be dropped together ('' when none) */
  readonly org: string
  readonly cell: CounterCell
  /** exported while still 0 */
  atZero: boolean
}

export class CellCounter<L extends string = string> {
  private readonly series = new Map<string, Series<L>>()

  constructor(
    name: string,
    help: string,
    private readonly labelNames: readonly L[],
    registry: Registry | undefined,
  ) {
    const series = this.series
    new Counter<L>({
      name,
      help,
      labelNames,
      registers: registry ? [registry] : [],
      collect() {
        this.reset()
        for (const { labels, cell, atZero } of series.values()) if (cell.n > 0 || atZero) this.inc(labels, cell.n)
      },
    })
  }

  /** The cell of a label set already seen, by the caller's key for it. */
  find(key: string): CounterCell | undefined {
    return this.series.get(key)?.cell
  }

  /** The cell of a label set, by the caller's key for it (any string that tells label sets apart). */
  cellByKey(key: string, labels: Readonly<Record<L, string>>, org = ''): CounterCell {
    let found = this.series.get(key)
    if (found === undefined)
      this.series.set(key, (found = { labels: { ...labels }, org, cell: { n: 0 }, atZero: false }))
    return found.cell
  }

  /** As `cellByKey`, and the series is exported from now on, at 0 until it counts. */
  cellAtZero(key: string, labels: Readonly<Record<L, string>>, org = ''): CounterCell {
    const cell = this.cellByKey(key, labels, org)
    this.series.get(key)!.atZero = true
    return cell
  }

  /** The cell of a label set, keyed by its values. */
  cell(labels: Readonly<Record<L, string>>): CounterCell {
    return this.cellByKey(this.labelNames.map((l) => labels[l]).join('\u0000'), labels)
  }

  /** Drops every series of one organisation. */
  dropOrg(org: string): void {
    for (const [key, s] of this.series) if (s.org === org) this.series.delete(key)
  }
}

/** What the registry reads from a metric at scrape time (prom-client's own shape, which it does not export). */
interface HistogramSnapshot {
  readonly name: string
  readonly help: string
  readonly type: 'histogram'
  readonly aggregator: 'sum'
  readonly values: {
    readonly labels: Readonly<Record<string, string | number>>
    readonly value: number
    readonly metricName: string
  }[]
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

/**
 * Fast histograms: buckets in cells, giving the registry the `get()` result a prom-client Histogram gives
 * (docs/observability.md, "Cost on the request path"); test/metrics/histogram-cells.test.ts pins the shape.
 */
export class CellHistogram {
  readonly type = 'histogram' as const
  readonly aggregator = 'sum' as const
  private readonly series = new Map<
    string,
    { readonly labels: Readonly<Record<string, string>>; readonly org: string; readonly cell: HistogramCell }
  >()
  private readonly bounds: readonly number[]

  constructor(
    readonly name: string,
    readonly help: string,
    buckets: readonly number[],
    registry: Registry,
  ) {
    this.bounds = [...buckets].sort((a, b) => a - b)
    // prom-client types registerMetric for its own classes; the registry calls get() and reset() and
    // reads name/help/type/aggregator, which this class provides (pinned by the test named above).
    registry.registerMetric(this as unknown as Metric)
  }

  /** The cell of a label set already seen, by the caller's key for it. */
  find(key: string): HistogramCell | undefined {
    return this.series.get(key)?.cell
  }

  /** The cell of a label set, by the caller's key for it. */
  cellByKey(key: string, labels: Readonly<Record<string, string>>, org = ''): HistogramCell {
    let found = this.series.get(key)
    if (found === undefined)
      this.series.set(key, (found = { labels: { ...labels }, org, cell: new HistogramCell(this.bounds) }))
    return found.cell
  }

  /** Drops every series of one organisation. */
  dropOrg(org: string): void {
    for (const [key, s] of this.series) if (s.org === org) this.series.delete(key)
  }

  reset(): void {
    this.series.clear()
  }

  // eslint-disable-next-line @typescript-eslint/require-await -- the registry awaits get()
  async get(): Promise<HistogramSnapshot> {
    const values: HistogramSnapshot['values'][number][] = []
    for (const { labels, cell } of this.series.values()) {
      let cumulative = 0
      for (let i = 0; i <= this.bounds.length; i++) {
        cumulative += cell.counts[i]!
        const le = i < this.bounds.length ? this.bounds[i]! : '+Inf'
        values.push({ metricName: `${this.name}_bucket`, labels: { le, ...labels }, value: cumulative })
      }
      values.push({ metricName: `${this.name}_sum`, labels, value: cell.sum })
      values.push({ metricName: `${this.name}_count`, labels, value: cell.count })
    }
    return { name: this.name, help: this.help, type: this.type, values, aggregator: this.aggregator }
  }
}
