import Fastify, { LogController, type FastifyInstance } from 'fastify'
import type { Limiter } from '../limiter/types.js'
import { replyWithError } from '../proxy/reply.js'

export interface AdminDeps {
  readonly limiter: Limiter
  /** true from SIGTERM on: /readyz answers 503 so the load balancer stops sending */
  readonly isClosing: () => boolean
  readonly startedAt: number
  /** extra sections of /status (versions, …) */
  readonly statusExtras?: () => Record<string, unknown>
  readonly logger: FastifyInstance['log']
}

/** The admin server: health, readiness and the live state of every permit (`/status`). */
export function buildAdminServer(deps: AdminDeps): FastifyInstance {
  const admin = Fastify({ loggerInstance: deps.logger.child({ server: 'admin' }), logController: new LogController({ disableRequestLogging: true }) })
  admin.setErrorHandler(replyWithError)
  admin.get('/healthz', () => ({ status: 'ok' }))
  admin.get('/readyz', async (_request, reply) => {
    const mode = deps.limiter.mode()
    const ready = !deps.isClosing() && deps.limiter.ready()
    return reply.code(ready ? 200 : 503).send({ ready, mode, closing: deps.isClosing() })
  })
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
