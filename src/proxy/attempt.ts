import type { IncomingHttpHeaders, OutgoingHttpHeaders } from 'node:http'
import { performance } from 'node:perf_hooks'
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { Dispatcher } from 'undici'
import type { Endpoint } from '../catalog/types.js'
import { PREDICTED_WAIT_HEADER, predictedWaitOf } from '../forecast/index.js'
import type { LearnOptions, Permit, PermitOutcome } from '../limiter/types.js'
import type { ReuseTicket } from '../reuse/index.js'
import type { Rejection } from '../errors/refusal.js'
import type { AttemptSpan, RequestSpans } from '../tracing/index.js'
import type { ThrottleRule } from '../upstreams/throttle.js'
import type { VersionDecision, Versioning } from '../versioning/index.js'
import type { RequestBody } from './body.js'
import { BodyTooSlowError } from './errors.js'
import { forward, type AnswerLimits, type ForwardCallbacks } from './forward.js'
import type { UpstreamRequest } from './outgoing.js'
import type { HangUp } from './hang-up.js'
import { clientResponseHeaders } from './headers.js'
import type { Trace } from './trace.js'
import { upstreamFailure } from './upstream.js'

/** What one upstream attempt came to. The retry loop (handler.ts) decides what follows. */
export type AttemptResult =
  /** the API's answer, passed to the client as it comes (or read out and dropped for a client that has gone) */
  | { readonly kind: 'answered'; readonly status: number }
  /** the route's over-the-limit (a 429; src/upstreams/throttle.ts): nothing passed on; its headers say when to try again */
  | { readonly kind: 'throttled'; readonly status: number; readonly headers: IncomingHttpHeaders }
  /**
   * Nothing was sent: the permit may no longer hold (docs/redis-limiter.md, "Leases"). The request
   * waits again at its place, unless undici already destroyed its streamed body (`bodySpent`).
   */
  | { readonly kind: 'heldBack'; readonly bodySpent: boolean }
  /** the API could not be reached or failed before answering, or the client's body came too slowly: the answer to give */
  | { readonly kind: 'failed'; readonly error: Rejection }

/** One request on its way upstream: built once before its first permit, sent by every attempt. */
export interface UpstreamCall {
  readonly request: FastifyRequest
  readonly reply: FastifyReply
  readonly trace: Trace
  readonly client: HangUp
  /** its spans, when tracing is on (docs/observability.md, "Traces") */
  readonly spans: RequestSpans | undefined
  readonly endpoint: Endpoint
  /** the limiter key, and who an answer was for (versioning's evidence) */
  readonly key: { readonly instance: string; readonly endpoint: string }
  readonly app: string
  /** who holds the request's bytes in the memory budget: the app, or the organisation with app identity off */
  readonly holder: string
  /** whether (and how) the endpoint's limit is learned */
  readonly learn: LearnOptions | undefined
  readonly deadline: number
  readonly decision: VersionDecision
  /** the request as the API gets it (path, method, headers, body); each attempt sets its own `traceparent` when tracing */
  readonly options: UpstreamRequest
  readonly body: RequestBody
  /** this request's part in reuse: followers of its call, and the cache, get a copy of its answer */
  readonly shared: ReuseTicket | undefined
}

/** What attempts use, the same for every request. */
export interface AttemptDeps {
  readonly pool: Dispatcher
  readonly versioning: Pick<Versioning, 'observeUpstream'>
  readonly answerLimits: AnswerLimits
  /** the upstream's host and port, on each attempt's client span */
  readonly server?: { readonly address: string; readonly port: number }
  /** one attempt upstream is done (read to the end, or failed), with the upstream's time */
  /** `seconds` from the moment the request had a socket; `socketWaitSeconds` before it, its permit held */
  readonly onUpstreamAttempt?: (endpoint: Endpoint, seconds: number, socketWaitSeconds: number) => void
  /** a permit was granted to `app`; the function returned is called once it is given back */
  readonly onPermit?: (app: string) => () => void
  /** whether an answer is the route's over-the-limit: the request goes back (docs/upstreams.md, "Over the limit") */
  readonly throttled: ThrottleRule
  /**
   * every answer's head, with whether it is a throttle (`throttled`): rates learn from
   * it; true: a 429 of a spent rate quota, which says nothing about the concurrency limit
   */
  readonly onAnswerHead?: (
    key: { readonly instance: string; readonly endpoint: string },
    status: number,
    headers: IncomingHttpHeaders,
    throttled: boolean,
    /** the request's start was counted by a rate gate (its permit's `startCounted`) */
    counted: boolean,
  ) => boolean
}

/** A request stopped before it was sent, because its permit could no longer start it (never leaves the proxy). */
class LeaseInDoubt extends Error {
  constructor() {
    super('the permit may have run out before the request was sent')
  }
}

const HELD_BACK =
  'proxy: the permit may have run out before the request was sent (the process stalled, or Redis lost its data); given back, the request waits again at its place'
const HELD_BACK_WHEN_GRANTED: AttemptResult = { kind: 'heldBack', bodySpent: false }

/**
 * One upstream attempt on one permit; `run` resolves once the answer's head is handled. The permit
 * goes back when the API is done with the request, never when the client leaves (README "What sluice guarantees").
 */
export class UpstreamAttempt implements ForwardCallbacks {
  /** the head of an answer to try again after (the route's `throttled`), not passed on */
  private retryHead: IncomingHttpHeaders | undefined
  private status = 0
  /** what the answer says about the limit, given back with the permit (README "Learned limits") */
  private outcome: PermitOutcome = 'neutral'
  /** set when the request was stopped unsent because its permit could no longer start it */
  private heldBack: LeaseInDoubt | undefined
  private sentAt = 0
  /** when the request was handed to the pool; it may wait there for a socket (docs/deploy.md, "Sizing") */
  private dispatchedAt = 0
  private socketWaitMs = 0
  /** the attempt's client span, when tracing is on */
  private span: AttemptSpan | undefined
  private readonly givenBack: (() => void) | undefined

  constructor(
    private readonly deps: AttemptDeps,
    private readonly call: UpstreamCall,
    private readonly permit: Permit,
  ) {
    // Every release of this permit goes through release(), so the count of permits held per app follows it.
    this.givenBack = deps.onPermit?.(call.app)
  }

  /** the answer's bytes held for a slow client count in the call's holder's share of the memory budget */
  get holder(): string {
    return this.call.holder
  }

  async run(): Promise<AttemptResult> {
    const { call, permit } = this
    if (!permit.canStart()) {
      // Its lease was lost, or may have run out, before the request started (docs/redis-limiter.md,
      // "Leases"): never used.
      if (!permit.isLost)
        call.request.log.warn({ instance: call.key.instance, endpoint: call.trace.endpoint, at: 'granted' }, HELD_BACK)
      this.release()
      return HELD_BACK_WHEN_GRANTED
    }
    this.sentAt = this.dispatchedAt = performance.now()
    call.trace.upstreamStartedAt = this.sentAt
    // named as the log and metrics name it (an unknown path `unknown`), with the upstream it goes to
    this.span = call.spans?.attempt(call.request.method, call.trace.template, call.options.headers, this.deps.server)
    try {
      await forward(this.deps.pool, call.options, call.reply.raw, this, this.deps.answerLimits)
    } catch (err) {
      // (onDone has ended it, unless the dispatch itself threw)
      this.span?.ended(true, err)
      if (this.heldBack !== undefined && err === this.heldBack) {
        call.request.log.warn({ instance: call.key.instance, endpoint: call.trace.endpoint, at: 'send' }, HELD_BACK)
        // A streamed body was given to undici, which destroys it with the request: it cannot be sent again.
        return { kind: 'heldBack', bodySpent: call.body.kind === 'stream' }
      }
      return { kind: 'failed', error: failureAnswer(err) }
    }
    const retryHead = this.retryHead
    return retryHead === undefined
      ? { kind: 'answered', status: this.status }
      : { kind: 'throttled', status: this.status, headers: retryHead }
  }

  // ── ForwardCallbacks (forward.ts)

  /**
   * The grant's check again, right before the write: undici may start the request long after the
   * dispatch, and a process stalled meanwhile may hold a lease Redis gave away (docs/redis-limiter.md, "Leases").
   */
  beforeSend(): Error | undefined {
    if (!this.permit.canStart()) return (this.heldBack = new LeaseInDoubt())
    this.permit.markSent()
    // undici starts the request once a socket is its own: any time before that was spent in the pool's
    // queue with the permit held, which is not the API's time (docs/deploy.md, "Sizing")
    this.sentAt = performance.now()
    this.socketWaitMs = this.sentAt - this.dispatchedAt
    this.call.trace.socketWaitMs += this.socketWaitMs
    this.call.trace.upstreamStartedAt = this.sentAt
    return undefined
  }

  onHead(status: number, headers: IncomingHttpHeaders): OutgoingHttpHeaders | undefined {
    const { call } = this
    this.status = status
    this.span?.answered(status)
    this.deps.versioning.observeUpstream(call.decision, status, call.key)
    // an upstream's own "over the limit" (GitHub's 403 with Retry-After) teaches a learned limit as a 429 does
    // (docs/upstreams.md, "Over the limit")
    const throttled = this.deps.throttled(status, headers)
    this.outcome = throttled ? 'throttled' : status < 500 ? 'success' : 'neutral'
    // a 429 of a spent quota per window is the rate's: learned concurrency limits do not count it
    // (docs/learned-limits.md, "Rates")
    const counted = this.permit.startCounted === true
    if (this.deps.onAnswerHead?.(call.key, status, headers, throttled, counted) === true) this.outcome = 'neutral'
    if (throttled) {
      this.retryHead = headers
      return undefined
    }
    // The API refused the credentials the request carried: the organisation it named is not recorded (Trace).
    if (status === 401 || status === 403) call.trace.credentialsRefused()
    const passed = clientResponseHeaders(headers)
    // Identical requests that followed this call, and the cache, get a copy (whether or not this client is still here).
    const reuseHeaders = call.shared?.head(status, passed)
    // Nobody is left to answer when the client has gone: the answer is read out and dropped.
    if (call.client.gone) return undefined
    // Headers sluice set (version notes), the upstream's over them, and the request id over all.
    const head: OutgoingHttpHeaders = Object.assign(call.reply.getHeaders(), passed, reuseHeaders)
    head['x-request-id'] = call.request.id
    const predicted = predictedWaitOf(this.permit)
    if (predicted !== undefined) head[PREDICTED_WAIT_HEADER] = String(predicted)
    return head
  }

  onChunk(chunk: Buffer): boolean {
    return this.retryHead === undefined && this.call.shared?.chunk(chunk) === true
  }

  /** The upstream is done with the request: its answer read to the end (or torn), or it failed. */
  onDone(cutOff: boolean, failed: boolean, error?: Error): void {
    // stopped unsent (see beforeSend): the permit goes back, the request may wait again
    if (this.heldBack !== undefined) {
      this.span?.heldBack()
      return void this.release()
    }
    this.span?.ended(failed, error)
    const { call } = this
    const trace = call.trace
    trace.upstreamEndedAt = performance.now()
    this.deps.onUpstreamAttempt?.(call.endpoint, (trace.upstreamEndedAt - this.sentAt) / 1000, this.socketWaitMs / 1000)
    if (cutOff) trace.outcome = 'upstream_error'
    // a torn answer says nothing about the limit; a 429 read to its end does
    this.release(failed && this.outcome === 'success' ? 'neutral' : this.outcome)
    if (this.retryHead === undefined) call.shared?.end(!failed)
  }

  /** The client did not take its answer in time: cut off, and the API's answer read out and dropped. */
  onClientCut(): void {
    this.call.trace.outcome = 'client_timeout'
  }

  private release(outcome?: PermitOutcome): void {
    this.givenBack?.()
    this.permit.release(outcome)
  }
}

/** The answer to an attempt that failed before the API answered. */
function failureAnswer(err: unknown): Rejection {
  // A streamed body the client sent too slowly: the upstream request was torn down for it.
  if (err instanceof BodyTooSlowError) return err
  const cause = (err as { cause?: unknown }).cause
  if (cause instanceof BodyTooSlowError) return cause
  return upstreamFailure(err)
}
