import type { IncomingHttpHeaders } from 'node:http'

/**
 * What the proxy calls to trace a request (docs/observability.md, "Traces"): verbs named after the
 * request's stages, so no OpenTelemetry call is spread through the handler. Nothing here exists
 * while tracing is off: the proxy holds `undefined` and skips every call.
 */
export interface Tracing {
  /** The server span of a request that arrived, continuing the caller's W3C `traceparent`. */
  request(method: string, headers: IncomingHttpHeaders): RequestSpans
  /** Sends the spans still buffered and stops the exporter. */
  shutdown(): Promise<void>
}

/** How a request ended, as its record says (src/record/record.ts): the server span's last attributes. */
export interface RequestEnd {
  /** the request's id, as the access line and the `x-request-id` answer header give it */
  readonly requestId: string
  readonly status: number
  readonly outcome: string
  readonly endpoint: string
  readonly template: string
  /** `-` when nothing vouched for it */
  readonly instance: string
  readonly app: string | undefined
  readonly retries: number
  readonly upstream429s: number
}

/** One request's spans. */
export interface RequestSpans {
  /** The wait for a permit begins (again, after a 429 or a permit in doubt, when `requeued`). */
  waitBegins(requeued: boolean): void
  /** What the forecast said when it joined the queue: requests of this replica ahead of it, the predicted wait (ms, when known). */
  forecast(ahead: number, expectedMs: number | undefined): void
  /** The wait ended: a permit, or the refusal `err`. */
  waitEnds(err?: unknown): void
  /** An upstream 429 (or another retried status) is waited out for `delayMs` before the request queues again. */
  backsOff(delayMs: number): void
  /**
   * One upstream attempt starts: its client span, whose `traceparent` is set in `headers`. `server`:
   * the upstream it goes to (host and port); the CRM's upstream when not given.
   */
  attempt(
    method: string,
    template: string,
    headers: Record<string, string | string[]>,
    server?: { readonly address: string; readonly port: number },
  ): AttemptSpan
  /** Answered without a call of its own: an identical request's answer, or the cache's. */
  reused(kind: 'coalesced' | 'cache_hit'): void
  /** The client side closed: the server span ends with the record. */
  finished(end: RequestEnd): void
}

/** One upstream attempt's client span. Every call after the first `ended` or `heldBack` does nothing. */
export interface AttemptSpan {
  /** The answer's head arrived. */
  answered(status: number): void
  /** The upstream is done: answered to the end, or failed (`error`'s code, never its message, is recorded). */
  ended(failed: boolean, error?: unknown): void
  /** Stopped before it was sent: its permit could no longer start it. */
  heldBack(): void
}
