import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance } from 'fastify'
import { randomUUID } from 'node:crypto'
import type { IncomingHttpHeaders } from 'node:http'
import { basename, join } from 'node:path'
import pino from 'pino'
import { buildAdminServer } from './admin/server.js'
import { createAppGate, type AppGate } from './apps/gate.js'
import { UNKNOWN_ENDPOINT } from './catalog/index.js'
import { originOf } from './config/load.js'
import type { Settings } from './config/schema.js'
import { httpServerOptions } from './server-options.js'
import { createLimiter, learnOptionsCache } from './limiter/index.js'
import { REDIS_OPERATIONS } from './limiter/redis/operations.js'
import type { Limiter } from './limiter/types.js'
import { accessLogLine, LOG_SERIALIZERS, REDACT_CENSOR, REDACT_PATHS } from './log/access-log.js'
import { createMetrics } from './metrics/index.js'
import { stdoutLogLines, type LogLines } from './log/log-lines.js'
import { lazyChildLoggerFactory } from './log/request-logger.js'
import { clientErrorHandler, connectHandler, expectationHandler } from './front/client-errors.js'
import { maskSecretText } from './log/secret-text.js'
import { ListenError } from './start-failure.js'
import { ShuttingDownError } from './proxy/errors.js'
import proxyPlugin, { PROXY_METHODS } from './proxy/plugin.js'
import { replyWithError } from './errors/reply.js'
import type { RequestRecord } from './record/record.js'
import { RequestTracker } from './proxy/tracking.js'
import { outcomeOf } from './errors/refusal.js'
import { createUpstream, type Upstream } from './proxy/upstream.js'
import { clientRequestId } from './proxy/headers.js'
import { createVersioning } from './versioning/index.js'
import { forecastingLimiter } from './forecast/index.js'
import { endpointLabeler } from './metrics/labels.js'
import { Reuse } from './reuse/index.js'
import { MemoryAfterBurst } from './proxy/memory-after-burst.js'
import { OpenRequests } from './proxy/open-requests.js'
import { budgetStatus, MemoryBudget } from './budget/budget.js'
import { FairShare, queueShareOf } from './limiter/fairness/policy.js'
import { memoryBudgetBytes } from './budget/limit.js'
import { budgetMetrics } from './budget/metrics.js'
import { forwardProxyField } from './startup-line.js'
import { startTracing } from './tracing/index.js'
import { readBuildInfo } from './metrics/build-info.js'
import { namedCounts, withUpstream } from './admin/status-names.js'
import { resolveUpstreams } from './upstreams/index.js'
import { UpstreamsStatus } from './upstreams/status.js'
import { instanceReader } from './proxy/instance.js'
import { NO_VERSION_POLICY, Routes, type RouteBase, type UpstreamRoute } from './proxy/routes.js'

export const CONFIG_DIR = join(import.meta.dirname, '..', 'config')

export interface AppDeps {
  /** today's date for version decisions (tests fix it) */
  readonly now?: () => Date
  /** where pino writes (tests capture it); default stdout */
  readonly logStream?: NodeJS.WritableStream
  /** where HTTPS_PROXY, HTTP_PROXY and NO_PROXY are read; default process.env */
  readonly env?: NodeJS.ProcessEnv
  /**
   * The OTEL_* variables that configure traces (docs/observability.md, "Traces"); main.ts passes the
   * process's environment. None: tracing off.
   */
  readonly otelEnv?: Readonly<Record<string, string | undefined>>
}

export interface App {
  readonly proxy: FastifyInstance
  readonly admin: FastifyInstance
  /** `/healthz` and `/readyz` alone on `healthPort`, when set */
  readonly health: FastifyInstance | undefined
  readonly limiter: Limiter
  readonly settings: Settings
  /** app identity and keys; `reload()` re-reads the token file and the keys (SIGHUP) */
  readonly apps: AppGate
  /** where requests go: the pool, and the forward proxy on the way if any */
  readonly upstream: Upstream
  /** what requests, bodies, held answers and the cache may keep in memory together (docs/deploy.md, "Memory: a budget") */
  readonly budget: MemoryBudget
  /** starts both servers; resolves with their addresses */
  listen(): Promise<{ proxyUrl: string; adminUrl: string; healthUrl?: string }>
  /**
   * graceful (docs/deploy.md, "Graceful shutdown"): stop accepting, keep serving the queued and in-flight
   * for up to `shutdown.drainMs`, then answer the still queued 503 and give the in-flight `shutdown.graceMs`
   */
  close(): Promise<void>
}

/**
 * A UUID as one flat string. randomUUID() joins 20 pieces, which V8 keeps as a tree of 15 strings
 * (about 420 bytes) for as long as the request lives; toLowerCase (a no-op on its text) copies it
 * flat: 66 bytes per queued request instead of about 490 (docs/benchmarks.md, "Memory").
 */
const newRequestId = (): string => randomUUID().toLowerCase()

/** The calendar as /status names it: `built-in` or the file's base name. */
const calendarName = (source: string, configured: string | undefined): string =>
  configured === undefined ? 'built-in' : basename(source)

// eslint-disable-next-line max-lines-per-function -- the composition root: wiring every area in order, read top to bottom
export async function buildApp(settings: Settings, deps: AppDeps = {}): Promise<App> {
  // Tests hand in a stream and read every line at once; a real process writes stdout once per turn.
  const stream = deps.logStream
  const lines: LogLines = stream ? { write: (line) => stream.write(line), flush: () => undefined } : stdoutLogLines()
  const logger: FastifyBaseLogger = pino(
    {
      level: settings.logLevel,
      // Explicit paths for headers and secret-named fields; errors are scrubbed at any depth by the serializer.
      redact: { paths: REDACT_PATHS, censor: REDACT_CENSOR },
      serializers: LOG_SERIALIZERS,
    },
    // The last line of defence: a credential inside free text (a URL's password in a library's
    // message) is masked in every line pino writes. Access lines are sluice's own and go around.
    { write: (line: string) => lines.write(maskSecretText(line)) },
  )
  // First: a variable that cannot be used stops the start before anything listens or connects.
  const tracing = await startTracing(deps.otelEnv ?? {}, {
    upstream: settings.upstream,
    version: () => readBuildInfo().version,
    log: logger,
  })
  let closing = false
  const writeAccessLog = settings.requestLog && ['trace', 'debug', 'info'].includes(settings.logLevel)
  // Metrics read the limiter at scrape time; it is built after them, with their observer.
  let limiter: Limiter | undefined = undefined
  // The CRM's own upstream first, then `upstreams` (docs/upstreams.md); catalog files are read now.
  const plans = resolveUpstreams(settings, (key) => originOf(settings, key))
  const upstreamsStatus = new UpstreamsStatus(plans)
  // Every upstream's endpoints are named in logs, metrics and /status; an id no catalog knows is `unknown`.
  const catalogs = [...new Set(plans.map((p) => p.catalog))]
  const endpoints = catalogs.flatMap((c) => c.endpoints)
  const nameOf =
    catalogs.length === 1
      ? catalogs[0]!.nameOf
      : (id: string): string =>
          catalogs.map((c) => c.nameOf(id)).find((n) => n !== UNKNOWN_ENDPOINT) ?? UNKNOWN_ENDPOINT
  const metrics = createMetrics(settings.metrics, {
    limiter: () => limiter,
    catalog: { endpoints },
    redisOperations: settings.redis.url !== undefined ? REDIS_OPERATIONS : [],
    upstreamLabel: plans.length > 1,
    learnedFloor: settings.learning.floor,
  })
  // One budget for what clients can make sluice hold, set or derived from the container's limit or the heap bound.
  const budget = new MemoryBudget(memoryBudgetBytes(settings.memory.budgetBytes), settings.memory.maxShare)
  budgetMetrics(budget, metrics.registry)
  // Which upstream a request's prefix routes to, and how its instance is read: the tracker reads it on arrival.
  const prefixes = new Routes(
    plans.map((p) => ({
      name: p.name,
      prefix: p.prefix,
      readInstance: instanceReader(p.instance, settings.instanceHeader),
    })) as [RouteBase, ...RouteBase[]],
  )
  // The requests a shutdown keeps serving until they are done.
  const open = new OpenRequests()
  // Every answer of the proxy port, whichever part of it answered, is one record: one count, one log line.
  const tracker = new RequestTracker(
    (record: RequestRecord) => {
      metrics.requestFinished(record)
      // Built only when written: the hot path makes no log line that the level would drop.
      if (writeAccessLog) lines.write(accessLogLine(record))
    },
    settings.instanceHeader,
    settings.apps.enabled,
    tracing,
    open,
    prefixes,
  )
  // Built before the proxy: the request id is chosen at arrival, and a client's own only when the request
  // authenticates.
  const apps = createAppGate(settings.apps, settings.credentials, settings.appHeader, {
    log: logger,
    upstreams: plans.slice(1).map((p) => p.name),
    injects: plans.some((p) => p.credentials.inject),
  })
  const authenticates = (headers: IncomingHttpHeaders): boolean => apps.authenticates(headers)
  const front = { maxHeaderBytes: settings.client.maxHeaderBytes, tracker, methods: PROXY_METHODS }
  const proxy = Fastify({
    loggerInstance: logger,
    // One access-log line per request is written by the proxy itself, from its RequestRecord.
    logController: new LogController({ disableRequestLogging: true }),
    childLoggerFactory: lazyChildLoggerFactory,
    // Keep an app's own request id when it is safe to record, so its logs and ours line up (clientRequestId).
    genReqId: (req) => clientRequestId(req.headers, settings.apps.tokenHeader, authenticates) ?? newRequestId(),
    requestIdHeader: false,
    routerOptions: { maxParamLength: 8192 },
    return503OnClosing: false,
    forceCloseConnections: 'idle',
    // Timeouts for every phase of a client's request (README "Slow and hostile clients").
    keepAliveTimeout: settings.client.keepAliveTimeoutMs,
    requestTimeout: settings.client.requestTimeoutMs,
    http: httpServerOptions(settings),
    // A URL Fastify cannot decode never reaches a route: counted and answered here.
    frameworkErrors: (err, request, reply) => {
      tracker.track(request, reply).trace.outcome ??= outcomeOf(err, err.statusCode ?? 400)
      replyWithError(err, request, reply)
    },
    // Requests Node's HTTP parser refuses still get the error shape, a fitting status and a record.
    clientErrorHandler: clientErrorHandler(front),
  })
  proxy.server.on('connect', connectHandler(front))
  proxy.server.on('checkExpectation', expectationHandler(front))
  const log = proxy.log

  const versioning = createVersioning(settings.versions, {
    now: deps.now,
    log,
    registry: metrics.registry,
    orgs: metrics.orgs,
  })
  // Permits not spent: identical reads share a call, lookup lists may be cached, hopeless waits are refused at once
  // (checked before the limiter connects).
  const endpointIds = endpoints.map((e) => e.id)
  // the same shares as the limiter's (src/limiter/index.ts): followers count toward them
  const fairShare = new FairShare(settings.fairness, queueShareOf(settings.queue, settings.apps.enabled))
  const reuse = new Reuse(settings.coalesce, settings.cache, {
    registry: metrics.registry,
    endpointIds,
    endpointLabel: endpointLabeler(endpointIds),
    // followers of identical calls wait like a queue, and are bounded like one
    maxFollowers: settings.queue.maxLength,
    appsArePrincipals: settings.apps.enabled,
    budget,
    // an app's followers count toward its maxQueued (docs/reuse.md, "How many may follow")
    maxQueuedOf: (app) => fairShare.of(app).maxQueued,
    queuedByShare: (app) => fairShare.of(app).queuedByShare === true,
    warn: (fields, message) => log.warn(fields, message),
  })
  const rated = await createLimiter(settings, { log, observer: metrics.observer })
  limiter = rated
  // Every route alike, the CRM's first (built from its profile: src/upstreams/index.ts).
  const routes = new Routes<UpstreamRoute>(
    plans.map((p, i) => ({
      ...prefixes.all[i]!,
      catalog: p.catalog,
      upstream: createUpstream(settings, deps.env, p.url),
      versioning: p.versions ? versioning : NO_VERSION_POLICY,
      throttled: p.throttled,
      credentials: p.credentials,
    })) as [UpstreamRoute, ...UpstreamRoute[]],
  )
  const upstream = routes.default.upstream

  proxy.addHook('onRequest', (_request, _reply, done) => {
    done(closing ? new ShuttingDownError() : undefined)
  })
  const forecasting = forecastingLimiter(limiter, settings.failFast, metrics.registry)
  await proxy.register(proxyPlugin, {
    settings,
    routes,
    limiter: forecasting,
    retryAfter: (key, limit, oneHold) => forecasting.retryAfter(key, limit, oneHold),
    tracker,
    reuse,
    apps,
    learnOf: learnOptionsCache(settings.learning),
    budget,
    sharesByApp: settings.apps.enabled,
    observers: {
      onUpstream429: (endpoint, instance) => {
        metrics.upstream429(endpoint.id, instance)
        upstreamsStatus.upstream429(instance)
      },
      onUpstreamAttempt: (endpoint, seconds, socketWait) => metrics.upstreamAttempt(endpoint.id, seconds, socketWait),
      onAnswerHead: (key, status, headers, throttled, counted) =>
        rated.observeAnswer(key, status, headers, throttled, counted),
      onPermit: (app) => metrics.permitHeld(app),
    },
  })

  const memory = new MemoryAfterBurst(proxy.server, settings.memory, metrics.registry, log)

  const adminDeps = {
    limiter,
    metrics,
    isClosing: () => closing,
    startedAt: Date.now(),
    logger: log,
    http: httpServerOptions(settings),
    statusExtras: () => {
      const { versions, calendar, ...versioningState } = versioning.snapshot()
      const reused = reuse.status()
      // Endpoints named as everywhere else (src/catalog/names.ts); the calendar by name, never its path on disk (README
      // "Admin port").
      return {
        versions: versions.map((v) =>
          v.learned === undefined
            ? v
            : { ...v, learned: { ...v.learned, endpoints: [...new Set(v.learned.endpoints.map(nameOf))] } },
        ),
        versioning: { ...versioningState, calendar: calendarName(calendar, settings.versions.calendarFile) },
        reuse: {
          ...reused,
          permitsSaved: namedCounts(reused.permitsSaved, nameOf, ['coalesced', 'cacheHits']).map(withUpstream),
        },
        // each app's use of the memory budget (each organisation's with app identity off): docs/deploy.md, "Memory: a
        // budget"
        memory: budgetStatus(budget, settings.apps.enabled ? 'app' : 'org'),
        // host:port and the variable, never the proxy's credentials (docs/configuration.md, "A forward proxy")
        ...forwardProxyField(upstream.egress),
        // each upstream's route, credentials and 429s (docs/observability.md, "Status page")
        upstreams: upstreamsStatus.snapshot(),
      }
    },
    endpointName: nameOf,
    limitFrom: (upstream: string | undefined, endpoint: string, learnedValue: number | undefined) =>
      upstreamsStatus.limitFrom(upstream, endpoint, learnedValue),
    token: settings.adminToken,
    protectHealth: settings.adminTokenHealth,
    hostNames: [...settings.adminHostNames, settings.adminHost],
  }
  const admin = buildAdminServer(adminDeps)
  // The same probes, answered alike, on a port of their own (docs/configuration.md, `healthPort`).
  const health =
    settings.healthPort === undefined
      ? undefined
      : buildAdminServer({ ...adminDeps, probesOnly: true, hostNames: [...adminDeps.hostNames, settings.healthHost] })

  let closed: Promise<void> | undefined
  return {
    proxy,
    admin,
    health,
    limiter,
    settings,
    apps,
    upstream,
    budget,
    async listen() {
      const proxyUrl = await proxy.listen({ port: settings.port, host: settings.host }).catch((err: unknown) => {
        throw new ListenError('proxy', settings.host, settings.port, err)
      })
      const adminUrl = await admin
        .listen({ port: settings.adminPort, host: settings.adminHost })
        .catch((err: unknown) => {
          throw new ListenError('admin', settings.adminHost, settings.adminPort, err)
        })
      if (health === undefined || settings.healthPort === undefined) return { proxyUrl, adminUrl }
      const healthPort = settings.healthPort
      const healthUrl = await health.listen({ port: healthPort, host: settings.healthHost }).catch((err: unknown) => {
        throw new ListenError('health', settings.healthHost, healthPort, err)
      })
      return { proxyUrl, adminUrl, healthUrl }
    },
    close() {
      closed ??= (async () => {
        closing = true
        memory.stop()
        open.closing()
        // No new connection; the listener's close resolves once every connection has ended.
        const serverClosed = proxy.close()
        // The queue keeps its place (with Redis, in the shared queue) and is served for up to drainMs:
        // a drain is a normal event (rollouts, node drains), not a reason to shed the queue.
        const drained = await open.done(settings.shutdown.drainMs)
        if (!drained && settings.shutdown.drainMs > 0)
          log.warn(
            { open: open.size, drainMs: settings.shutdown.drainMs },
            'shutdown: requests still open at shutdown.drainMs; the queued are answered 503',
          )
        limiter.drain()
        // Keep-alive connections whose last answer began before SIGTERM are idle now.
        proxy.server.closeIdleConnections()
        // In-flight requests finish, bounded by the grace time; then client sockets are forced shut
        // and upstream requests still running (their clients gone) are torn down.
        const deadline = Date.now() + settings.shutdown.graceMs
        const grace = setTimeout(() => proxy.server.closeAllConnections(), settings.shutdown.graceMs)
        grace.unref()
        await serverClosed
        clearTimeout(grace)
        const pools = routes.all.map((r) => r.upstream.pool)
        const upstreamDone = Promise.all(pools.map((pool) => pool.close().catch(() => undefined)))
        const remaining = setTimeout(
          () => pools.forEach((pool) => void pool.destroy().catch(() => undefined)),
          Math.max(0, deadline - Date.now()),
        )
        remaining.unref()
        await upstreamDone
        clearTimeout(remaining)
        await admin.close()
        await health?.close()
        await limiter.close()
        apps.close()
        // the last spans (every request has ended by now) go to the collector, within the exporter's timeout
        await tracing?.shutdown().catch(() => undefined)
        log.info({ uptimeSeconds: Math.round((Date.now() - adminDeps.startedAt) / 1000) }, 'sluice stopped')
        lines.flush()
      })()
      return closed
    },
  }
}
