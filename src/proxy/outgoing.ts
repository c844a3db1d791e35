import type { Readable } from 'node:stream'
import type { FastifyRequest } from 'fastify'
import type { Dispatcher } from 'undici'
import type { Caller } from '../apps/gate.js'
import type { VersionDecision } from '../versioning/index.js'
import type { AdmittedRequest } from './admission.js'
import { contentLengthOf, readBody, type RequestBody } from './body.js'
import type { BodyPace } from './body-pace.js'
import { appendForwardedFor, upstreamRequestHeaders } from './headers.js'

/**
 * The request as the API gets it, built once after the version is decided and before any permit:
 * its body read (or set to stream), its headers, its path. Every attempt sends the same.
 */

/** How requests go upstream: the same for every request (built once per proxy). */
export interface OutgoingRules {
  /** the upstream's path prefix, e.g. `/v2` */
  readonly upstreamBasePath: string
  /** the version header (lower-case) */
  readonly versionHeader: string
  /** headers that never go upstream: sluice's own, and (unless the client is a trusted proxy) client-sent address claims */
  readonly controlHeaders: ReadonlySet<string>
  /** a body up to this size is read whole before the permit (so an upstream 429 can be retried); a larger one streams */
  readonly maxBufferBytes: number
  readonly pace: BodyPace
  /** whether the client's address is appended to `X-Forwarded-For` (`forwardClientAddress`) */
  readonly appendAddress: boolean
}

/** A request as sent upstream; its headers are also the reuse key's (src/reuse). */
export type UpstreamRequest = Dispatcher.DispatchOptions & { readonly headers: Record<string, string | string[]> }

/** Reads the request's body (a request with one: `request.body` is its stream), at a minimum pace; `hold` as readBody's. */
export function readRequestBody(
  request: FastifyRequest,
  rules: OutgoingRules,
  hold?: (bytes: number) => void,
): Promise<RequestBody> {
  return readBody(
    request.body as Readable,
    contentLengthOf(request.headers['content-length']),
    rules.maxBufferBytes,
    rules.pace,
    hold,
  )
}

/** The upstream request: the client's headers but control and hop-by-hop ones, the Authorization identity chose, the version decided. */
export function upstreamRequest(
  request: FastifyRequest,
  admitted: AdmittedRequest,
  caller: Caller,
  decision: VersionDecision,
  body: RequestBody,
  rules: OutgoingRules,
): UpstreamRequest {
  const headers = upstreamRequestHeaders(request.headers, rules.controlHeaders)
  headers['x-request-id'] = request.id
  if (caller.authorization === null) delete headers.authorization
  else if (caller.authorization !== undefined) headers.authorization = caller.authorization
  if (caller.injected !== undefined) headers[caller.injected.header] = caller.injected.value
  if (rules.appendAddress) appendForwardedFor(headers, request.raw.socket.remoteAddress)
  if (decision.upstream === undefined) delete headers[rules.versionHeader]
  else headers[rules.versionHeader] = decision.upstream
  if (body.kind === 'stream' && body.length !== undefined) headers['content-length'] = String(body.length)
  return {
    path: rules.upstreamBasePath + admitted.path + admitted.query,
    method: request.method,
    headers,
    body: body.kind === 'buffered' ? body.data : body.kind === 'stream' ? body.stream : null,
  }
}
