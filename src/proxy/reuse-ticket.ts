import type { OutgoingHttpHeaders, ServerResponse } from 'node:http'
import type { FastifyReply, FastifyRequest } from 'fastify'
import { writeReused, type Reuse, type ReusedAnswer, type ReuseRequest, type ReuseTicket } from '../reuse/index.js'
import { cutIfNotTaken } from './forward.js'
import type { Trace } from './trace.js'

/**
 * The reuse stage (docs/reuse.md). The handler awaits `ticket.reused()` in its own frame, as it awaits
 * a permit, so a follower costs as little as a queued request.
 */

/** The request's reuse ticket, or undefined when it cannot share (not a read, a body, reuse off). */
export function openTicket(
  reuse: Reuse | undefined,
  request: ReuseRequest,
  res: ServerResponse,
): ReuseTicket | undefined {
  const ticket = reuse?.open(request)
  if (ticket === undefined) return undefined
  // Followers of this request's call that never got its answer try again without it. (Only
  // requests that can share listen: a listener and its closure are a queued request's memory.)
  if (res.closed) ticket.close()
  else res.once('close', () => ticket.close())
  return ticket
}

/** Answers the request with a reused answer (coalesced, or from the cache): no permit, no call of its own. */
export function answerReused(
  request: FastifyRequest,
  reply: FastifyReply,
  trace: Trace,
  ticket: ReuseTicket,
  reused: ReusedAnswer,
  writeTimeoutMs: number,
): void {
  const res = reply.raw
  trace.outcome = reused.kind
  // the API's answer to an identical request, credentials included: refused, it vouches for no organisation (Trace)
  const { status } = reused.answer
  if (status === 401 || status === 403) trace.credentialsRefused()
  writeReused(res, request.method, reply.getHeaders() as OutgoingHttpHeaders, reused, {
    ...ticket.answerHeaders(reused),
    'x-request-id': request.id,
  })
  // No permit is held, but a client that does not take its answer is still cut off in time.
  cutIfNotTaken(res, writeTimeoutMs, () => (trace.outcome = 'client_timeout'))
  reply.hijack()
}
