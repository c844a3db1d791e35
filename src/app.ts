import Fastify, { LogController, type FastifyInstance } from 'fastify'
import { randomUUID } from 'node:crypto'
import { join } from 'node:path'
import { buildAdminServer } from './admin/server.js'
import { loadCatalog } from './catalog/index.js'
import type { Settings } from './config/schema.js'
import { createLimiter } from './limiter/index.js'
import type { Limiter } from './limiter/types.js'
import { ShuttingDownError } from './proxy/errors.js'
import proxyPlugin from './proxy/plugin.js'
import { replyWithError } from './proxy/reply.js'
import type { RequestRecord } from './proxy/record.js'
import { createUpstream } from './proxy/upstream.js'

export const CONFIG_DIR = join(import.meta.dirname, '..', 'config')

export interface AppDeps {
  /** today's date for version decisions (tests fix it) */
  readonly now?: () => Date
  /** where pino writes (tests capture it); default stdout */
  readonly logStream?: NodeJS.WritableStream
}

export interface App {
  readonly proxy: FastifyInstance
  readonly admin: FastifyInstance
  readonly limiter: Limiter
  readonly settings: Settings
  /** starts both servers; resolves with their addresses */
  listen(): Promise<{ proxyUrl: string; adminUrl: string }>
  /** graceful: stop accepting, answer the queued with 503, let in-flight finish (bounded), release all */
  close(): Promise<void>
}

const VALID_REQUEST_ID = /^[\w.:@/+=-]{1,128}$/

const REDACT = {
  paths: ['req.headers.authorization', 'req.headers.cookie', 'headers.authorization', '*.headers.authorization'],
  censor: '[redacted]',
}

export async function buildApp(settings: Settings, deps: AppDeps = {}): Promise<App> {
  const loggerOptions = {
    level: settings.logLevel,
    redact: REDACT,
    ...(deps.logStream ? { stream: deps.logStream } : {}),
  }
  let closing = false
  const proxy = Fastify({
    logger: loggerOptions,
    // One access-log line per request is written by the proxy itself, from its RequestRecord.
    logController: new LogController({ disableRequestLogging: true }),
    // Keep an app's own request id when it is sane, so its logs and ours line up.
    genReqId: (req) => {
      const given = req.headers['x-request-id']
      return typeof given === 'string' && VALID_REQUEST_ID.test(given) ? given : randomUUID()
    },
    requestIdHeader: false,
    routerOptions: { maxParamLength: 8192 },
    return503OnClosing: false,
    forceCloseConnections: 'idle',
    frameworkErrors: (err, request, reply) => replyWithError(err, request, reply),
    // Requests Node's HTTP parser refuses (a raw control character in the path, a malformed header)
    // still get the error shape.
    clientErrorHandler: (err, socket) => {
      const code = (err as { code?: string }).code
      if (code === 'ECONNRESET' || code === 'EPIPE' || !socket.writable) return socket.destroy(err)
      const body = JSON.stringify([{ code: 'SLUICE_BAD_REQUEST', message: `The request could not be parsed as HTTP (${code ?? 'parse error'})` }])
      socket.end(`HTTP/1.1 400 Bad Request\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`)
    },
  })
  const log = proxy.log

  const catalog = loadCatalog(join(CONFIG_DIR, 'endpoints.yaml'), {
    defaultLimit: settings.limits.default,
    overrides: settings.limits.overrides,
  })
  const limiter = await createLimiter(settings, { log })
  const upstream = createUpstream(settings)

  proxy.addHook('onRequest', (_request, _reply, done) => {
    done(closing ? new ShuttingDownError() : undefined)
  })
  await proxy.register(proxyPlugin, {
    settings,
    catalog,
    limiter,
    upstream,
    onFinished: (record: RequestRecord, request) => {
      if (settings.requestLog) request.log.info(accessLogFields(record), 'request')
    },
  })

  const admin = buildAdminServer({ limiter, isClosing: () => closing, startedAt: Date.now(), logger: log })

  let closed: Promise<void> | undefined
  return {
    proxy,
    admin,
    limiter,
    settings,
    async listen() {
      const proxyUrl = await proxy.listen({ port: settings.port, host: settings.host })
      const adminUrl = await admin.listen({ port: settings.adminPort, host: settings.adminHost })
      return { proxyUrl, adminUrl }
    },
    close() {
      closed ??= (async () => {
        closing = true
        limiter.drain()
        // In-flight requests finish (bounded by the grace time); then sockets are forced shut.
        const grace = setTimeout(() => proxy.server.closeAllConnections(), settings.shutdown.graceMs)
        grace.unref()
        await proxy.close()
        clearTimeout(grace)
        await upstream.pool.close().catch(() => undefined)
        await admin.close()
        await limiter.close()
      })()
      return closed
    },
  }
}

function accessLogFields(r: RequestRecord): Record<string, unknown> {
  return {
    reqId: r.requestId,
    instance: r.instance,
    app: r.app,
    method: r.method,
    endpoint: r.endpoint,
    status: r.status,
    outcome: r.outcome,
    version: r.version,
    upstreamVersion: r.upstreamVersion,
    totalMs: Math.round(r.totalSeconds * 1e4) / 10,
    queueMs: Math.round(r.queueSeconds * 1e4) / 10,
    upstreamMs: Math.round(r.upstreamSeconds * 1e4) / 10,
    retries: r.retries,
  }
}
