import createError from '@fastify/error'
import { createHash, timingSafeEqual } from 'node:crypto'

/**
 * The admin token (`adminToken`), as Bearer or as the Basic password, which a browser asks for and
 * sends with the page's own fetches (docs/observability.md, "The admin port").
 */

export const AdminUnauthorizedError = createError(
  'SLUICE_ADMIN_UNAUTHORIZED',
  'This admin path needs the admin token: Authorization: Bearer <adminToken> (or Basic with the token as the password)',
  401,
)

/** Both challenges: Prometheus and curl use Bearer, a browser prompts for Basic. */
export const ADMIN_CHALLENGES = ['Bearer realm="sluice admin"', 'Basic realm="sluice admin", charset="UTF-8"']

// Digests have one length whatever the token's, so the comparison is constant-time and says nothing about the length.
const digest = (text: string): Buffer => createHash('sha256').update(text, 'utf8').digest()

/** Whether an Authorization header value carries `token`. */
export function tokenChecker(token: string): (authorization: string | undefined) => boolean {
  const expected = digest(token)
  return (authorization) => {
    if (authorization === undefined) return false
    const space = authorization.indexOf(' ')
    if (space < 0) return false
    const scheme = authorization.slice(0, space).toLowerCase()
    const credentials = authorization.slice(space + 1).trim()
    let given: string
    if (scheme === 'bearer') given = credentials
    else if (scheme === 'basic') {
      const decoded = Buffer.from(credentials, 'base64').toString('utf8')
      given = decoded.slice(decoded.indexOf(':') + 1)
    } else return false
    return timingSafeEqual(digest(given), expected)
  }
}
