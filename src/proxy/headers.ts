import type { IncomingHttpHeaders, OutgoingHttpHeaders } from 'node:http'

/** RFC 9110 §7.6.1 hop-by-hop headers, plus proxy-only ones that must not cross the proxy. */
const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-authenticate',
  'proxy-authorization',
  'proxy-connection',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  'http2-settings',
])

const ONLY_PERSISTENCE = /^\s*(keep-alive|close)\s*$/i

function connectionListed(value: string | string[] | undefined): Set<string> | undefined {
  // Nearly every request says only `keep-alive` (or `close`): nothing else is listed.
  if (value === undefined || (typeof value === 'string' && ONLY_PERSISTENCE.test(value))) return undefined
  const text = Array.isArray(value) ? value.join(',') : value
  const names = text
    .split(',')
    .map((s) => s.trim().toLowerCase())
    .filter((s) => s !== '' && s !== 'close' && s !== 'keep-alive')
  return names.length > 0 ? new Set(names) : undefined
}

/**
 * Headers to send upstream: the client's, less hop-by-hop ones, `host` (undici sets the upstream's),
 * `expect` (bodies are already read) and sluice's own control headers.
 */
export function upstreamRequestHeaders(
  incoming: IncomingHttpHeaders,
  drop: ReadonlySet<string>,
): Record<string, string | string[]> {
  const listed = connectionListed(incoming.connection)
  const out: Record<string, string | string[]> = {}
  for (const name in incoming) {
    const value = incoming[name]
    if (value === undefined) continue
    if (HOP_BY_HOP.has(name) || drop.has(name) || listed?.has(name)) continue
    if (name === 'host' || name === 'expect' || name === 'content-length') continue
    out[name] = value
  }
  return out
}

/** Response headers to pass to the client: the upstream's, less hop-by-hop ones. */
export function clientResponseHeaders(upstream: IncomingHttpHeaders): OutgoingHttpHeaders {
  const listed = connectionListed(upstream.connection)
  const out: OutgoingHttpHeaders = {}
  for (const name in upstream) {
    const value = upstream[name]
    if (value === undefined || HOP_BY_HOP.has(name) || listed?.has(name)) continue
    out[name] = value
  }
  return out
}

/** Headers that ask a server to run another method than the request's: refused (docs/reuse.md, "Refused at admission, for every request"). */
export const METHOD_OVERRIDE_HEADERS: readonly string[] = [
  'x-http-method-override',
  'x-http-method',
  'x-method-override',
]

/** Client-sent claims about who the client is, forwarded only from a trusted proxy (`trustProxy`). */
export const CLIENT_IDENTITY_HEADERS: readonly string[] = ['forwarded', 'x-real-ip']

/** Every header that tells the API the client's address: none goes upstream with `forwardClientAddress: false`. */
export const CLIENT_ADDRESS_HEADERS: readonly string[] = [...CLIENT_IDENTITY_HEADERS, 'x-forwarded-for']

/**
 * `X-Forwarded-For` as a proxy writes it: what the client sent, then the client's own address
 * (the last entry is the one a hop can vouch for).
 */
export function appendForwardedFor(
  headers: Record<string, string | string[]>,
  clientAddress: string | undefined,
): void {
  if (clientAddress === undefined) return
  const address =
    clientAddress.startsWith('::ffff:') && clientAddress.includes('.') ? clientAddress.slice(7) : clientAddress
  const sent = headers['x-forwarded-for']
  const before = Array.isArray(sent) ? sent.join(', ') : sent
  headers['x-forwarded-for'] = before === undefined || before.trim() === '' ? address : `${before}, ${address}`
}

const VALID_REQUEST_ID = /^[\w.:@/+=-]{1,128}$/

/** The parts of an Authorization value that may be secret: what follows the scheme, and both halves of a Basic pair. */
function authorizationParts(auth: string): string[] {
  const text = auth.trim()
  const space = text.indexOf(' ')
  if (space < 0) return [text]
  const credentials = text.slice(space + 1).trim()
  if (text.slice(0, space).toLowerCase() !== 'basic') return [credentials]
  const decoded = Buffer.from(credentials, 'base64').toString('utf8')
  const colon = decoded.indexOf(':')
  return colon < 0 ? [credentials, decoded] : [credentials, decoded.slice(0, colon), decoded.slice(colon + 1)]
}

/**
 * The client's `x-request-id` when sluice may make it the request's id, else undefined
 * (docs/observability.md, "What a client's values can reach").
 */
export function clientRequestId(
  headers: IncomingHttpHeaders,
  tokenHeader: string,
  authenticates: (headers: IncomingHttpHeaders) => boolean,
): string | undefined {
  const given = headers['x-request-id']
  if (typeof given !== 'string' || !VALID_REQUEST_ID.test(given)) return undefined
  const secrets = headers.authorization === undefined ? [] : authorizationParts(headers.authorization)
  const token = headers[tokenHeader]
  if (typeof token === 'string') secrets.push(token)
  // A short value (an org id) only as the whole id: as a part it would refuse most ids by chance.
  for (const secret of secrets) if (secret.length >= 8 ? given.includes(secret) : given === secret) return undefined
  return authenticates(headers) ? given : undefined
}
