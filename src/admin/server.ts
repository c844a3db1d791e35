import type { ServerOptions } from 'node:http'
import Fastify, { LogController, type FastifyInstance } from 'fastify'
import type { Limiter } from '../limiter/types.js'
import type { SluiceMetrics } from '../metrics/index.js'
import { replyWithError } from '../errors/reply.js'
import { clientErrorHandler, connectHandler, expectationHandler } from '../front/client-errors.js'
import { MethodNotAllowedError, NoSuchPathError } from '../front/errors.js'
import { renderStatusPage, statusPageHeaders } from './status-page.js'
import { maskSecretText } from '../log/secret-text.js'
import { ADMIN_CHALLENGES, AdminUnauthorizedError, tokenChecker } from './token.js'
import { namedKeys, namedLearned, withUpstream } from './status-names.js'
import { AdminHostRefusedError, hostChecker, shownHost } from './host.js'

export interface AdminDeps {
  readonly limiter: Limiter
  readonly metrics: SluiceMetrics
  /** true from SIGTERM on: /readyz answers 503 so the load balancer stops sending */
  readonly isClosing: () => boolean
  readonly startedAt: number
  /** extra sections of /status (versions, …) */
  readonly statusExtras?: () => Record<string, unknown>
  readonly logger: FastifyInstance['log']
  /** Node's HTTP server options (header size, timeouts), as on the proxy port */
  readonly http?: ServerOptions & { maxHeaderSize: number }
  /** `adminToken`: required on every path but the probes (unless `protectHealth`); unset → open */
  readonly token?: string | undefined
  /** `adminTokenHealth`: the probes need the token too */
  readonly protectHealth?: boolean
  /** without `token`: the names (Host) the pages answer under besides IP addresses and localhost (`adminHostNames`, `adminHost`; host.ts) */
  readonly hostNames?: readonly string[]
  /** the name of an endpoint id, as the access log and the metrics give it (src/catalog/names.ts); ids as they are when absent */
  readonly endpointName?: (endpointId: string) => string
  /** where a key's limit comes from: published, configured or learned (src/upstreams/status.ts); not shown when absent */
  readonly limitFrom?: (upstream: string | undefined, endpoint: string, learnedValue: number | undefined) => string
  /** the health port (`healthPort`): `/healthz` and `/readyz` only, every other path 404 */
  readonly probesOnly?: boolean
}

const ADMIN_PATHS = ['/healthz', '/readyz', '/status', '/status.html', '/', '/metrics']
const PROBES = new Set(['/healthz', '/readyz'])

/** The admin server: health, readiness, Prometheus metrics and the live state of every permit (`/status` and its page). */
// eslint-disable-next-line max-lines-per-function -- the admin routes in one place, each a few lines
export function buildAdminServer(deps: AdminDeps): FastifyInstance {
  const admin = Fastify({
    loggerInstance: deps.logger.child({ server: 'admin' }),
    logController: new LogController({ disableRequestLogging: true }),
    http: deps.http ?? null,
    // Every answer of the admin port, Fastify's and Node's refusals included, has the API's error shape.
    frameworkErrors: replyWithError,
    clientErrorHandler: clientErrorHandler({ maxHeaderBytes: deps.http?.maxHeaderSize ?? 16_384 }),
  })
  admin.setErrorHandler(replyWithError)
  const front = { maxHeaderBytes: deps.http?.maxHeaderSize ?? 16_384, methods: ['GET', 'HEAD'] }
  admin.server.on('checkExpectation', expectationHandler(front))
  admin.server.on('connect', connectHandler(front))
  admin.setNotFoundHandler((request, reply) => {
    const path = (request.raw.url ?? '/').split('?')[0]!
    if (ADMIN_PATHS.includes(path)) {
      reply.header('allow', 'GET, HEAD')
      return replyWithError(new MethodNotAllowedError(request.method, 'GET, HEAD'), request, reply)
    }
    replyWithError(new NoSuchPathError(path.slice(0, 64), ADMIN_PATHS.join(', ')), request, reply)
  })
  if (deps.probesOnly === true) {
    admin.addHook('onRequest', (request, _reply, done) => {
      const path = request.url.split('?', 1)[0]!
      done(PROBES.has(path) ? undefined : new NoSuchPathError(path.slice(0, 64), [...PROBES].join(', ')))
    })
  }
  if (deps.token === undefined) {
    // No token: only under an IP address, localhost or a listed name (DNS rebinding; README "Admin port").
    const hostAllowed = hostChecker(deps.hostNames ?? [])
    admin.addHook('onRequest', (request, _reply, done) => {
      const host = request.headers.host
      if (host === undefined || PROBES.has(request.url.split('?', 1)[0]!) || hostAllowed(host)) return done()
      done(new AdminHostRefusedError(shownHost(host)))
    })
  } else {
    const carriesToken = tokenChecker(deps.token)
    const protectHealth = deps.protectHealth === true
    admin.addHook('onRequest', (request, reply, done) => {
      const path = request.url.split('?', 1)[0]!
      if ((!protectHealth && PROBES.has(path)) || carriesToken(request.headers.authorization)) return done()
      void reply.header('www-authenticate', ADMIN_CHALLENGES)
      done(new AdminUnauthorizedError())
    })
  }
  admin.get('/healthz', () => ({ status: 'ok' }))
  admin.get('/readyz', async (_request, reply) => {
    const mode = deps.limiter.mode()
    const ready = !deps.isClosing() && deps.limiter.ready()
    return reply.code(ready ? 200 : 503).send({ ready, mode, closing: deps.isClosing() })
  })
  admin.get('/metrics', async (_request, reply) => {
    const { contentType, body } = await deps.metrics.scrape()
    return reply.type(contentType).send(body)
  })
  const page = renderStatusPage()
  for (const path of ['/', '/status.html'])
    admin.get(path, (_request, reply) => reply.headers(statusPageHeaders()).send(page))
  const nameOf = deps.endpointName
  const limitFrom = deps.limitFrom
  admin.get('/status', async () => {
    const status = await deps.limiter.status()
    return {
      mode: status.mode,
      backend: status.backend,
      uptimeSeconds: Math.round((Date.now() - deps.startedAt) / 1000),
      closing: deps.isClosing(),
      // named as in the access log and /metrics: an organisation's `unknown` keys are one row
      keys: (nameOf === undefined ? status.keys : namedKeys(status.keys, nameOf)).map((key) => {
        const row = withUpstream(key)
        const upstream = 'upstream' in row ? row.upstream : undefined
        return limitFrom === undefined
          ? row
          : { ...row, limitSource: limitFrom(upstream, row.endpoint, row.learned?.value) }
      }),
      // learned limits (README "Learned limits"): in process every key's, busy or not; with Redis only the busy keys'
      learned: (nameOf === undefined ? (status.learned ?? []) : namedLearned(status.learned ?? [], nameOf)).map(
        withUpstream,
      ),
      // keys with a rate used lately or learned, and their next free start (docs/redis-limiter.md, "Rates"); absent
      // when none
      ...(status.rates === undefined
        ? {}
        : {
            rates: (nameOf === undefined
              ? status.rates
              : status.rates.map((r) => ({ ...r, endpoint: nameOf(r.endpoint) }))
            ).map(withUpstream),
          }),
      ...deps.statusExtras?.(),
      // a Redis error's text may hold a connection string: masked like the logs
      details: JSON.parse(maskSecretText(JSON.stringify(status.details ?? {}))) as Record<string, unknown>,
    }
  })
  return admin
}
