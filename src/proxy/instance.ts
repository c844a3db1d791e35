import { createHash } from 'node:crypto'
import type { IncomingHttpHeaders } from 'node:http'
import { normalisePath } from '../catalog/index.js'
import type { InstanceRule } from '../upstreams/settings.js'
import {
  BadAuthorizationError,
  BadInstanceError,
  EmptyAuthorizationError,
  UnsupportedAuthorizationError,
} from './errors.js'

export const DEFAULT_INSTANCE = 'default'

// Printable ASCII and non-control Unicode; no separators that could confuse keys or log lines.
const VALID_INSTANCE = /^[^\p{Cc}\s]{1,128}$/u

/**
 * The organisation a request counts against (docs/requests.md, "Endpoints and limits"). An empty or
 * non-Basic Authorization is refused, not counted as `default`, where it would queue among organisations not its own.
 */
export function instanceOf(headers: IncomingHttpHeaders, fallbackHeader: string): string {
  const auth = headers.authorization
  if (auth !== undefined) return basicUser(auth)
  const fromHeader = headers[fallbackHeader]
  if (fromHeader !== undefined) {
    const value = Array.isArray(fromHeader) ? fromHeader[0] : fromHeader
    if (value === undefined || !VALID_INSTANCE.test(value)) throw new BadInstanceError(`the ${fallbackHeader} header`)
    return value
  }
  return DEFAULT_INSTANCE
}

function basicUser(auth: string): string {
  const text = auth.trim()
  const space = text.indexOf(' ')
  const scheme = (space < 0 ? text : text.slice(0, space)).toLowerCase()
  const credentials = space < 0 ? '' : text.slice(space + 1).trim()
  if (text === '' || (scheme === 'basic' && credentials === '')) throw new EmptyAuthorizationError()
  if (scheme !== 'basic') throw new UnsupportedAuthorizationError()
  const decoded = Buffer.from(credentials, 'base64').toString('utf8')
  const colon = decoded.indexOf(':')
  if (colon < 0) throw new BadAuthorizationError()
  const user = decoded.slice(0, colon)
  // An empty username (`base64(":key")`) is an empty instance name, like an empty instance header.
  if (!VALID_INSTANCE.test(user)) throw new BadInstanceError('the Basic-auth username')
  return user
}

/** The instance of a request to an upstream, by its rule (docs/upstreams.md, "Instance"); `rest` is the path below the prefix. */
export type InstanceReader = (headers: IncomingHttpHeaders, rest: string) => string

export function instanceReader(rule: InstanceRule, fallbackHeader: string): InstanceReader {
  switch (rule.from) {
    case 'basic':
      return (headers) => instanceOf(headers, fallbackHeader)
    case 'header':
      return (headers) => {
        const value = headers[rule.header]
        const text = Array.isArray(value) ? value[0] : value
        if (text === undefined) return DEFAULT_INSTANCE
        if (!VALID_INSTANCE.test(text)) throw new BadInstanceError(`the ${rule.header} header`)
        return text
      }
    case 'path':
      // The segment as forwarded (src/catalog/path.ts): `alice`, `%61lice` and `al%69ce` are one mailbox, one key.
      return (_headers, rest) => {
        const normalised = normalisePath(rest.length === 0 ? '/' : rest)
        const segment = normalised.ok ? normalised.segments[rule.segment - 1] : undefined
        if (segment === undefined || !VALID_INSTANCE.test(segment))
          throw new BadInstanceError(`path segment ${rule.segment}`)
        return segment
      }
    case 'credential': {
      // A digest, never the token: instances reach logs, metrics and Redis keys (README "What sluice guarantees").
      const aliases = new Map(Object.entries(rule.schemeAliases ?? {}))
      return (headers) => {
        const auth = headers.authorization
        return auth === undefined || auth.trim() === ''
          ? DEFAULT_INSTANCE
          : `cred-${createHash('sha256').update(canonicalCredential(auth, aliases)).digest('hex').slice(0, 16)}`
      }
    }
    case 'upstream':
      return () => DEFAULT_INSTANCE
  }
}

/**
 * One token, one text (docs/upstreams.md, "Instance"): surrounding whitespace dropped, the scheme
 * lower-cased (and named by its alias), one space after it; a Basic pair decoded and encoded again, so
 * padding or a line break in its base64 does not make another instance of the same pair.
 */
export function canonicalCredential(auth: string, aliases: ReadonlyMap<string, string>): string {
  const text = auth.trim()
  const space = text.search(/\s/)
  if (space < 0) return text
  const scheme = text.slice(0, space).toLowerCase()
  const credentials = text.slice(space + 1).trim()
  const named = aliases.get(scheme) ?? scheme
  if (named !== 'basic') return `${named} ${credentials}`
  return `basic ${Buffer.from(credentials, 'base64').toString('base64')}`
}
