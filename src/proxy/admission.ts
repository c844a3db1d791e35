import type { IncomingHttpHeaders } from 'node:http'
import { badPathError, queryProblem } from '../catalog/index.js'
import type { Catalog, Endpoint } from '../catalog/types.js'
import type { Versioning } from '../versioning/index.js'
import { contentLengthOf } from './body.js'
import { BadWaitHeaderError, BodyNotAllowedError, MethodOverrideError, NoHostError, NotFoundError } from './errors.js'
import { UrlTooLongError } from '../front/errors.js'
import { METHOD_OVERRIDE_HEADERS } from './headers.js'
import type { Rejection } from '../errors/refusal.js'

/**
 * Admission, the first stage of a request (docs/development.md, "A request's way through the code"):
 * a pure function of the request and the rules, whose refusals are values, never thrown.
 */

/** What admission reads of a request. */
export interface RequestFacts {
  readonly method: string
  /** the request target as received: path and query */
  readonly url: string
  readonly headers: IncomingHttpHeaders
  /** the minor version of HTTP/1.x: an HTTP/1.1 request needs a Host header */
  readonly httpVersionMinor: number
  /** why the organisation could not be read (tracking.ts reads it on arrival, for the record); undefined: it could */
  readonly instanceError: Error | undefined
  /** when the request arrived (ms since epoch): its wait is counted from then */
  readonly arrivedAt: number
}

/** The settings and data admission decides by, built once per proxy (`admissionRules`). */
export interface AdmissionRules {
  /** the API prefix clients call, e.g. `/v2` */
  readonly basePath: string
  readonly maxUrlBytes: number
  /** the header a client shortens its wait with (lower-case) */
  readonly waitHeader: string
  /** the longest wait (`queue.maxWaitMs`) */
  readonly maxWaitMs: number
  readonly catalog: Pick<Catalog, 'match'>
  /** asked only for an API v1 path: throws the 410 once the calendar says v1 is retired */
  readonly versioning: Pick<Versioning, 'rejectApiV1'>
}

/** A request admitted: what the stages after it need. */
export interface AdmittedRequest {
  readonly ok: true
  readonly endpoint: Endpoint
  /** the canonical path below the API root (catalog.match), as forwarded */
  readonly path: string
  /** the query as sent, `?` included; '' when none */
  readonly query: string
  /** when the request's wait ends (ms since epoch): `x-sluice-max-wait` or `queue.maxWaitMs` after its arrival */
  readonly deadline: number
}

/**
 * A request refused. Refusals of the request's shape (`afterIdentity`) wait for identity, so an
 * unauthenticated request gets its 401/403 first and an app's malformed request counts as that app's.
 */
export type Refusal =
  | {
      readonly ok: false
      readonly error: Rejection
      readonly afterIdentity: false
      readonly endpoint: Endpoint | undefined
    }
  | { readonly ok: false; readonly error: Rejection; readonly afterIdentity: true; readonly endpoint: Endpoint }

export type Admission = AdmittedRequest | Refusal

export function admissionRules(
  settings: {
    readonly basePath: string
    readonly client: { readonly maxUrlBytes: number }
    readonly queue: { readonly waitHeader: string; readonly maxWaitMs: number }
  },
  catalog: Pick<Catalog, 'match'>,
  versioning: Pick<Versioning, 'rejectApiV1'>,
): AdmissionRules {
  return {
    basePath: settings.basePath,
    maxUrlBytes: settings.client.maxUrlBytes,
    waitHeader: settings.queue.waitHeader,
    maxWaitMs: settings.queue.maxWaitMs,
    catalog,
    versioning,
  }
}

/** Checks a request in the order its answers take precedence; the first refusal wins. */
export function admit(request: RequestFacts, rules: AdmissionRules): Admission {
  const { url, headers } = request
  if (url.length > rules.maxUrlBytes) return refused(new UrlTooLongError(rules.maxUrlBytes))
  if (headers.host === undefined && request.httpVersionMinor === 1) return refused(new NoHostError())
  const q = url.indexOf('?')
  const rawPath = q < 0 ? url : url.slice(0, q)
  const query = q < 0 ? '' : url.slice(q)
  const rest = belowPrefix(rawPath, rules.basePath)
  if (rest === undefined)
    return refused(
      (isV1(rawPath) ? apiV1Refusal(rules.versioning) : undefined) ?? new NotFoundError(rules.basePath, rawPath),
    )
  const match = rules.catalog.match(request.method, rest)
  if (!match.ok) return refused(badPathError(match))
  const { endpoint } = match
  // The query is forwarded as sent: only what RFC 3986 allows there (a `#` or a raw space never).
  const badQuery = query.length > 1 ? queryProblem(query) : undefined
  // recorded as `unmatched`, like a bad path: both are the target's fault (SLUICE_BAD_PATH…)
  if (badQuery !== undefined) return refused(badPathError(badQuery))
  if (request.instanceError !== undefined) return refused(request.instanceError, endpoint)

  // ── answered after identity (see Refusal)
  const misleading = misleadingPart(request.method, headers)
  if (misleading !== undefined) return { ok: false, error: misleading, afterIdentity: true, endpoint }
  const wait = headers[rules.waitHeader]
  const maxWaitMs = wait === undefined ? rules.maxWaitMs : waitOf(wait, rules.maxWaitMs)
  if (maxWaitMs === undefined)
    return {
      ok: false,
      error: new BadWaitHeaderError(rules.waitHeader),
      afterIdentity: true,
      endpoint,
    }
  return { ok: true, endpoint, path: match.path, query, deadline: request.arrivedAt + maxWaitMs }
}

function refused(error: Error, endpoint?: Endpoint): Refusal {
  // each refusal carries its outcome (src/errors/refusal.ts)
  return { ok: false, error, afterIdentity: false, endpoint }
}

/** The 410 for an API v1 path once v1 is retired; undefined before (then it is a 404 like any path outside the prefix). */
function apiV1Refusal(versioning: Pick<Versioning, 'rejectApiV1'>): Rejection | undefined {
  try {
    versioning.rejectApiV1()
    return undefined
  } catch (err) {
    return err as Rejection
  }
}

/** A method override, or a body on a GET or HEAD: the API would answer another request than the one sluice limits and shares (docs/reuse.md, "Refused at admission, for every request"). */
function misleadingPart(method: string, headers: IncomingHttpHeaders): Error | undefined {
  for (const name of METHOD_OVERRIDE_HEADERS) if (headers[name] !== undefined) return new MethodOverrideError(name)
  if (method !== 'GET' && method !== 'HEAD') return undefined
  const length = headers['content-length']
  if (headers['transfer-encoding'] !== undefined || (length !== undefined && contentLengthOf(length) !== 0))
    return new BodyNotAllowedError(method)
  return undefined
}

/** The path below the API prefix (`/v2/accounts` → `/accounts`), or undefined when not below it. */
export function belowPrefix(path: string, prefix: string): string | undefined {
  if (path.length < prefix.length || path.slice(0, prefix.length).toLowerCase() !== prefix.toLowerCase()) {
    // Tolerate doubled leading slashes (`//v2/…`) the way the catalog tolerates them inside the path.
    const trimmed = path.replace(/^\/{2,}/, '/')
    return trimmed === path ? undefined : belowPrefix(trimmed, prefix)
  }
  const rest = path.slice(prefix.length)
  if (rest === '') return '/'
  return rest[0] === '/' ? rest : undefined
}

const isV1 = (path: string): boolean => /^\/+v1(\/|$)/i.test(path)

/** The wait a client asked for (seconds, capped at the configured maximum), or undefined when the header is no number. */
function waitOf(value: string | string[], configured: number): number | undefined {
  const text = (Array.isArray(value) ? value[0] : value)?.trim() ?? ''
  if (!/^\d+(\.\d+)?$/.test(text)) return undefined
  return Math.min(configured, Math.round(Number(text) * 1000))
}
