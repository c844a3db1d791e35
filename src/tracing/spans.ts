import type { IncomingHttpHeaders } from 'node:http'
import {
  defaultTextMapGetter,
  defaultTextMapSetter,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  type Attributes,
  type Context,
  type Span,
  type TextMapPropagator,
  type Tracer,
} from '@opentelemetry/api'
import type { AttemptSpan, RequestEnd, RequestSpans } from './types.js'

/**
 * The spans of one request (docs/observability.md, "Traces"): a server span continuing the caller's
 * `traceparent`; a `sluice.wait` span per wait for a permit; a client span per upstream attempt, whose
 * context goes to the API as `traceparent`. Attributes name the endpoint by its template, never a
 * path with its ids or a query string, and no header value but the trace context is ever read.
 */

/** Attribute names of the semantic conventions (the stable ones, and two still in development). */
const METHOD = 'http.request.method'
const ROUTE = 'http.route'
const STATUS = 'http.response.status_code'
const ERROR_TYPE = 'error.type'
const SERVER_ADDRESS = 'server.address'
const SERVER_PORT = 'server.port'
const URL_TEMPLATE = 'url.template'
const RESEND_COUNT = 'http.request.resend_count'

/** What every request's spans share. */
export interface SpanDeps {
  readonly tracer: Tracer
  readonly propagator: TextMapPropagator
  /** the upstream's host and port, on every client span */
  readonly upstream: { readonly address: string; readonly port: number }
}

/** The server span of a request that arrived, its parent read from the caller's `traceparent`. */
export function requestSpans(deps: SpanDeps, method: string, headers: IncomingHttpHeaders): RequestSpans {
  const parent = deps.propagator.extract(ROOT_CONTEXT, headers, defaultTextMapGetter)
  const span = deps.tracer.startSpan(method, { kind: SpanKind.SERVER, attributes: { [METHOD]: method } }, parent)
  return new OtelRequestSpans(deps, span, method)
}

/** A failure as a low-cardinality type: its code (SLUICE_…, UND_ERR_…, ECONNREFUSED) or class name, never its message. */
function errorType(err: unknown): string {
  const code = (err as { code?: unknown } | undefined)?.code
  if (typeof code === 'string' && code !== '') return code
  return err instanceof Error ? err.name : '_OTHER'
}

const UNFINISHED = { code: 'unfinished' }

class OtelRequestSpans implements RequestSpans {
  private context: Context | undefined
  private wait: Span | undefined
  private attempts = 0

  constructor(
    private readonly deps: SpanDeps,
    private readonly span: Span,
    private readonly method: string,
  ) {}

  /** the server span as a parent (made on first use: a request refused at admission never needs it) */
  private parent(): Context {
    return (this.context ??= trace.setSpan(ROOT_CONTEXT, this.span))
  }

  waitBegins(requeued: boolean): void {
    this.wait = this.deps.tracer.startSpan(
      'sluice.wait',
      { kind: SpanKind.INTERNAL, attributes: { 'sluice.wait.requeued': requeued } },
      this.parent(),
    )
  }

  forecast(ahead: number, expectedMs: number | undefined): void {
    const wait = this.wait
    if (wait === undefined) return
    wait.setAttribute('sluice.queue.position', ahead)
    if (expectedMs !== undefined) wait.setAttribute('sluice.wait.predicted_ms', Math.round(expectedMs))
  }

  waitEnds(err?: unknown): void {
    const wait = this.wait
    if (wait === undefined) return
    this.wait = undefined
    if (err !== undefined) {
      wait.setAttribute(ERROR_TYPE, errorType(err))
      wait.setStatus({ code: SpanStatusCode.ERROR })
    }
    wait.end()
  }

  backsOff(delayMs: number): void {
    this.span.addEvent('sluice.backoff', { 'sluice.backoff.delay_ms': Math.round(delayMs) })
  }

  attempt(
    method: string,
    template: string,
    headers: Record<string, string | string[]>,
    server?: { readonly address: string; readonly port: number },
  ): AttemptSpan {
    const resent = this.attempts++
    // the upstream this attempt goes to (docs/observability.md, "The spans"), not always the CRM's
    const { address, port } = server ?? this.deps.upstream
    const attributes: Attributes = {
      [METHOD]: method,
      [SERVER_ADDRESS]: address,
      [SERVER_PORT]: port,
      [URL_TEMPLATE]: template,
    }
    if (resent > 0) attributes[RESEND_COUNT] = resent
    const span = this.deps.tracer.startSpan(
      `${method} ${template}`,
      { kind: SpanKind.CLIENT, attributes },
      this.parent(),
    )
    // The attempt's span is the API's parent; the caller's `tracestate` goes on as it came.
    this.deps.propagator.inject(trace.setSpan(ROOT_CONTEXT, span), headers, defaultTextMapSetter)
    return new OtelAttemptSpan(span)
  }

  reused(kind: 'coalesced' | 'cache_hit'): void {
    this.span.addEvent('sluice.reused', { 'sluice.reuse.kind': kind })
  }

  finished(end: RequestEnd): void {
    // a wait the handler never saw end (it always does: belt and braces)
    this.waitEnds(UNFINISHED)
    const span = this.span
    const matched = end.template !== 'unmatched'
    if (matched) span.updateName(`${this.method} ${end.template}`)
    const attributes: Attributes = {
      // the access line's `reqId`: a trace and its log line found from each other
      'sluice.request_id': end.requestId,
      'sluice.outcome': end.outcome,
      'sluice.endpoint': end.endpoint,
      'sluice.retries': end.retries,
      'sluice.upstream_429s': end.upstream429s,
    }
    if (matched) attributes[ROUTE] = end.template
    if (end.status > 0) attributes[STATUS] = end.status
    if (end.app !== undefined) attributes['sluice.app'] = end.app
    if (end.instance !== '-') attributes['sluice.instance'] = end.instance
    span.setAttributes(attributes)
    // A server span is an error only for a 5xx (the semantic conventions' rule for servers).
    if (end.status >= 500) {
      span.setAttribute(ERROR_TYPE, String(end.status))
      span.setStatus({ code: SpanStatusCode.ERROR })
    }
    span.end()
  }
}

class OtelAttemptSpan implements AttemptSpan {
  private done = false

  constructor(private readonly span: Span) {}

  answered(status: number): void {
    if (this.done) return
    this.span.setAttribute(STATUS, status)
    // A client span is an error for a 4xx as well: a 429 that sends the request back is one.
    if (status >= 400) {
      this.span.setAttribute(ERROR_TYPE, String(status))
      this.span.setStatus({ code: SpanStatusCode.ERROR })
    }
  }

  ended(failed: boolean, error?: unknown): void {
    if (this.done) return
    this.done = true
    if (failed) {
      this.span.setAttribute(ERROR_TYPE, errorType(error))
      this.span.setStatus({ code: SpanStatusCode.ERROR })
    }
    this.span.end()
  }

  heldBack(): void {
    if (this.done) return
    this.done = true
    this.span.setAttribute('sluice.attempt.held_back', true)
    this.span.end()
  }
}
