import { refusal } from '../errors/refusal.js'

/**
 * The proxy's own answers. Each is a value with a `SLUICE_` code and an HTTP status; reply.ts turns
 * every one into the API's error shape `[{ code, message }]`.
 */

export const NotFoundError = refusal<[string, string]>(
  'SLUICE_NOT_FOUND',
  'sluice proxies the API under %s; %s is not below it',
  404,
  'bad_request',
)

export const BadAuthorizationError = refusal(
  'SLUICE_BAD_AUTHORIZATION',
  'The Authorization header is Basic but not base64("orgId:apiKey")',
  400,
  'bad_request',
)

export const EmptyAuthorizationError = refusal(
  'SLUICE_EMPTY_AUTHORIZATION',
  'The Authorization header is empty; send Basic base64("orgId:apiKey"), or leave the header out',
  400,
  'bad_request',
)

export const UnsupportedAuthorizationError = refusal(
  'SLUICE_UNSUPPORTED_AUTHORIZATION',
  'The Authorization header is not Basic; the API takes Basic base64("orgId:apiKey")',
  400,
  'bad_request',
)

export const BadInstanceError = refusal<[string]>(
  'SLUICE_BAD_INSTANCE',
  'The instance (organisation id) from %s must be 1-128 printable characters',
  400,
  'bad_request',
)

export const BadWaitHeaderError = refusal<[string]>(
  'SLUICE_BAD_MAX_WAIT',
  'The %s header must be a number of seconds, 0 or more (longer than the configured maximum wait counts as the maximum)',
  400,
  'bad_request',
)

export const BodyReadError = refusal<[ErrorOptions?]>(
  'SLUICE_BAD_BODY',
  'The request body could not be read to its end',
  400,
  'bad_request',
)

/** An upstream 429 (a status to try again after) for a request whose body was streamed, so it cannot be sent again. */
export const UpstreamBusyError = refusal<[number, string]>(
  'SLUICE_UPSTREAM_BUSY',
  'The API answered %d for %s and the request body was too large to keep for a retry; try again later',
  503,
  'upstream_busy',
)

/**
 * A request with a streamed body whose permit ran out (the process stalled) just before it was sent:
 * undici destroys the body with the stopped request, so it cannot wait for another permit.
 */
export const PermitRanOutError = refusal<[string]>(
  'SLUICE_UNAVAILABLE',
  'The permit for %s may have run out while sluice was stalled, and the request body was too large to keep for another try; try again',
  503,
  'unavailable',
)

export const UpstreamTimeoutError = refusal<[string, ErrorOptions?]>(
  'SLUICE_UPSTREAM_TIMEOUT',
  'The API did not answer in time: %s',
  504,
  'upstream_error',
)

export const UpstreamUnreachableError = refusal<[string, ErrorOptions?]>(
  'SLUICE_UPSTREAM_UNREACHABLE',
  'The API could not be reached: %s',
  502,
  'upstream_error',
)

/** The forward proxy (HTTPS_PROXY / HTTP_PROXY) could not be reached: named by host:port, never with its credentials. */
export const ForwardProxyUnreachableError = refusal<[string, string, ErrorOptions?]>(
  'SLUICE_FORWARD_PROXY_UNREACHABLE',
  'The forward proxy %s could not be reached: %s',
  502,
  'upstream_error',
)

/** The forward proxy answered the tunnel's CONNECT with another status than 200 (407: it wants other credentials). */
export const ForwardProxyRefusedError = refusal<[string, string, number]>(
  'SLUICE_FORWARD_PROXY_REFUSED',
  'The forward proxy %s refused the tunnel to %s: it answered %d',
  502,
  'upstream_error',
)

export const ShuttingDownError = refusal(
  'SLUICE_UNAVAILABLE',
  'sluice is shutting down; retry on another replica',
  503,
  'unavailable',
)

/** The request body came slower than client.minBodyBytesPerSecond: cut, so it holds no permit (README "Slow and hostile clients"). */
export const BodyTooSlowError = refusal<[number, number]>(
  'SLUICE_BODY_TOO_SLOW',
  'The request body arrived slower than %d bytes per second over %d ms',
  408,
  'client_timeout',
)

/** An HTTP/1.1 request without a Host header (RFC 9112 §3.2). */
export const NoHostError = refusal('SLUICE_BAD_REQUEST', 'An HTTP/1.1 request needs a Host header', 400, 'bad_request')

/**
 * A method-override header (X-HTTP-Method-Override and its kin): sluice queues a request under its
 * method's limit, and the API could run another endpoint than the one it was limited as.
 */
export const MethodOverrideError = refusal<[string]>(
  'SLUICE_METHOD_OVERRIDE',
  'The %s header is refused: sluice limits each request by its method; send the request with the method it means',
  400,
  'bad_request',
)

/** A GET or HEAD with a body: the API's reads take none, and it would not be shared or sent as meant. */
export const BodyNotAllowedError = refusal<[string]>(
  'SLUICE_BODY_NOT_ALLOWED',
  'A %s request must not carry a body (Content-Length above 0 or Transfer-Encoding); send it without one',
  400,
  'bad_request',
)
