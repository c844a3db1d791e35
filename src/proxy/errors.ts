import createError from '@fastify/error'

/**
 * The proxy's own answers. Each is a value with a `SLUICE_` code and an HTTP status; reply.ts turns
 * every one into the API's error shape `[{ code, message }]`.
 */

export const NotFoundError = createError<[string, string]>(
  'SLUICE_NOT_FOUND',
  'sluice proxies the API under %s; %s is not below it',
  404,
)

export const BadAuthorizationError = createError(
  'SLUICE_BAD_AUTHORIZATION',
  'The Authorization header is Basic but not base64("orgId:apiKey")',
  400,
)

export const EmptyAuthorizationError = createError(
  'SLUICE_EMPTY_AUTHORIZATION',
  'The Authorization header is empty; send Basic base64("orgId:apiKey"), or leave the header out',
  400,
)

export const UnsupportedAuthorizationError = createError(
  'SLUICE_UNSUPPORTED_AUTHORIZATION',
  'The Authorization header is not Basic; the API takes Basic base64("orgId:apiKey")',
  400,
)

export const BadInstanceError = createError<[string]>(
  'SLUICE_BAD_INSTANCE',
  'The instance (organisation id) from %s must be 1-128 printable characters',
  400,
)

export const BadWaitHeaderError = createError<[string]>(
  'SLUICE_BAD_MAX_WAIT',
  'The %s header must be a number of seconds, 0 or more (longer than the configured maximum wait counts as the maximum)',
  400,
)

export const BodyReadError = createError<[ErrorOptions?]>(
  'SLUICE_BAD_BODY',
  'The request body could not be read to its end',
  400,
)

/** An upstream 429 (a status to try again after) for a request whose body was streamed, so it cannot be sent again. */
export const UpstreamBusyError = createError<[number, string]>(
  'SLUICE_UPSTREAM_BUSY',
  'The API answered %d for %s and the request body was too large to keep for a retry; try again later',
  503,
)

/**
 * A request with a streamed body whose permit ran out (the process stalled) just before it was sent:
 * undici destroys the body with the stopped request, so it cannot wait for another permit.
 */
export const PermitRanOutError = createError<[string]>(
  'SLUICE_UNAVAILABLE',
  'The permit for %s may have run out while sluice was stalled, and the request body was too large to keep for another try; try again',
  503,
)

export const UpstreamTimeoutError = createError<[string, ErrorOptions?]>(
  'SLUICE_UPSTREAM_TIMEOUT',
  'The API did not answer in time: %s',
  504,
)

export const UpstreamUnreachableError = createError<[string, ErrorOptions?]>(
  'SLUICE_UPSTREAM_UNREACHABLE',
  'The API could not be reached: %s',
  502,
)

/** The forward proxy (HTTPS_PROXY / HTTP_PROXY) could not be reached: named by host:port, never with its credentials. */
export const ForwardProxyUnreachableError = createError<[string, string, ErrorOptions?]>(
  'SLUICE_FORWARD_PROXY_UNREACHABLE',
  'The forward proxy %s could not be reached: %s',
  502,
)

/** The forward proxy answered the tunnel's CONNECT with another status than 200 (407: it wants other credentials). */
export const ForwardProxyRefusedError = createError<[string, string, number]>(
  'SLUICE_FORWARD_PROXY_REFUSED',
  'The forward proxy %s refused the tunnel to %s: it answered %d',
  502,
)

export const ShuttingDownError = createError(
  'SLUICE_UNAVAILABLE',
  'sluice is shutting down; retry on another replica',
  503,
)

/** The request line and headers, or the whole request, did not arrive within client.headersTimeoutMs / requestTimeoutMs. */
export const RequestTimeoutError = createError('SLUICE_REQUEST_TIMEOUT', 'The request did not arrive in time', 408)

/** The request body came slower than client.minBodyBytesPerSecond: cut, so it holds no permit (README "Slow and hostile clients"). */
export const BodyTooSlowError = createError<[number, number]>(
  'SLUICE_BODY_TOO_SLOW',
  'The request body arrived slower than %d bytes per second over %d ms',
  408,
)

export const UrlTooLongError = createError<[number]>(
  'SLUICE_URL_TOO_LONG',
  'The request target is longer than %d bytes',
  414,
)

export const HeadersTooLargeError = createError<[number]>(
  'SLUICE_HEADERS_TOO_LARGE',
  'The request line and headers are larger than %d bytes',
  431,
)

/** A request Node's HTTP parser refuses: a smuggling attempt, bad chunked encoding, a malformed header. */
export const BadHttpError = createError<[string]>(
  'SLUICE_BAD_REQUEST',
  'The request could not be parsed as HTTP (%s)',
  400,
)

export const MethodNotAllowedError = createError<[string, string]>(
  'SLUICE_METHOD_NOT_ALLOWED',
  'The method %s is not allowed here; allowed: %s',
  405,
)

/** An admin path that does not exist. */
export const NoSuchPathError = createError<[string, string]>('SLUICE_NOT_FOUND', 'There is no %s; there are %s', 404)

export const ExpectationFailedError = createError(
  'SLUICE_EXPECTATION_FAILED',
  'The only Expect sluice meets is 100-continue',
  417,
)

/** An HTTP/1.1 request without a Host header (RFC 9112 §3.2). */
export const NoHostError = createError('SLUICE_BAD_REQUEST', 'An HTTP/1.1 request needs a Host header', 400)

/**
 * A method-override header (X-HTTP-Method-Override and its kin): sluice queues a request under its
 * method's limit, and the API could run another endpoint than the one it was limited as.
 */
export const MethodOverrideError = createError<[string]>(
  'SLUICE_METHOD_OVERRIDE',
  'The %s header is refused: sluice limits each request by its method; send the request with the method it means',
  400,
)

/** A GET or HEAD with a body: the API's reads take none, and it would not be shared or sent as meant. */
export const BodyNotAllowedError = createError<[string]>(
  'SLUICE_BODY_NOT_ALLOWED',
  'A %s request must not carry a body (Content-Length above 0 or Transfer-Encoding); send it without one',
  400,
)
