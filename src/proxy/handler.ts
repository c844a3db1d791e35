import { performance } from 'node:perf_hooks'
import type { IncomingHttpHeaders } from 'node:http'
import type { FastifyReply, FastifyRequest } from 'fastify'
import { appOfRefusal, orgAllowedInRefusal } from '../apps/errors.js'
import type { AppGate, Caller } from '../apps/gate.js'
import { UNKNOWN_ENDPOINT } from '../catalog/index.js'
import type { Injection } from '../apps/injection.js'
import type { Endpoint } from '../catalog/types.js'
import { QueueTimeoutError } from '../limiter/errors.js'
import type { LearnOptions, Limiter, Permit, PermitKey } from '../limiter/types.js'
import { MemoryBudgetError } from '../budget/errors.js'
import type { Reuse } from '../reuse/index.js'
import type { MemoryBudget } from '../budget/budget.js'
import type { VersionDecision } from '../versioning/index.js'
import { admissionRules, admit } from './admission.js'
import { UpstreamAttempt, type AttemptDeps, type UpstreamCall } from './attempt.js'
import { retryDelayMs, sleep } from './backoff.js'
import { contentLengthOf, NO_BODY } from './body.js'
import { holdRequest } from './memory-hold.js'
import { PermitRanOutError, UpstreamBusyError } from './errors.js'
import { CLIENT_ADDRESS_HEADERS, CLIENT_IDENTITY_HEADERS } from './headers.js'
import { readRequestBody, upstreamRequest, type OutgoingRules } from './outgoing.js'
import { AcquireRequest } from './permit.js'
import { answerReused, openTicket } from './reuse-ticket.js'
import type { ProxySettings } from './settings.js'
import type { Trace } from './trace.js'
import type { RequestTracker } from './tracking.js'
import type { ProxyVersioning, Routes, UpstreamRoute } from './routes.js'
import { scopedInstance } from '../upstreams/scope.js'

/** What the proxy is told as requests go (src/app.ts: metrics, /status, rates); the same for every route. */
export interface ProxyObservers {
  /** an upstream 429 arrived; the request goes back into its queue (`instance` as the limiter's key has it: src/upstreams/scope.ts) */
  readonly onUpstream429: (endpoint: Endpoint, instance: string) => void
  /** the head of every upstream answer, a 429 included: what it says about the key's rate (docs/learned-limits.md, "Rates") */
  readonly onAnswerHead: NonNullable<AttemptDeps['onAnswerHead']>
  /** one attempt upstream is done (read to the end, a 429 included, or failed), with the upstream's time */
  readonly onUpstreamAttempt: (endpoint: Endpoint, seconds: number, socketWaitSeconds: number) => void
  /** a permit was granted to `app`; the function returned is called once it is given back (permits held per app) */
  readonly onPermit: (app: string) => () => void
}

/** What every route's handler shares; what differs between upstreams is the route's (routes.ts, UpstreamRoute). */
export interface ProxyContext {
  readonly settings: ProxySettings
  readonly limiter: Limiter
  /** which app is calling; with app identity on, may it, and which Authorization goes upstream */
  readonly apps: AppGate
  /** makes every request's record (one access-log line, one count) */
  readonly tracker: RequestTracker
  /** the upstreams by prefix (docs/upstreams.md), the CRM's first */
  readonly routes: Routes
  /** coalescing of identical reads and the lookup-list cache */
  readonly reuse: Reuse
  /** whether (and how) an endpoint's limit is learned (README "Learned limits"); undefined: fixed */
  readonly learnOf: (endpoint: Endpoint) => LearnOptions | undefined
  /** what requests, bodies and held answers may keep in memory together (docs/deploy.md, "Memory: a budget") */
  readonly budget: MemoryBudget
  /** Retry-After (s) of a 503 for a key from its queue's forecast (src/forecast) */
  readonly retryAfter: (key: PermitKey, limit: number, oneHold?: boolean) => string
  /** shares of what all apps share (the memory budget) are per app: app identity is on; else per organisation (docs/deploy.md, "Memory: a budget") */
  readonly sharesByApp: boolean
  readonly observers: ProxyObservers
}

/**
 * The route handler for every request under the API prefix: the stages of docs/development.md,
 * "A request's way through the code", in order, and the retry loop, which alone decides what follows an attempt.
 */
// eslint-disable-next-line max-lines-per-function -- the request path in order (docs/development.md)
export function createProxyHandler(ctx: ProxyContext, route: UpstreamRoute) {
  const { settings, limiter, apps } = ctx
  const { catalog, versioning } = route
  const rules = admissionRules({ ...settings, basePath: route.prefix }, catalog, versioning)
  const outgoing: OutgoingRules = {
    upstreamBasePath: route.upstream.basePath,
    versionHeader: versioning.headerName,
    // Headers that steer sluice itself, and (unless the client is a trusted proxy) client-sent claims
    // about the client's address: the API never sees them.
    controlHeaders: new Set([
      settings.queue.waitHeader,
      settings.instanceHeader,
      ...apps.controlHeaders,
      ...(!settings.forwardClientAddress ? CLIENT_ADDRESS_HEADERS : settings.trustProxy ? [] : CLIENT_IDENTITY_HEADERS),
    ]),
    appendAddress: settings.forwardClientAddress,
    maxBufferBytes: settings.retry.maxBufferBytes,
    pace: { minBytesPerSecond: settings.client.minBodyBytesPerSecond, windowMs: settings.client.bodyGraceMs },
  }
  const attempts: AttemptDeps = {
    pool: route.upstream.pool,
    versioning,
    answerLimits: {
      bufferBytes: settings.client.answerBufferBytes,
      // The API's answer is never held back longer than its own body timeout for a client that does not read.
      writeTimeoutMs: Math.min(settings.client.writeTimeoutMs, settings.upstreamTimeouts.bodyMs),
      budget: ctx.budget,
    },
    server: serverOf(route.upstream.origin),
    onUpstreamAttempt: ctx.observers.onUpstreamAttempt,
    onPermit: ctx.observers.onPermit,
    throttled: route.throttled,
    onAnswerHead: ctx.observers.onAnswerHead,
  }
  const { maxLength } = settings.queue
  const { baseDelayMs, maxDelayMs } = settings.retry

  // eslint-disable-next-line max-lines-per-function -- the request path in order (docs/development.md)
  return async function proxyHandler(request: FastifyRequest, reply: FastifyReply): Promise<void> {
    const tracked = ctx.tracker.track(request, reply)
    const { trace, client, spans } = tracked
    const arrivedAt = Date.now()
    reply.header('x-request-id', request.id)
    /** the key once admitted: a full memory budget's Retry-After comes from its queue's forecast */
    let admitted: { key: PermitKey; limit: number } | undefined

    try {
      // ── admission: the target, the endpoint, the instance, the request's shape, the deadline — before any permit
      const raw = request.raw
      const admission = admit(
        {
          method: request.method,
          url: raw.url ?? '/',
          headers: request.headers,
          httpVersionMinor: raw.httpVersionMinor,
          instanceError: trace.instanceError,
          arrivedAt,
        },
        rules,
      )
      if (admission.endpoint !== undefined) {
        // One name in the log, the metrics, /status and the spans: an unknown path not shaped like a catalog template
        // is `unknown`.
        trace.endpoint = catalog.nameOf(admission.endpoint.id)
        trace.template = trace.endpoint === UNKNOWN_ENDPOINT ? UNKNOWN_ENDPOINT : admission.endpoint.template
      }
      if (!admission.ok && !admission.afterIdentity) throw admission.error
      // The organisation as the limiter, identity, versions and reuse know it: scoped by the upstream
      // (src/upstreams/scope.ts).
      const instance = scopedInstance(route.name, trace.instance)
      // ── identity (src/apps), then the refusals that wait for it
      const caller = identify(apps, request, trace, admission.endpoint, instance, route.credentials)
      if (!admission.ok) throw admission.error
      // ── versions (src/versioning)
      const decision = decideVersion(versioning, request.headers, admission.endpoint, instance, trace, reply)
      admitted = { key: { instance, endpoint: admission.endpoint.id }, limit: admission.endpoint.limit }
      // ── the upstream request, built once for every attempt: a body up to retry.maxBufferBytes read now
      // ── the memory budget (docs/deploy.md, "Memory: a budget"): the request and a body kept whole, held until its
      // answer closes, within the share of its app (its organisation with app identity off)
      const holder = ctx.sharesByApp ? caller.app : instance
      const hold = holdRequest(
        ctx.budget,
        tracked,
        reply.raw,
        request.body !== undefined,
        contentLengthOf(request.headers['content-length']),
        outgoing.maxBufferBytes,
        holder,
      )
      const body = request.body === undefined ? NO_BODY : await readRequestBody(request, outgoing, hold)
      const options = upstreamRequest(request, admission, caller, decision, body, outgoing)
      const key = { instance, endpoint: admission.endpoint.id }

      // ── reuse: an identical read in progress, or the lookup-list cache, may answer without a permit
      // The key is the request as the upstream gets it (docs/reuse.md): its headers, the app when a principal.
      const { endpoint, path, query, deadline } = admission
      const shared = openTicket(
        ctx.reuse,
        {
          ...key,
          endpointId: endpoint.id,
          method: request.method,
          path,
          query,
          headers: options.headers,
          app: caller.app,
          deadline,
          hasBody: body.kind !== 'none',
        },
        reply.raw,
      )
      const reused = await shared?.reused(() => client.signal)
      if (client.gone) return void reply.hijack()
      if (reused !== undefined) {
        spans?.reused(reused.kind)
        return answerReused(request, reply, trace, shared!, reused, attempts.answerLimits.writeTimeoutMs)
      }

      const call: UpstreamCall = {
        request,
        reply,
        trace,
        client,
        spans,
        endpoint,
        key,
        app: caller.app,
        holder,
        learn: ctx.learnOf(endpoint),
        deadline,
        decision,
        options,
        body,
        shared,
      }
      // ── the retry loop: a permit, one attempt on it, and what its result calls for
      // `requeued`: the request waited before (sent back by the API, a permit held back): it goes back
      // to its old place in the queue; a first attempt takes its place as it arrives.
      let backOffs = 0
      // the app's followers on the key count toward its maxQueued with its waiters (docs/reuse.md)
      const followers = ctx.reuse?.followersOf(key.instance, key.endpoint, call.app)
      for (let requeued = false; ; requeued = true) {
        // Awaited in the handler's own frame: a wrapper's would be one more object per queued request
        // (docs/benchmarks.md, "Where a queued request's heap goes (live bytes)").
        const waitFrom = performance.now()
        spans?.waitBegins(requeued)
        let permit: Permit
        // while it waits, the app's followers on the key count it toward the app's maxQueued (docs/reuse.md)
        const waitEnds = ctx.reuse.waitBegins(key.instance, key.endpoint, call.app)
        try {
          permit = await limiter.acquire(
            key,
            new AcquireRequest(
              endpoint.limit,
              call.learn,
              deadline,
              requeued ? arrivedAt : undefined,
              maxLength,
              call.app,
              client,
              spans,
              endpoint.rate,
              followers,
            ),
          )
        } catch (err) {
          spans?.waitEnds(err)
          throw err
        } finally {
          waitEnds?.()
          trace.queueMs += performance.now() - waitFrom
        }
        spans?.waitEnds()
        const result = await new UpstreamAttempt(attempts, call, permit).run()

        // The answer is the upstream's (passed on, or dropped for a client that has gone): Fastify sends nothing.
        if (result.kind === 'answered') return void reply.hijack()
        if (result.kind === 'failed') throw result.error
        if (result.kind === 'heldBack') {
          // Nothing was sent: it waits again at its place, unless its streamed body is gone with the stopped request.
          if (result.bodySpent) throw new PermitRanOutError(describe(key))
          continue
        }
        // throttled (the route's rule): back into the queue at the old place, after a back-off, within the deadline.
        // Counted by its status: only a 429 counts as one (docs/upstreams.md, "Over the limit").
        if (result.status === 429) {
          trace.upstream429s++
          ctx.observers.onUpstream429(endpoint, key.instance)
        }
        if (client.gone) return void reply.hijack()
        if (body.kind === 'stream') {
          reply.header('retry-after', retryAfterSeconds(result.headers['retry-after']))
          throw new UpstreamBusyError(result.status, endpoint.id)
        }
        const delay = retryDelayMs(result.headers['retry-after'], backOffs++, baseDelayMs, maxDelayMs)
        if (Date.now() + delay >= deadline) {
          // the upstream's own back-off is the best figure of when to come back
          reply.header('retry-after', String(Math.max(1, Math.ceil(delay / 1000))))
          throw new QueueTimeoutError(Date.now() - arrivedAt, describe(key))
        }
        spans?.backsOff(delay)
        await sleep(delay, client.signal).catch(() => undefined)
        if (client.gone) return void reply.hijack()
        trace.retries++
      }
    } catch (err) {
      if (client.gone) return void reply.hijack()
      // a full budget, or too many followers of identical calls (docs/reuse.md): room comes back as requests end
      const roomFull = err instanceof MemoryBudgetError || (err as { code?: unknown }).code === 'SLUICE_QUEUE_FULL'
      if (roomFull && !('headers' in (err as object)) && admitted !== undefined)
        reply.header('retry-after', ctx.retryAfter(admitted.key, admitted.limit, true))
      // The proxy's error handler sets the outcome from the error and answers in the API's shape.
      throw err
    }
  }
}

/** Identity (src/apps): which app is calling, and which Authorization goes upstream; throws its 401/403. */
function identify(
  apps: AppGate,
  request: FastifyRequest,
  trace: Trace,
  endpoint: Endpoint,
  instance: string,
  injection: Injection,
): Caller {
  let caller: Caller
  try {
    caller = apps.resolve(request.headers, instance, endpoint.id, request.method, trace.instance, injection)
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
  return caller
}

/** Versions (src/versioning): pass, rewrite, pin, or refuse (400/410); its notes go to the record and the answer's headers. */
function decideVersion(
  versioning: ProxyVersioning,
  headers: IncomingHttpHeaders,
  endpoint: Endpoint,
  instance: string,
  trace: Trace,
  reply: FastifyReply,
): VersionDecision {
  const requested = headers[versioning.headerName]
  let decision: VersionDecision
  try {
    decision = versioning.decide(requested, endpoint, instance)
  } catch (err) {
    // Logged as sent (cut short: it is the client's text), since it was refused.
    trace.version = firstValue(requested)?.slice(0, 32)
    throw err
  }
  trace.version = decision.requested
  trace.upstreamVersion = decision.upstream
  trace.versionWarnings = decision.warnings
  for (const name in decision.responseHeaders) reply.header(name, decision.responseHeaders[name])
  return decision
}

const firstValue = (v: string | string[] | undefined): string | undefined => (Array.isArray(v) ? v[0] : v)

function retryAfterSeconds(value: string | string[] | undefined): string {
  const text = firstValue(value)
  return text !== undefined && /^\d+$/.test(text.trim()) ? text.trim() : '1'
}

const describe = (key: { instance: string; endpoint: string }): string => `${key.endpoint} (instance ${key.instance})`

/** An upstream origin's host and port, as a client span names its server. */
function serverOf(origin: string): { address: string; port: number } {
  const url = new URL(origin)
  return { address: url.hostname, port: url.port !== '' ? Number(url.port) : url.protocol === 'https:' ? 443 : 80 }
}
