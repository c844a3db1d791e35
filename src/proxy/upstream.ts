import { Pool, ProxyAgent, type Dispatcher } from 'undici'
import type { ProxySettings } from './settings.js'
import { UpstreamTimeoutError, UpstreamUnreachableError } from './errors.js'
import { egressFor, proxyClientFactory, type Egress } from './forward-proxy.js'

export interface Upstream {
  /** a keep-alive pool to the API root, or undici's ProxyAgent when a forward proxy is on the way */
  readonly pool: Dispatcher
  /** the upstream's path prefix, e.g. `/v2` of https://api.neoncrm.com/v2 */
  readonly basePath: string
  readonly origin: string
  /** the forward proxy requests go through (HTTPS_PROXY, HTTP_PROXY, less NO_PROXY), or none and why */
  readonly egress: Egress
}

/**
 * One keep-alive pool to an API root (the CRM's, `settings.upstream`, unless another upstream's `root`); its timeouts
 * are the upstream timeouts of the settings.
 * With a forward proxy in `env` for the upstream, the same pool behind undici's ProxyAgent (a
 * CONNECT tunnel per connection; docs/configuration.md, "A forward proxy"). Redis never goes
 * through it: ioredis reads no proxy variable.
 */
export function createUpstream(
  settings: ProxySettings,
  env: NodeJS.ProcessEnv = process.env,
  root: string = settings.upstream,
): Upstream {
  const url = new URL(root)
  const basePath = url.pathname.replace(/\/+$/, '')
  const { connectMs, headersMs, bodyMs } = settings.upstreamTimeouts
  const poolOptions = {
    // 0: no cap (undici's null): the permits bound the sockets, so none waits in the pool (docs/deploy.md, "Sizing")
    connections: settings.upstreamConnections === 0 ? null : settings.upstreamConnections,
    headersTimeout: headersMs,
    bodyTimeout: bodyMs,
    keepAliveTimeout: 4_000,
  }
  const egress = egressFor(url, env)
  const forwardProxy = egress.via
  if (forwardProxy === undefined) {
    return {
      pool: new Pool(url.origin, { ...poolOptions, connect: { timeout: connectMs } }),
      origin: url.origin,
      basePath,
      egress,
    }
  }
  const agent = new ProxyAgent({
    ...poolOptions,
    uri: forwardProxy.uri,
    proxyTls: { timeout: connectMs },
    requestTls: { timeout: connectMs },
    clientFactory: proxyClientFactory(forwardProxy, url.host, connectMs),
  })
  // An agent picks its pool by the request's origin; the API's Host is set here so that undici
  // does not write it into the request's own headers (the reuse key's, src/reuse).
  const host = url.host
  const origin = url.origin
  const pool = agent.compose(
    (dispatch) => (opts, handler) =>
      dispatch({ ...opts, origin, headers: { ...(opts.headers as Record<string, string>), host } }, handler),
  )
  return { pool, origin, basePath, egress }
}

const TIMEOUT_CODES = new Set([
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_HEADERS_TIMEOUT',
  'UND_ERR_BODY_TIMEOUT',
  'ETIMEDOUT',
])

/** The one place an upstream failure becomes an answer: timeouts 504, the forward proxy's own failures as they are (502), everything else 502. */
export function upstreamFailure(err: unknown): Error & { statusCode?: number } {
  const code = (err as { code?: unknown }).code
  if (typeof code === 'string' && code.startsWith('SLUICE_FORWARD_PROXY_')) return err as Error
  const detail = typeof code === 'string' ? code : err instanceof Error ? err.message : 'unknown error'
  return typeof code === 'string' && TIMEOUT_CODES.has(code)
    ? new UpstreamTimeoutError(detail, { cause: err })
    : new UpstreamUnreachableError(detail, { cause: err })
}
