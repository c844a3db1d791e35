import type { IncomingHttpHeaders } from 'node:http'
import { BadAuthorizationError, BadInstanceError } from './errors.js'

export const DEFAULT_INSTANCE = 'default'

// Printable ASCII and non-control Unicode; no separators that could confuse keys or log lines.
const VALID_INSTANCE = /^[^\p{Cc}\s]{1,128}$/u

/**
 * The organisation a request counts against: the Basic-auth username (the API's orgId), else the
 * configured header, else `default`. Only the username is ever read from the Authorization header;
 * the API key is never decoded into anything that is kept.
 */
export function instanceOf(headers: IncomingHttpHeaders, fallbackHeader: string): string {
  const auth = headers.authorization
  if (auth !== undefined && auth.length > 6 && auth.slice(0, 6).toLowerCase() === 'basic ') {
    const decoded = Buffer.from(auth.slice(6).trim(), 'base64').toString('utf8')
    const colon = decoded.indexOf(':')
    if (colon <= 0) throw new BadAuthorizationError()
    const user = decoded.slice(0, colon)
    if (!VALID_INSTANCE.test(user)) throw new BadInstanceError('the Basic-auth username')
    return user
  }
  const fromHeader = headers[fallbackHeader]
  if (fromHeader !== undefined) {
    const value = Array.isArray(fromHeader) ? fromHeader[0] : fromHeader
    if (value === undefined || !VALID_INSTANCE.test(value)) throw new BadInstanceError(`the ${fallbackHeader} header`)
    return value
  }
  return DEFAULT_INSTANCE
}
