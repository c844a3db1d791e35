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
 * Request headers that may differ between requests sharing one answer; every other header sent
 * upstream is in the key. Short on purpose (docs/reuse.md, "What may differ").
 */
export const MAY_DIFFER: ReadonlySet<string> = new Set([
  'user-agent',
  // sluice honours these itself: no-cache / no-store makes a request's own call (wantsFresh), and an
  // answer so fetched refreshes the cache entry that plain requests read
  'cache-control',
  'pragma',
  // sluice sends each request's own id. (The client's address, X-Forwarded-For and the like, is in
  // the key: an API may answer by it; `forwardClientAddress: false` keeps it from the API instead.)
  'x-request-id',
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

const text = (v: string | string[] | number | undefined): string =>
  Array.isArray(v) ? v.join(',') : v === undefined ? '' : String(v)

/** `Cache-Control: no-cache` / `no-store` (or the old `Pragma: no-cache`): the client wants a fresh answer. */
export function wantsFresh(headers: UpstreamHeaders): boolean {
  const cc = headers['cache-control']
  if (cc !== undefined) return /(^|[\s,])no-(cache|store)($|[\s,=])/i.test(text(cc))
  return /no-cache/i.test(text(headers.pragma))
}

/** An answer that must not go to another request (docs/reuse.md, "Answers that are never shared"). */
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
 * Keys of answers that may be shared: an HMAC, keyed at random per process, of the request as the
 * upstream would see it (docs/reuse.md, "The key"; its cost under "Cost").
 */
export class ReuseKeys {
  readonly #secret = randomBytes(32)

  /** `appsArePrincipals`: app identity is on, so requests of different apps never share (docs/reuse.md, "Apps"). */
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
