import createError from '@fastify/error'
import type { BadPathCode, MatchResult } from './types.js'
import { refusal } from '../errors/refusal.js'

/*
 * A refused path is a MatchResult `{ ok: false, code, message }` (no throw on the hot path); these
 * constructors turn it into the 400 the proxy answers. The message says what was wrong and where.
 */
export const BadPathError = refusal<[string]>('SLUICE_BAD_PATH', '%s', 400, 'bad_request')
export const BadPathTraversalError = refusal<[string]>('SLUICE_BAD_PATH_TRAVERSAL', '%s', 400, 'bad_request')
export const BadPathSeparatorError = refusal<[string]>('SLUICE_BAD_PATH_SEPARATOR', '%s', 400, 'bad_request')
export const BadPathControlCharError = refusal<[string]>('SLUICE_BAD_PATH_CONTROL_CHAR', '%s', 400, 'bad_request')
export const BadPathEncodingError = refusal<[string]>('SLUICE_BAD_PATH_ENCODING', '%s', 400, 'bad_request')
export const BadPathSegmentError = refusal<[string]>('SLUICE_BAD_PATH_SEGMENT', '%s', 400, 'bad_request')

const badPathErrors = {
  SLUICE_BAD_PATH: BadPathError,
  SLUICE_BAD_PATH_TRAVERSAL: BadPathTraversalError,
  SLUICE_BAD_PATH_SEPARATOR: BadPathSeparatorError,
  SLUICE_BAD_PATH_CONTROL_CHAR: BadPathControlCharError,
  SLUICE_BAD_PATH_ENCODING: BadPathEncodingError,
  SLUICE_BAD_PATH_SEGMENT: BadPathSegmentError,
} as const satisfies Record<BadPathCode, unknown>

/** The 400 error (code, message, statusCode) for a refused match. */
export function badPathError(result: Extract<MatchResult, { ok: false }>): InstanceType<typeof BadPathError> {
  return new badPathErrors[result.code](result.message)
}

/** `config/endpoints.yaml` cannot be read, is not valid, or holds contradicting entries. */
export const CatalogInvalidError = createError<[string]>('SLUICE_CATALOG_INVALID', '%s', 500)

/** `limits.overrides` names an endpoint that is neither in the catalog nor a plausible unknown-path template. */
export const UnknownOverrideError = createError<[string, string]>(
  'SLUICE_CONFIG_UNKNOWN_OVERRIDE',
  'limits.overrides: "%s" is not an endpoint id of the catalog nor the template of an unknown path%s',
  500,
)

/** A catalog option (such as the default limit) is out of range. */
export const CatalogOptionsError = createError<[string]>('SLUICE_CONFIG_INVALID', '%s', 500)
