import { Gauge, type Registry } from 'prom-client'
import type { RequestRecord } from '../record/record.js'
import { QUEUE_WAIT_BUCKETS } from './buckets.js'
import { CellCounter, CellHistogram, type CounterCell, type HistogramCell } from './cells.js'
import { codeLabel, UNKNOWN_APP } from './labels.js'
import type { OrgPolicy } from './orgs.js'

/** The cells of one app label. */
interface AppCells {
  /** sluice_app_requests_total's cells by status, then outcome: a request builds no key string */
  readonly counts: Map<number, Map<string, CounterCell>>
  /** sluice_app_queue_wait_seconds */
  wait: HistogramCell | undefined
}

/** Per app: requests, queue waits and permits held; the app label is capped by metrics.maxApps, since apps may name themselves in a header. */
export class AppMetrics {
  private readonly requests: CellCounter
  private readonly queueWait: CellHistogram
  /** the cells found so far, by app label */
  private readonly byApp = new Map<string, AppCells>()
  // Permits this replica holds per app, kept by raw app name (bounded by the permits held) and
  // labelled at scrape time, so an app that loses its own series folds into `_other` at once.
  private readonly heldByApp = new Map<string, number>()
  /** labels shown before: they stay at 0 while their app holds nothing, until it loses its own series */
  private readonly heldShown = new Set<string>()

  constructor(
    registry: Registry,
    private readonly apps: OrgPolicy,
  ) {
    this.requests = new CellCounter(
      'sluice_app_requests_total',
      'Requests finished, by calling app (app="_unknown": refused before the app was known), status code and outcome; 401/403 are app identity refusals',
      ['app', 'code', 'outcome'],
      registry,
    )
    this.queueWait = new CellHistogram(
      'sluice_app_queue_wait_seconds',
      'Time spent waiting for permits, over every attempt, of requests that joined a queue, by calling app',
      QUEUE_WAIT_BUCKETS,
      registry,
    )
    const { heldByApp, heldShown } = this
    new Gauge({
      name: 'sluice_app_permits_held',
      help: 'Permits this replica holds (requests in progress upstream), by calling app; sum over replicas for the whole',
      labelNames: ['app'],
      registers: [registry],
      collect() {
        const byLabel = new Map<string, number>()
        for (const label of heldShown) byLabel.set(label, 0)
        for (const [app, n] of heldByApp) {
          const label = apps.label(app)
          byLabel.set(label, (byLabel.get(label) ?? 0) + n)
        }
        this.reset()
        for (const [app, n] of byLabel) {
          heldShown.add(app)
          this.set({ app }, n)
        }
      },
    })
  }

  /** Counts a finished request by its app; `queued`: it joined a queue, so its wait is observed. */
  requestFinished(record: RequestRecord, queued: boolean): void {
    const app = record.app === undefined ? UNKNOWN_APP : this.apps.forRequest(record.app)
    let cells = this.byApp.get(app)
    if (cells === undefined) this.byApp.set(app, (cells = { counts: new Map(), wait: undefined }))
    let byOutcome = cells.counts.get(record.status)
    if (byOutcome === undefined) cells.counts.set(record.status, (byOutcome = new Map<string, CounterCell>()))
    let cell = byOutcome.get(record.outcome)
    if (cell === undefined) {
      const code = codeLabel(record.status)
      cell = this.requests.cellByKey(
        app + '\n' + code + '\n' + record.outcome,
        { app, code, outcome: record.outcome },
        app,
      )
      byOutcome.set(record.outcome, cell)
    }
    cell.n++
    if (queued) (cells.wait ??= this.queueWait.cellByKey(app, { app }, app)).observe(record.queueSeconds)
  }

  /** A permit was granted to `app`; the function returned gives it back (calls after the first do nothing). */
  permitHeld(app: string): () => void {
    const held = this.heldByApp
    held.set(app, (held.get(app) ?? 0) + 1)
    let given = false
    return () => {
      if (given) return
      given = true
      const n = held.get(app)! - 1
      if (n === 0) held.delete(app)
      else held.set(app, n)
    }
  }

  /** Re-ranks the apps when due and drops the series of those that lost their own. */
  rerank(now: number): void {
    for (const app of this.apps.rerankIfDue(now)) {
      this.requests.dropOrg(app)
      this.queueWait.dropOrg(app)
      this.byApp.delete(app)
      this.heldShown.delete(app)
    }
  }
}
