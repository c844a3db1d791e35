import { Pool, type Dispatcher } from 'undici'
import { ConfigError } from '../errors/config-error.js'
import { ForwardProxyRefusedError, ForwardProxyUnreachableError } from './errors.js'

/**
 * The forward proxy the upstream is reached through, from the standard `HTTPS_PROXY` / `HTTP_PROXY`
 * / `NO_PROXY` variables (docs/configuration.md, "A forward proxy"), decided once at start: the
 * upstream is one origin, so a request pays nothing for the choice.
 */
export interface ForwardProxy {
  /** the proxy URL as given, credentials included: for undici's ProxyAgent only, never logged */
  readonly uri: string
  /** `host:port`, what logs and answers name */
  readonly name: string
  /** the variable it came from, e.g. `HTTPS_PROXY` */
  readonly variable: string
  /** whether the URL carries credentials (sent as Proxy-Authorization) */
  readonly credentials: boolean
}

const DEFAULT_PORTS: Readonly<Record<string, number>> = { 'http:': 80, 'https:': 443 }

/** The lower-case form first, as curl and undici read them. */
function firstSet(env: NodeJS.ProcessEnv, names: readonly string[]): { name: string; value: string } | undefined {
  for (const name of names) {
    const value = env[name]
    if (value !== undefined && value.trim() !== '') return { name, value: value.trim() }
  }
  return undefined
}

/**
 * Whether NO_PROXY exempts `host:port`: the rule of undici's EnvHttpProxyAgent (entries split by
 * commas or spaces, `*` for every host, an optional `:port`, a leading `.` or `*.` meaning the
 * domain and its subdomains). test/proxy/no-proxy-parity.test.ts runs the same inputs through both.
 */
export function bypassesProxy(noProxy: string, hostname: string, port: number): boolean {
  const value = noProxy.trim()
  if (value === '') return false
  if (value === '*') return true
  const host = hostname.toLowerCase()
  for (const entry of value.split(/[,\s]/)) {
    if (entry === '') continue
    const parsed = /^(.+):(\d+)$/.exec(entry)
    const entryHost = (parsed ? parsed[1]! : entry).replace(/^\*?\./, '').toLowerCase()
    const entryPort = parsed ? Number.parseInt(parsed[2]!, 10) : 0
    if (entryPort !== 0 && entryPort !== port) continue
    if (host === entryHost || host.endsWith(`.${entryHost}`)) return true
  }
  return false
}

/** The way to the upstream: through a forward proxy, or straight (and which NO_PROXY variable exempted it, if one did). */
export type Egress =
  { readonly via: ForwardProxy } | { readonly via: undefined; readonly exemptedBy: string | undefined }

/**
 * The way to `upstream` by the proxy variables of `env`. As undici and curl: an https upstream takes
 * HTTPS_PROXY, else HTTP_PROXY; an http one HTTP_PROXY; NO_PROXY exempts hosts.
 */
export function egressFor(upstream: URL, env: NodeJS.ProcessEnv): Egress {
  const names =
    upstream.protocol === 'https:'
      ? ['https_proxy', 'HTTPS_PROXY', 'http_proxy', 'HTTP_PROXY']
      : ['http_proxy', 'HTTP_PROXY']
  const chosen = firstSet(env, names)
  if (chosen === undefined) return { via: undefined, exemptedBy: undefined }
  // The host as undici compares it: brackets of an IPv6 address kept.
  const hostname = upstream.host.replace(/:\d*$/, '')
  const port = Number.parseInt(upstream.port, 10) || DEFAULT_PORTS[upstream.protocol] || 0
  const noProxy =
    env.no_proxy !== undefined
      ? { name: 'no_proxy', value: env.no_proxy }
      : { name: 'NO_PROXY', value: env.NO_PROXY ?? '' }
  if (bypassesProxy(noProxy.value, hostname, port)) return { via: undefined, exemptedBy: noProxy.name }
  // `proxy:3128` without a scheme means http://, as curl reads it.
  const uri = /^[a-z][a-z0-9+.-]*:\/\//i.test(chosen.value) ? chosen.value : `http://${chosen.value}`
  let url: URL
  try {
    url = new URL(uri)
  } catch {
    throw badProxy(chosen.name, 'is not a URL')
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw badProxy(
      chosen.name,
      `has the scheme ${url.protocol.slice(0, -1)}; only http:// and https:// proxies are supported`,
    )
  const name = `${url.hostname}:${url.port || DEFAULT_PORTS[url.protocol]}`
  return { via: { uri, name, variable: chosen.name, credentials: url.username !== '' || url.password !== '' } }
}

const badProxy = (variable: string, why: string): ConfigError =>
  new ConfigError(
    `${variable} (from the environment) ${why}: give the forward proxy as http://host:port or http://user:password@host:port`,
    [`${variable}: ${why}`],
  )

/**
 * ProxyAgent's client to the forward proxy, which opens each tunnel with `connect()`: a failure
 * there is the proxy's, so it becomes an error naming it (502 SLUICE_FORWARD_PROXY_*), distinct from
 * a failure of the API behind it. The tunnel's answer is bounded by the connect timeout.
 */
export function proxyClientFactory(
  proxy: ForwardProxy,
  target: string,
  connectMs: number,
): (origin: URL, opts: object) => Dispatcher {
  return (origin, opts) => new TunnelPool(origin, { ...opts, headersTimeout: connectMs }, proxy.name, target)
}

class TunnelPool extends Pool {
  constructor(
    origin: URL,
    opts: Pool.Options,
    private readonly proxyName: string,
    private readonly target: string,
  ) {
    super(origin, opts)
  }

  override connect(options: Dispatcher.ConnectOptions): Promise<Dispatcher.ConnectData>
  override connect(
    options: Dispatcher.ConnectOptions,
    callback: (err: Error | null, data: Dispatcher.ConnectData) => void,
  ): void
  override connect(
    options: Dispatcher.ConnectOptions,
    callback?: (err: Error | null, data: Dispatcher.ConnectData) => void,
  ): Promise<Dispatcher.ConnectData> | void {
    // ProxyAgent uses the promise form only.
    if (callback !== undefined) return super.connect(options, callback)
    return super.connect(options).then(
      (data) => {
        if (data.statusCode === 200) return data
        data.socket.on('error', () => undefined).destroy()
        throw new ForwardProxyRefusedError(this.proxyName, this.target, data.statusCode)
      },
      (err: unknown) => {
        const code = errorCode(err)
        const detail =
          code === 'UND_ERR_HEADERS_TIMEOUT' ? 'no answer to CONNECT within upstreamTimeouts.connectMs' : code
        throw new ForwardProxyUnreachableError(this.proxyName, detail, { cause: err })
      },
    )
  }
}

const errorCode = (err: unknown): string => {
  const code = (err as { code?: unknown }).code
  return typeof code === 'string' ? code : err instanceof Error ? err.message : 'unknown error'
}
