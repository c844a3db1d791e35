import type { Outcome, RequestRecord } from './record.js'

const NO_WARNINGS: readonly string[] = []

/** Collects a RequestRecord while a request goes through the proxy; `finish` freezes it once. */
export class Trace {
  endpoint = 'unmatched'
  template = 'unmatched'
  instance = '-'
  app: string | undefined
  outcome: Outcome | undefined
  version: string | undefined
  upstreamVersion: string | undefined
  versionWarnings: readonly string[] = NO_WARNINGS
  queueMs = 0
  upstreamStartedAt = 0
  upstreamEndedAt = 0
  retries = 0
  upstream429s = 0
  private finished = false

  constructor(
    readonly requestId: string,
    readonly method: string,
    readonly startedAt: number,
  ) {}

  /** Builds the record when the client side is done (answered, or hung up); undefined the second time. */
  finish(status: number, clientGone: boolean, now: number): RequestRecord | undefined {
    if (this.finished) return undefined
    this.finished = true
    const upstreamEnd = this.upstreamEndedAt || now
    return {
      requestId: this.requestId,
      method: this.method,
      endpoint: this.endpoint,
      template: this.template,
      instance: this.instance,
      app: this.app,
      // An answer the upstream broke off mid-body also ends with the client's side torn down.
      status: clientGone && this.outcome !== 'upstream_error' ? 0 : status,
      outcome: this.outcome === 'upstream_error' ? 'upstream_error' : clientGone ? 'client_aborted' : (this.outcome ?? 'forwarded'),
      version: this.version,
      upstreamVersion: this.upstreamVersion,
      versionWarnings: this.versionWarnings,
      totalSeconds: (now - this.startedAt) / 1000,
      queueSeconds: this.queueMs / 1000,
      upstreamSeconds: this.upstreamStartedAt === 0 ? 0 : (upstreamEnd - this.upstreamStartedAt) / 1000,
      retries: this.retries,
      upstream429s: this.upstream429s,
    }
  }
}
