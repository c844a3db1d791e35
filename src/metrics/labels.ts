/**
 * Label values, made safe. A label never carries a raw path, a resource id or a secret, and every
 * label has a bounded set of values, whatever clients send.
 */

import { endpointNamer } from '../catalog/names.js'

/** endpoint label of the endpoints the catalog does not know, but for those shaped like its templates (see docs/observability.md) */
export { UNKNOWN_ENDPOINT } from '../catalog/names.js'
/** endpoint label of requests rejected before their path was matched (RequestRecord.endpoint) */
export const UNMATCHED_ENDPOINT = 'unmatched'
/** org label of the organisations that have no series of their own (over `metrics.maxInstances`) */
export const OTHER_ORG = '_other'
/** app label of a request refused before its app was known (a 401, a bad path) */
export const UNKNOWN_APP = '_unknown'
/** org label of an instance name that is not a plausible organisation id (too long, odd characters) */
export const INVALID_ORG = '_invalid'
/**
 * org label of requests that did not authenticate for their organisation (app identity on): what
 * they name is not recorded, and they take no slot of `metrics.maxInstances`
 */
export const UNAUTHENTICATED_ORG = '_unauthenticated'

/**
 * The endpoint label: the endpoint's name (src/catalog/names.ts), bounded by the catalog; an unknown path not
 * shaped like a catalog template is `unknown` (docs/observability.md, "Labels: bounded, and never a path, an id or a
 * secret").
 */
export function endpointLabeler(knownEndpointIds: Iterable<string>): (endpoint: string) => string {
  const nameOf = endpointNamer(knownEndpointIds)
  return (endpoint) => (endpoint === UNMATCHED_ENDPOINT ? endpoint : nameOf(endpoint))
}

/** the methods that are their own label value */
export const LABELLED_METHODS: readonly string[] = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']
const METHODS = new Set(LABELLED_METHODS)
/** HTTP method label: the usual methods as they are, anything else `other`. */
export const methodLabel = (method: string): string => (METHODS.has(method) ? method : 'other')

/** Status code label: `0` (no answer: the client left first) or a 3-digit code. */
export const codeLabel = (status: number): string =>
  Number.isInteger(status) && status >= 100 && status <= 999 ? String(status) : '0'

// An organisation id: what Basic-auth usernames look like. The first character is never `_`, so no
// real organisation can collide with `_other` or `_invalid`.
const ORG_ID = /^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$/
/** The org label for an instance name, before the top-N policy: the name itself, or `_invalid`. */
export const orgLabel = (instance: string): string => (ORG_ID.test(instance) ? instance : INVALID_ORG)

const OPERATION = /^[A-Za-z][A-Za-z0-9_.:-]{0,39}$/
/** Redis operation label: the backend's own operation names (code constants), `other` for anything odd. */
export const operationLabel = (operation: string): string => (OPERATION.test(operation) ? operation : 'other')
