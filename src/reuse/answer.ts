import type { OutgoingHttpHeaders, ServerResponse } from 'node:http'

/** An upstream answer kept whole, to be given to other clients (coalesced) or later ones (cached). */
export interface StoredAnswer {
  readonly status: number
  /** the upstream's headers as passed to clients (hop-by-hop ones already gone) */
  readonly headers: OutgoingHttpHeaders
  readonly body: Buffer
  /** `Date.now()` when the answer was complete */
  readonly storedAt: number
  /** bytes the answer takes in memory (body plus headers), for the cache's bound */
  readonly size: number
}

/** An answer for a request that spent no permit of its own. */
export interface ReusedAnswer {
  readonly kind: 'coalesced' | 'cache_hit'
  readonly answer: StoredAnswer
}

/**
 * Writes a reused answer as the upstream's: the headers sluice set for this request (version notes),
 * the upstream's over them, then the request's own id and `extra` (Age, x-sluice-cache) over all.
 */
export function writeReused(
  res: ServerResponse,
  method: string,
  base: OutgoingHttpHeaders,
  reused: ReusedAnswer,
  extra: OutgoingHttpHeaders,
): void {
  const { answer } = reused
  const head: OutgoingHttpHeaders = Object.assign(base, answer.headers, extra)
  if (method !== 'HEAD') head['content-length'] = String(answer.body.length)
  res.writeHead(answer.status, head)
  res.end(method === 'HEAD' ? undefined : answer.body)
}

/** Rough bytes of headers in memory, for the cache's byte bound. */
export function headersSize(headers: OutgoingHttpHeaders): number {
  let size = 0
  for (const name in headers) {
    const v = headers[name]
    size += name.length + (Array.isArray(v) ? v.join('').length : String(v).length) + 4
  }
  return size
}
