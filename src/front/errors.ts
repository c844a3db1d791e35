import { refusal } from '../errors/refusal.js'

/**
 * The answers both servers give before any route of theirs (the proxy port and the admin port):
 * what Node's HTTP parser refuses, a method or path neither serves. Each with its outcome
 * (src/errors/refusal.ts).
 */

/** The request line and headers, or the whole request, did not arrive within client.headersTimeoutMs / requestTimeoutMs. */
export const RequestTimeoutError = refusal(
  'SLUICE_REQUEST_TIMEOUT',
  'The request did not arrive in time',
  408,
  'client_timeout',
)

export const UrlTooLongError = refusal<[number]>(
  'SLUICE_URL_TOO_LONG',
  'The request target is longer than %d bytes',
  414,
  'bad_request',
)

export const HeadersTooLargeError = refusal<[number]>(
  'SLUICE_HEADERS_TOO_LARGE',
  'The request line and headers are larger than %d bytes',
  431,
  'bad_request',
)

/** A request Node's HTTP parser refuses: a smuggling attempt, bad chunked encoding, a malformed header. */
export const BadHttpError = refusal<[string]>(
  'SLUICE_BAD_REQUEST',
  'The request could not be parsed as HTTP (%s)',
  400,
  'bad_request',
)

export const MethodNotAllowedError = refusal<[string, string]>(
  'SLUICE_METHOD_NOT_ALLOWED',
  'The method %s is not allowed here; allowed: %s',
  405,
  'bad_request',
)

/** An admin path that does not exist. */
export const NoSuchPathError = refusal<[string, string]>(
  'SLUICE_NOT_FOUND',
  'There is no %s; there are %s',
  404,
  'bad_request',
)

export const ExpectationFailedError = refusal(
  'SLUICE_EXPECTATION_FAILED',
  'The only Expect sluice meets is 100-continue',
  417,
  'bad_request',
)
