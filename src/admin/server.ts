import Fastify, { LogController, type FastifyInstance } from 'fastify'
import type { Limiter } from '../limiter/types.js'
import type { SluiceMetrics } from '../metrics/index.js'
import { replyWithError } from '../errors/reply.js'
import { renderStatusPage, statusPageHeaders } from './status-page.js'

export interface AdminDeps {
  readonly limiter: Limiter
  readonly metrics: SluiceMetrics
  /** true from SIGTERM on: /readyz answers 503 so the load balancer stops sending */
  readonly isClosing: () => boolean
  readonly startedAt: number
  /** extra sections of /status (versions, …) */
  readonly statusExtras?: () => Record<string, unknown>
  readonly logger: FastifyInstance['log']
}

/** The admin server: health, readiness, Prometheus metrics and the live state of every permit (`/status` and its page). */
export function buildAdminServer(deps: AdminDeps): FastifyInstance {
  const admin = Fastify({ loggerInstance: deps.logger.child({ server: 'admin' }), logController: new LogController({ disableRequestLogging: true }) })
  admin.setErrorHandler(replyWithError)
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
  for (const path of ['/', '/status.html']) admin.get(path, (_request, reply) => reply.headers(statusPageHeaders()).send(page))
  admin.get('/status', async () => {
    const status = await deps.limiter.status()
    return {
      mode: status.mode,
      backend: status.backend,
      uptimeSeconds: Math.round((Date.now() - deps.startedAt) / 1000),
      closing: deps.isClosing(),
      keys: status.keys,
      ...deps.statusExtras?.(),
      details: status.details ?? {},
    }
  })
  return admin
}
