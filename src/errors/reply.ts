import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify'

/** The API's own error shape, so the error handling apps already have reads ours too. */
export type ErrorBody = [{ code: string; message: string }]

/** Fastify's own errors get ours: a URL it cannot decode is a bad path; any other 4xx is a bad request. */
// (Their own messages quote the whole path, however long; ours do not.)
const FASTIFY_CODES: Readonly<Record<string, { code: string; message: string }>> = {
  FST_ERR_BAD_URL: { code: 'SLUICE_BAD_PATH_ENCODING', message: 'The path has a malformed percent-escape' },
  FST_ERR_MAX_PARAM_LENGTH: { code: 'SLUICE_URL_TOO_LONG', message: 'The request target is too long' },
}

export function errorBody(err: Partial<FastifyError>, status: number): ErrorBody {
  if (typeof err.code === 'string' && err.code.startsWith('SLUICE_'))
    return [{ code: err.code, message: err.message ?? 'error' }]
  const known = FASTIFY_CODES[err.code ?? '']
  if (known !== undefined) return [known]
  if (status >= 500) return [{ code: 'SLUICE_INTERNAL', message: 'sluice failed to handle the request; see its log' }]
  return [{ code: 'SLUICE_BAD_REQUEST', message: err.message ?? 'error' }]
}

/** Fastify error handler of both servers: the error shape, a fitting status, Retry-After on 503. */
export function replyWithError(err: FastifyError, request: FastifyRequest, reply: FastifyReply): void {
  const status =
    typeof err.statusCode === 'number' && err.statusCode >= 400 && err.statusCode < 600 ? err.statusCode : 500
  if (status >= 500 && status !== 503) request.log.error({ err }, 'request failed')
  // The error's text as `reason` (a `msg` field beside the message argument would make two `msg` keys
  // in one line) — but not for a 401/403: those quote the organisation or app the client named, which
  // is recorded only once it authenticated (docs/observability.md, "What a client's values can reach").
  else if (status === 401 || status === 403) request.log.debug({ code: err.code }, 'request refused')
  else request.log.debug({ code: err.code, reason: err.message }, 'request refused')
  // An error may bring headers of its own (a Retry-After from a predicted wait).
  const own = (err as { headers?: unknown }).headers
  if (typeof own === 'object' && own !== null)
    for (const [name, value] of Object.entries(own)) if (typeof value === 'string') reply.header(name, value)
  if (status === 503 && !reply.hasHeader('retry-after')) reply.header('retry-after', '1')
  // A body left unread (a refused request, one cut off for being too slow) is not read on: the connection closes.
  if (!request.raw.complete) reply.header('connection', 'close')
  void reply.code(status).type('application/json; charset=utf-8').send(errorBody(err, status))
}
