import type { IncomingHttpHeaders } from 'node:http'

/**
 * "Is this answer the upstream's over-the-limit?" — one function per upstream, decided from its
 * profile or its own `retryWithRetryAfter` (docs/upstreams.md, "Over the limit"). A throttled
 * answer is never passed on: the request goes back into its queue, and a learned limit shrinks.
 */
export type ThrottleRule = (status: number, headers: IncomingHttpHeaders) => boolean

/** The statuses that are a throttle on every upstream (docs/development.md, "Trying another status again"). */
export const RETRY_STATUSES: ReadonlySet<number> = new Set([429])

/** A 429 always; a status of `withRetryAfter` only when it carries Retry-After (else it is the API's answer). */
export function throttleRule(withRetryAfter: Iterable<number>): ThrottleRule {
  const statuses: ReadonlySet<number> = new Set(withRetryAfter)
  if (statuses.size === 0) return (status) => RETRY_STATUSES.has(status)
  return (status, headers) =>
    RETRY_STATUSES.has(status) || (statuses.has(status) && headers['retry-after'] !== undefined)
}
