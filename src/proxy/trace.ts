import type { Outcome, RequestRecord } from '../record/record.js'

const NO_WARNINGS: readonly string[] = []

/** The instance of a record whose instance could not be read, or may not be recorded. */
export const NO_INSTANCE = '-'

/** Collects a RequestRecord while a request goes through the proxy; `finish` freezes it once. */
export class Trace {
  endpoint = 'unmatched'
  template = 'unmatched'
  instance = NO_INSTANCE
  /** the upstream the request's prefix routes to; undefined: the CRM's own (docs/upstreams.md) */
  upstream: string | undefined
  /** whether the instance may be recorded as sent (docs/observability.md, "What a client's values can reach") */
  instanceVouched: boolean
  app: string | undefined
  outcome: Outcome | undefined
  version: string | undefined
  upstreamVersion: string | undefined
  versionWarnings: readonly string[] = NO_WARNINGS
  queueMs = 0
  /** waited for an upstream socket with a permit held, over every attempt */
  socketWaitMs = 0
  upstreamStartedAt = 0
  upstreamEndedAt = 0
  retries = 0
  upstream429s = 0
  /** why the request's instance could not be read; thrown once the path has been checked */
  instanceError: Error | undefined
  /** the status of an answer written outside Fastify (a parse error found mid-request) */
  answeredWith: number | undefined
  private finished = false

  constructor(
    readonly requestId: string,
    readonly method: string,
    readonly startedAt: number,
    private readonly identityOn: boolean,
  ) {
    this.instanceVouched = !identityOn
  }

  /**
   * The API refused the request's credentials (401, 403): with app identity off nothing else vouched
   * for its organisation, so it is not recorded (docs/observability.md, "What a client's values can reach").
   */
  credentialsRefused(): void {
    if (!this.identityOn) this.instanceVouched = false
  }

  /** Builds the record when the client side is done (answered, or hung up); undefined the second time. */
  finish(status: number, clientGone: boolean, now: number): RequestRecord | undefined {
    if (this.finished) return undefined
    this.finished = true
    const upstreamEnd = this.upstreamEndedAt || now
    // Cut off by sluice (an answer not taken in time) or answered outside Fastify: the status the client was sent.
    const sent = this.answeredWith ?? status
    const kept =
      this.outcome === 'upstream_error' || this.outcome === 'client_timeout' || this.answeredWith !== undefined
    return {
      requestId: this.requestId,
      method: this.method,
      endpoint: this.endpoint,
      template: this.template,
      instance: this.instanceVouched ? this.instance : NO_INSTANCE,
      ...(this.upstream === undefined ? {} : { upstream: this.upstream }),
      unauthenticated: !this.instanceVouched,
      app: this.app,
      // An answer the upstream broke off mid-body also ends with the client's side torn down.
      status: clientGone && !kept ? 0 : sent,
      outcome: kept ? (this.outcome ?? 'bad_request') : clientGone ? 'client_aborted' : (this.outcome ?? 'forwarded'),
      version: this.version,
      upstreamVersion: this.upstreamVersion,
      versionWarnings: this.versionWarnings,
      totalSeconds: (now - this.startedAt) / 1000,
      queueSeconds: this.queueMs / 1000,
      upstreamSeconds: this.upstreamStartedAt === 0 ? 0 : (upstreamEnd - this.upstreamStartedAt) / 1000,
      socketWaitSeconds: this.socketWaitMs / 1000,
      retries: this.retries,
      upstream429s: this.upstream429s,
    }
  }
}
