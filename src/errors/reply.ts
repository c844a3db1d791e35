import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify'

/** The API's own error shape, so the error handling apps already have reads ours too. */
export type ErrorBody = [{ code: string; message: string }]

/** Fastify's own errors get ours: a URL it cannot decode is a bad path; any other 4xx is a bad request. */
const FASTIFY_CODES: Readonly<Record<string, string>> = { FST_ERR_BAD_URL: 'SLUICE_BAD_PATH_ENCODING' }

export function errorBody(err: Partial<FastifyError>, status: number): ErrorBody {
  const code =
    typeof err.code === 'string' && err.code.startsWith('SLUICE_')
      ? err.code
      : (FASTIFY_CODES[err.code ?? ''] ?? (status >= 500 ? 'SLUICE_INTERNAL' : 'SLUICE_BAD_REQUEST'))
  const message = status >= 500 && code === 'SLUICE_INTERNAL' ? 'sluice failed to handle the request; see its log' : (err.message ?? 'error')
  return [{ code, message }]
}

/** Fastify error handler of both servers: the error shape, a fitting status, Retry-After on 503. */
export function replyWithError(err: FastifyError, request: FastifyRequest, reply: FastifyReply): void {
  const status = typeof err.statusCode === 'number' && err.statusCode >= 400 && err.statusCode < 600 ? err.statusCode : 500
  if (status >= 500 && status !== 503) request.log.error({ err }, 'request failed')
  else request.log.debug({ code: err.code, msg: err.message }, 'request refused')
  // An error may bring headers of its own (a Retry-After from a predicted wait).
  const own = (err as { headers?: unknown }).headers
  if (typeof own === 'object' && own !== null) for (const [name, value] of Object.entries(own)) if (typeof value === 'string') reply.header(name, value)
  if (status === 503 && !reply.hasHeader('retry-after')) reply.header('retry-after', '1')
  void reply.code(status).type('application/json; charset=utf-8').send(errorBody(err, status))
}
