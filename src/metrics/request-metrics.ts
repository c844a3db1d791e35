import type { Registry } from 'prom-client'
import type { RequestRecord } from '../record/record.js'
import { QUEUE_WAIT_BUCKETS, REQUEST_BUCKETS, SOCKET_WAIT_BUCKETS, UPSTREAM_BUCKETS } from './buckets.js'
import { CellCounter, CellHistogram, type CounterCell, type HistogramCell } from './cells.js'
import { codeLabel, methodLabel, UNAUTHENTICATED_ORG } from './labels.js'
import type { OrgPolicy } from './orgs.js'
import { DEFAULT_UPSTREAM } from '../upstreams/scope.js'

/** the 503 outcomes the alerts watch: their series exist at 0 once an (endpoint, org) is seen */
const SHED_OUTCOMES = ['queue_full', 'queue_timeout'] as const

/** The labels a request was counted under. */
export interface RequestLabels {
  readonly endpoint: string
  /** '' when series carry no org */
  readonly org: string
  /** '' when series carry no upstream */
  readonly upstream: string
}

/** The cells of one (endpoint, org): where its finished requests count. */
interface OrgCells extends RequestLabels {
  /**
   * sluice_requests_total's cells by status, then outcome, then method label: nested Maps keyed by
   * the values themselves, so a request builds no key string (docs/benchmarks.md, "Hot-path tricks").
   */
  readonly counts: Map<number, Map<string, Map<string, CounterCell>>>
  /** sluice_queue_wait_seconds: this org's own series with `queueWaitByOrg`, else the endpoint's */
  wait: HistogramCell | undefined
}

/** The cells of one endpoint label. */
interface EndpointCells {
  readonly label: string
  /** sluice_request_duration_seconds */
  readonly total: HistogramCell
  /** sluice_upstream_duration_seconds, once an attempt was sent */
  upstream: HistogramCell | undefined
  readonly byOrg: Map<string, OrgCells>
}

export interface RequestMetricsOptions {
  /** the endpoint label of an endpoint id */
  readonly endpointOf: (endpointId: string) => string
  /** the organisations that get series of their own; undefined when series carry no org */
  readonly orgs: OrgPolicy | undefined
  /** the queue-wait histogram is labelled with the org too */
  readonly waitByOrg: boolean
  /** sluice_requests_total is labelled with the upstream too (docs/observability.md, "Several upstreams") */
  readonly withUpstream?: boolean
}

/**
 * Per-request metrics by endpoint (and org): a request finds its cells through Maps keyed by label values,
 * building no key string (docs/observability.md, "Cost on the request path").
 */
export class RequestMetrics {
  private readonly requests: CellCounter
  private readonly requestDuration: CellHistogram
  private readonly upstreamDuration: CellHistogram
  private readonly queueWait: CellHistogram
  /** one series for the replica: a socket wait is the pool's, not an endpoint's */
  private readonly socketWait: HistogramCell
  private readonly withOrg: boolean
  /** the cells found so far; dropped when organisations lose their series, since that drops series */
  private readonly byEndpoint = new Map<string, EndpointCells>()

  constructor(
    registry: Registry,
    private readonly options: RequestMetricsOptions,
  ) {
    this.withOrg = options.orgs !== undefined
    this.requests = new CellCounter(
      'sluice_requests_total',
      'Requests finished, by endpoint, method, status code the client got (0: it left first) and outcome',
      [
        ...(this.withOrg
          ? ['endpoint', 'method', 'code', 'outcome', 'org']
          : ['endpoint', 'method', 'code', 'outcome']),
        ...(options.withUpstream === true ? ['upstream'] : []),
      ],
      registry,
    )
    this.requestDuration = new CellHistogram(
      'sluice_request_duration_seconds',
      'Time from arrival to the end of the answer, as the client saw it',
      REQUEST_BUCKETS,
      registry,
    )
    this.upstreamDuration = new CellHistogram(
      'sluice_upstream_duration_seconds',
      "The upstream's time per attempt sent (429s that are retried, failures and the final answer each count once)",
      UPSTREAM_BUCKETS,
      registry,
    )
    this.socketWait = new CellHistogram(
      'sluice_upstream_socket_wait_seconds',
      'Time attempts waited for an upstream socket with their permit held, before the API had the request (upstreamConnections)',
      SOCKET_WAIT_BUCKETS,
      registry,
    ).cellByKey('', {})
    this.queueWait = new CellHistogram(
      'sluice_queue_wait_seconds',
      'Time spent waiting for permits, over every attempt, of requests that joined a queue',
      QUEUE_WAIT_BUCKETS,
      registry,
    )
  }

  /** Counts a finished request; returns the labels it counted under. */
  requestFinished(record: RequestRecord, queued: boolean): RequestLabels {
    const endpoint = this.endpointCells(record.endpoint)
    const cells = this.orgCells(
      endpoint,
      this.orgOf(record),
      this.options.withUpstream === true ? (record.upstream ?? DEFAULT_UPSTREAM) : '',
    )
    this.requestCell(cells, record).n++
    endpoint.total.observe(record.totalSeconds)
    if (queued) (cells.wait ??= this.waitCell(cells)).observe(record.queueSeconds)
    return cells
  }

  /** One attempt upstream is done; `endpointId` is the endpoint id. */
  upstreamAttempt(endpointId: string, seconds: number, socketWaitSeconds = 0): void {
    const cells = this.endpointCells(endpointId)
    cells.upstream ??= this.upstreamDuration.cellByKey(cells.label, { endpoint: cells.label })
    cells.upstream.observe(seconds)
    this.socketWait.observe(socketWaitSeconds)
  }

  /** Drops the series of organisations that lost their own. */
  dropOrgs(orgs: readonly string[]): void {
    if (orgs.length === 0) return
    for (const org of orgs)
      for (const metric of [this.requests, this.requestDuration, this.upstreamDuration, this.queueWait])
        metric.dropOrg(org)
    this.byEndpoint.clear()
  }

  /** A request that did not authenticate (app identity on) takes no org slot: it may name anything. */
  private orgOf(record: RequestRecord): string {
    const orgs = this.options.orgs
    if (orgs === undefined) return ''
    return record.unauthenticated === true ? UNAUTHENTICATED_ORG : orgs.forRequest(record.instance)
  }

  private endpointCells(endpointId: string): EndpointCells {
    const label = this.options.endpointOf(endpointId)
    let cells = this.byEndpoint.get(label)
    if (cells === undefined) {
      cells = {
        label,
        total: this.requestDuration.cellByKey(label, { endpoint: label }),
        upstream: undefined,
        byOrg: new Map(),
      }
      this.byEndpoint.set(label, cells)
    }
    return cells
  }

  private orgCells(endpoint: EndpointCells, org: string, upstream: string): OrgCells {
    // keyed by the org alone while series carry no upstream (no string built per request)
    const id = upstream === '' ? org : org + '\n' + upstream
    let cells = endpoint.byOrg.get(id)
    if (cells === undefined) {
      cells = { endpoint: endpoint.label, org, upstream, counts: new Map(), wait: undefined }
      endpoint.byOrg.set(id, cells)
      // requests that did not authenticate never queue: no shed series for them
      if (org !== UNAUTHENTICATED_ORG) this.shedSeriesAtZero(endpoint.label, org, upstream)
    }
    return cells
  }

  private requestCell(cells: OrgCells, record: RequestRecord): CounterCell {
    let byOutcome = cells.counts.get(record.status)
    if (byOutcome === undefined)
      cells.counts.set(record.status, (byOutcome = new Map<string, Map<string, CounterCell>>()))
    let byMethod = byOutcome.get(record.outcome)
    if (byMethod === undefined) byOutcome.set(record.outcome, (byMethod = new Map<string, CounterCell>()))
    // by the label, not the method: two odd methods are one `other` series, and a client cannot grow the Map
    const method = methodLabel(record.method)
    let cell = byMethod.get(method)
    if (cell === undefined) {
      cell = this.requestSeries(cells, method, codeLabel(record.status), record.outcome, false)
      byMethod.set(method, cell)
    }
    return cell
  }

  /** A cell of sluice_requests_total, made when its label set first shows (at 0 from the start with `atZero`). */
  private requestSeries(
    cells: RequestLabels,
    method: string,
    code: string,
    outcome: string,
    atZero: boolean,
  ): CounterCell {
    const { endpoint, org, upstream } = cells
    const key = endpoint + '\n' + method + '\n' + code + '\n' + outcome + '\n' + org + '\n' + upstream
    const labels: Record<string, string> = { endpoint, method, code, outcome }
    if (this.withOrg) labels.org = org
    if (this.options.withUpstream === true) labels.upstream = upstream
    return atZero ? this.requests.cellAtZero(key, labels, org) : this.requests.cellByKey(key, labels, org)
  }

  /** The queue_full / queue_timeout series of an endpoint (not `unknown`, `unmatched`) at 0, the first time an org uses it. */
  private shedSeriesAtZero(endpoint: string, org: string, upstream: string): void {
    const space = endpoint.indexOf(' ')
    if (space < 0) return // `unknown`, `unmatched`: no one method, and they are not queued per endpoint
    const method = methodLabel(endpoint.slice(0, space))
    for (const outcome of SHED_OUTCOMES) this.requestSeries({ endpoint, org, upstream }, method, '503', outcome, true)
  }

  private waitCell({ endpoint, org }: OrgCells): HistogramCell {
    if (!this.options.waitByOrg) return this.queueWait.cellByKey(endpoint, { endpoint })
    return this.queueWait.cellByKey(endpoint + '\n' + org, { endpoint, org }, org)
  }
}
