import { createHmac, randomBytes } from 'node:crypto'
import type { OutgoingHttpHeaders } from 'node:http'

/** Request headers as they go upstream (after sluice dropped its own and hop-by-hop ones). */
export type UpstreamHeaders = Readonly<Record<string, string | string[]>>

/** What makes two requests get the same answer (docs/reuse.md). */
export interface ReuseShape {
  readonly method: string
  /** the canonical path sent upstream */
  readonly path: string
  /** the query string as sent, `?` included, or '' */
  readonly query: string
  readonly instance: string
  /** the calling app; part of the key when app identity is on (ReuseKeys) */
  readonly app: string
  /**
   * the headers exactly as the upstream would get them: the Authorization sent upstream (injected or
   * the client's), the version header after a rewrite or pin, and every other header the client sent
   */
  readonly headers: UpstreamHeaders
}

/**
 * Request headers that may differ between requests sharing one answer: they say who asked or trace
 * the request, and an API does not answer differently for them. Every other header the upstream
 * gets is part of the request key, so requests that differ in one (a Cookie, an If-None-Match, a
 * Range, an Accept…) never share. An answer whose `Vary` names one of these is not shared or cached
 * (see `notShareable`). Hop-by-hop headers and sluice's control headers never reach the
 * upstream, so they are not in the key either. docs/reuse.md lists them with the reasons.
 */
export const MAY_DIFFER: ReadonlySet<string> = new Set([
  'user-agent',
  // sluice honours these itself: no-cache / no-store makes a request's own call (wantsFresh), and an
  // answer so fetched refreshes the cache entry that plain requests read
  'cache-control',
  'pragma',
  // sluice sends each request's own id and appends each client's address
  'x-request-id',
  'x-forwarded-for',
  'forwarded',
  'x-real-ip',
  // W3C trace context and B3 propagation: every request carries its own span
  'traceparent',
  'tracestate',
  'baggage',
  'b3',
  'x-b3-traceid',
  'x-b3-spanid',
  'x-b3-parentspanid',
  'x-b3-sampled',
  'x-b3-flags',
])

const text = (v: string | string[] | number | undefined): string => (Array.isArray(v) ? v.join(',') : v === undefined ? '' : String(v))

/** `Cache-Control: no-cache` / `no-store` (or the old `Pragma: no-cache`): the client wants a fresh answer. */
export function wantsFresh(headers: UpstreamHeaders): boolean {
  const cc = headers['cache-control']
  if (cc !== undefined) return /(^|[\s,])no-(cache|store)($|[\s,=])/i.test(text(cc))
  return /no-cache/i.test(text(headers.pragma))
}

/**
 * An answer that must not go to another request: it sets a cookie (a session is one client's), or
 * its `Vary` is `*` or names a header that may differ between the requests sharing it (MAY_DIFFER).
 * A `Vary` naming a header of the key is fine: sharers sent the same value, or all sent none.
 */
export function notShareable(headers: OutgoingHttpHeaders): boolean {
  if (headers['set-cookie'] !== undefined) return true
  const vary = headers.vary
  if (vary === undefined) return false
  for (const name of text(vary).split(',')) {
    const n = name.trim().toLowerCase()
    if (n === '*' || MAY_DIFFER.has(n)) return true
  }
  return false
}

/**
 * Keys of answers that may be shared, as a keyed hash of the request as the upstream would see it:
 * method, path, query, instance, the app when it is a principal, and every header but MAY_DIFFER
 * (names in order, so clients that send the same headers in another order still share). The whole
 * Authorization credential is in it (two API keys of one organisation may see different data), so
 * the hash is keyed: a credential is never stored, logged or shown in clear, and the key is random
 * per process, so a key cannot be tested against guessed credentials.
 *
 * Cost per GET/HEAD: one pass over the header names against a Set, a sort of the dozen or so left,
 * and one HMAC over about as many bytes as the headers (docs/reuse.md, "Cost").
 */
export class ReuseKeys {
  readonly #secret = randomBytes(32)

  /**
   * `appsArePrincipals`: app identity is on, so an app is proven by its token and is a principal of
   * its own (with injected keys, every app of an organisation sends the same credential): apps never
   * share. With it off, the app only names itself in a header, and the credential decides.
   */
  constructor(private readonly appsArePrincipals: boolean) {}

  keyOf(shape: ReuseShape): string {
    const h = shape.headers
    const names: string[] = []
    for (const name in h) if (!MAY_DIFFER.has(name)) names.push(name)
    names.sort()
    // Newlines cannot occur in a header, a request target, an instance or an app name: the parts cannot run together.
    let joined = `${shape.method}\n${shape.path}\n${shape.query}\n${shape.instance}\n${this.appsArePrincipals ? shape.app : ''}`
    for (const name of names) joined += `\n${name}:${text(h[name])}`
    return createHmac('sha256', this.#secret).update(joined).digest('base64url')
  }
}
