/**
 * What happened to one request, built as it goes through the proxy. It feeds the access log line and
 * the request metrics, so both always agree.
 */
export type Outcome =
  /** sent upstream and answered (any upstream status, 222 and 5xx included) */
  | 'forwarded'
  /** 503: the (instance, endpoint) queue was at its maximum length */
  | 'queue_full'
  /** 503: the wait ran past its deadline (also when an upstream 429's back-off would pass it) */
  | 'queue_timeout'
  /** the client hung up before it got its answer */
  | 'client_aborted'
  /** 410 (retired version) or 400 (version gate) answered locally */
  | 'rejected_version'
  /** 400 (bad path, header, HTTP the parser refuses), 404, 405, 414, 431: bad input */
  | 'bad_request'
  /** 503: the upstream answered 429 for a streamed body, which cannot be sent again */
  | 'upstream_busy'
  /** 502/504: the upstream could not be reached, or timed out; or it broke its answer off mid-body (status as sent) */
  | 'upstream_error'
  /** 401: app identity is on and the request carried no known app token */
  | 'unauthenticated'
  /** 403: the app may not use this organisation or endpoint, or sluice holds no key for the organisation */
  | 'forbidden'
  /** 503: the limiter refuses permits (shutting down, or Redis down with fallback `closed`) */
  | 'unavailable'
  /** 503: the memory budget is full (SLUICE_MEMORY_BUDGET): shed load, not a fault (docs/deploy.md, "Memory") */
  | 'memory_budget'
  /** 408: the request (headers or body) came too slowly; or an answer the client did not take was cut off (status as sent) */
  | 'client_timeout'
  /** 500: a bug in sluice; the log has the details */
  | 'internal_error'
  /** 503: the queue ahead was predicted to outlast the request's deadline, so it was refused at once */
  | 'wait_too_long'
  /** answered with the upstream answer of an identical request's call: no permit, no call of its own */
  | 'coalesced'
  /** answered from the lookup-list cache: no permit, no upstream call */
  | 'cache_hit'

/** Outcomes whose request joined a queue: they feed the queue-wait histograms (not queue_full: it never waited). */
const QUEUED_OUTCOMES: ReadonlySet<string> = new Set<Outcome>([
  'forwarded',
  'queue_timeout',
  'client_aborted',
  'upstream_error',
  'upstream_busy',
])
export const joinedQueue = (outcome: string): boolean => QUEUED_OUTCOMES.has(outcome)

export interface RequestRecord {
  readonly requestId: string
  readonly method: string
  /** endpoint name (src/catalog/names.ts): the id `METHOD /template`, or `unknown`; `unmatched` when the path was rejected before matching */
  readonly endpoint: string
  /** the endpoint's path template (no ids), `unmatched` when none */
  readonly template: string
  /** the organisation as the client named it; `-` when it could not be read, or nothing vouched for it */
  readonly instance: string
  /** the upstream the request went to, when not the CRM's own (docs/upstreams.md) */
  readonly upstream?: string
  /** nothing vouched for the request's organisation, so nothing it named is recorded (docs/observability.md, "What a client's values can reach") */
  readonly unauthenticated?: boolean
  /** the calling app (README "Apps: identity, access and keys"); `default` when none is named, undefined when refused before it was known */
  readonly app: string | undefined
  /** the status the client got (0 when the client left before any answer) */
  readonly status: number
  readonly outcome: Outcome
  /** the version header as requested, and as sent upstream (after rewrite/pin) */
  readonly version: string | undefined
  readonly upstreamVersion: string | undefined
  /** what the versioning noted for the log (a rewrite, a gate warning); usually empty */
  readonly versionWarnings?: readonly string[]
  readonly totalSeconds: number
  /** time spent waiting for permits, over every attempt */
  readonly queueSeconds: number
  /** time the upstream spent on the final attempt (0 when never sent), from the moment it had a socket */
  readonly upstreamSeconds: number
  /** time the request, its permit held, waited for an upstream socket, over every attempt (docs/deploy.md, "Sizing") */
  readonly socketWaitSeconds?: number
  /** attempts after the first (each one caused by an upstream 429) */
  readonly retries: number
  readonly upstream429s: number
}
