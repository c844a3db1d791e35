import { performance } from 'node:perf_hooks'
import type { Readable } from 'node:stream'
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { IncomingHttpHeaders, OutgoingHttpHeaders } from 'node:http'
import type { Dispatcher } from 'undici'
import { badPathError, queryProblem } from '../catalog/index.js'
import { appOfRefusal, orgAllowedInRefusal } from '../apps/errors.js'
import type { AppGate, Caller } from '../apps/gate.js'
import type { Catalog, Endpoint } from '../catalog/types.js'
import type { ProxySettings } from './settings.js'
import { QueueTimeoutError } from '../limiter/errors.js'
import type { AcquireOptions, LearnOptions, Limiter, Permit, PermitOutcome } from '../limiter/types.js'
import { PREDICTED_WAIT_HEADER, predictedWaitOf } from '../forecast/index.js'
import { writeReused, type Reuse, type ReuseTicket } from '../reuse/index.js'
import { retryDelayMs, sleep } from './backoff.js'
import { NO_BODY, readBody } from './body.js'
import { cutIfNotTaken, forward } from './forward.js'
import type { HangUp } from './hang-up.js'
import {
  BadWaitHeaderError,
  BodyNotAllowedError,
  BodyTooSlowError,
  MethodOverrideError,
  NoHostError,
  NotFoundError,
  PermitRanOutError,
  UpstreamBusyError,
  UrlTooLongError,
} from './errors.js'
import { appendForwardedFor, CLIENT_IDENTITY_HEADERS, clientResponseHeaders, METHOD_OVERRIDE_HEADERS, upstreamRequestHeaders } from './headers.js'
import { withOutcome, type RequestTracker } from './tracking.js'
import { upstreamFailure, type Upstream } from './upstream.js'

/** What the proxy needs of version handling (src/versioning implements it). */
export interface VersionDecision {
  /** the validated header value as the client sent it */
  readonly requested: string | undefined
  readonly upstream: string | undefined
  /** notes for the request's log line (a rewrite, a gate warning) */
  readonly warnings: readonly string[]
  readonly responseHeaders: Readonly<Record<string, string>>
}
export interface ProxyVersioning<D extends VersionDecision = VersionDecision> {
  /** the version header, lower-case */
  readonly headerName: string
  /** throws an error with a status (400/410) when the request must be answered locally */
  decide(headerValue: string | string[] | undefined, endpoint: Endpoint, instance: string): D
  /** every upstream answer's status, with whom it was for (410s are evidence of a retired version) */
  observeUpstream(decision: D, status: number, source: { readonly instance: string; readonly endpoint: string }): void
  /** throws the 410 for API v1 paths once the calendar says v1 is retired */
  rejectApiV1(): void
}

export interface ProxyContext {
  readonly settings: ProxySettings
  readonly catalog: Catalog
  readonly limiter: Limiter
  readonly upstream: Upstream
  readonly versioning: ProxyVersioning
  /** which app is calling; with app identity on, may it, and which Authorization goes upstream */
  readonly apps: AppGate
  /** makes every request's record (one access-log line, one count) */
  readonly tracker: RequestTracker
  /** an upstream 429 arrived; the request goes back into its queue */
  readonly onUpstream429?: (endpoint: Endpoint, instance: string) => void
  /** one attempt upstream is done (read to the end, a 429 included, or failed), with the upstream's time */
  readonly onUpstreamAttempt?: (endpoint: Endpoint, seconds: number) => void
  /** a permit was granted to `app`; the function returned is called once it is given back (permits held per app) */
  readonly onPermit?: (app: string) => () => void
  /** coalescing of identical reads and the lookup-list cache; none when undefined */
  readonly reuse?: Reuse
  /** whether (and how) an endpoint's limit is learned (README "Learned limits"); none: every limit is fixed */
  readonly learnOf?: (endpoint: Endpoint) => LearnOptions | undefined
}

/** A request stopped before it was sent, because its permit could no longer start it (never leaves the proxy). */
class LeaseInDoubt extends Error {
  constructor() {
    super('the permit may have run out before the request was sent')
  }
}

const HELD_BACK = 'proxy: the permit may have run out before the request was sent (the process stalled, or Redis lost its data); given back, the request waits again at its place'

/** Builds the route handler for every request under the API prefix. */
export function createProxyHandler(ctx: ProxyContext) {
  const { settings, catalog, limiter, upstream, versioning, apps } = ctx
  const prefix = settings.basePath
  const waitHeader = settings.queue.waitHeader
  const versionHeader = versioning.headerName
  // Headers that steer sluice itself, and (unless the client is a trusted proxy) client-sent claims
  // about the client's address: the API never sees them.
  const controlHeaders = new Set([waitHeader, settings.instanceHeader, ...apps.controlHeaders, ...(settings.trustProxy ? [] : CLIENT_IDENTITY_HEADERS)])
  const pace = { minBytesPerSecond: settings.client.minBodyBytesPerSecond, windowMs: settings.client.bodyGraceMs }
  const answerLimits = {
    bufferBytes: settings.client.answerBufferBytes,
    // The API's answer is never held back longer than its own body timeout for a client that does not read.
    writeTimeoutMs: Math.min(settings.client.writeTimeoutMs, settings.upstreamTimeouts.bodyMs),
  }

  return async function proxyHandler(request: FastifyRequest, reply: FastifyReply): Promise<void> {
    const { trace, client } = ctx.tracker.track(request, reply)
    const arrivedAt = Date.now()
    const res = reply.raw
    let shared: ReuseTicket | undefined
    reply.header('x-request-id', request.id)

    try {
      // ── admission: path, endpoint, instance, wait, version — all before any permit is taken
      const url = request.raw.url ?? '/'
      if (url.length > settings.client.maxUrlBytes) throw withOutcome(new UrlTooLongError(settings.client.maxUrlBytes), 'bad_request')
      if (request.headers.host === undefined && request.raw.httpVersionMinor === 1) throw withOutcome(new NoHostError(), 'bad_request')
      const q = url.indexOf('?')
      const rawPath = q < 0 ? url : url.slice(0, q)
      const query = q < 0 ? '' : url.slice(q)
      const rest = belowPrefix(rawPath, prefix)
      if (rest === undefined) {
        if (isV1(rawPath)) {
          try {
            versioning.rejectApiV1()
          } catch (err) {
            throw withOutcome(err, 'rejected_version')
          }
        }
        throw withOutcome(new NotFoundError(prefix, rawPath), 'bad_request')
      }
      const match = catalog.match(request.method, rest)
      if (!match.ok) throw withOutcome(badPathError(match), 'bad_request')
      // The query is forwarded as sent: only what RFC 3986 allows there (a `#` or a raw space never).
      const badQuery = query.length > 1 ? queryProblem(query) : undefined
      if (badQuery !== undefined) throw withOutcome(badPathError(badQuery), 'bad_request')
      const { endpoint } = match
      // One name in the log, the metrics and /status: an unknown path not shaped like a catalog template is `unknown`.
      trace.endpoint = catalog.nameOf(endpoint.id)
      trace.template = endpoint.template
      const headers = request.headers
      // Read before the path check (the record names the organisation); refused only now, after it.
      if (trace.instanceError !== undefined) throw withOutcome(trace.instanceError, 'bad_request')
      let caller: Caller
      try {
        caller = apps.resolve(headers, trace.instance, endpoint.id, request.method)
      } catch (err) {
        // a 403 of a known app is that app's refusal (metrics, access line); a 401 has no app, and
        // records no organisation, nor does a 403 for one the app may not use (what it names may be a token)
        trace.app = appOfRefusal(err)
        trace.instanceVouched = orgAllowedInRefusal(err)
        throw err
      }
      trace.app = caller.app
      trace.instanceVouched = true
      request.sluiceApp = caller.app
      refuseMisleading(request.method, headers)
      const deadline = arrivedAt + maxWaitMs(headers[waitHeader], waitHeader, settings.queue.maxWaitMs)

      const requestedVersion = headers[versionHeader]
      let decision: VersionDecision
      try {
        decision = versioning.decide(requestedVersion, endpoint, trace.instance)
      } catch (err) {
        // Logged as sent (cut short: it is the client's text), since it was refused.
        trace.version = firstValue(requestedVersion)?.slice(0, 32)
        const malformed = (err as { code?: string }).code === 'SLUICE_BAD_VERSION_HEADER'
        throw withOutcome(err, malformed ? 'bad_request' : 'rejected_version')
      }
      trace.version = decision.requested
      trace.upstreamVersion = decision.upstream
      trace.versionWarnings = decision.warnings
      for (const name in decision.responseHeaders) reply.header(name, decision.responseHeaders[name])

      const body =
        request.body === undefined
          ? NO_BODY
          : await readBody(request.body as Readable, contentLengthOf(headers['content-length']), settings.retry.maxBufferBytes, pace).catch((err: unknown) => {
              throw withOutcome(err, err instanceof BodyTooSlowError ? 'client_timeout' : 'bad_request')
            })
      const upstreamHeaders = upstreamRequestHeaders(headers, controlHeaders)
      upstreamHeaders['x-request-id'] = request.id
      if (caller.authorization === null) delete upstreamHeaders.authorization
      else if (caller.authorization !== undefined) upstreamHeaders.authorization = caller.authorization
      appendForwardedFor(upstreamHeaders, request.raw.socket.remoteAddress)
      if (decision.upstream === undefined) delete upstreamHeaders[versionHeader]
      else upstreamHeaders[versionHeader] = decision.upstream
      if (body.kind === 'stream' && body.length !== undefined) upstreamHeaders['content-length'] = String(body.length)
      const forwardOptions: Dispatcher.DispatchOptions = {
        path: upstream.basePath + match.path + query,
        method: request.method,
        headers: upstreamHeaders,
        body: body.kind === 'buffered' ? body.data : body.kind === 'stream' ? body.stream : null,
      }
      const key = { instance: trace.instance, endpoint: endpoint.id }
      const app = caller.app
      const learn = ctx.learnOf?.(endpoint)

      // ── an identical read in progress, or the lookup-list cache, may answer without a permit
      // The key is the request as the upstream gets it (docs/reuse.md): its headers, the app when a principal.
      shared = ctx.reuse?.open({ ...key, endpointId: endpoint.id, method: request.method, path: match.path, query, headers: upstreamHeaders, app, deadline, hasBody: body.kind !== 'none' })
      if (shared !== undefined) {
        // Followers of this request's call that never got its answer try again without it. (Only
        // requests that can share listen: a listener and its closure are a queued request's memory.)
        const ticket = shared
        if (res.closed) ticket.close()
        else res.once('close', () => ticket.close())
      }
      const reused = await shared?.reused(() => client.signal)
      if (client.gone) return void reply.hijack()
      if (reused !== undefined) {
        trace.outcome = reused.kind
        writeReused(res, request.method, reply.getHeaders() as OutgoingHttpHeaders, reused, { ...shared!.answerHeaders(reused), 'x-request-id': request.id })
        // No permit is held, but a client that does not take its answer is still cut off in time.
        cutIfNotTaken(res, answerLimits.writeTimeoutMs, () => (trace.outcome = 'client_timeout'))
        return void reply.hijack()
      }

      // ── queue, forward, and on an upstream 429 back into the queue (at its old place) after a back-off
      // `requeued`: the request waited before (an upstream 429, a permit lost before it started): it
      // goes back to its old place in the queue; a first attempt takes its place as it arrives.
      let requeued = false
      for (let attempt = 0; ; attempt++) {
        // The time waited goes to the trace, granted or not. Awaited here, in the handler's own frame:
        // a wrapper's async frame or promise would be one more object per queued request.
        const waitFrom = performance.now()
        let permit: Permit
        try {
          permit = await limiter.acquire(key, new AcquireRequest(endpoint.limit, learn, deadline, requeued ? arrivedAt : undefined, settings.queue.maxLength, app, client))
        } finally {
          trace.queueMs += performance.now() - waitFrom
        }
        const givenBack = ctx.onPermit?.(app)
        // Every release of this permit goes through here, so the count of permits held per app follows it.
        const release = (outcome?: PermitOutcome): void => {
          givenBack?.()
          permit.release(outcome)
        }
        requeued = true
        if (!permit.canStart()) {
          // Its lease was lost, or may have run out, before the request started (docs/redis-limiter.md,
          // "Leases"): never used — given back, and the request waits again at its place.
          if (!permit.isLost) request.log.warn({ instance: key.instance, endpoint: trace.endpoint, at: 'granted' }, HELD_BACK)
          release()
          attempt--
          continue
        }
        let busy: IncomingHttpHeaders | undefined
        // what the answer says about the limit, given back with the permit (README "Learned limits")
        let outcome: PermitOutcome = 'neutral'
        // set when the request was stopped unsent because its permit could no longer start it
        let heldBack: LeaseInDoubt | undefined
        const sentAt = performance.now()
        trace.upstreamStartedAt = sentAt
        try {
          await forward(upstream.pool, forwardOptions, res, {
            // The same question again right before the request is written: undici may start it long
            // after the dispatch (a new socket still connecting, a free connection awaited), and a
            // process stalled meanwhile (SIGSTOP, a long GC pause) may hold a lease Redis has since
            // given to another replica. Nothing has been sent then: it waits again at its place.
            // Said yes, the permit learns that its request is upstream: should Redis lose its data
            // from now on, it is counted again rather than held back.
            beforeSend: () => {
              if (!permit.canStart()) return (heldBack = new LeaseInDoubt())
              permit.markSent()
              return undefined
            },
            onHead: (status, upstreamHeaders) => {
              versioning.observeUpstream(decision, status, key)
              if (status === 429) {
                busy = upstreamHeaders
                outcome = 'throttled'
                return undefined
              }
              if (status < 500) outcome = 'success'
              const passed = clientResponseHeaders(upstreamHeaders)
              // Identical requests that followed this call, and the cache, get a copy (whether or not this client is still here).
              const reuseHeaders = shared?.head(status, passed)
              // Nobody is left to answer when the client has gone: the answer is read out and dropped.
              if (client.gone) return undefined
              // Headers sluice set (version notes), the upstream's over them, and the request id over all.
              const head: OutgoingHttpHeaders = Object.assign(reply.getHeaders(), passed, reuseHeaders)
              head['x-request-id'] = request.id
              const predicted = predictedWaitOf(permit)
              if (predicted !== undefined) head[PREDICTED_WAIT_HEADER] = String(predicted)
              return head
            },
            onChunk:
              shared === undefined
                ? undefined
                : (chunk) => busy === undefined && shared?.chunk(chunk) === true,
            // The upstream is done with the request when its answer has been read to the end (or torn).
            onDone: (cutOff, failed) => {
              // stopped unsent (see beforeSend): the permit goes back, the request waits again
              if (heldBack !== undefined) return void release()
              trace.upstreamEndedAt = performance.now()
              ctx.onUpstreamAttempt?.(endpoint, (trace.upstreamEndedAt - sentAt) / 1000)
              if (cutOff) trace.outcome = 'upstream_error'
              // a torn answer says nothing about the limit; a 429 read to its end does
              release(failed && outcome === 'success' ? 'neutral' : outcome)
              if (busy === undefined) shared?.end(!failed)
            },
            // The client did not take its answer in time: cut off, and the API's answer read out and dropped.
            onClientCut: () => {
              trace.outcome = 'client_timeout'
            },
          }, answerLimits)
        } catch (err) {
          if (heldBack !== undefined && err === heldBack) {
            // A streamed body was given to undici, which destroys it with the request: it cannot be sent again.
            request.log.warn({ instance: key.instance, endpoint: trace.endpoint, at: 'send' }, HELD_BACK)
            if (body.kind === 'stream') throw withOutcome(new PermitRanOutError(describe(key)), 'unavailable')
            attempt--
            continue
          }
          // A streamed body the client sent too slowly: the upstream request was torn down for it.
          if (err instanceof BodyTooSlowError) throw withOutcome(err, 'client_timeout')
          const cause = (err as { cause?: unknown }).cause
          if (cause instanceof BodyTooSlowError) throw withOutcome(cause, 'client_timeout')
          throw withOutcome(upstreamFailure(err), 'upstream_error')
        }
        // The answer is the upstream's (passed on, or dropped for a client that has gone): Fastify sends nothing.
        if (busy === undefined) return void reply.hijack()
        // An upstream 429: back into the queue at the old place, after a back-off, within the deadline.
        trace.upstream429s++
        ctx.onUpstream429?.(endpoint, trace.instance)
        if (client.gone) return void reply.hijack()
        if (body.kind === 'stream') {
          reply.header('retry-after', retryAfterSeconds(busy['retry-after']))
          throw withOutcome(new UpstreamBusyError(endpoint.id), 'upstream_busy')
        }
        const delay = retryDelayMs(busy['retry-after'], attempt, settings.retry.baseDelayMs, settings.retry.maxDelayMs)
        if (Date.now() + delay >= deadline) {
          throw withOutcome(new QueueTimeoutError(Date.now() - arrivedAt, describe(key)), 'queue_timeout')
        }
        await sleep(delay, client.signal).catch(() => undefined)
        if (client.gone) return void reply.hijack()
        trace.retries++
      }
    } catch (err) {
      if (client.gone) return void reply.hijack()
      // The proxy's error handler sets the outcome from the error and answers in the API's shape.
      throw err
    }
  }
}

/**
 * A request's acquire options. A class, not an object literal: the literal's getter made every
 * waiting request's options a dictionary (about 470 bytes, docs/benchmarks.md "Memory"), and its
 * closure kept the request's scope. The client's signal is made only if the request has to wait
 * (see AcquireOptions.signal).
 */
class AcquireRequest implements AcquireOptions {
  constructor(
    readonly limit: number,
    readonly learn: LearnOptions | undefined,
    readonly deadline: number,
    readonly arrivedAt: number | undefined,
    readonly maxQueue: number,
    readonly app: string,
    private readonly client: HangUp,
  ) {}

  get signal(): AbortSignal {
    return this.client.signal
  }
}

/**
 * Refuses (400) what would make the API answer another request than the one sluice limits and
 * shares: a method override (the limit is the method's), a GET or HEAD with a body (Fastify never
 * reads one, so it would be dropped, and the API's reads take none). Cost: four property lookups.
 */
function refuseMisleading(method: string, headers: IncomingHttpHeaders): void {
  for (const name of METHOD_OVERRIDE_HEADERS) if (headers[name] !== undefined) throw withOutcome(new MethodOverrideError(name), 'bad_request')
  if (method !== 'GET' && method !== 'HEAD') return
  const length = headers['content-length']
  if (headers['transfer-encoding'] !== undefined || (length !== undefined && contentLengthOf(length) !== 0)) {
    throw withOutcome(new BodyNotAllowedError(method), 'bad_request')
  }
}

/** The path below the API prefix (`/v2/accounts` → `/accounts`), or undefined when not below it. */
function belowPrefix(path: string, prefix: string): string | undefined {
  if (path.length < prefix.length || path.slice(0, prefix.length).toLowerCase() !== prefix.toLowerCase()) {
    // Tolerate doubled leading slashes (`//v2/…`) the way the catalog tolerates them inside the path.
    const trimmed = path.replace(/^\/{2,}/, '/')
    return trimmed === path ? undefined : belowPrefix(trimmed, prefix)
  }
  const rest = path.slice(prefix.length)
  if (rest === '') return '/'
  return rest[0] === '/' ? rest : undefined
}

const isV1 = (path: string): boolean => /^\/+v1(\/|$)/i.test(path)

function maxWaitMs(value: string | string[] | undefined, header: string, configured: number): number {
  if (value === undefined) return configured
  const text = firstValue(value)?.trim() ?? ''
  if (!/^\d+(\.\d+)?$/.test(text)) throw withOutcome(new BadWaitHeaderError(header), 'bad_request')
  return Math.min(configured, Math.round(Number(text) * 1000))
}

function contentLengthOf(value: string | undefined): number | undefined {
  if (value === undefined) return undefined
  const n = Number(value)
  return Number.isSafeInteger(n) && n >= 0 ? n : undefined
}

const firstValue = (v: string | string[] | undefined): string | undefined => (Array.isArray(v) ? v[0] : v)

function retryAfterSeconds(value: string | string[] | undefined): string {
  const text = firstValue(value)
  return text !== undefined && /^\d+$/.test(text.trim()) ? text.trim() : '1'
}

const describe = (key: { instance: string; endpoint: string }): string => `${key.endpoint} (instance ${key.instance})`
