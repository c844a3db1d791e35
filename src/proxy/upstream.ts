import { Pool } from 'undici'
import type { ProxySettings } from './settings.js'
import { UpstreamTimeoutError, UpstreamUnreachableError } from './errors.js'

export interface Upstream {
  readonly pool: Pool
  /** the upstream's path prefix, e.g. `/v2` of https://api.neoncrm.com/v2 */
  readonly basePath: string
  readonly origin: string
}

/** One keep-alive pool to the API root; its timeouts are the upstream timeouts of the settings. */
export function createUpstream(settings: ProxySettings, root: string = settings.upstream): Upstream {
  const url = new URL(root)
  const pool = new Pool(url.origin, {
    connections: settings.upstreamConnections,
    connect: { timeout: settings.upstreamTimeouts.connectMs },
    headersTimeout: settings.upstreamTimeouts.headersMs,
    bodyTimeout: settings.upstreamTimeouts.bodyMs,
    keepAliveTimeout: 4_000,
  })
  return { pool, origin: url.origin, basePath: url.pathname.replace(/\/+$/, '') }
}

const TIMEOUT_CODES = new Set(['UND_ERR_CONNECT_TIMEOUT', 'UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT', 'ETIMEDOUT'])

/** The one place an upstream failure becomes an answer: timeouts 504, everything else 502. */
export function upstreamFailure(err: unknown): Error & { statusCode?: number } {
  const code = (err as { code?: unknown }).code
  const detail = typeof code === 'string' ? code : err instanceof Error ? err.message : 'unknown error'
  return typeof code === 'string' && TIMEOUT_CODES.has(code)
    ? new UpstreamTimeoutError(detail, { cause: err })
    : new UpstreamUnreachableError(detail, { cause: err })
}
