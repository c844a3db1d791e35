import { createHmac, randomBytes } from 'node:crypto'
import type { IncomingHttpHeaders } from 'node:http'

/** What makes two requests get the same answer (README "Spending fewer permits"). */
export interface ReuseShape {
  readonly method: string
  /** the canonical path sent upstream */
  readonly path: string
  /** the query string as sent, `?` included, or '' */
  readonly query: string
  readonly instance: string
  readonly headers: IncomingHttpHeaders
  /** the version header as sent upstream (after a rewrite or pin), undefined when none */
  readonly version: string | undefined
}

const first = (v: string | string[] | undefined): string => (Array.isArray(v) ? v.join(',') : (v ?? ''))

/** `Cache-Control: no-cache` / `no-store` (or the old `Pragma: no-cache`): the client wants a fresh answer. */
export function wantsFresh(headers: IncomingHttpHeaders): boolean {
  const cc = headers['cache-control']
  if (cc !== undefined) return /(^|[\s,])no-(cache|store)($|[\s,=])/i.test(first(cc))
  return /no-cache/i.test(first(headers.pragma))
}

/**
 * Keys of answers that may be shared, as a keyed hash: the whole Authorization credential (two API
 * keys of one organisation may see different data) is in it, so it is never stored, logged or shown
 * in clear. The hash key is random per process, so a key cannot be tested against guessed credentials.
 */
export class ReuseKeys {
  readonly #secret = randomBytes(32)

  keyOf(shape: ReuseShape): string {
    const h = shape.headers
    // Accept-Encoding and Accept-Language change the bytes or words of an answer as much as Accept does.
    const parts = [
      shape.method,
      shape.path,
      shape.query,
      shape.instance,
      first(h.authorization),
      shape.version ?? '',
      first(h.accept),
      first(h['accept-encoding']),
      first(h['accept-language']),
    ]
    return createHmac('sha256', this.#secret).update(parts.join('\n')).digest('base64url')
  }
}
