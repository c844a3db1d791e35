import { randomUUID } from 'node:crypto'
import type { IncomingHttpHeaders, ServerResponse } from 'node:http'
import { performance } from 'node:perf_hooks'
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { RequestSpans, Tracing } from '../tracing/index.js'
import { HangUp } from './hang-up.js'
import { instanceOf } from './instance.js'
import type { OpenRequests } from './open-requests.js'
import type { Reservation } from '../budget/budget.js'
import type { Outcome, RequestRecord } from '../record/record.js'
import type { RouteBase, Routes } from './routes.js'
import { Trace } from './trace.js'

/** A request's record in the making, whether its client has gone, and its spans (when tracing is on). */
export interface Tracked {
  readonly trace: Trace
  readonly client: HangUp
  readonly spans: RequestSpans | undefined
  /** what the request holds of the memory budget (memory-hold.ts), given back at its response's close */
  held?: Reservation
  heldBody?: Reservation
}

// The tracked request, found from its raw response: the HTTP parser's errors arrive with the socket only.
const TRACKED = Symbol('sluice.tracked')
type TrackedResponse = ServerResponse & { [TRACKED]?: Tracked }

/**
 * Every answer of the proxy port, however it was refused or answered, becomes one RequestRecord; the
 * instance is read before the path is checked (docs/requests.md, "The proxy's own answers").
 */
export class RequestTracker {
  constructor(
    private readonly onFinished: (record: RequestRecord) => void,
    private readonly instanceHeader: string,
    /** app identity on: an instance is recorded only once the request authenticated for it (Trace.instanceVouched) */
    private readonly identityOn = false,
    /** OpenTelemetry traces (docs/observability.md, "Traces"); undefined: off */
    private readonly tracing?: Tracing,
    /** told of every request from its tracking to its response's close (a shutdown waits for them) */
    private readonly open?: OpenRequests,
    /** the upstreams by prefix; none: every request is the CRM's */
    private readonly routes?: Routes<RouteBase>,
  ) {}

  /** The request's trace, made on first use; the record is written when the client side closes. */
  track(request: FastifyRequest, reply: FastifyReply): Tracked {
    const res = reply.raw as TrackedResponse
    const known = res[TRACKED]
    if (known !== undefined) return known
    const trace = new Trace(request.id, request.method, performance.now(), this.identityOn)
    try {
      trace.instance = this.instanceOf(request.raw.url ?? '/', request.headers, trace)
    } catch (err) {
      trace.instanceError = err as Error
    }
    const spans = this.tracing?.request(request.method, request.headers)
    const tracked: Tracked = { trace, client: new HangUp(), spans }
    res[TRACKED] = tracked
    const open = this.open?.added(res)
    res.once('close', () => {
      if (open !== undefined) this.open!.removed(open)
      tracked.held?.release()
      tracked.heldBody?.release()
      const gone = !res.writableFinished
      if (gone) tracked.client.hangUp()
      const record = trace.finish(res.statusCode, gone, performance.now())
      if (record === undefined) return
      this.onFinished(record)
      // the server span ends with the record, so its outcome is the access line's
      spans?.finished(record)
    })
    return tracked
  }

  /** The request's instance by its upstream's rule; the upstream noted on the trace when not the CRM's. */
  private instanceOf(url: string, headers: IncomingHttpHeaders, trace: Trace): string {
    if (this.routes === undefined) return instanceOf(headers, this.instanceHeader)
    const { route, rest } = this.routes.of(url)
    if (route !== this.routes.default) trace.upstream = route.name
    return route.readInstance(headers, rest)
  }

  /** The tracked request a raw response belongs to, if any. */
  ofResponse(res: ServerResponse): Tracked | undefined {
    return (res as TrackedResponse)[TRACKED]
  }

  /** One record for an answer given where no request object exists (Node's parser refused the bytes). */
  recordRaw(method: string, headers: IncomingHttpHeaders, status: number, outcome: Outcome): void {
    const now = performance.now()
    const trace = new Trace(randomUUID(), method, now, this.identityOn)
    try {
      trace.instance = instanceOf(headers, this.instanceHeader)
    } catch {
      // an unreadable instance stays `-`, as for any request whose instance could not be read
    }
    trace.outcome = outcome
    const record = trace.finish(status, false, now)
    if (record !== undefined) this.onFinished(record)
  }
}
